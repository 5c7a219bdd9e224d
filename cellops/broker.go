package cellops

import (
	"context"
	"encoding/json"
	"errors"
	"strconv"
	"time"

	"github.com/iota-uz/repl-mcp/broker"
	"github.com/iota-uz/repl-mcp/internal/jsonscan"
	"github.com/iota-uz/repl-mcp/repl"
)

// Messages of the broker ops' decoding (docs/contract.md §8.9, §8.10); what the params
// may hold is the broker's to check, and its messages say so.
const (
	msgCallParams    = "MCP call params must be an object"
	msgToolsParams   = "MCP tools params must be an object"
	msgExplainParams = "MCP explain params must be an object"
	msgToolNotString = "tool must be a string or omitted"
)

// brokerOp decodes one op's params into the typed call on the session's
// project broker and returns what the worker receives.
type brokerOp func(ctx context.Context, b *broker.Broker, rpc repl.RPC) (any, error)

// brokerOps are the mcp helper's ops, each answered by the broker of the session's
// project (docs/contract.md §8.10). Errors are the broker's messages for the cell.
func (o *Ops) brokerOps() map[string]opFunc {
	ops := map[string]brokerOp{
		"servers": func(_ context.Context, b *broker.Broker, _ repl.RPC) (any, error) {
			names, err := b.Servers()
			return map[string]any{"servers": names}, err
		},
		"tools": func(ctx context.Context, b *broker.Broker, rpc repl.RPC) (any, error) {
			l, err := listTools(ctx, b, rpc.Params)
			return map[string]any{"tools": l.Tools, "ttlMs": l.Fresh.Milliseconds()}, err
		},
		"call": call,
		"explain": func(_ context.Context, b *broker.Broker, rpc repl.RPC) (any, error) {
			return explain(b, rpc.Params)
		},
		"journal": func(_ context.Context, b *broker.Broker, _ repl.RPC) (any, error) {
			recs, err := b.Journal()
			return map[string]any{"records": recs}, err
		},
		"refresh": func(_ context.Context, b *broker.Broker, _ repl.RPC) (any, error) {
			return b.Refresh()
		},
	}
	table := make(map[string]opFunc, len(ops))
	for name, op := range ops {
		table[name] = func(ctx context.Context, rpc repl.RPC) (json.RawMessage, error) {
			b := o.broker(rpc.SessionID)
			if b == nil {
				return nil, errors.New(msgNoBroker)
			}
			return encode(op(ctx, b, rpc))
		}
	}
	return table
}

func listTools(ctx context.Context, b *broker.Broker, params json.RawMessage) (broker.Listing, error) {
	var wire struct{ Server, Timeout json.RawMessage }
	if err := json.Unmarshal(params, &wire); err != nil {
		return broker.Listing{}, errors.New(msgToolsParams)
	}
	return b.ListTools(ctx, name(wire.Server), seconds(wire.Timeout, broker.DefaultListTimeout))
}

// callWire is a call op's params, each left encoded.
type callWire struct{ Server, Tool, Arguments, Timeout json.RawMessage }

func call(ctx context.Context, b *broker.Broker, rpc repl.RPC) (any, error) {
	var wire callWire
	if err := json.Unmarshal(rpc.Params, &wire); err != nil {
		return nil, errors.New(msgCallParams)
	}
	// The downstream envelope, already encoded: encode passes it on as it is.
	return b.Call(ctx, broker.CallRequest{
		SessionID: rpc.SessionID,
		Project:   rpc.Project,
		RunID:     rpc.RunID,
		Server:    name(wire.Server),
		Tool:      name(wire.Tool),
		Arguments: wire.Arguments,
		Timeout:   seconds(wire.Timeout, broker.DefaultCallTimeout),
	})
}

func explain(b *broker.Broker, params json.RawMessage) (any, error) {
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
	return b.Explain(server, tool)
}

// name decodes a server or tool name. Anything but a JSON string decodes to "",
// which the broker refuses with that name's message: to the cell, a name of the
// wrong type and an invalid one are the same mistake. A plain string (nearly every
// name) is taken as it is, without a decoder pass.
func name(raw json.RawMessage) string {
	if plain, ok := jsonscan.PlainString(raw); ok {
		return plain
	}
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
	if c := raw[0]; c == '-' || '0' <= c && c <= '9' {
		// A JSON number (raw is valid JSON): strconv is what encoding/json parses it
		// with, and out of range is an error for both.
		var err error
		if secs, err = strconv.ParseFloat(string(raw), 64); err != nil {
			return 0
		}
	} else if json.Unmarshal(raw, &secs) != nil {
		return 0
	}
	return time.Duration(secs * float64(time.Second))
}
