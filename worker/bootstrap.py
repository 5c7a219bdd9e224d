# The program a worker starts as: python -u -c <this file>. It refuses interpreters older
# than 3.10, reads the worker's modules from the protocol pipe (the bundle, PROTOCOL.md),
# installs them as a package under a private name and runs it.
#
# Python compiles all of this before the version check runs, so it keeps to syntax every
# Python has (no f-strings, keyword-only arguments, walrus, ...): an old interpreter then
# gets the one-line refusal instead of a SyntaxError.
import sys
if sys.version_info < (3, 10):
    sys.stderr.write("repl-mcp needs Python 3.10 or newer; this is Python %s\n" % sys.version.split()[0])
    sys.exit(3)

# -c puts the working directory (the project) first on sys.path. It stays off while the
# worker and the standard library load, so that a project file named like a module
# (signal.py, queue.py) cannot break the worker; main.run() puts it back before the
# first cell, as a Python REPL has it. Only sys, built in, is imported before this.
_PATH0 = sys.path.pop(0) if sys.path[:1] == [""] else None

import os
import signal

# Until the worker installs its own handler, a SIGINT sent to the process group must not
# kill a worker that is still starting.
signal.signal(signal.SIGINT, signal.SIG_IGN)

import marshal
from importlib.machinery import ModuleSpec

# The package's name in sys.modules: no file can be imported under it (it is no
# identifier), so it neither shadows a user's module nor is shadowed by one. Its modules'
# code is named <repl-mcp worker>/NAME.py, a file name no cell or saved file has.
_PACKAGE = "<repl-mcp worker>"
_HEADER_BYTES = 100
_BUNDLE_BYTES = 1 << 24
_CACHE_BYTES = 1 << 24


def _protocol_error(message):
    os.write(2, ("repl-mcp worker: protocol error: %s\n" % message).encode("utf-8", "replace"))
    os._exit(2)


def _read(fd, size):
    data = bytearray()
    while len(data) < size:
        chunk = os.read(fd, size - len(data))
        if not chunk:
            break
        data += chunk
    return bytes(data)


def _read_bundle():
    """(digest, payload, {module: (start, end) of its source in payload}) of the bundle
    the server writes to the command pipe before any frame (PROTOCOL.md, The bundle)."""
    try:
        fd = int(os.environ["REPL_MCP_WORKER_FDS"].split(",")[0])
    except (KeyError, ValueError):
        _protocol_error("REPL_MCP_WORKER_FDS is not set to R,W")
    header = b""
    while not header.endswith(b"\n"):
        byte = os.read(fd, 1)
        if not byte or len(header) > _HEADER_BYTES:
            _protocol_error("no bundle header on the command pipe")
        header += byte
    try:
        size, digest = header.split()
        size, digest = int(size), digest.decode("ascii")
    except ValueError:
        _protocol_error("bundle header %r is not SIZE DIGEST" % header)
    if not 0 < size <= _BUNDLE_BYTES:
        _protocol_error("bundle size %d is not in 1..%d" % (size, _BUNDLE_BYTES))
    payload = _read(fd, size)
    if len(payload) < size:
        _protocol_error("the bundle ended after %d of %d bytes" % (len(payload), size))
    index_end = payload.find(b"\n")
    fields = payload[:max(index_end, 0)].split()
    modules, start = {}, index_end + 1
    try:
        if index_end < 0 or len(fields) % 2:
            raise ValueError("no index")
        for name, length in zip(fields[0::2], fields[1::2]):
            end = start + int(length)
            modules[name.decode("ascii")] = (start, end)
            start = end
    except ValueError:
        modules = None
    if not modules or start != size:
        _protocol_error("the bundle's index does not describe its sources")
    return digest, payload, modules


def _cached(path, names):
    """The code objects kept at `path`, or None: any problem means compiling instead."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
        try:
            st = os.fstat(fd)
            if st.st_uid != os.geteuid() or st.st_mode & 0o022 or st.st_size > _CACHE_BYTES:
                return None
            codes = marshal.loads(_read(fd, st.st_size))
        finally:
            os.close(fd)
        code_type = type(_cached.__code__)
        if type(codes) is not dict or sorted(codes) != sorted(names):
            return None
        for code in codes.values():
            if type(code) is not code_type:
                return None
        return codes
    except Exception:
        return None


def _store(cache, path, codes):
    """Keep `codes` at `path`, best effort, and remove the entries of other bundles for
    this interpreter."""
    tmp = "%s.%d.tmp" % (path, os.getpid())
    try:
        os.makedirs(cache, 0o700, exist_ok=True)
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
        try:
            data = memoryview(marshal.dumps(codes))
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


class _Package(object):
    """The meta path finder and loader of the worker's modules, first on sys.meta_path
    and answering for _PACKAGE alone. get_source lets linecache show the lines of a worker
    bug's traceback."""

    def __init__(self, payload, modules, codes):
        self._payload = payload
        self._modules = modules
        self._codes = codes

    def find_spec(self, name, path=None, target=None):
        module = self._module(name)
        if module not in self._codes:
            return None
        return ModuleSpec(name, self, origin=_filename(module), is_package=module == "__init__")

    def create_module(self, spec):
        return None

    def exec_module(self, module):
        key = self._module(module.__name__)
        module.__file__ = _filename(key)
        exec(self._codes[key], module.__dict__)

    def get_source(self, name):
        start, end = self._modules[self._module(name)]
        return self._payload[start:end].decode("utf-8")

    def _module(self, name):
        if name == _PACKAGE:
            return "__init__"
        if name.startswith(_PACKAGE + "."):
            return name[len(_PACKAGE) + 1:]
        return None


def _filename(module):
    return "%s/%s.py" % (_PACKAGE, module)


def _codes(digest, payload, modules):
    """Every module's code: from the cache when it has this bundle for this interpreter,
    else compiled (and then kept there)."""
    cache = os.environ.get("REPL_MCP_WORKER_CACHE")
    path = cache and os.path.join(cache, "worker-%s-%s-%x.code" % (digest, sys.implementation.cache_tag, sys.hexversion))
    codes = path and _cached(path, modules)
    if not codes:
        codes = {}
        for module, (start, end) in modules.items():
            codes[module] = compile(payload[start:end].decode("utf-8"), _filename(module), "exec", dont_inherit=True)
        if path:
            _store(cache, path, codes)
    return codes


def _start():
    digest, payload, modules = _read_bundle()
    sys.meta_path.insert(0, _Package(payload, modules, _codes(digest, payload, modules)))
    __import__(_PACKAGE + ".main")
    return sys.modules[_PACKAGE + ".main"].run


_start()(_PATH0)
