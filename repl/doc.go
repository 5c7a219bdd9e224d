// Package repl owns the Python side of repl-mcp as the server sees it: sessions, the
// supervisor of each session's worker, and the worker wire protocol.
//
// A [Manager] holds the sessions of one server lifetime (the default session always
// exists) and a pool of spare workers, one per interpreter and project in use. Each
// [Session] supervises at most one Python worker, started lazily on the first
// execution through package guardian (or taken from the pool), and at most one active
// run. The session
// enforces deadlines, interrupts (SIGINT to the worker's process group, a 2 s grace,
// then SIGKILL), crash recovery, result bounding, a 64-entry result history and the
// generation counter that tells a caller whether Python state survived.
//
// The package knows nothing of MCP: package server turns its requests and results into
// tools (it keeps, through its Services, the complete text of a result that the text
// form cuts: Session.KeepText). Nor does it know what cell code's ops mean: it routes
// them to the Services main gives it (package cellops), and takes the bounds of those
// ops (OpLimits) from the Config, so it imports neither the broker nor the store. It does not own processes either: package guardian
// starts and kills them. Who stops what: the Manager's Close closes every session; a
// session's Close cancels its run, waits for its rpcs, ends its Services and stops its
// worker and its launch's claim on a spare; the Manager's pool (spare.go) decides when
// a spare starts and stops. Every worker process starts and stops through
// lifecycle.go (startWorker, reaper), the pool's spares too, and a session's workers
// through its lifecycle and nothing else: it takes the spare or starts one, moves
// the persistent worker through the states of state.go's table with its generation,
// and stops it. A process is stopped one way: halt (SIGKILL to its group and jobs,
// hang up its guardian), then reap; a reaper does both in turn. The session's
// worker leaves only through lifecycle.retire, as stop (which returns once it is
// reaped) or, for a reset, reset (which returns once it is halted and reaps it in the
// background); a fresh run's worker is halted and reaped in the background when its
// run ends (drop).
//
// What it promises is docs/contract.md §4 (the execution result and truthful state),
// §5 (the worker as users see it) and §6 (sessions); docs/design.md ("The supervisor")
// draws the worker's states.
package repl
