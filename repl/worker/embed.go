package worker

import _ "embed"

// Source is worker.py. The bootstrap in package repl runs it as the argument after
// its own -c program, once the interpreter is known to be new enough.
//
//go:embed worker.py
var Source string
