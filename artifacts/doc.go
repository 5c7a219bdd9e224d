// Package artifacts owns repl-mcp's bounded artifact store: large values kept on the
// server side of the MCP boundary so that a cell or a tool can hand back a small
// reference instead of megabytes of text. It creates artifacts from files, receives
// them as chunked uploads, reads ranges of them, saves them to disk, deletes them and
// turns them into one JSON argument for a downstream tool call. It does not own MCP
// types, sessions, the Python worker or the broker: package server maps its errors to
// tool results and hands [Store.ForwardValue]'s value to the broker, and package repl
// reaches it through an interface of its own.
//
// main makes one [Store] for the whole server with [New] and releases it with
// [Store.Close]; nothing in the package starts a goroutine. Owners are sessions: the
// server registers a session with [Store.Register] when it opens and calls
// [Store.DropOwner] when it closes, which releases the session's artifacts and aborts
// its uploads. Runs are a session's cells: [Store.StartRun] and [Store.EndRun] bracket
// a cell, and an upload ([Store.Begin], [Store.Append], [Store.Commit], [Store.Abort])
// lives no longer than the run that began it.
//
// Every artifact's bytes live in an unlinked private file: repl-mcp-artifact-<uuid> is
// created in [Config.Dir] with O_CREAT|O_EXCL and mode 0600 and removed at once, so the
// content is reachable only through the open descriptor and a crash or SIGKILL of the
// server leaves nothing on disk. Its SHA-256 is computed while the bytes are written;
// [Store.Save] and [Store.ForwardValue] verify it again, [Store.Read] does not.
//
// Everything is bounded (docs/contract.md §9.2): 64 entries and 64 MiB in the whole store, 16 MiB
// per artifact, 64 KiB per range read, 512 KiB per forward, 4 concurrent I/O jobs taken
// by try-acquire, 4 unfinished uploads, 256 KiB upload chunks, 256 owners and 256 active
// runs. Only a successful create or commit evicts, oldest first across all owners, and
// each eviction is logged. An artifact is visible to its owner only: an id that belongs
// to another owner fails exactly like an unknown, deleted or evicted one.
//
// A Store is safe for concurrent use. The store lock is never held across file I/O, so
// a slow save does not block reads of other artifacts; an artifact deleted or evicted
// while a job still reads it keeps its descriptor open until that job ends.
//
// The rules it implements are docs/contract.md §9 (store model, limits, operations,
// automatic artifacts) and §3.9 (the artifact tools); docs/design.md places it among
// the packages.
package artifacts
