"""Threads that outlive their cell (docs/contract.md §5.10): the session's background work.
A cell that ends on its own keeps its variables and names the threads still working for
it; what they print later is reported apart, with the next result, as background_output;
a thread the running cell started prints into the cell. An interrupted cell whose threads
still run is the one case that stops the worker. Standard library only: the same cases
with real libraries (tqdm, Dask) are in repl/background_test.go and testscripts."""

import os
import signal
import time

from harness import THREADS_INTERRUPTED, WorkerTestCase, library_test, wait_gone

TICKER = (
    'import threading, time, sys\n'
    'stop = threading.Event()\n'
    'def tick():\n'
    '    n = 0\n'
    '    while not stop.wait(0.02):\n'
    '        print(f"tick {n}")\n'
    '        n += 1\n'
    'ticker = threading.Thread(target=tick, name="ticker", daemon=True)\n'
    'ticker.start()\n'
)


class BackgroundThreadTests(WorkerTestCase):
    def background(self, result):
        return result.get('background_output', {'stdout': '', 'stderr': '', 'truncated': False})

    def test_a_daemon_thread_keeps_the_session(self):
        result = self.worker.run(TICKER + 'x = 42')
        self.assert_ok(result)
        self.assertEqual(result['background_threads'], ['ticker'])
        self.assertEqual(self.worker.value('x'), 42)
        self.assertTrue(self.worker.value('ticker.is_alive()'))

    def test_what_background_threads_print_is_reported_apart(self):
        self.assert_ok(self.worker.run(TICKER))
        result = self.worker.run('import time\nfor i in range(3):\n    print(f"own {i}")\n    time.sleep(0.1)')
        self.assert_ok(result)
        self.assertEqual(result['stdout'], 'own 0\nown 1\nown 2\n')  # only the cell's own lines
        self.assertNotIn('background_threads', result)  # the ticker is the first cell's
        ticks = self.background(result)['stdout'].splitlines()
        self.assertGreater(len(ticks), 3)
        self.assertTrue(all(line.startswith('tick ') for line in ticks), ticks)
        later = self.worker.run('time.sleep(0.1)\nstop.set()\nticker.join()')
        self.assert_ok(later)
        more = self.background(later)['stdout'].splitlines()
        self.assertTrue(more)
        # Each tick is reported once, in order, with the first result after it was printed.
        numbers = [int(line.split()[1]) for line in ticks + more]
        self.assertEqual(numbers, list(range(numbers[0], numbers[0] + len(numbers))))
        self.assertNotIn('background_output', self.worker.run('1'))

    def test_a_thread_of_the_running_cell_prints_into_the_cell(self):
        code = (
            'import threading, sys\n'
            'def work():\n'
            '    print("from the thread")\n'
            '    inner = threading.Thread(target=print, args=("from its child",))\n'
            '    inner.start()\n'
            '    inner.join()\n'
            '    sys.stderr.write("thread stderr\\n")\n'
            't = threading.Thread(target=work)\nt.start()\nt.join()'
        )
        result = self.worker.run(code)
        self.assert_ok(result)
        self.assertEqual(result['stdout'], 'from the thread\nfrom its child\n')
        self.assertEqual(result['stderr'], 'thread stderr\n')
        self.assertNotIn('background_threads', result)
        self.assertNotIn('background_output', result)

    def test_a_timer_left_pending_fires_later(self):
        result = self.worker.run('import threading\nt = threading.Timer(0.3, print, args=("timer fired",))\nt.start()\ny = 7')
        self.assert_ok(result)
        self.assertEqual(len(result['background_threads']), 1)
        later = self.worker.run('import time\ntime.sleep(0.6)\ny')
        self.assert_ok(later)
        self.assertEqual(later['value'], 7)
        self.assertEqual(self.background(later)['stdout'], 'timer fired\n')

    def test_an_open_executor_and_default_executor_jobs(self):
        code = (
            'import asyncio, concurrent.futures, threading, time\n'
            'gate = threading.Event()\n'
            'pool = concurrent.futures.ThreadPoolExecutor(2, thread_name_prefix="pool")\n'
            'pending = pool.submit(gate.wait, 10)\n'
            'job = asyncio.get_running_loop().run_in_executor(None, gate.wait, 10)\n'
            'z = 3'
        )
        result = self.worker.run(code)
        self.assert_ok(result)
        self.assertEqual(sorted(result['background_threads']), ['pool_0', 'repl-mcp-executor_0'])
        later = self.worker.run('gate.set()\n[await job, pending.result(5), z]')
        self.assert_ok(later)
        self.assertEqual(later['value'], [True, True, 3])
        self.assertEqual(later.get('background_threads'), None)  # the idle pool is the first cell's

    def test_a_pool_job_works_for_the_cell_that_submitted_it(self):
        # The pooled thread was started by the first cell; the job and its print are the second's.
        self.assert_ok(self.worker.run('import concurrent.futures\npool = concurrent.futures.ThreadPoolExecutor(1)\npool.submit(int).result()'))
        result = self.worker.run('pool.submit(print, "job output").result()')
        self.assert_ok(result)
        self.assertEqual(result['stdout'], 'job output\n')
        self.assertNotIn('background_output', result)
        result = self.worker.run('import asyncio\nawait asyncio.to_thread(print, "to_thread output")')
        self.assertEqual(result['stdout'], 'to_thread output\n')

    def test_a_logging_queue_listener(self):
        code = (
            'import logging, logging.handlers, queue, sys\n'
            'q = queue.Queue()\n'
            'listener = logging.handlers.QueueListener(q, logging.StreamHandler(sys.stderr))\n'
            'listener.start()\n'
            'log = logging.getLogger("queued")\n'
            'log.addHandler(logging.handlers.QueueHandler(q))\n'
            'log.warning("first")\n'
            'listener.stop()\n'  # stop() joins: what it wrote is the cell's
            'listener.start()'
        )
        result = self.worker.run(code)
        self.assert_ok(result)
        self.assertEqual(result['stderr'], 'first\n')
        self.assertEqual(len(result['background_threads']), 1)
        # The listener's thread writes for the first cell: the record is reported apart.
        later = self.worker.run('log.warning("second")\nlistener.stop()\n1')
        self.assert_ok(later)
        self.assertEqual(later['stderr'], '')
        self.assertEqual(self.background(later)['stderr'], 'second\n')

    def test_writes_between_cells_come_with_the_next_result(self):
        first = self.worker.run('import threading, sys\nt = threading.Timer(0.3, sys.stderr.write, args=("late\\n",))\nt.start()')
        self.assertEqual(first['stderr'], '')
        time.sleep(0.6)
        result = self.worker.run('2')
        self.assertEqual(self.background(result), {'stdout': '', 'stderr': 'late\n', 'truncated': False})

    def test_background_output_is_bounded(self):
        self.assert_ok(self.worker.run(
            'import threading\ngo = threading.Event()\n'
            'def flood():\n    go.wait()\n    for i in range(100_000):\n        print(f"line {i}")\n'
            'threading.Thread(target=flood, name="flood").start()'
        ))
        result = self.worker.run('import time\ngo.set()\nwhile any(t.name == "flood" for t in threading.enumerate()):\n    time.sleep(0.05)')
        self.assert_ok(result)
        printed = self.background(result)
        self.assertTrue(printed['truncated'])
        self.assertLessEqual(len(printed['stdout'].encode()), 16_384)
        self.assertTrue(printed['stdout'].startswith('line 0\n'))
        self.assertTrue(printed['stdout'].endswith('line 99999\n'))

    def test_many_threads_are_named_within_a_bound(self):
        result = self.worker.run(
            'import threading\ngate = threading.Event()\n'
            'threads = [threading.Thread(target=gate.wait, name=f"w{i}") for i in range(70)]\n'
            'for t in threads:\n    t.start()'
        )
        self.assert_ok(result)
        self.assertEqual(result['background_threads'], [f'w{i}' for i in range(64)] + ['+6 more'])
        self.assert_ok(self.worker.run('gate.set()\nfor t in threads:\n    t.join()'))

    def test_an_interrupted_cell_with_threads_still_running_clears(self):
        marker = self.path('late')
        code = (
            'import threading, time\nx = 1\n'
            f'def stubborn():\n    time.sleep(1)\n    open({marker!r}, "w").close()\n'
            'threading.Thread(target=stubborn, name="stubborn").start()\n'
            'print("started")\ntime.sleep(30)'
        )
        run_id = self.worker.start(code)
        self.worker.wait_for_output(run_id, 'started')
        os.kill(self.worker.proc.pid, signal.SIGINT)
        result, _ = self.worker.collect(run_id)
        self.assertFalse(result['success'])
        self.assertEqual(result['state'], 'cleared')
        self.assertEqual(result['error'], THREADS_INTERRUPTED.format('stubborn'))
        self.assertEqual(result['background_threads'], ['stubborn'])
        self.assertEqual(self.worker.wait_exit(), 70)
        self.assertTrue(wait_gone(self.worker.proc.pid))
        # The worker is gone and its threads with it: the marker is there now or never.
        self.assertFalse(os.path.exists(marker))  # nothing the interrupted cell started went on

    def test_an_earlier_cells_thread_does_not_clear_an_interrupted_cell(self):
        # The ticker (and any thread it starts) works for the first cell, not the interrupted one.
        spawner = (
            TICKER + 'def spawn():\n    while not stop.wait(0.02):\n'
            '        threading.Thread(target=time.sleep, args=(0.5,)).start()\n'
            'threading.Thread(target=spawn, name="spawner", daemon=True).start()\nx = 5'
        )
        self.assert_ok(self.worker.run(spawner))
        run_id = self.worker.start('print("started")\nimport time\ntime.sleep(30)')
        self.worker.wait_for_output(run_id, 'started')
        time.sleep(0.2)
        os.kill(self.worker.proc.pid, signal.SIGINT)
        result, _ = self.worker.collect(run_id)
        self.assertFalse(result['success'])
        self.assertEqual(result['state'], 'preserved', result)
        self.assertNotIn('background_threads', result)
        self.assertEqual(self.worker.value('stop.set()\nx'), 5)


