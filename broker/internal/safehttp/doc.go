// Package safehttp holds what the broker's HTTP clients share (the Streamable HTTP
// transport to MCP servers and the OAuth exchanges): their dialer, bodies bounded
// in bytes, and short descriptions of a failed request or a refusing status that
// never echo a URL, a header or a body, so that errors built from them are safe to
// show a cell or a terminal.
//
// It does not make requests, hold connections or know MCP or OAuth; each client
// owns its transport and closes its idle connections. Nothing here runs in the
// background.
//
// Its bounds are docs/contract.md §8.5 and §13.1.
package safehttp
