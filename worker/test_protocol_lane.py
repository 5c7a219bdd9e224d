"""stdout's fast lane in a real worker: a print of the main thread runs no Python code
while no thread of the user's is alive, and what it prints keeps its place among stderr,
bytes and the prints of threads; a thread the lane cannot tell apart closes it first."""

import sys
import unittest

from harness import WorkerTestCase

# Counts the calls of Python functions the main thread makes while it prints.
COUNT_CALLS = (
    'import sys\n'
    'calls = []\n'
    'def profile(frame, event, arg):\n'
    '    if event == "call":\n'
    '        calls.append(frame.f_code.co_qualname if hasattr(frame.f_code, "co_qualname") else frame.f_code.co_name)\n'
    'sys.setprofile(profile)\n'
    '{}\n'
    'sys.setprofile(None)\n'
)


class LaneTests(WorkerTestCase):
    def test_a_print_runs_no_python_code(self):
        result = self.worker.run(COUNT_CALLS.format(
            'for i in range(1000):\n    print(i)\nsys.stdout.write("end\\n")\nsys.stdout.writelines(["a\\n", "b\\n"])'
        ) + 'calls')
        self.assert_ok(result)
        self.assertEqual(result['value'], [])
        self.assertEqual(result['stdout'], ''.join(f'{i}\n' for i in range(1000)) + 'end\na\nb\n')
        # Past the budget too: head, marker and tail as on the plain path.
        result = self.worker.run(COUNT_CALLS.format('for i in range(100_000):\n    print(i)') + 'calls')
        self.assertEqual(result['value'], [])
        self.assertTrue(result['stdout'].startswith('0\n1\n2\n'))
        self.assertTrue(result['stdout'].endswith('99998\n99999\n'))
        self.assertEqual(result['cuts']['stdout']['lines'] + result['stdout'].count('\n') - 2, 100_000)  # the marker's two

    def test_order_among_stderr_bytes_and_a_thread_of_the_cell(self):
        run_id = self.worker.start(
            'import sys, threading\n'
            'print("a")\nsys.stderr.write("E\\n")\nprint("b")\nsys.stdout.buffer.write(b"c\\n")\nprint("d")\n'
            't = threading.Thread(target=print, args=("thread",))\nt.start()\nt.join()\nprint("after")'
        )
        result, outputs = self.worker.collect(run_id)
        self.assert_ok(result)
        self.assertEqual(result['stdout'], 'a\nb\nc\nd\nthread\nafter\n')
        self.assertEqual(result['stderr'], 'E\n')
        merged = []
        for frame in outputs:
            if merged and merged[-1][0] == frame['stream']:
                merged[-1][1] += frame['text']
            else:
                merged.append([frame['stream'], frame['text']])
        self.assertEqual(merged, [['stdout', 'a\n'], ['stderr', 'E\n'], ['stdout', 'b\nc\nd\nthread\nafter\n']])

    def test_a_thread_started_by_thread_prints_to_the_background(self):
        # No Thread object: only the wrapper of _thread.start_new_thread closes the lane in time.
        result = self.worker.run(
            'import _thread, threading, sys\n'
            'done = threading.Event()\n'
            'print("cell")\n'
            '_thread.start_new_thread(lambda: (print("raw"), done.set()), ())\n'
            'done.wait(10)\n'
            'print("cell again")'
        )
        self.assert_ok(result)
        self.assertEqual(result['stdout'], 'cell\ncell again\n')
        self.assertEqual(result['background_output']['stdout'], 'raw\n')

    def test_a_thread_of_an_earlier_cell_keeps_the_lane_closed(self):
        self.assert_ok(self.worker.run(
            'import threading\ngo = threading.Event()\n'
            'def later():\n    go.wait(10)\n    print("from before")\n'
            'earlier = threading.Thread(target=later)\nearlier.start()'
        ))
        result = self.worker.run(COUNT_CALLS.format('print("now")\ngo.set()\nearlier.join(10)\nprint("now again")') + 'sorted({c for c in calls if c.endswith("write")})')
        self.assert_ok(result)
        self.assertEqual(result['value'], ['Sink.write'] if sys.version_info >= (3, 11) else ['write'])  # the plain path
        self.assertEqual(result['stdout'], 'now\nnow again\n')
        self.assertEqual(result['background_output']['stdout'], 'from before\n')
        # Once it has ended, the lane opens again.
        result = self.worker.run(COUNT_CALLS.format('print("alone")') + 'calls')
        self.assertEqual((result['value'], result['stdout']), ([], 'alone\n'))

    def test_a_write_of_the_users_own_and_a_reconfigured_stdout(self):
        result = self.worker.run('import sys\nseen = []\nsys.stdout.write = seen.append\nprint("x")')
        self.assertEqual(result['stdout'], '')
        result = self.worker.run('print("y")\ndel sys.stdout.write\nprint("z")\nseen')
        self.assertEqual((result['value'], result['stdout']), (['x', '\n', 'y', '\n'], 'z\n'))
        # A write of the user's that wraps the one it found (the lane's) still reaches the result.
        result = self.worker.run('plain = sys.stdout.write\nsys.stdout.write = lambda text: plain(text.upper())\nprint("up")')
        self.assertEqual(result['stdout'], 'UP\n')
        result = self.worker.run('print("still up")\ndel sys.stdout.write\nprint("down")')
        self.assertEqual(result['stdout'], 'STILL UP\ndown\n')
        result = self.worker.run('print("é")\nsys.stdout.reconfigure(encoding="ascii", errors="replace")\nprint("é")')
        self.assertEqual(result['stdout'], 'é\n?\n')
        result = self.worker.run('sys.stdout.reconfigure(encoding="utf-8")\nprint("é")\nsys.stdout.write(b"x")')
        self.assertEqual(result['stdout'], 'é\n')
        self.assertIn('TypeError: write() argument must be str, not bytes', result['error'])

    def test_a_slow_printer_is_streamed_live(self):
        run_id = self.worker.start('import time\nprint("first", flush=True)\ntime.sleep(0.5)\nprint("second")')
        frame = self.worker.next_frame()
        self.assertEqual((frame['type'], frame['stream'], frame['text']), ('output', 'stdout', 'first\n'))
        result, outputs = self.worker.collect(run_id)
        self.assertEqual(result['stdout'], 'first\nsecond\n')
        self.assertEqual(''.join(f['text'] for f in outputs), 'second\n')


if __name__ == '__main__':
    unittest.main()
