package server

import (
	"context"
	"encoding/json"
	"errors"

	"github.com/iota-uz/repl-mcp/artifacts"
	"github.com/iota-uz/repl-mcp/broker"
	"github.com/iota-uz/repl-mcp/repl"
)

// What the artifact tools share: the store
// and the broker call of artifact_forward. The tools call the store's typed methods
// with the routed session as the owner.

var (
	errNoArtifactStore = errors.New("No artifact store is configured in this server")
	errNoForwardBroker = errors.New("No MCP broker serves this session; artifacts cannot be forwarded")
)

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
