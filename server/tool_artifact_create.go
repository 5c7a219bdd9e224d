package server

import (
	"context"
	"encoding/json"

	"github.com/iota-uz/repl-mcp/repl"
)

const msgNoArtifactStore = "No artifact store is configured in this server"

// artifactRefSchema is an artifact reference (contract 3.9).
const artifactRefSchema = `{"type": "object",
  "required": ["id", "size", "format", "sha256", "lifetime", "eviction"],
  "properties": {"id": {"type": "string"}, "size": {"type": "integer"}, "format": {"enum": ["json", "text", "binary"]},
    "sha256": {"type": "string"}, "lifetime": {"type": "string"}, "eviction": {"type": "string"}}}`

// artifactOutput is an artifact tool's output: its success shape, or an error.
func artifactOutput(success string) string {
	return `{"type": "object", "oneOf": [` + success + `,
    {"required": ["error"], "properties": {"error": {"type": "string"}}}]}`
}

func artifactIDParam() param {
	return param{name: "id", typ: "string", required: true, minLength: 1, maxLength: 128, desc: "The artifact id (from a result's artifact.id or artifact_create)."}
}

// artifactCall runs one artifact op for a tool: the session's own op, answered as
// the op's result with the identity fields, or as an error result.
func (s *Server) artifactCall(ctx context.Context, call *toolCall, op string, runID string) any {
	if s.artifacts == nil {
		return identified(call.session, map[string]any{"error": msgNoArtifactStore})
	}
	var args artifactParams
	decodeArgs(call.args, &args)
	h := call.session.Health()
	if args.Path != "" {
		args.Path = call.session.ProjectPath(args.Path)
	}
	params, _ := json.Marshal(args)
	out, err := s.artifacts.Serve(ctx, repl.RPC{SessionID: h.SessionID, Project: h.Project, RunID: runID, Op: op, Params: params})
	if err != nil {
		return identified(call.session, map[string]any{"error": err.Error()})
	}
	// A read carries up to 87 KB of content: add the identity fields to the
	// encoded object rather than decoding and encoding it again.
	for _, f := range []struct {
		name  string
		value any
	}{{"server_id", h.ServerID}, {"session_id", h.SessionID}, {"generation", h.Generation}} {
		out = withField(out, f.name, f.value)
	}
	failed := false
	if op == "artifact.forward" {
		failed = isError(out) // the downstream envelope's own isError
	}
	return encodedResult{JSON: out, IsError: failed}
}

func (s *Server) artifactCreateTool() tool {
	return tool{
		name: "artifact_create",
		description: "Import a file into the session's artifact store (copied; the source may change or go away " +
			"afterwards): json and text must be UTF-8 (json must parse), binary is anything. Relative paths are " +
			"against the session's project. At most 16 MiB each, 64 artifacts and 64 MiB in all, oldest evicted " +
			"first; artifacts outlive worker resets and go away with their session. Read them with artifact_read.",
		input: inputSchema{
			withRequired(sessionIDParam()),
			{name: "path", typ: "string", required: true, minLength: 1, maxLength: 4096, desc: "The file to import; relative to the session's project."},
			{name: "format", typ: "string", required: true, enum: []string{"json", "text", "binary"}, desc: "json, text or binary."},
		},
		output:          artifactOutput(artifactRefSchema),
		annotations:     annotations(false, false, false, false),
		routed:          true,
		sessionRequired: true,
		handle: func(ctx context.Context, call *toolCall) any {
			return s.artifactCall(ctx, call, "artifact.create", "")
		},
	}
}
