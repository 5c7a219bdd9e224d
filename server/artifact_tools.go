package server

import (
	"context"
	"encoding/json"
	"errors"

	"github.com/iota-uz/repl-mcp/artifacts"
	"github.com/iota-uz/repl-mcp/broker"
	"github.com/iota-uz/repl-mcp/repl"
)

// What the artifact tools share: the reference schema, the id parameter, the store
// and the broker call of artifact_forward. The tools call the store's typed methods
// with the routed session as the owner.

var (
	errNoArtifactStore = errors.New("No artifact store is configured in this server")
	errNoForwardBroker = errors.New("No MCP broker serves this session; artifacts cannot be forwarded")
)

// artifactRefSchema is an artifact reference (docs/contract.md §3.9).
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
	return param{name: "id", typ: "string", required: true, minLength: 1, maxLength: 128, desc: "The artifact id: the one a result names (artifact <id>), or artifact_create's."}
}

// store is the artifact store, or the error that says there is none.
func (s *Server) store() (*artifacts.Store, error) {
	if s.artifacts == nil {
		return nil, errNoArtifactStore
	}
	return s.artifacts, nil
}

// brokerCall calls tool of server through sess's broker, as cell code's mcp.call
// does: the broker's allowlist, schema check and journal apply, and runID is the
// call's provenance. It is the server's one use of the broker's call op.
func (s *Server) brokerCall(ctx context.Context, sess *repl.Session, runID, server, tool string, arguments json.RawMessage) (json.RawMessage, error) {
	if s.brokers == nil {
		return nil, errNoForwardBroker
	}
	h := sess.Health()
	b := s.brokers.Acquire(h.SessionID, h.Project) // the session holds it already; this only finds it
	if b == nil {
		return nil, errNoForwardBroker
	}
	return b.Call(ctx, broker.CallRequest{SessionID: h.SessionID, Project: h.Project, RunID: runID,
		Server: server, Tool: tool, Arguments: arguments, Timeout: broker.DefaultCallTimeout})
}
