package repl

import (
	"io"
	"os"
	"time"

	"github.com/iota-uz/repl-mcp/worker"
)

// workerArgs start a worker: python -u -c <bootstrap>. The bootstrap (package worker's
// bootstrap.py) refuses interpreters older than 3.10 before any worker code is compiled,
// reads the worker's modules from the protocol pipe (see sendSource), keeps their
// compiled code in the private cache REPL_MCP_WORKER_CACHE names (when set) and runs
// them. Sending the modules through the pipe rather than argv keeps them off process
// listings and clear of the kernel's 128 KiB limit on one argument.
func workerArgs() []string { return []string{"-u", "-c", worker.Bootstrap} }

// sendSource writes the worker's bundle for the bootstrap to read. It runs beside the
// handshake: an interpreter that fails before reading makes the write fail, and the
// handshake then reports why the interpreter failed.
func sendSource(w *os.File) error {
	w.SetWriteDeadline(time.Now().Add(handshakeTimeout))
	defer w.SetWriteDeadline(time.Time{})
	_, err := io.WriteString(w, worker.Bundle())
	return err
}
