// Package server owns the MCP surface of repl-mcp: the tool list and schemas (one
// file per tool), routing of session_id, the identity fields of results, the
// presentation of results as CallToolResults, and the middleware over go-sdk. The
// bytes on the wire are its subpackage transport's: stdio and Streamable HTTP, and
// shutdown.
//
// It knows nothing of Python, processes or the worker protocol: it calls package
// repl for sessions, the artifact store's typed methods for the artifact tools, and
// the broker only for health and artifact_forward. [New] builds a
// Server from a Config; [Server.ServeStdio] serves one client until stdin ends or its
// context is cancelled, [Server.ServeStreamableHTTP] serves any number of clients on
// one endpoint until its context is cancelled, both through package transport, and
// both close every session before they return.
//
// Its contract is docs/contract.md §2 (the MCP surface and the error boundary) and §3
// (the tools); docs/design.md ("Transports") says how the two transports are built.
// docs/go-sdk-patches.md lists where it and its transports work around go-sdk, each
// pinned by a test in gosdk_ratchet_test.go that fails when go-sdk changes.
package server
