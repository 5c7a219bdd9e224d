package server

import (
	"context"
	"encoding/json"
	"errors"

	"github.com/iota-uz/repl-mcp/internal/ids"
	"github.com/iota-uz/repl-mcp/repl"
)

// The downstream envelope, with the session's identity fields added.
const artifactForwardSchema = `{"required": ["content"],
  "properties": {"content": {"type": "array"}, "structuredContent": {}, "isError": {"type": "boolean"}, "_meta": {"type": "object"}}}`

var errForwardCancelled = errors.New("Forwarding cancelled; external effects may already have occurred; inspect the broker journal")

type artifactForwardParams struct {
	SessionID string                     `json:"session_id"`
	ID        string                     `json:"id"`
	Server    string                     `json:"server"`
	Tool      string                     `json:"tool"`
	Argument  string                     `json:"argument"`
	Format    string                     `json:"format"`
	Arguments map[string]json.RawMessage `json:"arguments"`
}

func (s *Server) artifactForwardTool() tool {
	return tool{
		name: "artifact_forward",
		description: "Pass an artifact (at most 512 KiB) as one argument of a tool of another MCP server, through the " +
			"session's broker, without the content entering the conversation: format json (the parsed value), text " +
			"(a string) or base64. The broker's allowlist, schema check and journal apply; nothing is retried. " +
			"Returns the downstream result envelope.",
		input: inputSchema{
			withRequired(sessionIDParam()),
			artifactIDParam(),
			{name: "server", typ: "string", required: true, minLength: 1, maxLength: 200, desc: "A server of the session's broker registry."},
			{name: "tool", typ: "string", required: true, minLength: 1, maxLength: 400, desc: "The tool to call."},
			{name: "argument", typ: "string", required: true, minLength: 1, maxLength: 400, desc: "The tool argument that receives the artifact."},
			{name: "format", typ: "string", enum: []string{"json", "text", "base64"}, def: "json", desc: "json, text or base64."},
			{name: "arguments", typ: "object", desc: "Other arguments of the tool."},
		},
		output:          artifactOutput(artifactForwardSchema),
		annotations:     annotations(false, true, false, true),
		routed:          true,
		sessionRequired: true,
		handler:         handle(s.artifactForward),
	}
}

// artifactForward forwards through the session's own op; the downstream envelope's
// isError becomes the result's.
func (s *Server) artifactForward(ctx context.Context, sess *repl.Session, p artifactForwardParams) (any, error) {
	// Each forward is its own run in the broker's journal.
	out, err := s.artifactCall(ctx, sess, "artifact.forward", ids.UUID(), p)
	if ctx.Err() != nil {
		return nil, errForwardCancelled
	}
	return out, err
}
