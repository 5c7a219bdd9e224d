// Package sandbox is repl-mcp's opt-in OS sandbox for cells (docs/contract.md §11):
// what --sandbox, --add-writable-root and --allow-domain ask for ([Settings]), the
// policy one worker runs under ([Policy]), whether this kernel can enforce it
// ([Check], at start and again in the guardian), and enforcing it ([ApplyToThread]:
// no_new_privs, a Landlock ruleset that lets writes happen only beneath the writable
// roots and TCP connections reach only the allowed-domains proxy, and a seccomp filter
// for what Landlock cannot express: UDP, raw and Unix sockets, listen, TCP Fast Open
// and io_uring). It also reads Codex's per-call sandbox policy
// (`_meta["codex/sandbox-state-meta"]`, [FromCodex]) into a Policy, failing closed.
//
// It owns no process: package guardian calls ApplyToThread on its locked thread just
// before it starts the worker, so the worker, everything it starts and the spare carry
// the policy and no cell can lift it. Package repl decides which policy each worker
// gets; package main checks the kernel at start and refuses what it cannot enforce.
// The allowed-domains proxy lives in package sandbox/proxy.
//
// docs/design.md ("The sandbox") says how it is built and what it cannot stop.
package sandbox
