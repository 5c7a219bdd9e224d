// Package proxy is the allowed-domains proxy of repl-mcp's sandbox
// (docs/contract.md §11.3): a small HTTP proxy on a loopback port of the server
// process that tunnels CONNECT and forwards plain http:// requests to the hosts
// --allow-domain admits, and to nothing else. The sandbox lets a cell's TCP
// connections reach that port alone, and the worker's environment names it as every
// HTTP client's proxy (sandbox.ChildEnv).
//
// It owns its listener and every connection it accepts or opens; main starts it
// before the sessions and closes it after them. It resolves names itself (a sandboxed
// cell has no DNS) and never connects to an address the allowed name did not resolve
// to. What it cannot stop is in docs/contract.md §11.3.
package proxy
