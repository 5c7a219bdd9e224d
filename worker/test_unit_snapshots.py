"""Snapshots and restores, called directly (docs/contract.md §6.7): what a pass saves,
skips and marks, what it rewrites after a cell, that a command stops it and a crash
leaves the previous snapshot whole, and that a restore loads only our own files:
tampered, truncated, foreign and symlinked ones are refused by name with why."""

import asyncio
import json
import os
import tempfile
import threading
import unittest
from unittest import mock

from harness import library_test
from replworker import messages, snapshots
from replworker.restore import restore
from replworker.snapfiles import MANIFEST_NAME, encode_manifest
from replworker.tracebacks import SourceHistory

SNAPSHOT = '0123456789abcdef'
RESERVED = frozenset({'__name__', '__builtins__', 'sh'})


class _Channel:
    def __init__(self):
        self.frames = []

    def send(self, frame):
        self.frames.append(frame)


class SnapshotCase(unittest.TestCase):
    """A namespace, its worker's Snapshots and a private snapshot directory."""

    def setUp(self):
        tmp = tempfile.TemporaryDirectory()
        self.addCleanup(tmp.cleanup)
        self.root = tmp.name
        self.dir = os.path.join(self.root, SNAPSHOT)
        os.mkdir(self.dir, 0o700)
        self.key = os.urandom(32)
        self.ns = {'__name__': '__repl__', 'sh': print}
        self.sources = SourceHistory()
        self.channel = _Channel()
        self.snaps = snapshots.Snapshots(self.channel, self.ns, RESERVED, self.sources)
        self.runs = 0

    def cell(self, code):
        """Run code in the namespace as a cell would, and note what it bound."""
        self.runs += 1
        run_id = f'run-{self.runs}'
        self.sources.add(run_id, f'<repl:{run_id}>', code)
        exec(compile(code, f'<repl:{run_id}>', 'exec'), self.ns)
        self.snaps.note_run(run_id)
        return run_id

    def command(self, **fields):
        return {
            'type': 'snapshot', 'id': f'p{len(self.channel.frames)}', 'dir': self.dir, 'snapshot': SNAPSHOT,
            'key': self.key.hex(), 'project': '/project', 'session_id': 's', 'session_name': 'default',
            'server_id': 'srv', 'generation': 1, 'budget': 1 << 30, **fields,
        }

    def save(self, **fields):
        """One pass, to its end: its report frame."""
        self.snaps.start(self.command(**fields))
        self.snaps._thread.join(30)
        return self.channel.frames[-1]

    def manifest(self):
        with open(os.path.join(self.dir, MANIFEST_NAME), 'rb') as file:
            return json.loads(file.read().split(b'\n')[0])

    def restore(self, into=None, key=None, directory=None):
        into = {'__name__': '__repl__'} if into is None else into
        spec = {'dir': directory or self.dir, 'snapshot': SNAPSHOT, 'key': (key or self.key).hex(), 'project': '/project'}
        return asyncio.run(restore(spec, into, None)), into

    def lost(self, report):
        return {item['name']: item for item in report['not_restored']}


