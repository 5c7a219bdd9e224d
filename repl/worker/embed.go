package worker

import _ "embed"

// Source is worker.py. The bootstrap in package repl (a short -c program) reads it
// from the protocol pipe once the interpreter is known to be new enough, and runs it.
//
//go:embed worker.py
var Source string
