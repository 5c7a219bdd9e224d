// Package server owns the MCP surface of repl-mcp: the tool list and schemas (one
// file per tool), routing of session_id, the identity fields of results, the
// presentation of results as CallToolResults, the stdio transport and shutdown.
//
// It knows nothing of Python or processes: it calls package repl. [New] builds a
// Server from a Config; [Server.ServeStdio] serves one client until stdin ends or its
// context is cancelled, and then closes every session before it returns.
package server
