"""Snapshots of the namespace between cells (docs/contract.md §6.7; PROTOCOL.md,
Snapshots). The server asks for one with a `snapshot` frame once the session has been
idle a moment; a thread of the worker's own saves the user's variables into the
snapshot directory the frame names, one entry per variable, and answers with a
`snapshot` frame. Any command that arrives stops it between two writes: the cell runs
at once, and the next request goes on from where this one stopped.

What is written, and when:
- pickle protocol 5 with out-of-band buffers (numpy's and pandas' memory is written as
  it is), by cloudpickle or dill when the interpreter has one (functions and classes
  defined in cells then come back too), else by pickle;
- a reference, not a copy, for an object a variable bound before it holds (an alias, a
  class of a cell, a module), and for the namespace itself (a cell's function gets the
  session's globals back);
- a module bound to a name is its import (`import pandas as pd`);
- a variable is rewritten when a cell may have changed it: a rebinding is seen by its
  identity (a weak reference where the type allows one, else id and type); an entry of
  at most RECHECK_BYTES is pickled again (to nowhere) after every cell and rewritten
  when its HMAC differs, which is how an in-place change is found; a larger one is
  kept, marked possibly older than its variable;
- the smallest first, within the session's budget: the largest are skipped first.

Entries go into a segment file of the pass; the manifest, which alone says what the
snapshot is, is replaced only when the pass is complete, so a crash leaves the previous
snapshot whole. A segment mostly of entries no longer named is copied forward and
dropped."""

import ast
import os
import sys
import threading
import time
import types
import weakref

from .common import type_name
from .limits import CODE_LINE_BYTES, RECHECK_BYTES, SNAPSHOT_CHUNK, SNAPSHOT_JOIN, SNAPSHOT_REASON_CHARS, SNAPSHOT_VARIABLES
from .messages import SNAP_BUDGET, SNAP_CELL_CODE, SNAP_MODULE_UNNAMED, SNAP_NOT_PICKLABLE, SNAP_STALE, SNAP_TOO_MANY
from .snapfiles import (
    MANIFEST_FORMAT, MANIFEST_NAME, NAMESPACE_PID, SEGMENT_PREFIX, SEGMENT_SUFFIX, TEMP_SUFFIX, Refused,
    create_file, encode_manifest, entry_context, entry_mac, key_id, now, open_private_dir, remove, replace_file,
    write_all,
)
from .tracebacks import source_lines

# Types whose values never hold another variable's object: no reference to them is made.
_ATOMIC = frozenset({int, float, complex, str, bytes, bool, type(None), range})
CELL_MODULES = ('__repl__', '__main__')  # where functions and classes of cells and saved files live


class Stopped(Exception):
    """A command arrived: the pass stops where it is."""


class _OverBudget(Exception):
    """The entry being written would pass the session's budget."""


class DiskError(Exception):
    """Writing the snapshot failed (a full disk): the pass fails, not the variable."""


