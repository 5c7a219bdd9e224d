package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

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

type artifactCreateParams struct {
	SessionID string `json:"session_id"`
	Path      string `json:"path"`
	Format    string `json:"format"`
}

// artifactCall runs one artifact op for a tool: the session's own op with params
// (the tool's decoded params, which name the op's fields), answered as the op's
// result with the identity fields.
func (s *Server) artifactCall(ctx context.Context, sess *repl.Session, op, runID string, params any) (any, error) {
	if s.artifacts == nil {
		return nil, errors.New(msgNoArtifactStore)
	}
	raw, err := json.Marshal(params)
	if err != nil {
		return nil, fmt.Errorf("encode the artifact op: %w", err)
	}
	h := sess.Health()
	out, err := s.artifacts.Serve(ctx, repl.BridgeRequest{SessionID: h.SessionID, Project: h.Project, RunID: runID, Op: op, Params: raw})
	if err != nil {
		return nil, err
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
		// The downstream envelope's own isError.
		var envelope struct {
			IsError bool `json:"isError"`
		}
		if err := json.Unmarshal(out, &envelope); err != nil {
			return nil, fmt.Errorf("the downstream result is not a result envelope: %w", err)
		}
		failed = envelope.IsError
	}
	return encodedResult{JSON: out, IsError: failed}, nil
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
		handler: handle(func(ctx context.Context, sess *repl.Session, p artifactCreateParams) (any, error) {
			p.Path = sess.ProjectPath(p.Path)
			return s.artifactCall(ctx, sess, "artifact.create", "", p)
		}),
	}
}
