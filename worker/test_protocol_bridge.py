"""The mcp bridge and artifacts: their rpc frames, answered by the test as the server.
Every worker is started through the real bootstrap with the bundle the server sends
(harness.WorkerProcess)."""

import base64
import hashlib
import json
import os
import signal
import time
import unittest
import uuid

from harness import (
    ARTIFACT_HELPERS, ARTIFACT_UNSUPPORTED, CHUNK, INTERRUPTED, MCP_BAD_TIMEOUT,
    MCP_BOTH_ARGUMENTS, MCP_FOREIGN, WorkerTestCase,
)


def envelope(*texts, is_error=False):
    content = [{'type': 'text', 'text': text} for text in texts]
    return {'content': content, 'structuredContent': {'count': len(texts)}, 'isError': is_error, '_meta': {'m': 1}}


class BridgeTests(WorkerTestCase):
    """The test plays the server: it reads `rpc` frames and answers with `rpc_result`."""

    def call_params(self, tool, arguments=None, timeout=120.0, server='fix'):
        return {'server': server, 'tool': tool, 'arguments': arguments or {}, 'timeout': timeout}

    def assert_refused(self, code, message):
        """The cell fails with `message` and no rpc frame is sent."""
        run_id = self.worker.start(code)
        result, events = self.worker.events_until_result(run_id)
        self.assertIn(message, str(result['error']) + str(result.get('value')), code)
        self.assertEqual(events, [], code)

    def test_sync_call_returns_full_envelope(self):
        run_id = self.worker.start('r = mcp.call("fix", "echo", text="hi")\nr')
        rpc = self.worker.next_rpc(run_id)
        self.assertEqual(rpc['op'], 'call')
        self.assertEqual(rpc['params'], self.call_params('echo', {'text': 'hi'}))
        reply = envelope('first', 'second')
        reply['content'].insert(1, {'type': 'image', 'data': 'AA==', 'mimeType': 'image/png'})
        self.worker.reply(rpc['id'], reply)
        result, events = self.worker.events_until_result(run_id)
        self.assert_ok(result)
        self.assertEqual(events, [])
        self.assertEqual(result['value'], reply)
        self.assertEqual(json.loads(result['return_value']), reply)
        code = '[mcp.text(r), type(r).__name__, isinstance(r, dict), r["_meta"]]'
        self.assertEqual(self.worker.value(code), ['first\nsecond', 'ToolResult', True, {'m': 1}])
        self.assertIn('TypeError', self.worker.run('mcp.text("not an envelope")')['error'])

    def test_replies_of_any_depth_and_undecodable_ones_keep_the_session(self):
        """A downstream result about 990 levels deep ended the worker on CPython 3.10 and
        3.11 (RecursionError in its decoder, a protocol error, variables cleared); it reaches
        the cell at any depth. A reply or a request that cannot be decoded at all fails only
        its call or its run."""
        self.assert_ok(self.worker.run('kept = 41'))
        code = 'r = mcp.call("fix", "deep")\nd, v = 1, r["structuredContent"]["v"]\nwhile v:\n    d, v = d + 1, v[0]\nd'
        for depth in (990, 20_000):
            run_id = self.worker.start(code)
            rpc = self.worker.next_rpc(run_id)
            deep = '[' * depth + ']' * depth
            self.worker.send_raw(b'{"type":"rpc_result","id":"%s","result":{"content":[],"structuredContent":{"v":%s}}}\n'
                                 % (rpc['id'].encode(), deep.encode()))
            result, events = self.worker.events_until_result(run_id)
            self.assert_ok(result)
            self.assertEqual((result['value'], events), (depth, []))
        run_id = self.worker.start('try:\n    mcp.call("fix", "bad")\nexcept ToolError as e:\n    err = str(e)\nerr')
        rpc = self.worker.next_rpc(run_id)
        self.worker.send_raw(b'{"type":"rpc_result","id":"%s","result":{"t":"\xff"}}\n' % rpc['id'].encode())
        result, _ = self.worker.events_until_result(run_id)
        self.assert_ok(result)
        self.assertTrue(result['value'].startswith("MCP reply could not be decoded in the worker (UnicodeDecodeError: 'utf-8' codec"), result)
        self.assertTrue(result['value'].endswith('; the call may have completed. Inspect mcp.journal()'), result)
        self.worker.send_raw(b'{"type":"execute","id":"run-x","code":"\xfe","timeout":30,"barrier":"b"}\n')
        result, outputs = self.worker.collect('run-x')
        self.assertEqual((result['success'], result['state'], outputs), (False, 'preserved', []))
        self.assertTrue(result['error'].startswith('The worker could not decode the request of this run (UnicodeDecodeError:'), result)
        self.assertFalse(self.worker.barrier_written)
        self.assertEqual(self.worker.value('kept + 1'), 42)

    def test_awaited_sync_call_dispatches_once(self):
        run_id = self.worker.start('await mcp.call("fix", "echo", arguments={"timeout": 7})')
        rpc = self.worker.next_rpc(run_id)
        self.assertEqual(rpc['params'], self.call_params('echo', {'timeout': 7}))
        self.worker.reply(rpc['id'], envelope('once'))
        result, events = self.worker.events_until_result(run_id)
        self.assert_ok(result)
        self.assertEqual(events, [])
        self.assertEqual(result['value'], envelope('once'))

    def test_multiplexed_async_calls_and_tool_error(self):
        run_id = self.worker.start('import asyncio\nawait asyncio.gather(mcp.acall("fix", "a"), mcp.acall("fix", "b", timeout=5))')
        first, second = self.worker.next_rpc(run_id), self.worker.next_rpc(run_id)
        self.assertEqual([first['params'], second['params']], [self.call_params('a'), self.call_params('b', timeout=5)])
        self.worker.reply(second['id'], envelope('B'))
        self.worker.reply(first['id'], envelope('A'))
        result, events = self.worker.events_until_result(run_id)
        self.assertEqual(events, [])
        self.assertEqual(result['value'], [envelope('A'), envelope('B')])

        run_id = self.worker.start('mcp.call("fix", "bad")')
        self.worker.reply(self.worker.next_rpc(run_id)['id'], envelope('bad arguments', is_error=True))
        result, _ = self.worker.events_until_result(run_id)
        self.assertTrue(result['error'].endswith('\nToolError: MCP tool failed: bad arguments'), result['error'])
        self.assert_no_worker_frames(result['error'])

        code = (
            'try:\n    await mcp.acall("fix", "bad")\nexcept ToolError as e:\n'
            '    caught = [str(e), e.result["isError"], isinstance(e, RuntimeError)]\ncaught'
        )
        run_id = self.worker.start(code)
        self.worker.reply(self.worker.next_rpc(run_id)['id'], envelope('one', 'two', is_error=True))
        self.assertEqual(self.worker.collect(run_id)[0]['value'], ['MCP tool failed: one\ntwo', True, True])

        code = 'try:\n    mcp.call("fix", "x")\nexcept ToolError as e:\n    caught = [str(e), e.result]\ncaught'
        run_id = self.worker.start(code)
        self.worker.reply(self.worker.next_rpc(run_id)['id'], error='Too many outstanding MCP calls')
        self.assertEqual(self.worker.collect(run_id)[0]['value'], ['Too many outstanding MCP calls', None])

    def test_invalid_bridge_arguments_have_no_side_effects(self):
        for timeout in ('-1', '0', '0.001', '3601', 'float("inf")', 'float("nan")', '"1"', 'True', 'None'):
            with self.subTest(timeout=timeout):
                self.assert_refused(f'mcp.call("fix", "echo", timeout={timeout})', MCP_BAD_TIMEOUT)
        self.assert_refused('await mcp.acall("fix", "echo", timeout=-1)', MCP_BAD_TIMEOUT)
        self.assert_refused('mcp.list_tools("fix", timeout=0)', MCP_BAD_TIMEOUT)
        self.assert_refused('mcp.help("fix", timeout=4000)', MCP_BAD_TIMEOUT)
        self.assert_refused('mcp.call("fix", "echo", arguments={"a": 1}, b=2)', MCP_BOTH_ARGUMENTS)
        self.assert_refused('await mcp.acall("fix", "echo", arguments={}, b=2)', MCP_BOTH_ARGUMENTS)
        self.assert_refused('mcp.call("fix", "echo", arguments=[1])', 'arguments must be a dict')
        self.assert_refused('mcp.call("fix", "echo", x=float("nan"))', 'ValueError')
        self.assert_refused('mcp.call("fix", "echo", x=object())', 'TypeError')
        self.assert_refused('mcp.call("fix", "echo", x="y" * 1_100_000)', 'Worker frame exceeds 1 MiB')
        self.assertEqual(self.worker.value('1'), 1)

    def test_threads_and_old_contexts_cannot_borrow_a_cell(self):
        code = (
            'import threading\nerrors = []\n'
            'def borrow():\n    try:\n        mcp.call("fix", "echo")\n'
            '    except RuntimeError as exc:\n        errors.append(str(exc))\n'
            't = threading.Thread(target=borrow)\nt.start()\nt.join()\nerrors'
        )
        self.assert_refused(code, MCP_FOREIGN)
        self.assert_refused('import asyncio\nawait asyncio.to_thread(mcp.call, "fix", "echo")', MCP_FOREIGN)
        self.assert_ok(self.worker.run('import contextvars\nold = contextvars.copy_context()\nbridge = mcp'))
        self.assert_refused('old.run(mcp.call, "fix", "echo")', MCP_FOREIGN)
        self.assert_refused('old.run(bridge.servers)', MCP_FOREIGN)
        # An old bridge object still works from the running cell's own code.
        run_id = self.worker.start('bridge.servers()')
        rpc = self.worker.next_rpc(run_id)
        self.assertEqual([rpc['op'], rpc['params']], ['servers', {}])
        self.worker.reply(rpc['id'], {'servers': ['a', 'b']})
        self.assertEqual(self.worker.collect(run_id)[0]['value'], ['a', 'b'])

    def test_cancelling_one_async_rpc_signals_only_its_origin(self):
        code = (
            'import asyncio\n'
            'a = asyncio.ensure_future(mcp.acall("fix", "a"))\n'
            'b = asyncio.ensure_future(mcp.acall("fix", "b"))\n'
            'await asyncio.sleep(0)\n'
            'a.cancel()\n'
            'r = await b\n'
            '[a.cancelled(), r]'
        )
        run_id = self.worker.start(code)
        first, second = self.worker.next_rpc(run_id), self.worker.next_rpc(run_id)
        self.assertEqual(self.worker.next_event(), {'type': 'rpc_cancel', 'id': first['id'], 'run_id': run_id})
        self.worker.reply(second['id'], envelope('B'))
        self.worker.reply(first['id'], envelope('late'))
        result, events = self.worker.events_until_result(run_id)
        self.assertEqual(events, [])
        self.assertEqual(result['value'], [True, envelope('B')])
        self.assertEqual(self.worker.value('1 + 1'), 2)

    def test_cancelled_rpc_late_result_does_not_poison_next_run(self):
        self.assert_ok(self.worker.run('x = 10'))
        run_id = self.worker.start('mcp.call("fix", "slow")')
        rpc = self.worker.next_rpc(run_id)
        time.sleep(0.05)
        os.kill(self.worker.proc.pid, signal.SIGINT)
        result, events = self.worker.events_until_result(run_id, timeout=5)
        self.assertEqual(result['error'], INTERRUPTED.format(run_id))
        self.assertEqual(result['state'], 'preserved')
        self.assertEqual(events, [{'type': 'rpc_cancel', 'id': rpc['id'], 'run_id': run_id}])
        self.worker.reply(rpc['id'], envelope('late'))
        self.worker.reply(uuid.uuid4().hex, envelope('unknown'))
        self.assertEqual(self.worker.value('x'), 10)
        run_id = self.worker.start('mcp.call("fix", "next")')
        rpc = self.worker.next_rpc(run_id)
        self.worker.reply(rpc['id'], envelope('fresh'))
        result, events = self.worker.events_until_result(run_id)
        self.assertEqual([result['value'], events], [envelope('fresh'), []])

    def test_sync_wait_bounded_by_timeout_plus_one(self):
        started = time.monotonic()
        run_id = self.worker.start('mcp.call("fix", "slow", timeout=0.01)')
        rpc = self.worker.next_rpc(run_id)
        result, events = self.worker.events_until_result(run_id)
        self.assertGreaterEqual(time.monotonic() - started, 1.0)
        self.assertIn('ToolError: MCP call got no reply within 1.01 seconds', result['error'])
        self.assertEqual(events, [{'type': 'rpc_cancel', 'id': rpc['id'], 'run_id': run_id}])

    def test_pending_rpcs_cancelled_at_cell_end(self):
        run_id = self.worker.start('import asyncio\nt = asyncio.ensure_future(mcp.acall("fix", "slow"))\nawait asyncio.sleep(0)')
        rpc = self.worker.next_rpc(run_id)
        result, events = self.worker.events_until_result(run_id)
        self.assert_ok(result)
        self.assertEqual(result['background_tasks_cancelled'], 1)
        self.assertEqual(events, [{'type': 'rpc_cancel', 'id': rpc['id'], 'run_id': run_id}])
        self.worker.reply(rpc['id'], envelope('late'))
        self.assertEqual(self.worker.value('t.cancelled()'), True)

    def test_calls_beyond_the_pending_bound_wait_their_turn(self):
        code = (
            'import asyncio\n'
            'tasks = [asyncio.ensure_future(mcp.acall("fix", "t", n=i)) for i in range(200)]\n'
            'await asyncio.sleep(0)\n'  # every task has asked: 64 are sent, 136 wait
            'print("requested")\n'
            'results = await asyncio.gather(*tasks)\n'
            '[mcp.text(r) for r in results] == [str(n) for n in range(200)]'
        )
        run_id = self.worker.start(code)
        first = [self.worker.next_rpc(run_id) for _ in range(64)]
        self.assertEqual([rpc['params']['arguments']['n'] for rpc in first], list(range(64)))
        self.worker.wait_for_output(run_id, 'requested')
        with self.assertRaises(TimeoutError):  # no 65th before a reply
            self.worker.next_event(0.3)
        outstanding, sent = {rpc['id']: rpc for rpc in first}, list(first)
        while outstanding:
            # Answer the oldest; each reply lets exactly one waiting call out, in order.
            rpc_id = next(iter(outstanding))
            rpc = outstanding.pop(rpc_id)
            self.worker.reply(rpc_id, envelope(str(rpc['params']['arguments']['n'])))
            if len(sent) < 200:
                following = self.worker.next_rpc(run_id)
                self.assertEqual(following['params']['arguments']['n'], len(sent))
                outstanding[following['id']] = following
                sent.append(following)
            self.assertLessEqual(len(outstanding), 64)
        result, events = self.worker.events_until_result(run_id)
        self.assertEqual(events, [])
        self.assertIs(result['value'], True)

    def test_cancelling_a_waiting_call_sends_nothing(self):
        code = (
            'import asyncio\n'
            'held = [asyncio.ensure_future(mcp.acall("fix", "t", n=i)) for i in range(64)]\n'
            'waiting = [asyncio.ensure_future(mcp.acall("fix", "t", n=64 + i)) for i in range(3)]\n'
            'await asyncio.sleep(0)\n'
            'waiting[0].cancel()\n'
            'await asyncio.sleep(0)\n'
            'print("cancelled")\n'
            'done = await asyncio.gather(*held, *waiting[1:], return_exceptions=True)\n'
            '[waiting[0].cancelled(), [mcp.text(r) for r in done]]'
        )
        run_id = self.worker.start(code)
        held = [self.worker.next_rpc(run_id) for _ in range(64)]
        self.worker.wait_for_output(run_id, 'cancelled')
        for rpc in held[:2]:
            self.worker.reply(rpc['id'], envelope('ok'))
        # The two freed slots go to calls 65 and 66: the cancelled call 64 never went out.
        following = [self.worker.next_rpc(run_id) for _ in range(2)]
        self.assertEqual([rpc['params']['arguments']['n'] for rpc in following], [65, 66])
        for rpc in held[2:] + following:
            self.worker.reply(rpc['id'], envelope('ok'))
        result, events = self.worker.events_until_result(run_id)
        self.assertEqual(events, [])
        self.assertEqual(result['value'], [True, ['ok'] * 66])

    def test_a_cancelled_call_frees_its_slot_and_the_queue_is_bounded(self):
        code = (
            'import asyncio\n'
            'held = [asyncio.ensure_future(mcp.acall("fix", "t", n=i)) for i in range(64)]\n'
            'queued = [asyncio.ensure_future(mcp.acall("fix", "t", n=64 + i)) for i in range(1024)]\n'
            'await asyncio.sleep(0)\n'
            'try:\n    await mcp.acall("fix", "t", n=-1)\n    refused = None\n'
            'except RuntimeError as exc:\n    refused = str(exc)\n'
            'held[0].cancel()\n'
            'for _ in range(10):\n    await asyncio.sleep(0)\n'  # the call it let out sends its rpc
            'for task in held[1:] + queued:\n    task.cancel()\n'
            'await asyncio.gather(*held, *queued, return_exceptions=True)\n'
            'refused'
        )
        run_id = self.worker.start(code)
        held = [self.worker.next_rpc(run_id) for _ in range(64)]
        cancel = self.worker.next_event()
        self.assertEqual([cancel['type'], cancel['id']], ['rpc_cancel', held[0]['id']])
        # The slot it freed goes to the first queued call at once.
        following = self.worker.next_rpc(run_id)
        self.assertEqual(following['params']['arguments']['n'], 64)
        result, events = self.worker.events_until_result(run_id)
        # Every call that went out is cancelled; none of the queued ones ever went out.
        self.assertEqual(sorted(e['id'] for e in events), sorted(rpc['id'] for rpc in held[1:] + [following]))
        self.assertEqual({e['type'] for e in events}, {'rpc_cancel'})
        self.assertEqual(result['value'], 'Too many pending MCP calls (limit 64 in flight and 1024 waiting)')

    def test_a_sync_call_waits_for_a_slot_too(self):
        code = (
            'import asyncio\n'
            'held = [asyncio.ensure_future(mcp.acall("fix", "t", n=i)) for i in range(64)]\n'
            'await asyncio.sleep(0)\n'
            'print("held")\n'
            'mcp.text(mcp.call("fix", "t", n=64))'
        )
        run_id = self.worker.start(code)
        held = [self.worker.next_rpc(run_id) for _ in range(64)]
        self.worker.wait_for_output(run_id, 'held')
        with self.assertRaises(TimeoutError):
            self.worker.next_event(0.3)
        self.worker.reply(held[0]['id'], envelope('first'))
        sync = self.worker.next_rpc(run_id)
        self.assertEqual(sync['params']['arguments']['n'], 64)
        self.worker.reply(sync['id'], envelope('sync'))
        result, events = self.worker.events_until_result(run_id)
        self.assertEqual(result['value'], 'sync')
        self.assertEqual(len(events), 63)  # the held calls the cell left behind are cancelled

    def test_named_help_uses_single_catalogue_deadline(self):
        tools = [{'name': 'other', 'inputSchema': {}}, {'name': 'echo', 'inputSchema': {'type': 'object'}}]
        run_id = self.worker.start('mcp.help("fixture", "echo", timeout=0.5)')
        rpc = self.worker.next_rpc(run_id)
        self.assertEqual([rpc['op'], rpc['params']], ['tools', {'server': 'fixture', 'timeout': 0.5}])
        self.worker.reply(rpc['id'], {'tools': tools})  # no ttlMs: nothing is kept
        rpc = self.worker.next_rpc(run_id)
        self.assertEqual(rpc['op'], 'servers')
        self.worker.reply(rpc['id'], {'servers': ['fixture']})
        result, outputs = self.worker.collect(run_id)
        self.assert_ok(result)
        self.assertTrue(''.join(o['text'] for o in outputs).startswith('mcp.fixture.echo()\n    (no description)'), outputs)
        run_id = self.worker.start('mcp.help("fixture", "nope")')
        rpc = self.worker.next_rpc(run_id)
        self.assertEqual(rpc['params'], {'server': 'fixture', 'timeout': 30.0})
        self.worker.reply(rpc['id'], {'tools': tools})
        self.assertIn("ValueError: Unknown tool 'nope'; use mcp.list_tools(server)", self.worker.collect(run_id)[0]['error'])

    def test_other_ops(self):
        cases = [
            ('mcp.list_tools("s")', 'tools', {'server': 's', 'timeout': 30.0}, {'tools': []}, []),
            ('mcp.refresh()', 'refresh', {}, {'healthy': True}, {'healthy': True}),
            ('mcp.journal()', 'journal', {}, {'records': [{'tool': 't'}]}, [{'tool': 't'}]),
            ('await mcp.ajournal()', 'journal', {}, {'records': []}, []),
            ('mcp.explain("s", "t")', 'explain', {'server': 's', 'tool': 't'}, {'status': 'ready'}, {'status': 'ready'}),
            ('mcp.explain("s")', 'explain', {'server': 's', 'tool': None}, {'status': 'ready'}, {'status': 'ready'}),
        ]
        for code, op, params, reply, value in cases:
            with self.subTest(code=code):
                run_id = self.worker.start(code)
                rpc = self.worker.next_rpc(run_id)
                self.assertEqual([rpc['op'], rpc['params']], [op, params])
                self.worker.reply(rpc['id'], reply)
                self.assertEqual(self.worker.collect(run_id)[0]['value'], value)
        run_id = self.worker.start('mcp.servers()')
        self.worker.reply(self.worker.next_rpc(run_id)['id'], ['not', 'wrapped'])
        self.assertIn('ToolError: MCP bridge returned a malformed servers result', self.worker.collect(run_id)[0]['error'])

    def test_mcp_comes_back_new_after_shadowing(self):
        self.assertEqual(self.worker.value('first = mcp\nmcp = None\nToolError = 1\n[mcp, ToolError]'), [None, 1])
        code = '[type(mcp).__name__, mcp is first, issubclass(ToolError, RuntimeError), "mcp" in repr(mcp)]'
        self.assertEqual(self.worker.value(code), ['McpBridge', False, True, True])
        names = [v['name'] for v in self.worker.value('repl_namespace()')['variables']]
        self.assertEqual(names, ['first'])


