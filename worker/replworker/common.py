"""What every module of the worker shares: the run-id context variable, the "no value"
marker, names read from type slots and frames, bounded UTF-8 text, and bounded reads of
regular files."""

import contextvars
import json
import os
import stat

from .limits import TYPE_NAME_CHARS
from .messages import NOT_REGULAR_FILE

# The run id of the cell whose code is running in this context. Tasks, callbacks and
# executor jobs inherit it, which is how they are attributed to their originating cell.
RUN_ID = contextvars.ContextVar('repl_mcp_run_id', default=None)
MISSING = object()  # "no value", distinct from None
CELL_MODULE = '__repl__'  # __name__ in the namespace cells run in

# The package this module belongs to: a private name in a worker (see bootstrap.py), the
# directory's name when tests import it from disk. Code whose globals name a module of
# it is the worker's own.
PACKAGE = __name__.rpartition('.')[0]
_PACKAGE_PREFIX = PACKAGE + '.'

_type_name_slot = type.__dict__['__name__'].__get__


def type_name(cls):
    """The type's builtin name slot: metaclass properties and __getattribute__ never run."""
    return _type_name_slot(cls)[:TYPE_NAME_CHARS]


def module_name(frame):
    """__name__ of a frame's globals, read without running user code; '' when it is no str."""
    name = dict.get(frame.f_globals, '__name__')
    return name if type(name) is str else ''


def is_worker_module(name):
    return name.startswith(_PACKAGE_PREFIX) or name == PACKAGE


def utf8_prefix(text, room):
    """(kept text, its UTF-8 size, whether all of `text` fit) for at most `room` bytes.

    Only the first `room` characters are encoded (every character takes at least one
    byte), so a huge write costs no more than the budget. Lone surrogates become '?'."""
    head = text[:room]
    data = head.encode('utf-8', 'replace')
    if len(data) > room:
        cut = room
        while data[cut] & 0xC0 == 0x80:  # step back to the first byte of the split character
            cut -= 1
        return data[:cut].decode('utf-8'), cut, False
    return data.decode('utf-8'), len(data), len(head) == len(text)


def utf8_size(text):
    return len(text.encode('utf-8', 'replace'))


def json_text(value):
    return json.dumps(value, ensure_ascii=False, separators=(',', ':'))


def read_prefix(path, limit):
    """At most limit + 1 bytes of a regular file (one byte more tells that it is bigger).
    Opened without blocking, so a FIFO or device at `path` is refused instead of waited on."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    with open(fd, 'rb') as file:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise OSError(NOT_REGULAR_FILE.format(path))
        return file.read(limit + 1)
