package repl

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"time"

	"github.com/iota-uz/repl-mcp/repl/worker"
)

// bootstrap is the -c program that starts a worker. It refuses old interpreters
// before the worker's source is compiled (which could fail there with a confusing
// SyntaxError), then reads the source from the protocol pipe: a header line with the
// byte count and the source's digest, then the UTF-8 source. Passing the source
// through the pipe rather than argv keeps it off process listings and clear of the
// kernel's 128 KiB limit on one argument.
//
// Compiling the source is a good part of a cold start, so the compiled code is kept
// in REPL_MCP_WORKER_CACHE (when set) under the digest and the interpreter's exact
// version, and loaded from there when a file there is ours and private. Any problem
// with the cache falls back to compiling: the cache can make a start faster, never
// make it fail.
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
def _repl_read(fd, size):
    data = bytearray()
    while len(data) < size:
        chunk = os.read(fd, size - len(data))
        if not chunk:
            break
        data += chunk
    return bytes(data)
def _repl_read_source():
    fd = int(os.environ["REPL_MCP_WORKER_FDS"].split(",")[0])
    header = b""
    while not header.endswith(b"\n"):
        byte = os.read(fd, 1)
        if not byte or len(header) > 100:
            sys.exit(2)
        header += byte
    size, digest = header.split()
    source = _repl_read(fd, int(size))
    if len(source) < int(size):
        sys.exit(2)
    return source, digest.decode("ascii")
def _repl_cached(path):
    try:
        import marshal
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
        try:
            st = os.fstat(fd)
            if st.st_uid != os.geteuid() or st.st_mode & 0o022 or st.st_size > 1 << 24:
                return None
            code = marshal.loads(_repl_read(fd, st.st_size))
        finally:
            os.close(fd)
        return code if type(code) is type(_repl_cached.__code__) else None
    except Exception:
        return None
def _repl_store(cache, path, code):
    tmp = "%s.%d.tmp" % (path, os.getpid())
    try:
        import marshal
        os.makedirs(cache, 0o700, exist_ok=True)
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
        try:
            data = memoryview(marshal.dumps(code))
            while data:
                data = data[os.write(fd, data):]
        finally:
            os.close(fd)
        os.replace(tmp, path)
        suffix = path[path.rindex("-", 0, path.rindex("-")):]
        for name in os.listdir(cache):
            if name.startswith("worker-") and name.endswith(suffix) and os.path.join(cache, name) != path:
                os.unlink(os.path.join(cache, name))
    except Exception:
        try:
            os.unlink(tmp)
        except OSError:
            pass
def _repl_code(source, digest):
    cache = os.environ.get("REPL_MCP_WORKER_CACHE")
    path = cache and os.path.join(cache, "worker-%s-%s-%x.code" % (digest, sys.implementation.cache_tag, sys.hexversion))
    code = path and _repl_cached(path)
    if not code:
        code = compile(source.decode("utf-8"), "<repl-mcp worker>", "exec")
        if path:
            _repl_store(cache, path, code)
    return code
exec(_repl_code(*_repl_read_source()))
`

// workerDigest names the worker's source in the code cache.
var workerDigest = func() string {
	sum := sha256.Sum256([]byte(worker.Source))
	return hex.EncodeToString(sum[:12])
}()

// sendSource writes the worker's source for the bootstrap to read. It runs beside
// the handshake: an interpreter that fails before reading makes the write fail,
// and the handshake then reports why the interpreter failed.
func sendSource(w *os.File) error {
	w.SetWriteDeadline(time.Now().Add(handshakeTimeout))
	defer w.SetWriteDeadline(time.Time{})
	_, err := fmt.Fprintf(w, "%d %s\n%s", len(worker.Source), workerDigest, worker.Source)
	return err
}
