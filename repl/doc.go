// Package repl owns the Python side of repl-mcp as the server sees it: sessions, the
// supervisor of each session's worker, and the worker wire protocol.
//
// A [Manager] holds the sessions of one server lifetime (the default session always
// exists). Each [Session] supervises at most one Python worker, started lazily on the
// first execution through package guardian, and at most one active run. The session
// enforces deadlines, interrupts (SIGINT to the worker's process group, a 2 s grace,
// then SIGKILL), crash recovery, result bounding, a 64-entry result history and the
// generation counter that tells a caller whether Python state survived.
//
// The package knows nothing of MCP: package server turns its requests and results into
// tools (it keeps, through its Services, the complete text of a result that the text
// form cuts: Session.KeepText). Nor does it know what cell code's ops mean: it routes
// them to the Services main gives it (package cellops). It does not own processes either: package guardian
// starts and kills them. Who stops what: the Manager's Close closes every session; a
// session's Close cancels its run, waits for its rpcs, ends its Services and stops its
// worker; a worker is stopped only by Session.stopWorker (state.go's table says when),
// which hangs up its guardian and reaps it.
//
// What it promises is docs/contract.md §4 (the execution result and truthful state),
// §5 (the worker as users see it) and §6 (sessions); docs/design.md ("The supervisor")
// draws the worker's states.
package repl