def make_pickler(namespace):
    """(Pickler class, its name): cloudpickle's, dill's or pickle's, extended with the
    references of the module docstring (pickle is imported here, not at the worker's start)."""
    import pickle
    base, name = pickle.Pickler, 'pickle'
    for module in ('cloudpickle', 'dill'):
        try:
            library = __import__(module)
            base, name = library.Pickler, f'{module} {getattr(library, "__version__", "")}'.strip()
            break
        except Exception:  # not installed, or broken: the next one
            continue

    class SnapshotPickler(base):
        def __init__(self, file, refs, root_index, buffers):
            super().__init__(file, protocol=5, buffer_callback=buffers.append)
            self._refs, self._root_index = refs, root_index
            self.code = name.startswith('dill')  # dill's code is not told apart from data
            if hasattr(self, 'globals_ref'):  # cloudpickle: a cell's functions keep the namespace
                self.globals_ref[id(namespace)] = namespace

        def persistent_id(self, obj):
            if obj is namespace:
                return NAMESPACE_PID
            ref = self._refs.get(id(obj))
            if ref is not None and ref[0] < self._root_index:
                return ('var', ref[1])
            return None

    if hasattr(base, 'reducer_override'):
        def reducer_override(self, obj):
            reduced = base.reducer_override(self, obj)
            if reduced is not NotImplemented and (
                    isinstance(obj, types.FunctionType) or (isinstance(obj, type) and reduced[0] is not type)):
                self.code = True  # a function or class pickled by value: code of this Python
            return reduced
        SnapshotPickler.reducer_override = reducer_override
    if hasattr(base, '_dynamic_function_reduce'):
        def _dynamic_function_reduce(self, func):
            reduced = base._dynamic_function_reduce(self, func)
            try:
                # The namespace holds what the function's globals name: do not copy them
                # into its entry, where a restore would write them back over newer values.
                if func.__globals__ is namespace and type(reduced[2][1]) is dict:
                    state, slots = reduced[2]
                    reduced = (*reduced[:2], (state, {**slots, '__globals__': {}}), *reduced[3:])
            except (IndexError, TypeError, ValueError):
                pass  # another cloudpickle's shape: keep its own
            return reduced
        SnapshotPickler._dynamic_function_reduce = _dynamic_function_reduce
    return SnapshotPickler, name


class _Sink:
    """Where a pickle goes: the segment file (fd) or nowhere (a re-check), its bytes into
    the entry's HMAC. Checks for a command, and the budget, at every write."""

    def __init__(self, stop, mac, fd=None, room=None):
        self._stop, self.mac, self._fd, self._room, self.size = stop, mac, fd, room, 0

    def write(self, data):
        data = memoryview(data).cast('B')
        for start in range(0, len(data), SNAPSHOT_CHUNK):
            if self._stop.is_set():
                raise Stopped
            chunk = data[start:start + SNAPSHOT_CHUNK]
            self.size += len(chunk)
            if self._room is not None and self.size > self._room:
                raise _OverBudget
            self.mac.update(chunk)
            if self._fd is not None:
                try:
                    write_all(self._fd, chunk)
                except OSError as exc:
                    raise DiskError(f'{type_name(type(exc))}: {_text(exc)}') from None
        return len(data)


class Entry:
    """A variable's entry: where it is, what it is, and how to tell its object again."""

    __slots__ = ('fields', 'ref', 'ident', 'checked', 'stale')

    def __init__(self, fields, value, checked):
        self.fields = fields  # the manifest's entry (name, kind, bytes, segment, mac, ...)
        try:
            self.ref = weakref.ref(value)
        except TypeError:
            self.ref = None
        self.ident = (id(value), type(value))
        self.checked = checked  # the run count when it was last written or re-checked
        self.stale = None  # the run after which it may be older than its variable

    def same(self, value):
        """Whether value is the object the entry was made of (or may be: same id and type)."""
        if self.ref is not None:
            return self.ref() is value
        return self.ident == (id(value), type(value))


class Table:
    """The entries of one snapshot directory as this worker knows them: those of its
    manifest, and those a stopped pass wrote since (into the pass's segment)."""

    def __init__(self, snapshot):
        self.snapshot = snapshot
        self.entries = {}  # name -> Entry
        self.segment = None  # (name, fd) of the segment being written, a temp file until the pass is complete
        self.complete_runs = None  # the run count of the last complete pass

    def close(self, dir_fd=None):
        """Drop the segment being written (a restore replaces the table)."""
        if self.segment is not None:
            name, fd = self.segment
            os.close(fd)
            if dir_fd is not None:
                remove(dir_fd, '.' + name + TEMP_SUFFIX)
            self.segment = None


