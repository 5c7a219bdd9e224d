package repl

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"

	"github.com/iota-uz/repl-mcp/internal/artifactref"
)

// Services are what cell code reaches beyond Python: the ops its helpers send over
// the worker protocol (the mcp bridge's calls to other MCP servers, the artifact
// store), and the session and run lifetimes that bind them. Package cellops
// implements them over the broker and the artifact store and is the only Go code
// that knows op names; repl routes rpc frames to Serve and reports lifetimes.
type Services interface {
	// SessionOpened is called once when a session is made, SessionClosed once it
	// has closed, after its runs and their rpcs have ended.
	SessionOpened(sessionID, project string)
	SessionClosed(sessionID, project string)
	// RunStarted and RunEnded bracket one run on a worker; what a run began (an
	// unfinished upload) ends with it.
	RunStarted(sessionID, runID string)
	RunEnded(sessionID, runID string)
	// Serve answers one rpc of the active run. An error is a message for the cell.
	Serve(ctx context.Context, rpc RPC) (json.RawMessage, error)
	// KeepText keeps text as a text artifact of the session and returns its
	// reference; kept, when not nil, is one kept before for the same result,
	// returned as it is while the store still holds it (Session.KeepText).
	KeepText(ctx context.Context, sessionID, text string, kept *artifactref.Ref) (artifactref.Ref, error)
}

// RPC is one op from cell code, with the provenance the services record.
type RPC struct {
	SessionID   string
	SessionName string
	Project     string
	RunID       string
	Op          string
	Params      json.RawMessage
	// Data is the frame's data, bytes the op carries beside its params (an
	// artifact.append chunk): sent as base64 and decoded with the frame, so that
	// they are never a JSON string to scan again.
	Data []byte
}

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
	if r == nil || r.id != f.RunID || r.isLeaving() {
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
		result, err := s.serveRPC(ctx, RPC{SessionID: s.id, SessionName: s.name, Project: s.env.project, RunID: r.id, Op: f.Op, Params: f.Params, Data: f.Data})
		abandoned := ctx.Err() != nil
		// The call leaves the run's count before its reply goes out: the worker queues
		// calls beyond the bound and sends the next one as soon as it reads this reply,
		// so the slot must already be free when it arrives.
		r.endRPC(f.ID)
		if abandoned {
			// The cell gave up on this call or its run ended: nobody waits for the
			// reply, and a late frame could be mistaken for the next cell's traffic.
			return
		}
		s.answerRPC(p, f.ID, result, err)
	}()
}

func (s *Session) serveRPC(ctx context.Context, rpc RPC) (json.RawMessage, error) {
	if s.cfg.Services == nil {
		return nil, errors.New(msgNoServices)
	}
	return s.cfg.Services.Serve(ctx, rpc)
}

// onRPCCancel cancels one rpc the cell gave up on; other calls go on.
func (s *Session) onRPCCancel(f inFrame) {
	s.mu.Lock()
	r := s.active
	s.mu.Unlock()
	if r != nil && r.id == f.RunID {
		r.endRPC(f.ID)
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
	var sendErr error
	if line, ok := resultLine(reply); ok {
		sendErr = p.sendLine(line)
	} else {
		sendErr = p.send(reply)
	}
	if sendErr != nil {
		s.logger.Warn("answer rpc", "rpc", id, "err", sendErr)
	}
}

// resultLine assembles a successful reply around its result, which is already
// encoded (an op's JSON, a downstream envelope of up to 900 KB): encoding the frame
// would copy the result once more, compacting it. It takes only a result that is
// valid JSON on one line, under an id that needs no escaping; for anything else
// json.Marshal encodes the frame, and refuses what is not JSON.
func resultLine(reply rpcResultFrame) ([]byte, bool) {
	if reply.Error != "" || len(reply.Result) == 0 || !plainID(reply.ID) ||
		bytes.ContainsAny(reply.Result, "\r\n") || !json.Valid(reply.Result) {
		return nil, false
	}
	line := make([]byte, 0, len(reply.Result)+len(reply.ID)+len(`{"type":"rpc_result","id":"","result":}`))
	line = append(line, `{"type":"rpc_result","id":"`...)
	line = append(line, reply.ID...)
	line = append(line, `","result":`...)
	line = append(line, reply.Result...)
	return append(line, '}'), true
}

// plainID reports whether id is written in JSON as it is: the worker's rpc ids
// are 32 hex digits.
func plainID(id string) bool {
	for i := 0; i < len(id); i++ {
		c := id[i]
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || c == '-' || c == '_') {
			return false
		}
	}
	return true
}
