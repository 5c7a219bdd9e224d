"""The native-output pipe: fd 1 and fd 2 as the worker found them at start, which C code,
`os.write(1, ...)` and child processes write to and the server reads; known by identity,
and the barrier the worker writes there before a result when the server may not have read
everything yet (PROTOCOL.md, The barrier)."""

import fcntl
import os
import sys
import termios

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