class SavedAndRestored(SnapshotCase):
    def test_values_modules_aliases_and_what_cannot_be_pickled(self):
        bound = self.cell('import json as js, socket\nd = {"a": [1, 2]}\nalias = d\nn = 5\nsock = socket.socket()\ngen = (i for i in range(2))')
        self.addCleanup(self.ns['sock'].close)
        report = self.save()
        self.assertEqual(report['status'], 'saved')
        self.assertEqual(report['summary']['variables'], 5)  # js, d, alias, n, socket
        self.assertEqual(report['summary']['skipped'], 2)
        self.assertEqual(stat_mode(os.path.join(self.dir, MANIFEST_NAME)), 0o600)
        result, ns = self.restore()
        self.assertEqual(result['restored_count'], 5)
        self.assertIs(ns['js'], json)
        self.assertEqual(ns['d'], {'a': [1, 2]})
        self.assertIs(ns['alias'], ns['d'])  # a reference, not a copy
        lost = self.lost(result)
        self.assertEqual(set(lost), {'sock', 'gen'})
        self.assertIn("cannot pickle 'socket'", lost['sock']['reason'])
        self.assertEqual(lost['sock']['run_id'], bound)
        self.assertEqual(lost['sock']['code_line'], 'sock = socket.socket()')
        self.assertEqual(lost['gen']['code_line'], 'gen = (i for i in range(2))')

    def test_rebinding_and_in_place_changes_are_rewritten(self):
        self.cell('rows = [1, 2]\nother = {"k": 1}')
        self.save()
        first = {e['name']: e for e in self.manifest()['entries']}
        self.assertEqual(self.save()['status'], 'unchanged')  # no cell since
        self.cell('rows.append(3)')  # in place: same object
        self.save()
        second = {e['name']: e for e in self.manifest()['entries']}
        self.assertNotEqual(second['rows']['mac'], first['rows']['mac'])
        self.assertEqual(second['other']['mac'], first['other']['mac'])  # re-checked, kept
        self.assertEqual(second['other']['segment'], first['other']['segment'])
        self.cell('other = {"k": 1}')  # rebound to an equal value: a new object
        self.save()
        result, ns = self.restore()
        self.assertEqual((ns['rows'], ns['other']), ([1, 2, 3], {'k': 1}))
        self.assertEqual(self.lost(result), {})

    def test_the_largest_are_skipped_first_over_the_budget(self):
        self.cell('small = b"s" * 1000\nmiddle = b"m" * 40000\nlarge = b"l" * 100000')
        report = self.save(budget=60000)
        self.assertEqual(report['summary']['skipped'], 1)
        result, ns = self.restore()
        self.assertEqual(set(ns) - {'__name__'}, {'small', 'middle'})
        self.assertIn('over the snapshot budget', self.lost(result)['large']['reason'])

    def test_past_the_recheck_limit_an_entry_is_marked_possibly_older(self):
        self.cell('big = bytearray(5000)')
        self.save()
        self.cell('big[0] = 1')
        with mock.patch.object(snapshots, 'RECHECK_BYTES', 100):
            self.assertEqual(self.save()['summary']['stale'], 1)
        result, ns = self.restore()
        self.assertEqual(ns['big'][0], 0)  # the older value, and the report says so
        [item] = result['restored']
        self.assertIn('possibly older', item['note'])

    def test_a_command_stops_a_pass_and_the_previous_snapshot_stays_whole(self):
        self.cell('keep = [1, 2, 3]')
        self.save()
        before = self.manifest()
        self.cell('huge = bytearray(64 << 20)')
        started = threading.Event()
        real_write = snapshots._Sink.write

        def write(sink, data):
            started.set()
            return real_write(sink, data)
        with mock.patch.object(snapshots._Sink, 'write', write):
            self.snaps.start(self.command())
            self.assertTrue(started.wait(30))
            self.assertTrue(self.snaps.stop(30))
        self.assertEqual(self.channel.frames[-1]['status'], 'stopped')
        self.assertEqual(self.manifest(), before)  # a crash now would restore this
        _, ns = self.restore()
        self.assertNotIn('huge', ns)
        report = self.save()  # the next pass goes on and completes
        self.assertEqual(report['summary']['variables'], 2)

    def test_cell_code_needs_cloudpickle_or_dill_or_is_said_to(self):
        self.cell('def f(x):\n    return x + offset\noffset = 1')
        report = self.save()
        _, name = self.snaps.pickler()
        if name == 'pickle':
            self.assertEqual(report['summary']['skipped'], 1)
            self.assertEqual(self.manifest()['skipped'][0]['reason'], messages.SNAP_CELL_CODE)
            return
        ns = {'__name__': '__repl__'}
        self.restore(into=ns)
        self.assertEqual(ns['f'](1), 2)
        self.assertIs(ns['f'].__globals__, ns)  # the session's globals, not a copy
        ns['offset'] = 10
        self.assertEqual(ns['f'](1), 11)


