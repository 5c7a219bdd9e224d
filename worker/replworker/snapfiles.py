"""The files of a snapshot (PROTOCOL.md, Snapshots), shared by the writer (snapshots) and
the reader (restore): a private directory per snapshot, reached by descriptor and never
through a symbolic link; segment files of entries; a manifest that is its JSON body, a
newline, the hex HMAC-SHA256 of MANIFEST_LABEL and the body under the user's key, and a
newline; each entry authenticated by an HMAC of its place and bytes, listed in the
manifest. Files are written whole: a temp file, fsync, rename, fsync of the directory.

hmac and hashlib (OpenSSL) are imported when a snapshot is first written or read, not
at every worker's start."""

import json
import os
import stat
import time

from .limits import MANIFEST_BYTES
from .messages import (
    SNAP_DIR_FOREIGN, SNAP_DIR_LINK, SNAP_DIR_NOT_DIR, SNAP_DIR_OPEN, SNAP_FILE_NOT_PRIVATE, SNAP_MANIFEST_FOREIGN,
    SNAP_MANIFEST_FORMAT, SNAP_MANIFEST_MISSING, SNAP_MANIFEST_TAMPERED, SNAP_MANIFEST_TOO_LARGE,
)

MANIFEST_FORMAT = 'repl-mcp-snapshot-v1'
MANIFEST_NAME = 'manifest'
MANIFEST_LABEL = b'repl-mcp snapshot manifest v1\n'
ENTRY_LABEL = b'repl-mcp snapshot entry v1\n'
SEGMENT_PREFIX = 'seg-'
SEGMENT_SUFFIX = '.dat'
TEMP_SUFFIX = '.tmp'
NAMESPACE_PID = ('ns',)  # the persistent id of the session's namespace itself
_OPEN_FLAGS = os.O_CLOEXEC | os.O_NOFOLLOW


class Refused(Exception):
    """A snapshot (or a file of it) that is not ours to trust; str() says why."""


def now():
    """The time as the manifests write it: RFC 3339, UTC, milliseconds."""
    seconds = time.time()
    return time.strftime('%Y-%m-%dT%H:%M:%S', time.gmtime(seconds)) + f'.{int(seconds * 1000) % 1000:03d}Z'


def key_id(key):
    """Names a key without revealing it; the server computes the same (statedir.Dir.KeyID)."""
    import hashlib
    return hashlib.sha256(b'repl-mcp key id\n' + key).hexdigest()[:16]


def open_private_dir(path):
    """A descriptor of the snapshot directory `path`: a directory of this user's that no
    one else can enter, never a symbolic link (refused with the reason)."""
    try:
        info = os.lstat(path)
    except OSError as exc:
        raise Refused(SNAP_DIR_OPEN.format(path, exc.strerror or exc)) from None
    if stat.S_ISLNK(info.st_mode):
        raise Refused(SNAP_DIR_LINK.format(path))
    try:
        fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY | _OPEN_FLAGS)
    except OSError as exc:
        raise Refused(SNAP_DIR_OPEN.format(path, exc.strerror or exc)) from None
    opened = os.fstat(fd)
    if not stat.S_ISDIR(opened.st_mode) or (opened.st_dev, opened.st_ino) != (info.st_dev, info.st_ino):
        os.close(fd)
        raise Refused(SNAP_DIR_NOT_DIR.format(path))
    if opened.st_uid != os.geteuid() or opened.st_mode & 0o077:
        os.close(fd)
        raise Refused(SNAP_DIR_FOREIGN.format(path, opened.st_uid, stat.S_IMODE(opened.st_mode)))
    return fd


