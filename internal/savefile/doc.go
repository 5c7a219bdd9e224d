// Package savefile writes a file the user named, under the rules artifact_save
// fixes (docs/contract.md §3.9) for every tool that writes where a caller asks:
// the path is absolute and a name a file can have, its parent exists and is a
// directory, the bytes go to a temp file beside it (mode 0600) that is fsynced,
// then become the destination by rename (overwrite) or by hard link (otherwise,
// which fails when anything, a dangling symlink included, is there already), so
// the destination is never half-written. Overwrite replaces only a regular file: a
// symlink, a FIFO, a socket or a device node there is refused (never followed, never
// replaced). The caller owns
// the messages: each rule's failure is the error it gives in [Rules].
//
// docs/design.md ("Layout") places it among the packages.
package savefile