class Refused(SnapshotCase):
    def setUp(self):
        super().setUp()
        self.cell('a = [1]\nb = {"x": 2}')
        self.save()

    def segment(self):
        [name] = [n for n in os.listdir(self.dir) if n.startswith('seg-')]
        return os.path.join(self.dir, name)

    def test_a_tampered_entry_is_refused_by_name(self):
        entry = next(e for e in self.manifest()['entries'] if e['name'] == 'b')
        with open(self.segment(), 'r+b') as file:
            file.seek(entry['offset'] + entry['bytes'] - 2)
            file.write(b'\x00')
        result, ns = self.restore()
        self.assertEqual(self.lost(result)['b']['reason'], messages.RESTORE_TAMPERED)
        self.assertEqual(ns['a'], [1])  # the others still come back

    def test_a_truncated_entry_is_refused_by_name(self):
        entry = max(self.manifest()['entries'], key=lambda e: e['offset'])
        os.truncate(self.segment(), entry['offset'] + 1)
        result, _ = self.restore()
        self.assertIn('truncated', self.lost(result)[entry['name']]['reason'])

    def test_a_foreign_or_tampered_manifest_is_refused(self):
        with self.assertRaises(Exception) as caught:
            self.restore(key=os.urandom(32))
        self.assertEqual(str(caught.exception), messages.SNAP_MANIFEST_FOREIGN)
        manifest = self.manifest()
        manifest['entries'][0]['name'] = 'renamed'
        with open(os.path.join(self.dir, MANIFEST_NAME), 'wb') as file:
            data = encode_manifest(manifest, self.key)
            file.write(data[:-3] + (b'0' if data[-3:-2] != b'0' else b'1') + data[-2:])
        with self.assertRaises(Exception) as caught:
            self.restore()
        self.assertEqual(str(caught.exception), messages.SNAP_MANIFEST_TAMPERED)

    def test_a_symlinked_directory_and_an_open_one_are_refused(self):
        link = os.path.join(self.root, 'link')
        os.symlink(self.dir, link)
        with self.assertRaises(Exception) as caught:
            self.restore(directory=link)
        self.assertIn('is a symbolic link: refused', str(caught.exception))
        os.chmod(self.dir, 0o755)
        with self.assertRaises(Exception) as caught:
            self.restore()
        self.assertIn('is not private', str(caught.exception))
        self.assertEqual(self.save()['status'], 'failed')  # nor is one written there


@library_test
class LibrarySnapshots(SnapshotCase):
    """With the data venv's numpy, pandas and cloudpickle: their values by out-of-band
    buffers, and an instance of a class defined in a cell."""

    def test_arrays_frames_and_cell_classes(self):
        self.cell(
            'import numpy as np, pandas as pd\n'
            'arr = np.arange(1_000_000, dtype="float64")\n'
            'df = pd.DataFrame({"x": arr[:1000], "y": ["s"] * 1000})\n'
            'class Point:\n    def __init__(self, x):\n        self.x = x\n'
            'p = Point(3)\n')
        report = self.save()
        self.assertEqual(report['summary']['skipped'], 0)
        entry = next(e for e in self.manifest()['entries'] if e['name'] == 'arr')
        self.assertEqual(entry['buffers'], [8_000_000])  # out of band, not in the pickle
        _, ns = self.restore()
        self.assertTrue((ns['arr'] == self.ns['arr']).all())
        self.assertTrue(ns['df'].equals(self.ns['df']))
        self.assertIs(type(ns['p']), ns['Point'])
        self.assertEqual(ns['p'].x, 3)


def stat_mode(path):
    return os.stat(path).st_mode & 0o777
