"""Snapshots over the protocol, in a real worker (PROTOCOL.md, Snapshots): a `snapshot`
frame is answered with a `snapshot` frame; a cell sent while a pass runs starts at once
(the pass stops and says so, and the cell's result follows); the pass then completes on
the next request; an execute with `restore` loads it back into a new worker, and with
`adopt` that worker's next pass rewrites nothing it restored."""

import json
import os
import time
import uuid

from harness import WorkerProcess, WorkerTestCase

SNAPSHOT = 'fedcba9876543210'


class SnapshotProtocol(WorkerTestCase):
    def setUp(self):
        super().setUp()
        self.snapdir = self.path(SNAPSHOT)
        os.mkdir(self.snapdir, 0o700)
        self.key = os.urandom(32).hex()

    def place(self):
        return {'dir': self.snapdir, 'snapshot': SNAPSHOT, 'key': self.key, 'project': self.dir}

    def ask(self, worker, **fields):
        frame = {'type': 'snapshot', 'id': uuid.uuid4().hex, **self.place(), 'session_id': 's',
                 'session_name': 'default', 'server_id': 'srv', 'generation': 1, 'budget': 1 << 31, **fields}
        worker.send_raw(json.dumps(frame).encode() + b'\n')
        return frame['id']

    def wait_writing(self):
        """Until the pass has begun writing its segment (bounded)."""
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            for name in os.listdir(self.snapdir):
                if name.endswith('.tmp') and os.path.getsize(os.path.join(self.snapdir, name)) > 0:
                    return
            time.sleep(0.002)
        self.fail('the pass never began writing')

    def answer(self, worker, token):
        frame = worker.next_frame()
        self.assertEqual((frame['type'], frame['id']), ('snapshot', token), frame)
        return frame

    def test_a_cell_during_a_pass_starts_at_once_and_the_pass_completes_later(self):
        worker = self.worker
        self.assert_ok(worker.run('big = bytearray(256 << 20)\nsmall = {"n": 1}', bindings=True))
        token = self.ask(worker)
        self.wait_writing()
        run_id = worker.start('small["n"] + 1', bindings=True)
        # The cell ran at once and the pass gave way, in either order (the cell does not
        # wait for the pass to say so).
        frames = {}
        while len(frames) < 2:
            frame = worker.next_frame()
            frames[frame['type']] = frame
        self.assertEqual((frames['snapshot']['id'], frames['snapshot']['status']), (token, 'stopped'))
        self.assertEqual((frames['result']['id'], frames['result']['result']['value']), (run_id, 2))
        token = self.ask(worker)
        report = self.answer(worker, token)
        self.assertEqual(report['status'], 'saved', report)
        self.assertEqual(report['summary']['variables'], 2)

    def test_restore_into_a_new_worker_and_adopt(self):
        first = self.worker
        self.assert_ok(first.run('rows = list(range(5))\nname = "x"', bindings=True))
        self.assertEqual(self.answer(first, self.ask(first))['status'], 'saved')
        second = WorkerProcess(self.dir)
        self.addCleanup(second.close)
        result = second.run('', restore={**self.place(), 'adopt': True})
        self.assert_ok(result)
        self.assertEqual(result['value']['restored_count'], 2)
        self.assertEqual(second.value('rows, name'), [[0, 1, 2, 3, 4], 'x'])
        segments = sorted(name for name in os.listdir(self.snapdir) if name.startswith('seg-'))
        self.assertIn(self.answer(second, self.ask(second, generation=2))['status'], ('saved', 'unchanged'))
        # Adopted: the restored entries were already there; nothing was rewritten.
        self.assertEqual(sorted(name for name in os.listdir(self.snapdir) if name.startswith('seg-')), segments)
