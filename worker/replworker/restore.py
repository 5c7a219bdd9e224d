"""Restoring a snapshot into the namespace (docs/contract.md §6.7; PROTOCOL.md,
Snapshots): an `execute` with `restore` runs this instead of code. Only our own files are
loaded, since unpickling runs code: the directory and its files must be private and
never links, the manifest must carry this user's key and match its HMAC, and each entry
must match its own HMAC (over its bytes, its variable and its snapshot) before a byte of
it is unpickled. A refused, truncated or foreign entry is reported by name, with why.

Entries load in the manifest's order; an entry that refers to another variable (an
alias, a class, a module) loads that one first. The report lists what came back, what
did not and why, and for each variable that did not, the run whose code bound it."""

import asyncio
import contextvars
import importlib
import io
import os
import sys

from .common import RUN_ID, type_name
from .limits import RESTORE_LISTED, RESTORE_REPORT_BYTES, SNAPSHOT_CHUNK, SNAPSHOT_REASON_CHARS, SNAPSHOT_STOP_WAIT
from .messages import (
    RESTORE_CYCLE, RESTORE_DEPENDS, RESTORE_FAILED, RESTORE_INTERRUPTED, RESTORE_NO_MODULE, RESTORE_NOT_SAVED,
    RESTORE_NOTE, RESTORE_OTHER_PYTHON, RESTORE_STALE, RESTORE_TAMPERED, RESTORE_TRUNCATED, RESTORE_UNREADABLE,
    INTERRUPTED, SNAP_MANIFEST_PROJECT, SNAP_NOT_RESTORED,
)
from .output import STREAMS
from .snapfiles import NAMESPACE_PID, Refused, entry_context, entry_mac, open_private_dir, open_private_file, read_manifest
from .snapshots import Entry, Table


class _NotRestored(Exception):
    """A variable that does not come back; str() says why."""


class _Loader:
    """Loads a manifest's entries into the namespace, each at most once, dependencies first."""

    def __init__(self, namespace, dir_fd, key, manifest):
        self.namespace, self.dir_fd, self.key, self.manifest = namespace, dir_fd, key, manifest
        self.entries = {e['name']: e for e in manifest['entries'] if type(e) is dict and type(e.get('name')) is str}
        self.values, self.failed, self.loading = {}, {}, set()
        self.segments = {}  # segment name -> fd
        python = str(manifest.get('python', ''))
        self.same_python = python.split('.')[:2] == [str(sys.version_info[0]), str(sys.version_info[1])]
        self.python = python

    def close(self):
        for fd in self.segments.values():
            os.close(fd)

    def load(self, name):
        """The value of variable `name`, loading it first; _NotRestored when it cannot be."""
        if name in self.values:
            return self.values[name]
        if name in self.failed:
            raise _NotRestored(RESTORE_DEPENDS.format(name))
        if name in self.loading:
            raise _NotRestored(RESTORE_CYCLE.format(name))
        entry = self.entries.get(name)
        if entry is None:  # not saved, or not in the snapshot at all
            raise _NotRestored(RESTORE_DEPENDS.format(name))
        self.loading.add(name)
        try:
            value = self._load(entry)
        except _NotRestored as exc:
            self.failed[name] = str(exc)
            raise
        except ModuleNotFoundError as exc:
            self.failed[name] = RESTORE_NO_MODULE.format(exc.name)
            raise _NotRestored(self.failed[name]) from None
        except Exception as exc:
            self.failed[name] = RESTORE_FAILED.format(_text(exc))
            raise _NotRestored(self.failed[name]) from None
        finally:
            self.loading.discard(name)
        self.values[name] = value
        self.namespace[name] = value
        return value

    def _load(self, entry):
        if entry.get('kind') == 'module':
            return importlib.import_module(entry['module'])
        if entry.get('code') and not self.same_python:
            raise _NotRestored(RESTORE_OTHER_PYTHON.format(self.python, '.'.join(map(str, sys.version_info[:3]))))
        in_band, lengths = entry['pickle'], entry['buffers']
        fd = self._segment(entry['segment'])
        need = entry['offset'] + entry['bytes']
        have = os.fstat(fd).st_size
        if have < need or in_band + sum(lengths) != entry['bytes']:
            raise _NotRestored(RESTORE_TRUNCATED.format(max(0, have - entry['offset']), entry['bytes']))
        mac = entry_mac(self.key)
        data = self._read(fd, entry['offset'], in_band, mac)
        buffers, offset = [], entry['offset'] + in_band
        for length in lengths:
            buffers.append(self._read(fd, offset, length, mac))
            offset += length
        if entry_context(mac, self.manifest['snapshot'], entry['name'], 'pickle', in_band, lengths) != entry['mac']:
            raise _NotRestored(RESTORE_TAMPERED)
        import pickle
        return _unpickler()(self, io.BytesIO(data), [pickle.PickleBuffer(b) for b in buffers]).load()

    def _segment(self, name):
        if name not in self.segments:
            try:
                self.segments[name] = open_private_file(self.dir_fd, name)
            except Refused as exc:
                raise _NotRestored(RESTORE_UNREADABLE.format(exc)) from None
        return self.segments[name]

    def _read(self, fd, offset, length, mac):
        """`length` bytes at `offset` into a new bytearray (writable: numpy keeps it as its
        memory), each chunk into the HMAC."""
        data = bytearray(length)
        view, done = memoryview(data), 0
        while done < length:
            n = os.preadv(fd, [view[done:done + SNAPSHOT_CHUNK]], offset + done)
            if n <= 0:
                raise _NotRestored(RESTORE_TRUNCATED.format(done, length))
            mac.update(view[done:done + n])
            done += n
        return data


