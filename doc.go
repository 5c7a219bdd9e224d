// Command repl-mcp is an MCP server that gives an AI agent a persistent CPython
// namespace. main only wires: flags and environment become Config structs, the
// packages do the work.
//
// docs/design.md ("Layout") says which package does what, and docs/contract.md §1 is
// the command line this reads.
package main
