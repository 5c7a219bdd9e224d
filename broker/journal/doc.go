// Package journal owns the broker's effect journal: the metadata of every
// downstream tool call (session, project, run, server, tool, times and status,
// never arguments or results), so that after a cancel or a crash an agent can
// tell whether a remote write may have happened (docs/contract.md §8.8). It does not
// decide when a call is dispatched or how it ended; the broker reports both. main
// opens the one [Journal] of a server with [Open] and closes it after every
// broker that writes to it; nothing in it runs in the background.
//
// With a path, the journal is a private file holding a JSON array with one
// record per line, owned by one Journal at a time through an exclusive lock on
// its lock file. Every change is written as an atomic snapshot (temp file in the
// same directory, fsync, rename, fsync the directory) before Dispatch or Finish
// returns. Writers are serialized and coalesce: a writer whose change was
// already included in another writer's snapshot returns at once. The metadata
// mutex is never held across I/O, so Records never waits on a disk flush.
//
// Its contract is docs/contract.md §8.8.
package journal
