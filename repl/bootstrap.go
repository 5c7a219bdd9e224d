package repl

import (
	"fmt"
	"os"
	"time"

	"github.com/iota-uz/repl-mcp/repl/worker"
)

// bootstrap is the -c program that starts a worker. It refuses old interpreters
// before the worker's source is compiled (which could fail there with a confusing
// SyntaxError), then reads the source from the protocol pipe: a decimal byte count on
// one line, then the UTF-8 source. Passing the source through the pipe rather than
// argv keeps it off process listings and clear of the kernel's 128 KiB limit on one
// argument.
//
// -c puts the working directory (the project) first on sys.path. The bootstrap takes
// it off while the worker imports the standard library, so that a project file
// named like a module (concurrent.py, queue.py) cannot break the worker; the worker
// puts it back (_REPL_MCP_PATH0) before it runs any cell, as a Python REPL has it.
const bootstrap = `import os, sys
if sys.version_info < (3, 10):
    sys.stderr.write("repl-mcp needs Python 3.10 or newer; this is Python %s\n" % sys.version.split()[0])
    sys.exit(3)
_REPL_MCP_PATH0 = sys.path.pop(0) if sys.path[:1] == [""] else None
def _repl_read_source():
    fd = int(os.environ["REPL_MCP_WORKER_FDS"].split(",")[0])
    header = b""
    while not header.endswith(b"\n"):
        byte = os.read(fd, 1)
        if not byte or len(header) > 20:
            sys.exit(2)
        header += byte
    size, data = int(header), bytearray()
    while len(data) < size:
        chunk = os.read(fd, size - len(data))
        if not chunk:
            sys.exit(2)
        data += chunk
    return data.decode("utf-8")
exec(compile(_repl_read_source(), "<repl-mcp worker>", "exec"))
`

// sendSource writes the worker's source for the bootstrap to read. It runs beside
// the handshake: an interpreter that fails before reading makes the write fail,
// and the handshake then reports why the interpreter failed.
func sendSource(w *os.File) error {
	w.SetWriteDeadline(time.Now().Add(handshakeTimeout))
	defer w.SetWriteDeadline(time.Time{})
	_, err := fmt.Fprintf(w, "%d\n%s", len(worker.Source), worker.Source)
	return err
}
