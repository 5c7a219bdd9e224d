"""checkpoint() and restore(): the namespace's small exact-JSON variables in a file, written
atomically; nothing is pickled and no user code runs."""

import json
import os

from .common import read_prefix
from .limits import CHECKPOINT_BYTES, CHECKPOINT_RESERVE, CHECKPOINT_VARIABLES, NAME_CHARS, PREVIEW_NODES
from .messages import (
    CHECKPOINT_BAD_NAMES, CHECKPOINT_BAD_VALUE, CHECKPOINT_FORMAT, CHECKPOINT_TOO_LARGE,
    CHECKPOINT_TOO_MANY, CHECKPOINT_UNSUPPORTED, SKIP_BYTE_LIMIT, SKIP_CUSTOM, SKIP_LARGE_STRING,
    SKIP_NOT_PLAIN,
)
from .rendering import NotPreviewable, plain_json


def _checkpoint_json(value):
    # ASCII escapes keep any string (lone surrogates included) exact through a restore.
    return json.dumps(value, separators=(',', ':'))


def _skip_reason(value):
    cls = type(value)
    if cls is str:
        return SKIP_LARGE_STRING
    if any(cls is plain for plain in (int, float, list, tuple, dict)):
        return SKIP_NOT_PLAIN
    return SKIP_CUSTOM


def checkpoint(namespace, reserved, path):
    """checkpoint(): the namespace's small exact-JSON variables, written atomically to
    `path`. Nothing is pickled and no user code runs; the rest is listed in `skipped` or
    counted in `omitted`."""
    target = os.path.abspath(os.path.expanduser(os.fspath(path)))
    values, skipped, omitted, considered = {}, {}, 0, 0
    room = CHECKPOINT_BYTES - CHECKPOINT_RESERVE
    for name, value in list(namespace.items()):
        if type(name) is str and name in reserved:
            continue
        if type(name) is not str or len(name) > NAME_CHARS or considered >= CHECKPOINT_VARIABLES:
            omitted += 1
            continue
        considered += 1
        try:
            plain, reason = plain_json(value, 0, [PREVIEW_NODES]), None
        except NotPreviewable:
            plain, reason = None, _skip_reason(value)
        if reason is None:
            size = len(_checkpoint_json({name: plain}))
            if size <= room:
                values[name] = plain
                room -= size
                continue
            reason = SKIP_BYTE_LIMIT
        size = len(_checkpoint_json({name: reason}))
        if size <= room:
            skipped[name] = reason
            room -= size
        else:
            omitted += 1
    document = {'format': CHECKPOINT_FORMAT, 'values': values, 'skipped': skipped, 'omitted': omitted}
    write_atomically(target, _checkpoint_json(document).encode('ascii'))
    return {'saved': len(values), 'skipped': skipped, 'omitted': omitted}


def write_atomically(target, data):
    """Replace `target` with `data` whole or not at all: an exclusive 0600 temporary file
    beside it, fsynced, renamed over it, and the directory fsynced; the temporary file is
    removed on failure."""
    temporary = f'{target}.{os.urandom(8).hex()}.part'
    fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o600)
    try:
        with open(fd, 'wb') as file:
            file.write(data)
            file.flush()
            os.fsync(fd)
        os.rename(temporary, target)
    except BaseException:
        try:
            os.unlink(temporary)
        except OSError:
            pass
        raise
    _fsync_directory(os.path.dirname(target))


def _fsync_directory(path):
    """Make a rename in `path` durable; best effort, as some filesystems refuse to."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
    except OSError:
        pass


def restore(namespace, reserved, path):
    """restore(): validate a whole checkpoint file, then merge its values into the namespace."""
    data = read_prefix(os.path.abspath(os.path.expanduser(os.fspath(path))), CHECKPOINT_BYTES)
    if len(data) > CHECKPOINT_BYTES:
        raise ValueError(CHECKPOINT_TOO_LARGE)
    try:
        document = json.loads(data)
    except (ValueError, RecursionError):
        raise ValueError(CHECKPOINT_UNSUPPORTED) from None
    if type(document) is not dict or document.get('format') != CHECKPOINT_FORMAT:
        raise ValueError(CHECKPOINT_UNSUPPORTED)
    values = document.get('values')
    if type(values) is not dict or len(values) > CHECKPOINT_VARIABLES:
        raise ValueError(CHECKPOINT_TOO_MANY)
    if not all(len(name) <= NAME_CHARS and name not in reserved for name in values):
        raise ValueError(CHECKPOINT_BAD_NAMES)
    for name, value in values.items():
        try:
            plain_json(value, 0, [PREVIEW_NODES])
        except NotPreviewable:
            raise ValueError(CHECKPOINT_BAD_VALUE.format(name)) from None
    namespace.update(values)
    return {'restored': len(values), 'state': 'merged'}
