package server

import (
	"context"
	"encoding/json"

	"github.com/iota-uz/repl-mcp/broker"
	"github.com/iota-uz/repl-mcp/repl"
)

// Bridges lets the sessions of a repl.Manager reach their project's broker in set.
// repl declares the interface and broker implements the work; this adapter keeps
// the two packages from knowing each other.
func Bridges(set *broker.Set) repl.Bridges { return bridges{set} }

type bridges struct{ set *broker.Set }

func (b bridges) Acquire(sessionID, project string) repl.Bridge {
	if br := b.set.Acquire(sessionID, project); br != nil {
		return bridge{br}
	}
	return nil
}

func (b bridges) Release(sessionID, project string) { b.set.Release(sessionID, project) }

type bridge struct{ broker *broker.Broker }

func (b bridge) Serve(ctx context.Context, req repl.BridgeRequest) (json.RawMessage, error) {
	return b.broker.Serve(ctx, broker.Request{
		SessionID: req.SessionID,
		Project:   req.Project,
		RunID:     req.RunID,
		Op:        req.Op,
		Params:    req.Params,
	})
}
