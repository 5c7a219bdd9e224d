// Package worker holds the Python worker's source, worker.py, embedded into the
// binary. The worker speaks the protocol in PROTOCOL.md; package repl starts and
// supervises it. worker.py uses the Python standard library only, since it runs inside
// the user's own interpreter, and test_worker.py tests it directly over that protocol.
package worker
