// Package transport carries a go-sdk MCP server over the wire: stdio, our own
// transport, which answers every request it has read before it reports EOF and
// answers a malformed or oversized line instead of ending the stream; and Streamable
// HTTP, one endpoint with a stateful and a stateless go-sdk handler, behind the
// bearer token, the Host and Origin checks and the bounds on connections, bodies and
// MCP sessions. On both it keeps JSON-RPC ids and progress tokens as the client sent
// them, and answers the requests of the tasks extension that go-sdk does not know.
//
// It knows nothing of tools, results or REPL sessions: [Host] gives it the go-sdk
// server, the close of every REPL session and the [Tasks] it answers beside go-sdk.
// [ServeStdio] serves one client until stdin ends or its context is cancelled,
// [ServeStreamableHTTP] any number of clients until its context is cancelled; each
// closes every REPL session (Host.CloseSessions) before it returns, within the
// shutdown budgets of host.go. Package server calls both.
//
// Its contract is docs/contract.md §2.6 (stdio), §2.7 (Streamable HTTP), §2.1's ids as
// sent and §2.8's task requests; docs/design.md ("Transports") says how they are built,
// and docs/go-sdk-patches.md lists where they work around go-sdk.
package transport
