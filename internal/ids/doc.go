// Package ids makes the random identifiers the server hands out: run, session and
// server ids, and the journal's record ids.
//
// docs/design.md ("Layout") places it among the packages; the ids' forms are
// docs/contract.md §4.1.
package ids
