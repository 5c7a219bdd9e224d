// Package server owns the MCP surface of repl-mcp: the tool list and schemas (one
// file per tool), routing of session_id, the identity fields of results, the
// presentation of results as CallToolResults, the stdio and Streamable HTTP
// transports and shutdown, and the adapters through which repl reaches the broker
// and the artifact store.
//
// It knows nothing of Python or processes: it calls package repl. [New] builds a
// Server from a Config; [Server.ServeStdio] serves one client until stdin ends or its
// context is cancelled, [Server.ServeStreamableHTTP] serves any number of clients on
// one endpoint until its context is cancelled, and both close every session before
// they return.
package server