_UNPICKLER = []  # the class, once made


def _unpickler():
    """The Unpickler of entries: the namespace and other variables by their persistent
    ids (made once, when a restore first needs it: pickle is no import of every start)."""
    if _UNPICKLER:
        return _UNPICKLER[0]
    import pickle

    class Unpickler(pickle.Unpickler):
        def __init__(self, loader, file, buffers):
            super().__init__(file, buffers=buffers)
            self._loader = loader

        def persistent_load(self, pid):
            if pid == NAMESPACE_PID:
                return self._loader.namespace
            if type(pid) is tuple and len(pid) == 2 and pid[0] == 'var' and type(pid[1]) is str:
                return self._loader.load(pid[1])
            raise pickle.UnpicklingError('unknown persistent id')
    _UNPICKLER.append(Unpickler)
    return Unpickler


def _text(exc):
    try:
        return f'{type_name(type(exc))}: ' + ' '.join(str(exc).split())[:SNAPSHOT_REASON_CHARS]
    except Exception:
        return type_name(type(exc))


async def restore(spec, namespace, snapshots):
    """Load the snapshot `spec` names ({dir, snapshot, key, project, adopt}) into the
    namespace; the report is the result's value. With `adopt`, this worker's later
    snapshots go on in that directory, its restored entries already written."""
    key = bytes.fromhex(spec['key'])
    dir_fd = open_private_dir(spec['dir'])
    loader = None
    try:
        manifest = read_manifest(dir_fd, key, spec['snapshot'])
        if manifest.get('project') != spec['project']:
            raise Refused(SNAP_MANIFEST_PROJECT.format(manifest.get('project')))
        loader = _Loader(namespace, dir_fd, key, manifest)
        interrupted = None
        try:
            for name in loader.entries:
                await asyncio.sleep(0)  # a cancel (timeout, python_cancel) lands between entries
                try:
                    loader.load(name)
                except _NotRestored:
                    pass
        except asyncio.CancelledError:
            interrupted = RESTORE_INTERRUPTED
        _take_over(snapshots, manifest, loader, spec.get('adopt'))
        return report(manifest, loader, interrupted)
    finally:
        if loader is not None:
            loader.close()
        os.close(dir_fd)


