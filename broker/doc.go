// Package broker owns repl-mcp's downstream MCP client: the registry of servers that
// cell code may call, its validation, the connections to those servers (stdio peers
// under a guardian and Streamable HTTP), allowlists, argument validation, the effect
// journal, explain and OAuth. It does not own the Python worker; package repl reaches
// the broker through an interface it declares.
//
// [LoadRegistry] reads the registry an explicit --config file or the --mcp-scope
// scopes select and validates every entry; it starts nothing and touches no network.
// A registry with a defect is a [*ConfigError], which the caller stores as the
// broker's configuration_error while the server keeps running. Connections are lazy:
// nothing starts until a call or listing names a server, and the broker's owner
// closes it, which stops every peer it started.
package broker
