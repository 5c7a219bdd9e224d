"""SIGINT, and what a cell leaves running when it ends.
Every worker is started through the real bootstrap with the bundle the server sends
(harness.WorkerProcess)."""

import os
import signal
import time
import unittest

from harness import INTERRUPTED, THREADS_INTERRUPTED, WorkerTestCase, read_text, signal_other_thread, wait_gone


class InterruptTests(WorkerTestCase):
    def interrupt_when_printed(self, code, send=os.kill):
        run_id = self.worker.start(code)
        self.worker.wait_for_output(run_id, 'started')
        time.sleep(0.05)
        send(self.worker.proc.pid, signal.SIGINT)
        result, _ = self.worker.collect(run_id)
        return run_id, result

    def check_interrupt(self, code, send=os.kill):
        run_id, result = self.interrupt_when_printed(code, send)
        self.assertFalse(result['success'])
        self.assertEqual(result['state'], 'preserved')
        self.assertEqual(result['error'], INTERRUPTED.format(run_id))
        self.assertIs(result.get('interrupted'), True)
        self.assertEqual(self.worker.value('x'), 10)
        self.assertEqual(self.worker.value('import asyncio\nawait asyncio.sleep(0.01)\nasyncio.get_running_loop() is loop'), True)

    def test_sigint_interrupts_sync_loop(self):
        self.assert_ok(self.worker.run('import asyncio\nloop = asyncio.get_event_loop()'))
        self.check_interrupt('x = 10\nprint("started")\nwhile True:\n    pass')

    def test_sigint_interrupts_sleep(self):
        self.assert_ok(self.worker.run('import asyncio\nloop = asyncio.get_event_loop()'))
        self.check_interrupt('import time\nx = 10\nprint("started")\ntime.sleep(30)')

    def test_sigint_another_thread_takes_interrupts_a_blocked_main_thread(self):
        # The kernel may hand the group's SIGINT to any thread; Python only marks it there,
        # and a main thread blocked in time.sleep would not run the handler for 30 s.
        self.assert_ok(self.worker.run('import asyncio\nloop = asyncio.get_event_loop()'))
        self.check_interrupt('import time\nx = 10\nprint("started")\ntime.sleep(30)', send=signal_other_thread)

    def test_sigint_another_thread_takes_between_cells_is_ignored(self):
        self.assert_ok(self.worker.run('x = 10'))
        signal_other_thread(self.worker.proc.pid, signal.SIGINT)
        time.sleep(0.2)  # the stray wait and the main thread's handler, which ignores it
        # Under load the handler may run only once the next command is on its way, and a
        # SIGINT then is for that command (as os.kill's would be): it may stop that one
        # cell, never the worker or its state.
        run_id = self.worker.start('import time\ntime.sleep(0.1)\nx')
        result, _ = self.worker.collect(run_id)
        if not result['success']:
            self.assertEqual([result['error'], result['state']], [INTERRUPTED.format(run_id), 'preserved'])
        self.assertEqual(self.worker.value('x'), 10)
        self.assertIsNone(self.worker.proc.poll())

    def test_sigint_interrupts_awaiting_cell(self):
        self.assert_ok(self.worker.run('import asyncio\nloop = asyncio.get_event_loop()'))
        self.check_interrupt('x = 10\nprint("started")\nawait asyncio.sleep(30)')

    def test_sigint_interrupts_async_busy_loop(self):
        self.assert_ok(self.worker.run('import asyncio\nloop = asyncio.get_event_loop()'))
        self.check_interrupt('x = 10\nprint("started")\nwhile True:\n    await asyncio.sleep(0)')

    def test_sigint_first_cancels_at_an_await_wherever_it_lands(self):
        # The registered handler, called as the signal machinery would with the frame it
        # caught: user code, asyncio's own code, the worker's code. None may raise there
        # (a KeyboardInterrupt can land between acquiring a lock and the `async with`
        # that releases it); the cell is cancelled at its next await instead.
        frames = {
            'user': 'sys._getframe()',
            'asyncio': 'types.FunctionType((lambda get: get()).__code__, vars(asyncio.locks))(sys._getframe)',
            'worker': 'sys._getframe(1)',
        }
        for name, frame in frames.items():
            with self.subTest(frame=name):
                code = (
                    'import asyncio, signal, sys, types\nraised = False\n'
                    f'try:\n    signal.getsignal(signal.SIGINT)(signal.SIGINT, {frame})\n'
                    'except KeyboardInterrupt:\n    raised = True\n'
                    'await asyncio.sleep(5)'
                )
                run_id = self.worker.start(code)
                result, _ = self.worker.collect(run_id, timeout=4)
                self.assertEqual(result['error'], INTERRUPTED.format(run_id))
                self.assertEqual(self.worker.value('raised'), False)

    def test_interrupted_async_with_releases_lock(self):
        self.assert_ok(self.worker.run('import asyncio\nlock = asyncio.Lock()\nloop = asyncio.get_running_loop()'))
        for _ in range(8):
            run_id, result = self.interrupt_when_printed(
                'print("started")\nwhile True:\n    async with lock:\n        await asyncio.sleep(0)'
            )
            self.assertEqual(result['error'], INTERRUPTED.format(run_id))
            self.assertEqual(self.worker.value('lock.locked()'), False)

    def test_sigint_right_after_dispatch_interrupts_the_cell(self):
        # The signal may reach the worker while the frame is still in the pipe, being read,
        # queued or prepared: it is for that cell all the same (the server's grace is 2 s).
        self.assert_ok(self.worker.run('x = 10'))
        for delay in (0, 0, 0.001, 0.005, 0.02):
            started = time.monotonic()
            run_id = self.worker.start('import time; time.sleep(30)')
            time.sleep(delay)
            os.kill(self.worker.proc.pid, signal.SIGINT)
            result, _ = self.worker.collect(run_id, timeout=1.5)
            self.assertEqual(result['error'], INTERRUPTED.format(run_id))
            self.assertEqual(result['state'], 'preserved')
            self.assertLess(time.monotonic() - started, 1.5)
        self.assertEqual(self.worker.value('x'), 10)

    def test_sigint_interrupts_sh_and_kills_its_group(self):
        pidfile = self.path('shell-pid')
        run_id = self.worker.start(f'x = 10\nprint("started")\nsh("echo $$ > {pidfile}; exec sleep 30")')
        self.worker.wait_for_output(run_id, 'started')
        deadline = time.monotonic() + 5
        while not os.path.exists(pidfile) or not read_text(pidfile).strip():
            self.assertLess(time.monotonic(), deadline)
            time.sleep(0.01)
        os.kill(self.worker.proc.pid, signal.SIGINT)
        result, _ = self.worker.collect(run_id, timeout=2)
        self.assertEqual(result['error'], INTERRUPTED.format(run_id))
        self.assertTrue(wait_gone(int(read_text(pidfile))))
        self.assertEqual(self.worker.value('x'), 10)

    def test_sigint_between_cells_is_harmless(self):
        self.assert_ok(self.worker.run('x = 1'))
        for _ in range(3):
            os.kill(self.worker.proc.pid, signal.SIGINT)
            time.sleep(0.05)
        # A SIGINT another thread took reaches the main thread's handler only once the
        # main thread runs bytecode again, which under load may be when the next command
        # is on its way: it is then for that command, as in
        # test_sigint_another_thread_takes_between_cells_is_ignored. It may stop that one
        # cell, never the worker or its state.
        run_id = self.worker.start('x + 1')
        result, _ = self.worker.collect(run_id)
        if not result['success']:
            self.assertEqual([result['error'], result['state']], [INTERRUPTED.format(run_id), 'preserved'])
        self.assertEqual(self.worker.value('x + 1'), 2)
        self.assertIsNone(self.worker.proc.poll())

    def test_interrupt_with_running_executor_work_clears_state(self):
        marker = self.path('late')
        code = (
            f'import asyncio, time\nx = 10\nprint("started")\n'
            f'def job():\n    time.sleep(1)\n    open({marker!r}, "w").close()\n'
            f'await asyncio.to_thread(job)'
        )
        _, result = self.interrupt_when_printed(code)
        self.assertEqual(result['state'], 'cleared')
        self.assertEqual(result['error'], THREADS_INTERRUPTED.format('repl-mcp-executor_0'))
        self.assertEqual(result['background_threads'], ['repl-mcp-executor_0'])
        self.assertEqual(self.worker.wait_exit(), 70)
        # The worker has exited and its threads with it: the marker is there now or never.
        self.assertFalse(os.path.exists(marker))


