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
// tools. It does not own processes either: package guardian starts and kills them.
// Who stops what: the Manager's Close closes every session; a session's Close cancels
// its run and stops its worker; a worker is stopped by hanging up its guardian.
package repl
