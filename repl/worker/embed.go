// Package worker holds the Python worker's source, embedded into the binary. The
// worker speaks the protocol in PROTOCOL.md; package repl starts and supervises it.
package worker

import _ "embed"

// Source is worker.py, run as `python -u -c Source`.
//
//go:embed worker.py
var Source string