class BackgroundWorkTests(WorkerTestCase):
    def test_background_task_cancelled_at_cell_end(self):
        code = (
            'import asyncio\nx = 0\n'
            'async def bump():\n    global x\n    await asyncio.sleep(0.3)\n    x = 1\n'
            'task = asyncio.create_task(bump())'
        )
        result = self.worker.run(code)
        self.assert_ok(result)
        self.assertEqual(result['background_tasks_cancelled'], 1)
        self.assertEqual(self.worker.value('await asyncio.sleep(0.5)\n[x, task.cancelled()]'), [0, True])

    def test_task_refusing_cancellation_clears_worker(self):
        code = (
            'import asyncio\n'
            'async def stubborn():\n'
            '    while True:\n'
            '        try:\n            await asyncio.sleep(10)\n'
            '        except asyncio.CancelledError:\n            pass\n'
            'task = asyncio.create_task(stubborn())\nawait asyncio.sleep(0)'
        )
        result = self.worker.run(code)
        self.assertFalse(result['success'])
        self.assertEqual(result['state'], 'cleared')
        self.assertEqual(result['error'], 'Background tasks refused cancellation; worker stopped and variables cleared')
        self.assertEqual(self.worker.wait_exit(), 70)

    def test_timer_callbacks_cannot_fire_under_later_cell(self):
        marker = self.path('timer')
        code = (
            f'import asyncio\nloop = asyncio.get_running_loop()\n'
            f'def touch(name):\n    open({marker!r} + name, "w").close()\n'
            f'loop.call_later(0.2, touch, "-later")\n'
            f'loop.call_at(loop.time() + 0.2, touch, "-at")\n'
            f'ticks = [0]\n'
            f'def tick():\n    ticks[0] += 1\n    loop.call_soon(tick)\n'
            f'loop.call_soon(tick)'
        )
        self.assert_ok(self.worker.run(code))
        # The self-rescheduling callback always has one call pending when the cell ends.
        self.assertEqual(self.worker.value('before = ticks[0]\nawait asyncio.sleep(0.5)\nticks[0] - before'), 0)
        for name in ('-later', '-at'):
            self.assertFalse(os.path.exists(marker + name), name)
        self.assertEqual(self.worker.value('h = loop.call_later(0.01, touch, "-inside")\nawait asyncio.sleep(0.1)\n1'), 1)
        self.assertTrue(os.path.exists(marker + '-inside'))

    def test_unjoined_thread_is_background_work(self):
        result = self.worker.run('import threading, time\nx = 1\nthreading.Thread(target=time.sleep, args=(2,), name="sleeper").start()')
        self.assert_ok(result)
        self.assertEqual(result['background_threads'], ['sleeper'])
        self.assertEqual(self.worker.value('x'), 1)

    def test_joined_thread_is_fine(self):
        result = self.worker.run('import threading\nt = threading.Thread(target=print, args=("hi",))\nt.start()\nt.join()')
        self.assert_ok(result)
        self.assertEqual(result['stdout'], 'hi\n')

    def test_finished_executor_work_preserves_state(self):
        code = (
            'import asyncio, socket\nlock = asyncio.Lock()\n'
            'n = await asyncio.to_thread(sum, [1, 2, 3])\n'
            'infos = await asyncio.get_running_loop().getaddrinfo("localhost", 80, type=socket.SOCK_STREAM)\n'
            'n'
        )
        result = self.worker.run(code)
        self.assert_ok(result)
        self.assertEqual(result['value'], 6)
        self.assertEqual(self.worker.value('async with lock:\n    m = await asyncio.to_thread(len, "abcd")\nm'), 4)

    def test_awaited_subprocess_and_finished_work_preserve_state(self):
        # asyncio's waitpid watcher thread (3.10/3.11) and an unawaited quick executor job
        # are finished, or just finishing, when the cell ends.
        for _ in range(5):
            result = self.worker.run(
                'import asyncio\nproc = await asyncio.create_subprocess_exec("true")\nawait proc.wait()\n'
                'asyncio.get_running_loop().run_in_executor(None, int)\nproc.returncode'
            )
            self.assert_ok(result)
            self.assertEqual(result['value'], 0)

    def test_default_executor_pending_limit(self):
        code = (
            'import asyncio, threading\nloop = asyncio.get_running_loop()\ngate = threading.Event()\n'
            'jobs = [loop.run_in_executor(None, gate.wait, 10) for _ in range(64)]\n'
            'try:\n    loop.run_in_executor(None, gate.wait, 10)\n    message = None\n'
            'except RuntimeError as exc:\n    message = str(exc)\n'
            'gate.set()\nawait asyncio.gather(*jobs)\nmessage'
        )
        result = self.worker.run(code)
        self.assert_ok(result)
        self.assertEqual(result['value'], 'Too many pending default executor jobs (limit 64)')


if __name__ == '__main__':
    unittest.main()
