package cellops

import (
	"context"
	"encoding/json"
	"errors"

	"github.com/iota-uz/repl-mcp/broker"
	"github.com/iota-uz/repl-mcp/repl"
)

// brokerOps are the mcp helper's ops, each answered by the broker of the session's
// project.
func (o *Ops) brokerOps() map[string]opFunc {
	ops := map[string]opFunc{}
	for _, name := range []string{"servers", "tools", "call", "refresh", "journal", "explain"} {
		ops[name] = func(ctx context.Context, rpc repl.RPC) (json.RawMessage, error) {
			b := o.broker(rpc.SessionID)
			if b == nil {
				return nil, errors.New(msgNoBroker)
			}
			return b.Serve(ctx, broker.Request{SessionID: rpc.SessionID, Project: rpc.Project, RunID: rpc.RunID, Op: name, Params: rpc.Params})
		}
	}
	return ops
}