def reference(data, fmt, artifact_id=None):
    return {
        'id': artifact_id or str(uuid.uuid4()), 'size': len(data), 'format': fmt,
        'sha256': hashlib.sha256(data).hexdigest(), 'lifetime': 'server', 'eviction': 'oldest-first',
    }


class ArtifactTests(WorkerTestCase):
    """The test plays the server's artifact store: it answers the artifact.* rpc frames."""

    def serve_upload(self, run_id, fmt, upload_id='upload-1', chunk=CHUNK):
        """Answer one upload: begin (offering `chunk` bytes per append), every append
        (checking its offset), commit. Returns (uploaded bytes, [(offset, raw length)] of
        the appends, the reference sent)."""
        begin = self.worker.next_rpc(run_id)
        self.assertEqual([begin['op'], begin['params']], ['artifact.begin', {'format': fmt}])
        self.assertNotIn('data', begin)
        self.worker.reply(begin['id'], {'upload_id': upload_id, 'chunk_bytes': chunk, 'max_bytes': 16_777_216})
        data, appends = bytearray(), []
        while True:
            rpc = self.worker.next_rpc(run_id)
            if rpc['op'] != 'artifact.append':
                break
            params = rpc['params']
            self.assertEqual(sorted(params), ['offset', 'upload_id'])
            self.assertEqual([params['upload_id'], params['offset']], [upload_id, len(data)])
            chunk = base64.b64decode(rpc['data'], validate=True)  # the chunk is the frame's data
            appends.append((params['offset'], len(chunk)))
            data += chunk
            self.worker.reply(rpc['id'], {'upload_id': upload_id, 'size': len(data)})
        self.assertEqual([rpc['op'], rpc['params']], ['artifact.commit', {'upload_id': upload_id}])
        self.assertNotIn('data', rpc)
        ref = reference(bytes(data), fmt)
        self.worker.reply(rpc['id'], ref)
        return bytes(data), appends, ref

    def assert_chunked(self, appends, total):
        self.assertEqual(appends, [(offset, min(CHUNK, total - offset)) for offset in range(0, total, CHUNK)])

    def upload_cell(self, code, fmt):
        """Run a cell whose upload is served; returns (data, appends, reference, result)."""
        run_id = self.worker.start(code)
        data, appends, ref = self.serve_upload(run_id, fmt)
        result, events = self.worker.events_until_result(run_id)
        self.assertEqual(events, [])
        return data, appends, ref, result

    def assert_refused(self, code, message):
        """The cell fails with `message` and sends no rpc frame."""
        run_id = self.worker.start(code)
        result, events = self.worker.events_until_result(run_id)
        self.assertIn(message, str(result['error']), code)
        self.assertEqual(events, [], code)

    def test_str_value_streams_in_chunks(self):
        text = 'Жx' * 34_000  # 102,000 UTF-8 bytes; chunks split characters
        data, appends, ref, result = self.upload_cell('ref = artifact("Жx" * 34_000)\nref', 'text')
        self.assert_ok(result)
        self.assertEqual(data, text.encode('utf-8'))
        self.assert_chunked(appends, 102_000)
        self.assertEqual(len(appends), 4)
        self.assertEqual(result['value'], ref)
        self.assertNotIn('artifact', result)

    def test_json_value_streams_compact_utf8_json(self):
        code = (
            'value = {"rows": [{"i": i, "name": f"строка {i}", "f": i / 3, "ok": i % 2 == 0, "none": None}'
            ' for i in range(2000)], "t": (1, -2, 2 ** 4095), "nested": [[["deep"]]], "esc": "q\\"\\\\\\n\\u0001"}\n'
            'artifact(value)'
        )
        data, appends, ref, result = self.upload_cell(code, 'json')
        self.assert_ok(result)
        value = {
            'rows': [{'i': i, 'name': f'строка {i}', 'f': i / 3, 'ok': i % 2 == 0, 'none': None} for i in range(2000)],
            't': [1, -2, 2 ** 4095], 'nested': [[['deep']]], 'esc': 'q"\\\n\x01',
        }
        self.assertEqual(json.loads(data), value)
        self.assertEqual(data, json.dumps(value, ensure_ascii=False, separators=(',', ':')).encode())
        self.assert_chunked(appends, len(data))
        self.assertEqual(result['value'], ref)
        # A str may be uploaded as JSON on request.
        data, appends, _, result = self.upload_cell('artifact("ü\\n", format="json")', 'json')
        self.assertEqual([data, appends], ['"ü\\n"'.encode(), [(0, 6)]])

    def test_bytes_value(self):
        data, appends, ref, result = self.upload_cell('artifact(bytes(range(256)) * 300)', 'binary')
        self.assert_ok(result)
        self.assertEqual(data, bytes(range(256)) * 300)
        self.assert_chunked(appends, 76_800)
        self.assertEqual(result['value'], ref)

    def test_chunks_are_at_most_the_workers_own(self):
        # A server that offers more gets chunks of the worker's 256 KiB, the frame's
        # data; a bytes value goes a whole chunk at a time.
        run_id = self.worker.start('artifact(bytes(range(256)) * 3000)')
        data, appends, ref = self.serve_upload(run_id, 'binary', chunk=1 << 20)
        result, events = self.worker.events_until_result(run_id)
        self.assertEqual(events, [])
        self.assert_ok(result)
        self.assertEqual(data, bytes(range(256)) * 3000)
        self.assertEqual(appends, [(0, 262_144), (262_144, 262_144), (524_288, 243_712)])
        self.assertEqual(result['value'], ref)

    def test_unsupported_values_refused_without_user_code_or_rpc(self):
        setup = (
            'flag = []\n'
            'class Custom:\n'
            '    def __repr__(self):\n        flag.append("repr")\n        return "x"\n'
            '    def __eq__(self, other):\n        flag.append("eq")\n        return False\n'
            '    __hash__ = object.__hash__\n'
            '    def __iter__(self):\n        flag.append("iter")\n        return iter([])\n'
            '    @property\n    def __class__(self):\n        flag.append("class")\n        return dict\n'
            'class D(dict):\n'
            '    def items(self):\n        flag.append("items")\n        return {}.items()\n'
            'class S(str):\n'
            '    def __str__(self):\n        flag.append("str")\n        return "s"\n'
            'class I(int):\n    pass\n'
            'deep = 0\nfor _ in range(33):\n    deep = [deep]\n'
        )
        self.assert_ok(self.worker.run(setup))
        refused = [
            'Custom()', '[Custom()]', '{"k": Custom()}', 'Custom(), format="json"', 'D(a=1)', '[D()]', 'S("s")',
            '[S("s")]', 'I(1)', 'bytearray(b"x")', 'float("nan")', '[float("inf")]', '{1, 2}', '[frozenset()]',
            '{1: "int key"}', '{("t",): 1}',
        ]
        for args in refused:
            with self.subTest(args=args):
                self.assert_refused(f'artifact({args})', f'ValueError: {ARTIFACT_UNSUPPORTED}')
        # Exact JSON past a bound: the message names the bound, and how to save it anyway.
        past_bounds = [
            '2 ** 4096', '[-(2 ** 4096)]', 'deep', '[0] * 100_001', '[[0] * 50_000, [0] * 50_000]',
            '["x" * (4 * 1024 * 1024 + 1)]', '{"k" * (2 * 1024 * 1024 + 1): "v" * (2 * 1024 * 1024)}',
        ]
        for args in past_bounds:
            with self.subTest(args=args):
                self.assert_refused(f'artifact({args})', 'ValueError: Artifact JSON is past its bounds (')
        self.assertEqual(self.worker.value('flag'), [])
        # Just within the budgets: the check passes and the upload begins.
        # 100,000 values held (the inner lists are two of them), the outer list not one.
        accepted = ['2 ** 4095', 'deep[0]', '[0] * 100_000', '[[0] * 50_000, [0] * 49_998]', '["x" * (4 * 1024 * 1024)]', '{"k" * (2 * 1024 * 1024): "v" * (2 * 1024 * 1024)}']
        for args in accepted:
            with self.subTest(args=args):
                run_id = self.worker.start(f'artifact({args})')
                rpc = self.worker.next_rpc(run_id)
                self.assertEqual([rpc['op'], rpc['params']], ['artifact.begin', {'format': 'json'}])
                self.worker.reply(rpc['id'], error='Artifact I/O capacity exhausted; retry after active jobs complete')
                result, events = self.worker.events_until_result(run_id)
                self.assertEqual(events, [])
                self.assertTrue(result['error'].endswith('\nToolError: Artifact I/O capacity exhausted; retry after active jobs complete'), result['error'])
                self.assert_no_worker_frames(result['error'])

    def test_bad_arguments_refused_before_any_rpc(self):
        cases = [
            ('artifact()', 'ValueError: artifact() needs exactly one of value or path='),
            ('artifact(None)', 'ValueError: artifact() needs exactly one of value or path='),
            ('artifact("v", path="p")', 'ValueError: artifact() needs exactly one of value or path='),
            ('artifact(path="p", format="csv")', 'ValueError: Artifact format must be json, text or binary'),
            ('artifact(path=3)', 'TypeError'),
            ('artifact("s", format="binary")', "ValueError: Artifact format 'binary' does not fit a str value"),
            ('artifact(b"s", format="text")', "ValueError: Artifact format 'text' does not fit a bytes value"),
            ('artifact(b"s", format="json")', "ValueError: Artifact format 'json' does not fit a bytes value"),
            ('artifact([1], format="text")', "ValueError: Artifact format 'text' does not fit a list value"),
            ('artifact("s", format=1)', 'ValueError: Artifact format must be json, text or binary'),
            ('artifact(b"x" * (16 * 1024 * 1024 + 1))', 'ValueError: Artifact exceeds 16 MiB'),
            ('artifact("Ж" * (8 * 1024 * 1024 + 1))', 'ValueError: Artifact exceeds 16 MiB'),
            ('artifact([2 ** 4095] * 20_000)', 'ValueError: Artifact exceeds 16 MiB'),
            ('artifact_read(1)', 'TypeError: artifact_id must be a str, not int'),
            ('artifact_read("a", offset=-1)', 'ValueError: offset must not be negative'),
            ('artifact_read("a", offset=True)', 'TypeError: offset must be an int, not bool'),
            ('artifact_read("a", length=1.0)', 'TypeError: length must be an int, not float'),
            ('artifact_read("a", length=65_537)', 'ValueError: artifact_read length must be between 0 and 65536 bytes'),
            ('artifact_read("a", encoding="utf-8")', 'ValueError: artifact_read encoding must be text, base64 or hex'),
            ('artifact_save("a", "out", overwrite=1)', 'TypeError: overwrite must be True or False'),
            ('artifact_save(None, "out")', 'TypeError: artifact_id must be a str, not NoneType'),
            ('artifact_save("a", None)', 'TypeError'),
            ('artifact_delete(b"a")', 'TypeError: artifact_id must be a str, not bytes'),
            ('artifact_forward("a", "s", "t", 3)', 'TypeError: argument must be a str, not int'),
            ('artifact_forward("a", None, "t", "x")', 'TypeError: server must be a str, not NoneType'),
            ('artifact_forward("a", "s", "t", "x", format="binary")', 'ValueError: Forward format must be json, text or explicit base64'),
        ]
        for code, message in cases:
            with self.subTest(code=code):
                self.assert_refused(code, message)

    def test_helpers_only_from_the_active_cell(self):
        code = (
            'import threading\nerrors = []\n'
            'def borrow():\n    try:\n        artifact("x")\n'
            '    except RuntimeError as exc:\n        errors.append(str(exc))\n'
            't = threading.Thread(target=borrow)\nt.start()\nt.join()\nerrors'
        )
        run_id = self.worker.start(code)
        result, events = self.worker.events_until_result(run_id)
        self.assertEqual([result['value'], events], [[MCP_FOREIGN], []])

    def test_failed_append_aborts_the_upload(self):
        run_id = self.worker.start('artifact("x" * 100_000)')
        begin = self.worker.next_rpc(run_id)
        self.worker.reply(begin['id'], {'upload_id': 'u', 'chunk_bytes': CHUNK, 'max_bytes': 16_777_216})
        first = self.worker.next_rpc(run_id)
        self.assertEqual([first['op'], first['params']['offset']], ['artifact.append', 0])
        self.worker.reply(first['id'], {'upload_id': 'u', 'size': CHUNK})
        second = self.worker.next_rpc(run_id)
        self.assertEqual([second['op'], second['params']['offset']], ['artifact.append', CHUNK])
        self.worker.reply(second['id'], error='Artifact upload offset mismatch; do not replay an append')
        abort = self.worker.next_rpc(run_id)
        self.assertEqual([abort['op'], abort['params']], ['artifact.abort', {'upload_id': 'u'}])
        self.worker.reply(abort['id'], {'upload_id': 'u', 'aborted': True})
        result, events = self.worker.events_until_result(run_id)
        self.assertEqual(events, [])
        self.assertTrue(result['error'].endswith('\nToolError: Artifact upload offset mismatch; do not replay an append'), result['error'])
        # A failed commit aborts too, and an abort that fails does not hide the first error.
        run_id = self.worker.start('artifact("{", format="text")')
        self.worker.reply(self.worker.next_rpc(run_id)['id'], {'upload_id': 'v', 'chunk_bytes': CHUNK, 'max_bytes': 16_777_216})
        append = self.worker.next_rpc(run_id)
        self.worker.reply(append['id'], {'upload_id': 'v', 'size': 1})
        commit = self.worker.next_rpc(run_id)
        self.assertEqual(commit['op'], 'artifact.commit')
        self.worker.reply(commit['id'], error='Text/JSON artifact must be UTF-8')
        abort = self.worker.next_rpc(run_id)
        self.assertEqual([abort['op'], abort['params']], ['artifact.abort', {'upload_id': 'v'}])
        self.worker.reply(abort['id'], error='Artifact upload unknown')
        result, events = self.worker.events_until_result(run_id)
        self.assertEqual(events, [])
        self.assertTrue(result['error'].endswith('\nToolError: Text/JSON artifact must be UTF-8'), result['error'])

    def test_path_is_expanded_and_absolute(self):
        home = os.path.expanduser('~')
        cwd = os.path.realpath(self.dir)
        cases = [
            ('artifact(path="~/data.bin")', {'path': os.path.join(home, 'data.bin'), 'format': 'binary'}),
            ('artifact(path="sub/../rows.json", format="json")', {'path': os.path.join(cwd, 'rows.json'), 'format': 'json'}),
            ('import pathlib\nartifact(path=pathlib.Path("notes.txt"), format="text")', {'path': os.path.join(cwd, 'notes.txt'), 'format': 'text'}),
        ]
        for code, params in cases:
            with self.subTest(code=code):
                run_id = self.worker.start(code)
                rpc = self.worker.next_rpc(run_id)
                self.assertEqual([rpc['op'], rpc['params']], ['artifact.create', params])
                ref = reference(b'{}', params['format'])
                self.worker.reply(rpc['id'], ref)
                result, events = self.worker.events_until_result(run_id)
                self.assertEqual([result['value'], events], [ref, []])
        run_id = self.worker.start('artifact(path="/no/such/file")')
        self.worker.reply(self.worker.next_rpc(run_id)['id'], error='Artifact input must be a regular file')
        self.assertIn('ToolError: Artifact input must be a regular file', self.worker.collect(run_id)[0]['error'])

    def test_read_save_delete_forward_ops(self):
        home = os.path.expanduser('~')
        cwd = os.path.realpath(self.dir)
        ref = reference(b'[1,2]', 'json', 'a-1')
        read = {'artifact': ref, 'offset': 1, 'length': 3, 'encoding': 'hex', 'content': '312c32', 'has_more': True}
        cases = [
            ('artifact_read("a-1")', 'artifact.read', {'id': 'a-1', 'offset': 0, 'length': 65_536, 'encoding': 'text'}, read),
            ('artifact_read("a-1", offset=1, length=3, encoding="hex")', 'artifact.read', {'id': 'a-1', 'offset': 1, 'length': 3, 'encoding': 'hex'}, read),
            ('artifact_read("a-1", 65_536, 3, "base64")', 'artifact.read', {'id': 'a-1', 'offset': 65_536, 'length': 3, 'encoding': 'base64'}, read),
            ('artifact_save("a-1", "~/out.json")', 'artifact.save', {'id': 'a-1', 'path': os.path.join(home, 'out.json'), 'overwrite': False},
             {'artifact': ref, 'saved': True, 'path': os.path.join(home, 'out.json')}),
            ('artifact_save("a-1", "out.json", overwrite=True)', 'artifact.save', {'id': 'a-1', 'path': os.path.join(cwd, 'out.json'), 'overwrite': True},
             {'artifact': ref, 'saved': True, 'path': os.path.join(cwd, 'out.json')}),
            ('artifact_delete("a-1")', 'artifact.delete', {'id': 'a-1'}, {'id': 'a-1', 'deleted': True}),
            ('r = artifact_forward("a-1", "fix", "echo", "payload")\n[type(r).__name__, r]', 'artifact.forward',
             {'id': 'a-1', 'server': 'fix', 'tool': 'echo', 'argument': 'payload', 'format': 'json'}, envelope('ok')),
            ('artifact_forward("a-1", "fix", "echo", "payload", format="base64")', 'artifact.forward',
             {'id': 'a-1', 'server': 'fix', 'tool': 'echo', 'argument': 'payload', 'format': 'base64'}, envelope('ok')),
        ]
        for code, op, params, reply in cases:
            with self.subTest(code=code):
                run_id = self.worker.start(code)
                rpc = self.worker.next_rpc(run_id)
                self.assertEqual([rpc['op'], rpc['params']], [op, params])
                self.worker.reply(rpc['id'], reply)
                result, events = self.worker.events_until_result(run_id)
                self.assertEqual(events, [])
                expected = ['ToolResult', reply] if code.startswith('r = ') else reply
                self.assertEqual(result['value'], expected)
        run_id = self.worker.start('artifact_read("gone")')
        self.worker.reply(self.worker.next_rpc(run_id)['id'], error='Artifact unknown, expired, evicted or belongs to another session')
        self.assertTrue(self.worker.collect(run_id)[0]['error'].endswith(
            '\nToolError: Artifact unknown, expired, evicted or belongs to another session'))
        run_id = self.worker.start('artifact_delete("a-1")')
        self.worker.reply(self.worker.next_rpc(run_id)['id'], ['not', 'an', 'object'])
        self.assertIn('ToolError: MCP bridge returned a malformed artifact.delete result', self.worker.collect(run_id)[0]['error'])

    def test_forward_tool_error_raises_tool_error(self):
        code = (
            'try:\n    artifact_forward("a-1", "fix", "strict", "payload", format="text")\n'
            'except ToolError as e:\n    caught = [str(e), e.result]\ncaught'
        )
        run_id = self.worker.start(code)
        rpc = self.worker.next_rpc(run_id)
        self.assertEqual(rpc['params']['format'], 'text')
        failed = envelope('bad arguments', is_error=True)
        self.worker.reply(rpc['id'], failed)
        self.assertEqual(self.worker.collect(run_id)[0]['value'], ['MCP tool failed: bad arguments', failed])
        run_id = self.worker.start('artifact_forward("a-1", "fix", "strict", "payload")')
        self.worker.reply(self.worker.next_rpc(run_id)['id'], envelope('bad arguments', is_error=True))
        result = self.worker.collect(run_id)[0]
        self.assertTrue(result['error'].endswith('\nToolError: MCP tool failed: bad arguments'), result['error'])
        self.assert_no_worker_frames(result['error'])

    def test_automatic_json_artifact_for_large_list(self):
        code = '[{"id": i, "name": f"row {i}", "score": i * 0.5, "tags": ["a", "b"]} for i in range(3000)]'
        data, appends, ref, result = self.upload_cell(code, 'json')
        self.assert_ok(result)
        self.assertEqual(json.loads(data), [{'id': i, 'name': f'row {i}', 'score': i * 0.5, 'tags': ['a', 'b']} for i in range(3000)])
        self.assert_chunked(appends, len(data))
        self.assertEqual(result['artifact'], ref)
        self.assertNotIn('value', result)
        self.assertNotIn('artifact_error', result)
        # The preview shows the first rows whole and says how many more there are.
        self.assertTrue(result['return_value'].startswith("[{'id': 0, 'name': 'row 0', 'score': 0.0, 'tags': ['a', 'b']}, {'id': 1,"))
        self.assertRegex(result['return_value'], r"'tags': \['a', 'b'\]\}, \.\.\. \d+ more\]$")
        self.assertLessEqual(len(result['return_value'].encode()), 20_000)
        self.assertTrue(result['truncated']['return'])
        # The namespace is untouched and the next cell runs as usual.
        self.assertEqual(self.worker.value('1 + 1'), 2)

    def test_automatic_text_artifact_for_large_str(self):
        data, appends, ref, result = self.upload_cell("'Ж' * 100000", 'text')
        self.assert_ok(result)
        self.assertEqual(data, ('Ж' * 100_000).encode())
        self.assert_chunked(appends, 200_000)
        self.assertEqual(result['artifact'], ref)
        self.assertNotIn('value', result)
        self.assertTrue(result['return_value'].startswith('"ЖЖЖ'))
        self.assertLessEqual(len(result['return_value'].encode()), 20_000)
        self.assertTrue(result['truncated']['return'])

    def test_automatic_artifact_for_bytes_and_envelope(self):
        data, _, ref, result = self.upload_cell('bytes(range(256)) * 40', 'binary')  # a repr of 40,000+ bytes
        self.assertEqual([data, result['artifact']], [bytes(range(256)) * 40, ref])
        self.assertTrue(result['return_value'].startswith("b'\\x00\\x01\\x02"), result['return_value'][:20])
        self.assertRegex(result['return_value'], r"'\.\.\. \d+ more bytes$")
        self.assertTrue(result['truncated']['return'])
        run_id = self.worker.start('mcp.call("fix", "big")')
        big = envelope(*[f'line {i}' for i in range(2000)])
        self.worker.reply(self.worker.next_rpc(run_id)['id'], big)
        data, _, ref, = self.serve_upload(run_id, 'json')
        result, events = self.worker.events_until_result(run_id)
        self.assertEqual([json.loads(data), result['artifact'], events], [big, ref, []])
        self.assertTrue(result['return_value'].startswith("{'content': [{'type': 'text', 'text': 'line 0'}, "), result['return_value'][:60])

    def test_automatic_artifact_error_keeps_the_cell_successful(self):
        run_id = self.worker.start('x = 5\n"y" * 30_000')
        begin = self.worker.next_rpc(run_id)
        self.assertEqual([begin['op'], begin['params']], ['artifact.begin', {'format': 'text'}])
        self.worker.reply(begin['id'], error='At most four unfinished artifact uploads are allowed')
        result, events = self.worker.events_until_result(run_id)
        self.assertEqual(events, [])
        self.assert_ok(result)
        self.assertEqual(result['artifact_error'], 'Automatic artifact upload failed: At most four unfinished artifact uploads are allowed')
        self.assertNotIn('artifact', result)
        self.assertNotIn('value', result)
        self.assertTrue(result['return_value'].startswith('"yyy'))
        self.assertTrue(result['truncated']['return'])
        self.assertEqual(self.worker.value('x'), 5)
        # A failure after begin aborts the upload first.
        run_id = self.worker.start('"z" * 40_000')
        self.worker.reply(self.worker.next_rpc(run_id)['id'], {'upload_id': 'w', 'chunk_bytes': CHUNK, 'max_bytes': 16_777_216})
        self.worker.reply(self.worker.next_rpc(run_id)['id'], error='Artifact exceeds 16 MiB')
        abort = self.worker.next_rpc(run_id)
        self.assertEqual([abort['op'], abort['params']], ['artifact.abort', {'upload_id': 'w'}])
        self.worker.reply(abort['id'], {'upload_id': 'w', 'aborted': True})
        result, events = self.worker.events_until_result(run_id)
        self.assertEqual([result['success'], result['artifact_error'], events], [True, 'Automatic artifact upload failed: Artifact exceeds 16 MiB', []])
        # Surely over 16 MiB, or over a budget: the reason, and no rpc.
        run_id = self.worker.start('"x" * (16 * 1024 * 1024 + 1)')
        result, events = self.worker.events_until_result(run_id)
        self.assertEqual([result['success'], result['artifact_error'], events], [True, 'Automatic artifact upload failed: Artifact exceeds 16 MiB', []])
        run_id = self.worker.start('v = 0\nfor _ in range(40):\n    v = [v]\nv')
        result, events = self.worker.events_until_result(run_id)
        self.assertEqual(events, [])
        self.assert_ok(result)
        self.assertEqual(result['artifact_error'], "Automatic artifact not made: Artifact JSON is past its bounds (nesting deeper than 32); "
                         "write the value to a file and pass artifact(path=...)")
        # A list of 100,001 ints is exact JSON: the reason is its size, not its types.
        result = self.worker.run('list(range(100_001))')
        self.assertEqual(result['artifact_error'], "Automatic artifact not made: Artifact JSON is past its bounds (more than 100,000 values); "
                         "write the value to a file and pass artifact(path=...)")
        # A saved file's trailing value is handled like a cell's.
        with open(self.path('big.py'), 'w') as file:
            file.write('"q" * 30_000\n')
        run_id = self.worker.start('', source_path=self.path('big.py'))
        data, _, ref = self.serve_upload(run_id, 'text')
        result, events = self.worker.events_until_result(run_id)
        self.assertEqual([data, result['artifact'], events], [b'q' * 30_000, ref, []])

    def test_no_automatic_artifact_for_small_or_unsupported_values(self):
        # What fits the 20,000-byte preview is shown, never uploaded, whatever its shape.
        cases = {
            '"x" * 100': ('x' * 100, '"' + 'x' * 100 + '"'),
            '[{"a": 1}] * 10': ([{'a': 1}] * 10, json.dumps([{'a': 1}] * 10, separators=(',', ':'))),
            '[list(range(30))] * 4': ([list(range(30))] * 4, json.dumps([list(range(30))] * 4, separators=(',', ':'))),
            'b"abc"': (None, "b'abc'"),
            'None': (None, None),
        }
        for code, (value, shown) in cases.items():
            with self.subTest(code=code):
                run_id = self.worker.start(code)
                result, events = self.worker.events_until_result(run_id)
                self.assertEqual(events, [])
                self.assertEqual([result.get('value'), result['return_value'], result['truncated']['return']], [value, shown, False])
                self.assertNotIn('artifact', result)
                self.assertNotIn('artifact_error', result)
        # Too big for the preview but not exact JSON (or not a supported type): a cut
        # preview and no artifact; or small and not JSON: the whole preview.
        for code, cut in (('[{1, 2}] * 5000', True), ('{1: "x" * 30_000}', True), ('[float("nan")] * 200', False), ('{1, 2}', False),
                          ('bytearray(30_000)', True), ('object()', False)):
            with self.subTest(code=code):
                run_id = self.worker.start(code)
                result, events = self.worker.events_until_result(run_id)
                self.assertEqual(events, [])
                self.assert_ok(result)
                self.assertEqual(result['truncated']['return'], cut)
                self.assertNotIn('artifact', result)
                self.assertNotIn('artifact_error', result)
        # A failing cell uploads nothing.
        run_id = self.worker.start('big = "x" * 30_000\nbig + 1')
        result, events = self.worker.events_until_result(run_id)
        self.assertEqual([result['success'], events], [False, []])
        self.assertNotIn('artifact_error', result)

    def test_interrupt_during_automatic_upload(self):
        run_id = self.worker.start('"x" * 100_000')
        self.worker.reply(self.worker.next_rpc(run_id)['id'], {'upload_id': 'i', 'chunk_bytes': CHUNK, 'max_bytes': 16_777_216})
        append = self.worker.next_rpc(run_id)
        self.assertEqual(append['op'], 'artifact.append')
        os.kill(self.worker.proc.pid, signal.SIGINT)  # unanswered, as a server stopping the run
        self.assertEqual(self.worker.next_event(timeout=5), {'type': 'rpc_cancel', 'id': append['id'], 'run_id': run_id})
        abort = self.worker.next_rpc(run_id, timeout=5)
        self.assertEqual([abort['op'], abort['params']], ['artifact.abort', {'upload_id': 'i'}])
        self.worker.reply(abort['id'], error=MCP_FOREIGN)  # what a server says once the run is stopping
        result, events = self.worker.events_until_result(run_id, timeout=5)
        self.assertEqual(events, [])
        self.assertEqual([result['success'], result['state'], result['artifact_error']], [True, 'preserved', 'Automatic artifact upload skipped: the run was interrupted'])
        self.assertNotIn('artifact', result)
        self.assertEqual(self.worker.value('2 + 2'), 4)

    def test_interrupted_cell_gets_no_automatic_artifact(self):
        code = (
            'import asyncio\nprint("sleeping", flush=True)\n'
            'try:\n    await asyncio.sleep(10)\nexcept asyncio.CancelledError:\n    pass\n'
            '"x" * 30_000'
        )
        run_id = self.worker.start(code)
        self.worker.wait_for_output(run_id, 'sleeping')
        os.kill(self.worker.proc.pid, signal.SIGINT)
        result, events = self.worker.events_until_result(run_id, timeout=5)
        self.assertEqual(events, [])
        self.assertEqual(result['artifact_error'], 'Automatic artifact upload skipped: the run was interrupted')
        self.assertNotIn('artifact', result)

    def test_helpers_are_reserved_and_come_back(self):
        shadow = '\n'.join(f'{name} = None' for name in ARTIFACT_HELPERS) + '\n[artifact, artifact_forward]'
        self.assertEqual(self.worker.value(shadow), [None, None])
        names = ', '.join(ARTIFACT_HELPERS)
        self.assertEqual(self.worker.value(f'[callable(v) for v in [{names}]]'), [True] * len(ARTIFACT_HELPERS))
        self.assertEqual(self.worker.value('repl_namespace()["variables"]'), [])
        self.assertEqual(self.worker.value('checkpoint("cp.json")["saved"]'), 0)


if __name__ == '__main__':
    unittest.main()
