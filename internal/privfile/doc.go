// Package privfile holds the rules for private files that the HTTP token file, the
// broker's journal and its OAuth credential store share: opening one (never through
// a link, never blocking on a FIFO), a private file (a regular file of the effective
// user without group or other permission bits), a lock file beside it (created 0600,
// never through a link, held with a non-blocking exclusive flock), and an atomic
// replace (a temp file in the same directory, fsync, rename, fsync the directory).
//
// It does not say what a file holds or what a failure means to its user: callers
// word the errors (the journal's and the store's messages differ) from the
// sentinels and reasons returned here. Nothing here runs in the background; a
// lock is held from [Lock] until the caller's [Unlock] (or its process's exit).
//
// The file rules it enforces are those of docs/contract.md §2.7 (the HTTP token
// file), §8.7 (the credential store) and §8.8 (the journal).
package privfile
