package transport

import (
	"context"
	"encoding/json"
	"log/slog"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Host is the server a transport carries: go-sdk's server, and what the transport
// needs of the server around it to answer what go-sdk does not know and to shut
// down. MCP and CloseSessions are required.
type Host struct {
	// MCP is the go-sdk server the transport runs; the HTTP transport adds its
	// receiving middleware to it, so it carries one HTTP transport at most.
	MCP *mcp.Server
	// CloseSessions closes every REPL session and returns once they are closed,
	// giving each running cell grace to honour its interrupt; the replies of the
	// calls it cancels are still written. A transport calls it when it stops.
	CloseSessions func(grace time.Duration)
	// Tasks answers the requests of the tasks extension; nil hands every request to
	// go-sdk.
	Tasks Tasks
	// Logger reports what the transport does not answer itself; nil logs nothing.
	Logger *slog.Logger
}

// Tasks answers the requests of the MCP tasks extension (docs/contract.md §2.8),
// which go-sdk does not know: a transport asks Owns of every request it reads, and
// answers those it owns with Serve, itself, with the id as sent.
type Tasks interface {
	// Owns reports a request the transport answers through Serve rather than hand
	// to go-sdk.
	Owns(method string, params json.RawMessage) bool
	// Serve answers one request Owns owns: its result, or the JSON-RPC error to
	// answer with. ctx is the connection's (stdio) or the HTTP request's.
	Serve(ctx context.Context, method string, params json.RawMessage) (any, *jsonrpc.Error)
}

func (h Host) logger() *slog.Logger {
	if h.Logger == nil {
		return slog.New(slog.DiscardHandler)
	}
	return h.Logger
}

// Shutdown budgets: how long a transport lets runs stop on their own when it ends.
const (
	// eofGrace is how long running cells may go on after the client closed stdin
	// before they are cancelled; their replies are still written.
	eofGrace = 3 * time.Second
	// signalGrace is how long a cell may take to honour the interrupt on SIGTERM.
	signalGrace = 500 * time.Millisecond
	// closeGrace bounds the wait for in-flight handlers once sessions are closing.
	closeGrace = 1500 * time.Millisecond
)

// The protocol's names the transports route by, and the server reads too.
const (
	// StatelessProtocol is the first protocol version under which each request
	// stands alone: no MCP session, no implicit default session.
	StatelessProtocol = "2026-07-28"
	// SessionIDHeader names a stateful MCP session over Streamable HTTP.
	SessionIDHeader = "Mcp-Session-Id"
	// MethodSubscriptionsListen opens a stream of notifications under
	// StatelessProtocol.
	MethodSubscriptionsListen = "subscriptions/listen"
)
