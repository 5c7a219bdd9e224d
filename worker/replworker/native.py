"""The native-output pipe: fd 1 and fd 2 as the worker found them at start, which C code,
`os.write(1, ...)` and child processes write to and the server reads; known by identity,
and the barrier the worker writes there before a result when the server may not have read
everything yet (PROTOCOL.md, The barrier). After a run that started a child process, the
worker puts a new pipe at fd 1 and 2 (PROTOCOL.md, Native pipes): the children keep the
old one, so the server can tell what they write from what later cells write."""

import fcntl
import os
import socket
import sys
import termios

from .channel import null_over, private_fd, protocol_error
from .messages import BAD_NATIVE_SOCKET

# Whether the kernel says how many bytes a pipe holds, asked on the end the worker writes:
# Linux answers FIONREAD on either end of a pipe. Elsewhere the barrier is always written.
_PIPE_FIONREAD = sys.platform == 'linux'
_NO_BYTES = bytes(4)  # FIONREAD's int, as ioctl's buffer


def _identity(fd):
    """(st_dev, st_ino) of what `fd` refers to, or None when it is not open."""
    try:
        st = os.fstat(fd)
    except (OSError, ValueError):
        return None
    return st.st_dev, st.st_ino


def _private_copy(fd):
    """A duplicate of `fd` above the standard descriptors, closed on exec (no child gets it)."""
    try:
        return fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, 3)
    except OSError:
        return None


def _unread(fd):
    """Whether the pipe `fd` is an end of may hold bytes its reader has not read: on Linux,
    whether it holds any now; True where the kernel does not say (another platform, or
    `fd` is no pipe)."""
    if not _PIPE_FIONREAD:
        return True
    try:
        return fcntl.ioctl(fd, termios.FIONREAD, _NO_BYTES) != _NO_BYTES
    except OSError:
        return True


class NativeOutput:
    """fd 1 and fd 2 as the worker found them at start (the native-output pipe), known by
    identity. A cell may close either and open a file that takes its number: the worker
    then never writes there. It checks a descriptor's identity before each write of its
    own, and keeps a private duplicate of the pipe so that its barrier still reaches the
    server when the cell has closed both. A duplicate that stopped being the pipe (the
    cell closed its number too) is forgotten, never closed: the number is someone else's."""

    def __init__(self):
        self._start = {fd: _identity(fd) for fd in (1, 2)}
        self._copies = {}  # identity -> private duplicate
        for fd, identity in self._start.items():
            if identity is not None and identity not in self._copies:
                copy = _private_copy(fd)
                if copy is not None:
                    self._copies[identity] = copy
        self._socket = _native_socket()  # where new pipes go to the server; None: never rotate
        os.register_at_fork(after_in_child=self._disown)

    def _disown(self):
        """In the child of a bare os.fork(): the server's socket is the worker's alone."""
        if self._socket is not None:
            null_over(self._socket.fileno())
            self._socket = None

    def mark_and_rotate(self, data, rotate):
        """mark(data), and with `rotate`, a new pipe at fd 1 and 2 (those that still are
        the pipe), its read end sent to the server first: the processes that hold the old
        pipe write to it from now on, and the server reads what they write there as
        theirs. Returns (whether the barrier was written, whether the pipe was replaced)."""
        old = self._start[2]
        if not rotate or self._socket is None or old is None:
            return self.mark(data), False
        read_end, write_end = os.pipe()  # both close-on-exec: no child gets them
        try:
            socket.send_fds(self._socket, [b'p'], [read_end])
        except OSError:
            os.close(write_end)
            return self.mark(data), False  # the server reads the old pipe on
        finally:
            os.close(read_end)
        marked = self.mark(data)  # into the old pipe: the run's bytes end there
        new = _identity(write_end)
        for fd in (1, 2):
            if self._start[fd] == old and _identity(fd) == old:
                os.dup2(write_end, fd)  # inheritable, as fd 1 and 2 are
            if self._start[fd] == old:
                self._start[fd] = new
        copy = self._copies.pop(old, None)
        if copy is not None and _identity(copy) == old:
            os.close(copy)  # the worker holds none of the old pipe: it ends with its last writer
        self._copies[new] = write_end  # close-on-exec and above fd 2: a private copy as it is
        return marked, True

    def descriptor(self, fd):
        """A descriptor that is still what `fd` (1 or 2) was at start: `fd` itself while it
        is, else the private duplicate; None when there is none."""
        identity = self._start.get(fd)
        if identity is None:
            return None
        if _identity(fd) == identity:
            return fd
        return self._find(identity)

    def mark(self, data):
        """Write `data` (the run's barrier) in one write to what fd 2 was at start, unless
        the server has already read every byte written there (the pipe holds none: see
        PROTOCOL.md, The barrier). Returns whether it was written; it is not when no
        descriptor is the pipe any more either."""
        identity = self._start[2]
        fd = self._find(identity) if identity is not None else None
        if fd is None or not _unread(fd):
            return False
        try:
            os.write(fd, data)
        except OSError:
            return False
        return True

    def _find(self, identity):
        """The private duplicate of `identity`, else fd 2 or 1 if one still is it (the
        duplicate is then made again from it); None when none is."""
        copy = self._copies.get(identity)
        if copy is not None:
            if _identity(copy) == identity:
                return copy
            del self._copies[identity]
        for fd in (2, 1):
            if _identity(fd) == identity:
                copy = _private_copy(fd)
                if copy is not None:
                    self._copies[identity] = copy
                return fd
        return None


def _native_socket():
    """The socket the server takes new native pipes on (REPL_MCP_WORKER_NATIVE, an fd
    number), moved to a private descriptor like the protocol pipes; None without one (the
    tests' and the bench's workers): the pipe then never changes."""
    spec = os.environ.pop('REPL_MCP_WORKER_NATIVE', '')
    if not spec:
        return None
    try:
        fd = int(spec)
        os.fstat(fd)
        return socket.socket(fileno=private_fd(fd))
    except (ValueError, OSError) as exc:
        protocol_error(BAD_NATIVE_SOCKET.format(spec, exc))
