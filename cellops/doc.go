// Package cellops answers the ops that cell code sends over the worker protocol: the
// mcp helper's calls to other MCP servers (answered by the session's project broker)
// and the artifact helpers' uploads, imports, reads, saves, deletes and forwards
// (answered by the artifact store). It is the one Go place that knows op names: the
// table in [New] maps each name to a function that decodes the op's JSON params
// into a typed request, makes the typed call and encodes the result. The worker's
// side of each op is in package worker (worker/replworker); the frames that carry them
// are package repl's.
//
// [Ops] implements repl.Services. main makes one with [New] over the server's
// broker Set and artifact store and hands it to repl.Config; package repl calls it
// when a session opens and closes (the session's project broker is acquired and
// released, its artifacts registered and dropped), around every run (uploads live
// no longer than the run that began them), for every rpc of the active run, and
// to keep the complete text of a result that a text-form client's text cuts (KeepText).
// Ops starts no goroutine and owns neither the brokers nor the store: main closes
// those after the sessions.
//
// The ops' results are docs/contract.md §8.10 (broker) and §9.3 (artifacts); the
// helpers that send them are §7.5 and §7.7; docs/design.md shows where the table sits
// between repl and the broker and store.
package cellops
