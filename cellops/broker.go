package cellops

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/iota-uz/repl-mcp/broker"
	"github.com/iota-uz/repl-mcp/repl"
)

// Messages of the broker ops' decoding (contract 8.9, 8.10); what the params
// may hold is the broker's to check, and its messages say so.
const (
	msgUnknownBrokerOp = "Unknown MCP bridge operation"
	msgCallParams      = "MCP call params must be an object"
	msgToolsParams     = "MCP tools params must be an object"
	msgExplainParams   = "MCP explain params must be an object"
	msgToolNotString   = "tool must be a string or omitted"
)

// Bridges lets the sessions of a repl.Manager reach their project's broker in
// set through the broker ops of cell code (the mcp helper). The session acquires
// its project's broker when it is made and releases it once closed; the Set
// closes a project's broker with its last session.
func Bridges(set *broker.Set) repl.Bridges { return brokerBridges{set} }

type brokerBridges struct{ set *broker.Set }

func (b brokerBridges) Acquire(sessionID, project string) repl.Bridge {
	if br := b.set.Acquire(sessionID, project); br != nil {
		return brokerOps{br}
	}
	return nil // the Set is closed: an untyped nil, which repl tests for
}

func (b brokerBridges) Release(sessionID, project string) { b.set.Release(sessionID, project) }

// brokerOps serves one session's broker ops.
type brokerOps struct{ b *broker.Broker }

// Serve is the op table of the broker ops: each op's params are decoded into
// the typed call, and its result is encoded as the worker expects it (contract
// 8.10). Errors are the broker's messages for the cell.
func (o brokerOps) Serve(ctx context.Context, req repl.BridgeRequest) (json.RawMessage, error) {
	switch req.Op {
	case "servers":
		names, err := o.b.Servers()
		return encode(map[string]any{"servers": names}, err)
	case "tools":
		tools, err := o.listTools(ctx, req.Params)
		return encode(map[string]any{"tools": tools}, err)
	case "call":
		return o.call(ctx, req)
	case "explain":
		return o.explain(req.Params)
	case "journal":
		recs, err := o.b.Journal()
		return encode(map[string]any{"records": recs}, err)
	case "refresh":
		return encode(o.b.Refresh())
	}
	return nil, errors.New(msgUnknownBrokerOp)
}

func (o brokerOps) listTools(ctx context.Context, params json.RawMessage) ([]json.RawMessage, error) {
	var wire struct{ Server, Timeout json.RawMessage }
	if err := json.Unmarshal(params, &wire); err != nil {
		return nil, errors.New(msgToolsParams)
	}
	return o.b.ListTools(ctx, name(wire.Server), seconds(wire.Timeout, broker.DefaultListTimeout))
}

func (o brokerOps) call(ctx context.Context, req repl.BridgeRequest) (json.RawMessage, error) {
	var wire struct{ Server, Tool, Arguments, Timeout json.RawMessage }
	if err := json.Unmarshal(req.Params, &wire); err != nil {
		return nil, errors.New(msgCallParams)
	}
	return o.b.Call(ctx, broker.CallRequest{
		SessionID: req.SessionID,
		Project:   req.Project,
		RunID:     req.RunID,
		Server:    name(wire.Server),
		Tool:      name(wire.Tool),
		Arguments: wire.Arguments,
		Timeout:   seconds(wire.Timeout, broker.DefaultCallTimeout),
	})
}

func (o brokerOps) explain(params json.RawMessage) (json.RawMessage, error) {
	var wire struct{ Server, Tool json.RawMessage }
	if err := json.Unmarshal(params, &wire); err != nil {
		return nil, errors.New(msgExplainParams)
	}
	server := name(wire.Server)
	var tool *string
	if len(wire.Tool) > 0 && string(wire.Tool) != "null" {
		var s string
		if json.Unmarshal(wire.Tool, &s) != nil {
			// The server is checked first, as the broker would.
			if err := broker.CheckServerName(server); err != nil {
				return nil, err
			}
			return nil, errors.New(msgToolNotString)
		}
		tool = &s
	}
	return encode(o.b.Explain(server, tool))
}

// name decodes a server or tool name. Anything but a JSON string decodes to "",
// which the broker refuses with that name's message: to the cell, a name of the
// wrong type and an invalid one are the same mistake.
func name(raw json.RawMessage) string {
	var s string
	json.Unmarshal(raw, &s)
	return s
}

// seconds decodes a timeout given in seconds: absent or null is def, anything
// but a number is 0, which the broker refuses as out of range like any other.
func seconds(raw json.RawMessage, def time.Duration) time.Duration {
	if len(raw) == 0 || string(raw) == "null" {
		return def
	}
	var secs float64
	if json.Unmarshal(raw, &secs) != nil {
		return 0
	}
	return time.Duration(secs * float64(time.Second))
}

// encode is the op's JSON result, or its error.
func encode(result any, err error) (json.RawMessage, error) {
	if err != nil {
		return nil, err
	}
	return json.Marshal(result)
}