def binding_lines(source):
    """For each name a cell's top-level code binds, the first line of the statement that
    binds it last (an assignment, an import, a def or class, a for or with target), so
    that a variable that did not come back can be rebuilt by running just that; '' for
    the first line of the cell when the code does not parse."""
    lines = source_lines(source)
    first = next((line.strip() for line in lines if line.strip()), '')
    found = {'': first[:CODE_LINE_BYTES]}
    try:
        module = ast.parse(source)
    except Exception:  # a cell with !cmd lines, or one that failed to compile
        return found
    for statement in module.body:
        text = lines[statement.lineno - 1].strip()[:CODE_LINE_BYTES] if statement.lineno <= len(lines) else first
        for node in ast.walk(statement):
            if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
                found[node.id] = text
            elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and node in module.body:
                found[node.name] = text
            elif isinstance(node, ast.alias):
                found[node.asname or node.name.partition('.')[0]] = text
    return found


def binding_of(lines, name, run_id, at):
    """(run id, time, code line) of the run that bound variable name; lines from binding_lines."""
    return {'run_id': run_id, 'bound_at': at, 'code_line': lines.get(name, lines[''])}


class Snapshots:
    """The worker's snapshots: what each run bound, and the passes, one at a time, on a
    thread of their own."""

    def __init__(self, channel, namespace, reserved, sources):
        self._channel, self._namespace, self._reserved, self._sources = channel, namespace, reserved, sources
        self.stop_event = threading.Event()
        self._thread = None
        self.lock = threading.Lock()  # the table, between a pass and a restore
        self.table = None
        self.runs = 0  # runs that may have changed the namespace
        self.last_run = ''  # the latest of them
        self.bound = {}  # name -> binding_of(...), with 'generation' when bound by an earlier worker
        self._ids = {}  # name -> id of its value after the last run
        self._pickler = None

    def pickler(self):
        if self._pickler is None:
            self._pickler = make_pickler(self._namespace)
        return self._pickler

    def note_run(self, run_id):
        """After a run: which names it bound (new, or a new object), for the manifest."""
        self.runs += 1
        self.last_run = run_id
        ids, at, lines = {}, None, None
        for name, value in list(self._namespace.items()):
            if not _variable(name, self._reserved):
                continue
            ids[name] = id(value)
            if self._ids.get(name) != id(value):
                if lines is None:
                    at, lines = now(), self._lines(run_id)
                self.bound[name] = binding_of(lines, name, run_id, at)
        for name in self._ids.keys() - ids.keys():
            self.bound.pop(name, None)
        self._ids = ids

    def _lines(self, run_id):
        try:
            return binding_lines(self._sources.source(run_id))
        except ValueError:
            return {'': ''}

    def note_restored(self, name, value):
        """A restore bound name: it is no run's new binding."""
        self._ids[name] = id(value)

    def start(self, command):
        """Begin a pass for a `snapshot` command (the main thread calls it between cells)."""
        if self._thread is not None:
            # A pass that answered is on its way out (every command stops one); one stuck
            # in an object's own pickling hook is left to finish.
            self._thread.join(SNAPSHOT_JOIN)
            if self._thread.is_alive():
                self._channel.send({'type': 'snapshot', 'id': command['id'], 'status': 'busy'})
                return
        self.stop_event.clear()
        self._thread = threading.Thread(target=self._run, args=(command,), name='repl-mcp-snapshot', daemon=True)
        self._thread.start()

    def stop(self, wait=0.0):
        """A command arrived: the pass stops at its next write. With `wait`, returns once it
        has (or that many seconds passed); returns whether no pass runs."""
        thread = self._thread
        if thread is None:
            return True
        self.stop_event.set()
        if wait:
            thread.join(wait)
        return not thread.is_alive()

    def _run(self, command):
        try:
            with self.lock:
                report = self._save(command)
        except Stopped:
            report = {'status': 'stopped'}
        except (Refused, DiskError) as exc:
            report = {'status': 'failed', 'error': str(exc)}
        except Exception as exc:  # disk full, a file we cannot write: never a cell's failure
            report = {'status': 'failed', 'error': f'{type_name(type(exc))}: {_text(exc)}'}
        self._channel.send({'type': 'snapshot', 'id': command['id'], **report})

    def _save(self, command):
        key = bytes.fromhex(command['key'])
        dir_fd = open_private_dir(command['dir'])
        try:
            table = self.table
            if table is None or table.snapshot != command['snapshot']:
                if table is not None:
                    table.close()
                table = self.table = Table(command['snapshot'])
                _sweep(dir_fd, keep=None)
            runs = self.runs
            if table.complete_runs == runs:
                return {'status': 'unchanged'}
            began = time.perf_counter()
            manifest = _Pass(self, table, dir_fd, key, command, runs).run()
            if manifest is None:
                return {'status': 'unchanged'}
            table.complete_runs = runs
            took = round((time.perf_counter() - began) * 1000, 1)
            return {'status': 'saved', 'summary': {**summary(manifest), 'took_ms': took}}
        finally:
            os.close(dir_fd)