@library_test
class ThreadLibraryTests(WorkerTestCase):
    """A library's own daemon threads (tqdm's monitor) are not the user's background work:
    not listed, and not a reason to clear an interrupted cell; a thread of the user's that
    claims to be the library's still is."""

    def test_tqdm_monitor_is_not_listed(self):
        result = self.worker.run('from tqdm import tqdm\ntotal = 0\nfor i in tqdm(range(50)):\n    total += i')
        self.assert_ok(result)
        self.assertNotIn('background_threads', result)
        self.assertTrue(self.worker.value('import threading\nany(t.name == "tqdm_monitor" for t in threading.enumerate())'))

    def test_a_thread_claiming_to_be_tqdms_is_listed(self):
        code = ('import threading, tqdm._monitor\n'
                'stop = threading.Event()\n'
                'class TMonitor(threading.Thread):\n'
                '    pass\n'
                'TMonitor.__module__ = "tqdm._monitor"\n'
                'TMonitor(target=stop.wait, name="fake monitor", daemon=True).start()\n'
                'threading.Thread(target=stop.wait, name="mine", daemon=True).start()')
        result = self.worker.run(code)
        self.assert_ok(result)
        self.assertEqual(result['background_threads'], ['fake monitor', 'mine'])
        self.worker.run('stop.set()')

    def test_an_interrupted_tqdm_loop_keeps_its_variables(self):
        run_id = self.worker.start('from tqdm import tqdm\nimport time\nx = 1\nfor i in tqdm(range(100)):\n    print("looping", flush=True)\n    time.sleep(1)')
        self.worker.wait_for_output(run_id, 'looping')
        os.kill(self.worker.proc.pid, signal.SIGINT)
        result, _ = self.worker.collect(run_id)
        self.assertFalse(result['success'])
        self.assertEqual(result['state'], 'preserved', result.get('error'))
        self.assertNotIn('background_threads', result)
        self.assertEqual(self.worker.value('x'), 1)
