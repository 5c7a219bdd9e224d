package repl

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
)

// Bridge serves the bridge requests of cell code (the mcp helper): calls to other
// MCP servers, their catalogues, the journal, explain. Package broker implements it;
// repl only routes requests to it and answers the worker.
type Bridge interface {
	Serve(ctx context.Context, req BridgeRequest) (json.RawMessage, error)
}

// BridgeRequest is one rpc from a cell, with the provenance the broker records.
type BridgeRequest struct {
	SessionID string
	Project   string
	RunID     string
	Op        string
	Params    json.RawMessage
}

// Artifacts serves cell code's artifact ops ("artifact.*": uploads, imports,
// reads, saves, forwards) and binds uploads to the run that began them. Package
// artifacts implements the store; repl only routes and reports lifetimes.
type Artifacts interface {
	Serve(ctx context.Context, req BridgeRequest) (json.RawMessage, error)
	Register(sessionID string)
	DropSession(sessionID string) // the session closed: its artifacts go
	StartRun(sessionID, runID string)
	EndRun(sessionID, runID string) // the run ended: its unfinished uploads go
}

// Bridges hands each session the bridge of its project. A session acquires its
// bridge when it is made and releases it once it has closed and its calls have
// ended, so the owner can shut a project's broker down with its last session.
type Bridges interface {
	Acquire(sessionID, project string) Bridge // nil: no broker serves the session
	Release(sessionID, project string)
}

// RPC limits and messages (reference sections 5.2 and 13.2).
const (
	maxOutstandingRPCs = 64
	msgTooManyRPCs     = "Too many outstanding MCP calls"
	msgRPCNotActive    = "MCP calls must belong to their originating active cell; use mcp.acall for concurrency"
	msgIPCLimit        = "MCP result exceeds IPC limit; call may have completed. Inspect mcp.journal(); do not blindly retry external writes."
	msgNoArtifacts     = "No artifact store serves this session; cell code cannot create or read artifacts"
	msgNoBridge        = "No MCP broker serves this session (the server is shutting down); cell code cannot call other MCP servers"
)

// rpcResultFrame answers one rpc.
type rpcResultFrame struct {
	Type   string          `json:"type"`
	ID     string          `json:"id"`
	Result json.RawMessage `json:"result,omitempty"`
	Error  string          `json:"error,omitempty"`
}

// onRPC admits a bridge request of the active run and serves it in its own
// goroutine; anything else is answered at once with the reason.
func (s *Session) onRPC(p *process, f inFrame) {
	s.mu.Lock()
	r := s.active
	s.mu.Unlock()
	if r == nil || r.id != f.RunID || r.isStopping() {
		s.answerRPC(p, f.ID, nil, errors.New(msgRPCNotActive))
		return
	}
	ctx, ok := r.admitRPC(f.ID)
	if !ok {
		s.answerRPC(p, f.ID, nil, errors.New(msgTooManyRPCs))
		return
	}
	s.rpcs.Add(1)
	go func() {
		defer s.rpcs.Done()
		defer r.finishRPC(f.ID)
		result, err := s.serveRPC(ctx, BridgeRequest{SessionID: s.id, Project: s.env.project, RunID: r.id, Op: f.Op, Params: f.Params})
		if ctx.Err() != nil {
			// The cell gave up on this call or its run ended: nobody waits for the
			// reply, and a late frame could be mistaken for the next cell's traffic.
			return
		}
		s.answerRPC(p, f.ID, result, err)
	}()
}

func (s *Session) serveRPC(ctx context.Context, req BridgeRequest) (json.RawMessage, error) {
	if strings.HasPrefix(req.Op, "artifact.") {
		if s.cfg.Artifacts == nil {
			return nil, errors.New(msgNoArtifacts)
		}
		return s.cfg.Artifacts.Serve(ctx, req)
	}
	if s.bridge == nil {
		return nil, errors.New(msgNoBridge)
	}
	return s.bridge.Serve(ctx, req)
}

// onRPCCancel cancels one rpc the cell gave up on; other calls go on.
func (s *Session) onRPCCancel(f inFrame) {
	s.mu.Lock()
	r := s.active
	s.mu.Unlock()
	if r != nil && r.id == f.RunID {
		r.cancelRPC(f.ID)
	}
}

// answerRPC replies to the worker. A result too large for a frame is replaced by an
// error that says the call may have happened.
func (s *Session) answerRPC(p *process, id string, result json.RawMessage, err error) {
	reply := rpcResultFrame{Type: "rpc_result", ID: id, Result: result}
	if err != nil {
		reply = rpcResultFrame{Type: "rpc_result", ID: id, Error: err.Error()}
	}
	if len(reply.Result)+len(reply.Error)+256 > MaxFrameBytes {
		reply = rpcResultFrame{Type: "rpc_result", ID: id, Error: msgIPCLimit}
	}
	if err := p.send(reply); err != nil {
		s.logger.Warn("answer rpc", "rpc", id, "err", err)
	}
}