def summary(manifest):
    """What the server keeps of a manifest for health and offers."""
    return {
        'saved_at': manifest['saved_at'], 'variables': len(manifest['entries']), 'bytes': manifest['bytes'],
        'skipped': len(manifest['skipped']), 'stale': sum(1 for e in manifest['entries'] if e.get('stale')),
    }


def _text(exc):
    try:
        return ' '.join(str(exc).split())[:SNAPSHOT_REASON_CHARS]
    except Exception:
        return '?'


def _defined_in_cells(value):
    """Whether value is, or is an instance of, a function or class of a cell or saved file."""
    target = value if isinstance(value, (type, types.FunctionType)) else type(value)
    module = getattr(target, '__module__', None) if isinstance(target, (type, types.FunctionType)) else None
    return module in CELL_MODULES


class _Pass:
    """One pass over the namespace into a table's directory."""

    def __init__(self, owner, table, dir_fd, key, command, runs):
        self.o, self.table, self.dir_fd, self.key, self.cmd, self.runs = owner, table, dir_fd, key, command, runs
        self.stop = owner.stop_event
        self.pickler, self.pickler_name = owner.pickler()
        self.budget = command['budget']
        self.skipped = []

    def run(self):
        items = [(name, value) for name, value in list(self.o._namespace.items()) if _variable(name, self.o._reserved)]
        if not items and self.table.complete_runs is None:
            return None  # nothing to save, and nothing saved before: no snapshot at all
        if len(items) > SNAPSHOT_VARIABLES:
            self.skipped += [self._skip(name, value, SNAP_TOO_MANY) for name, value in items[SNAPSHOT_VARIABLES:]]
            items = items[:SNAPSHOT_VARIABLES]
        # Objects of earlier variables, by id, while `items` keeps them alive.
        self.refs = {}
        for index, (name, value) in enumerate(items):
            if type(value) not in _ATOMIC:
                self.refs.setdefault(id(value), (index, name))  # an alias refers to the first name
        entries, writes = {}, []
        for index, (name, value) in enumerate(items):
            if self.stop.is_set():
                raise Stopped
            old = self.table.entries.get(name)
            if isinstance(value, types.ModuleType):
                fields = self._module(name, value)
                if fields is not None:
                    entries[name] = Entry(fields, value, self.runs)
            elif old is None or not old.same(value):
                writes.append((index, name, value, None, _estimate(value)))
            elif old.checked >= self.runs:
                entries[name] = old
            elif old.fields['bytes'] <= RECHECK_BYTES:
                writes.append((index, name, value, old, old.fields['bytes']))
            else:
                old.stale = old.stale or self.o.last_run
                entries[name] = old
        room = self.budget - sum(e.fields['bytes'] for e in entries.values())
        for index, name, value, old, estimate in sorted(writes, key=lambda w: w[4]):
            entry = self._write(index, name, value, old, room, estimate)
            if entry is not None:
                entries[name] = self.table.entries[name] = entry
                room -= entry.fields['bytes']
        return self._commit(entries, items)

    def _binding(self, name):
        bound = dict(self.o.bound.get(name) or {'run_id': '', 'bound_at': '', 'code_line': ''})
        bound.setdefault('generation', self.cmd['generation'])
        return bound

    def _skip(self, name, value, reason, size=0):
        return {'name': name, 'type': type_name(type(value)), 'reason': reason, 'bytes': size, **self._binding(name)}

    def _module(self, name, module):
        module_name = module.__dict__.get('__name__')
        if type(module_name) is not str or sys.modules.get(module_name) is not module:
            self.skipped.append(self._skip(name, module, SNAP_MODULE_UNNAMED))
            return None
        return {'name': name, 'kind': 'module', 'type': 'module', 'module': module_name, 'bytes': 0,
                **self._binding(name)}

    def _dump(self, index, value, sink):
        """Pickle value into sink, its out-of-band buffers after it: (pickler, in-band
        bytes, the buffers' lengths)."""
        buffers = []
        pickler = self.pickler(sink, self.refs, index, buffers)
        pickler.dump(value)
        in_band, lengths = sink.size, []
        for buffer in buffers:
            raw = buffer.raw()
            lengths.append(len(raw))
            sink.write(raw)
        if self.stop.is_set():
            raise Stopped  # pickled while a command came: maybe not the state before it
        return pickler, in_band, lengths

    def _write(self, index, name, value, old, room, estimate):
        """The entry of a variable that is new, rebound or due for a re-check (old); None
        when it cannot be saved (then listed as skipped, with why)."""
        try:
            if old is not None:
                sink = _Sink(self.stop, entry_mac(self.key))
                _, in_band, lengths = self._dump(index, value, sink)
                mac = entry_context(sink.mac, self.table.snapshot, name, 'pickle', in_band, lengths)
                if mac == old.fields['mac']:
                    old.checked = self.runs
                    return old
            return self._append(index, name, value, room)
        except (Stopped, DiskError):
            raise
        except _OverBudget:
            self.skipped.append(self._skip(name, value, SNAP_BUDGET.format(self.budget >> 20), estimate))
        except RecursionError:
            self.skipped.append(self._skip(name, value, SNAP_NOT_PICKLABLE.format('too deeply nested')))
        except Exception as exc:
            cell_code = self.pickler_name == 'pickle' and _defined_in_cells(value)
            reason = SNAP_CELL_CODE if cell_code else SNAP_NOT_PICKLABLE.format(_text(exc))
            self.skipped.append(self._skip(name, value, reason))
        self.table.entries.pop(name, None)
        return None

    def _append(self, index, name, value, room):
        fd, segment = self._segment()
        start = os.lseek(fd, 0, os.SEEK_END)
        sink = _Sink(self.stop, entry_mac(self.key), fd, room)
        try:
            pickler, in_band, lengths = self._dump(index, value, sink)
        except BaseException:
            os.ftruncate(fd, start)
            raise
        fields = {
            'name': name, 'kind': 'pickle', 'type': type_name(type(value)), 'bytes': sink.size,
            'segment': segment, 'offset': start, 'pickle': in_band, 'buffers': lengths,
            'mac': entry_context(sink.mac, self.table.snapshot, name, 'pickle', in_band, lengths),
            'code': pickler.code, **self._binding(name), 'saved_at': now(),
        }
        return Entry(fields, value, self.runs)

    def _segment(self):
        if self.table.segment is None:
            name = f'{SEGMENT_PREFIX}{os.urandom(8).hex()}{SEGMENT_SUFFIX}'
            self.table.segment = (name, create_file(self.dir_fd, '.' + name + TEMP_SUFFIX))
        name, fd = self.table.segment
        return fd, name

    def _compact(self, entries):
        """Copy forward the entries of a segment that is more than half entries no longer
        named, so that its file can go: dead bytes stay below the live ones."""
        live, sizes = {}, {}
        for entry in entries.values():
            segment = entry.fields.get('segment')
            if segment and (self.table.segment is None or segment != self.table.segment[0]):
                live[segment] = live.get(segment, 0) + entry.fields['bytes']
        for segment in live:
            try:
                sizes[segment] = os.stat(segment, dir_fd=self.dir_fd, follow_symlinks=False).st_size
            except OSError:
                sizes[segment] = 0
        for segment, used in live.items():
            if used * 2 >= sizes[segment]:
                continue
            source = os.open(segment, os.O_RDONLY | os.O_CLOEXEC | os.O_NOFOLLOW, dir_fd=self.dir_fd)
            try:
                for entry in entries.values():
                    if entry.fields.get('segment') == segment:
                        self._copy(source, entry)
            finally:
                os.close(source)

    def _copy(self, source, entry):
        fd, name = self._segment()
        start = os.lseek(fd, 0, os.SEEK_END)
        offset, end = entry.fields['offset'], entry.fields['offset'] + entry.fields['bytes']
        while offset < end:
            if self.stop.is_set():
                os.ftruncate(fd, start)
                raise Stopped
            chunk = os.pread(source, min(SNAPSHOT_CHUNK, end - offset), offset)
            if not chunk:
                raise OSError(f'segment {entry.fields["segment"]} is shorter than its manifest says')
            write_all(fd, chunk)
            offset += len(chunk)
        entry.fields = {**entry.fields, 'segment': name, 'offset': start}

    def _commit(self, entries, items):
        """Write the manifest of a complete pass and drop what it no longer names."""
        self._compact(entries)
        if self.table.segment is not None:
            name, fd = self.table.segment
            os.fsync(fd)
            os.close(fd)
            self.table.segment = None
            os.rename('.' + name + TEMP_SUFFIX, name, src_dir_fd=self.dir_fd, dst_dir_fd=self.dir_fd)
        order = {name: index for index, (name, _) in enumerate(items)}
        manifest_entries = []
        for entry in sorted(entries.values(), key=lambda e: order.get(e.fields['name'], 0)):
            fields = dict(entry.fields)
            if entry.stale:
                fields.update(stale=True, stale_after=entry.stale, reason=SNAP_STALE.format(RECHECK_BYTES >> 20))
            manifest_entries.append(fields)
        cmd = self.cmd
        manifest = {
            'format': MANIFEST_FORMAT, 'snapshot': self.table.snapshot, 'key_id': key_id(self.key),
            'project': cmd['project'], 'session_id': cmd['session_id'], 'session_name': cmd['session_name'],
            'server_id': cmd['server_id'], 'generation': cmd['generation'], 'saved_at': now(),
            'python': '.'.join(map(str, sys.version_info[:3])), 'pickler': self.pickler_name,
            'bytes': sum(e['bytes'] for e in manifest_entries), 'entries': manifest_entries, 'skipped': self.skipped,
        }
        replace_file(self.dir_fd, MANIFEST_NAME, encode_manifest(manifest, self.key))
        self.table.entries = entries
        _sweep(self.dir_fd, keep={e['segment'] for e in manifest_entries if e['kind'] == 'pickle'})
        return manifest


def _variable(name, reserved):
    """Whether a namespace entry is a variable a snapshot keeps: not the worker's own, and
    not a dunder name (Python's bookkeeping: __warningregistry__, __doc__)."""
    return type(name) is str and name not in reserved and not (name.startswith('__') and name.endswith('__'))


def _estimate(value):
    """Bytes a value's pickle may take, to save the smallest first: its own size (for a
    numpy array its data), never running more than __sizeof__ and nbytes."""
    try:
        size = sys.getsizeof(value)
        cls = type(value)
        if getattr(cls, '__module__', '').startswith('numpy') and hasattr(cls, 'nbytes'):
            size = max(size, int(value.nbytes))
        return size
    except Exception:
        return 1 << 20


def _sweep(dir_fd, keep):
    """Remove leftover temp files and, once a manifest is written (keep: the segments it
    names), the segments it no longer names."""
    for name in os.listdir(dir_fd):
        if name.endswith(TEMP_SUFFIX) or (keep is not None and name.startswith(SEGMENT_PREFIX) and name not in keep):
            remove(dir_fd, name)
