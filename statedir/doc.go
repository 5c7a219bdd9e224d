// Package statedir owns repl-mcp's private state on disk that outlives a server: one
// directory per user (the XDG state directory's repl-mcp, or --snapshot-dir), holding
// the per-user key that authenticates snapshots, and one directory per project with
// the project's record (the server lifetimes that served it, their sessions and the
// runs that left their callers, the highest generation any of them used) and its
// sessions' snapshots.
//
// It does not write or read snapshot entries (the worker does, and checks them with
// the key: docs/design.md, "Durable sessions"); it makes their directories, reads and
// authenticates their manifests, removes them and evicts the oldest. Every directory
// is 0700 and every file 0600, owned by the user, never reached through a symbolic
// link; every file is replaced whole (a temp file beside it, fsync, rename, fsync of
// the directory). A live server holds a lock file for its lifetime and for each
// snapshot its workers write, so that another server neither takes it for gone nor
// evicts it. Nothing here runs in the background: the caller (repl's Manager and
// sessions) decides when.
//
// What it promises is docs/contract.md §6.7 (durable sessions) and §6.3 (generations
// across server lifetimes).
package statedir