def _take_over(snapshots, manifest, loader, adopt):
    """Tell the worker's snapshots what came back: the run that bound each variable and,
    when adopting, the entries themselves, so that the next pass writes only what changes."""
    if snapshots is None:
        return
    snapshots.runs += 1  # the namespace changed
    for name, value in loader.values.items():
        entry = loader.entries[name]
        snapshots.bound[name] = {key: entry.get(key, '') for key in ('run_id', 'bound_at', 'code_line', 'generation')}
        snapshots.note_restored(name, value)
    if not adopt or not snapshots.stop(SNAPSHOT_STOP_WAIT) or not snapshots.lock.acquire(timeout=SNAPSHOT_STOP_WAIT):
        return
    try:
        if snapshots.table is not None:
            snapshots.table.close()
        table = Table(manifest['snapshot'])
        for name, value in loader.values.items():
            entry = Entry({k: v for k, v in loader.entries[name].items() if k not in ('stale', 'stale_after', 'reason')},
                           value, snapshots.runs)
            table.entries[name] = entry
        table.complete_runs = snapshots.runs
        snapshots.table = table
    finally:
        snapshots.lock.release()


def report(manifest, loader, interrupted):
    """What came back and what did not, bounded (RESTORE_LISTED names each way,
    RESTORE_REPORT_BYTES of JSON); the counts are always whole."""
    restored, lost = [], []
    for name, entry in loader.entries.items():
        if name in loader.values:
            item = {'name': name, 'type': entry.get('type', ''), 'bytes': entry.get('bytes', 0)}
            if entry.get('kind') == 'module':
                item['type'] = f"module {entry.get('module')}"
            if entry.get('stale'):
                item['note'] = RESTORE_STALE.format(entry.get('stale_after') or '?')
            restored.append(item)
        else:
            reason = loader.failed.get(name) or interrupted or RESTORE_INTERRUPTED
            lost.append(_lost(entry, reason))
    for entry in manifest['skipped']:
        if type(entry) is dict:
            lost.append(_lost(entry, RESTORE_NOT_SAVED.format(entry.get('reason', ''))))
    value = {
        'snapshot': manifest['snapshot'], 'session_id': manifest.get('session_id'),
        'session_name': manifest.get('session_name'), 'saved_at': manifest.get('saved_at'),
        'generation': manifest.get('generation'), 'python': manifest.get('python'), 'pickler': manifest.get('pickler'),
        'restored_count': len(restored), 'not_restored_count': len(lost),
        'restored': restored[:RESTORE_LISTED], 'not_restored': lost[:RESTORE_LISTED],
    }
    if interrupted:
        value['interrupted'] = True
    import json
    while len(json.dumps(value)) > RESTORE_REPORT_BYTES and (value['restored'] or value['not_restored']):
        longer = 'restored' if len(value['restored']) >= len(value['not_restored']) else 'not_restored'
        value[longer] = value[longer][:len(value[longer]) // 2]
    return value


def _lost(entry, reason):
    return {
        'name': entry.get('name'), 'type': entry.get('type', ''), 'reason': reason[:SNAPSHOT_REASON_CHARS * 2],
        'run_id': entry.get('run_id', ''), 'generation': entry.get('generation', 0), 'code_line': entry.get('code_line', ''),
    }


def run_restore(worker, command):
    """Answer an `execute` with `restore` (PROTOCOL.md, Snapshots): the restore runs as a
    cell's task does, so a timeout or python_cancel stops it between entries; what
    unpickling printed is its output; the report is the result's value."""
    run_id = command['id']
    worker._output.begin(run_id)
    context = contextvars.copy_context()
    context.run(RUN_ID.set, run_id)
    task = context.run(worker._loop.create_task, restore(command['restore'], worker._namespace, worker._snapshots))
    worker._interrupts.drive(task)
    worker._install_baseline()
    captured = worker._output.end()
    texts = {stream: captured.streams[stream].text() for stream in STREAMS}
    truncated = {stream: captured.streams[stream].cut for stream in STREAMS}
    captured.close()
    result = {
        'success': False, 'stdout': texts['stdout'], 'stderr': texts['stderr'], 'return_value': None, 'error': None,
        'truncated': {**truncated, 'return': False}, 'state': 'preserved',
    }
    exc = None if task.cancelled() else task.exception()
    if task.cancelled() or isinstance(exc, KeyboardInterrupt):
        result['error'], result['interrupted'] = INTERRUPTED.format(run_id), True
    elif isinstance(exc, Refused):
        result['error'] = SNAP_NOT_RESTORED.format(exc)
    elif exc is not None:
        result['error'] = SNAP_NOT_RESTORED.format(_text(exc))
    else:
        result.update(success=True, return_value=RESTORE_NOTE, value=task.result())
    worker._deliver(run_id, command['barrier'], result)
