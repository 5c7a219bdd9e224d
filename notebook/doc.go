// Package notebook keeps what a person reads of a session: every cell it ran, with
// bounded outputs, beyond the session's 64-run history, and writes it as a Jupyter
// notebook (nbformat 4.5): on request (python_session_export, repl_export) and,
// with --notebook-dir, as cells finish, into a file a JupyterLab or VS Code open on
// it shows live.
//
// A [Keeper] is package repl's Recorder: a session tells it of every finished cell
// and of its close. It owns one private directory under the user's cache for this
// server lifetime (locked while it lives; a new Keeper removes those of dead
// servers), one subdirectory per session holding its cells in segment files (at
// most MaxCells and MaxBytes per session, oldest first out, the number dropped said
// in the notebook), and removes a session's record when the session closes and its
// whole directory at [Keeper.Close]. It starts two goroutines and stops both at
// Close: writeRecords does the record's file work after each call has answered, in
// order; with a live directory, liveLoop writes the live notebooks (live.go),
// coalesced, appending what is new. It knows nothing of MCP (package server's tool
// and package cellops' op call [Keeper.Export]) nor of Python: the cells come
// rendered by the worker (previews, pandas' own HTML, images).
//
// The notebook's shape is docs/contract.md §3 (python_session_export) and §7
// (repl_export); its record bounds are listed there too.
package notebook
