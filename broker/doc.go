// Package broker owns repl-mcp's downstream MCP client: the registry of servers that
// cell code may call, its validation, the connections to those servers (stdio peers
// under a guardian and Streamable HTTP), allowlists, argument validation, the effect
// journal, explain and OAuth. It does not own the Python worker; package repl reaches
// the broker through an interface it declares, and package server adapts one to the
// other.
//
// [LoadRegistry] reads the registry an explicit --config file or the --mcp-scope
// scopes select and validates every entry; it starts nothing and touches no network.
// A registry with a defect is a [*ConfigError], which the [Broker] stores as its
// configuration_error while Python keeps running; broker calls fail closed until a
// refresh succeeds.
//
// A [Broker] serves one project: [Broker.Serve] answers the worker's bridge ops
// (servers, tools, call, refresh, journal, explain). Connections are lazy: nothing
// starts until a call or listing names a server; aliases with the same launch share
// one connection. A call is checked (allowlist, catalogue, inputSchema) before the
// [Journal] records its dispatch, and the dispatch is on record (on disk with
// --journal) before the request is sent. A [Set] holds one Broker per project,
// shared by that project's sessions; main closes the Set after the sessions, and
// closing a Broker stops every peer it started.
package broker