def open_private_file(dir_fd, name):
    """A file of the snapshot for reading: a regular 0600 file of this user's, never a link."""
    try:
        fd = os.open(name, os.O_RDONLY | os.O_NONBLOCK | _OPEN_FLAGS, dir_fd=dir_fd)
    except OSError as exc:
        raise Refused(SNAP_FILE_NOT_PRIVATE.format(name, exc.strerror or exc)) from None
    info = os.fstat(fd)
    if not stat.S_ISREG(info.st_mode) or info.st_uid != os.geteuid() or info.st_mode & 0o077:
        os.close(fd)
        raise Refused(SNAP_FILE_NOT_PRIVATE.format(name, 'not a private regular file'))
    os.set_blocking(fd, True)
    return fd


def create_file(dir_fd, name):
    """A new file of the snapshot, 0600, created exclusively, never through a link."""
    return os.open(name, os.O_WRONLY | os.O_CREAT | os.O_EXCL | _OPEN_FLAGS, 0o600, dir_fd=dir_fd)


def write_all(fd, data):
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]


def replace_file(dir_fd, name, data):
    """Replace `name` with `data` whole: a temp file beside it, fsync, rename, fsync dir."""
    temporary = f'.{name}.{os.urandom(6).hex()}{TEMP_SUFFIX}'
    fd = create_file(dir_fd, temporary)
    try:
        write_all(fd, data)
        os.fsync(fd)
    except BaseException:
        os.close(fd)
        remove(dir_fd, temporary)
        raise
    os.close(fd)
    os.rename(temporary, name, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)
    os.fsync(dir_fd)


def remove(dir_fd, name):
    try:
        os.unlink(name, dir_fd=dir_fd)
    except OSError:
        pass


def encode_manifest(body, key):
    """The manifest file: its body (compact JSON, one line), then its HMAC line."""
    import hmac
    data = json.dumps(body, separators=(',', ':')).encode('ascii')
    mac = hmac.new(key, MANIFEST_LABEL + data, 'sha256').hexdigest()
    return data + b'\n' + mac.encode('ascii') + b'\n'


def read_manifest(dir_fd, key, snapshot):
    """The authenticated body of the snapshot's manifest, refused with the reason when it
    is missing, not private, too large, tampered or foreign."""
    try:
        fd = open_private_file(dir_fd, MANIFEST_NAME)
    except Refused:
        if not _exists(dir_fd, MANIFEST_NAME):
            raise Refused(SNAP_MANIFEST_MISSING) from None
        raise
    with open(fd, 'rb') as file:
        data = file.read(MANIFEST_BYTES + 1)
    if len(data) > MANIFEST_BYTES:
        raise Refused(SNAP_MANIFEST_TOO_LARGE)
    import hmac
    body, _, mac = data.removesuffix(b'\n').rpartition(b'\n')
    want = hmac.new(key, MANIFEST_LABEL + body, 'sha256').hexdigest().encode('ascii')
    try:
        manifest = json.loads(body)
    except ValueError:
        manifest = None
    if type(manifest) is not dict or manifest.get('format') != MANIFEST_FORMAT:
        raise Refused(SNAP_MANIFEST_FORMAT)
    if manifest.get('key_id') != key_id(key):
        raise Refused(SNAP_MANIFEST_FOREIGN)
    if not hmac.compare_digest(mac, want) or manifest.get('snapshot') != snapshot:
        raise Refused(SNAP_MANIFEST_TAMPERED)
    return manifest


def _exists(dir_fd, name):
    try:
        os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
        return True
    except OSError:
        return False


def entry_mac(key):
    """The HMAC of an entry's bytes, to be ended with entry_context once they are all in."""
    import hmac
    return hmac.new(key, ENTRY_LABEL, 'sha256')


def entry_context(mac, snapshot, name, kind, pickle_bytes, buffers):
    """End an entry's HMAC with where it belongs (its snapshot and variable) and the shape of
    its bytes, so that an entry moved to another variable or snapshot fails; the hex MAC."""
    context = json.dumps([snapshot, name, kind, pickle_bytes, list(buffers)], separators=(',', ':'))
    mac.update(b'\n' + context.encode('utf-8', 'surrogatepass'))
    return mac.hexdigest()
