"""Downstream tools as Python functions (docs/contract.md §7.5): `mcp.<server>.<tool>(...)`,
their signatures and help, arguments refused before anything is sent, ToolResult,
mcp.search and the catalogue kept for the broker's ttlMs. The test plays the server."""

import base64
import json

from harness import WorkerTestCase

PNG = base64.b64decode(
    'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR4nGNgYGBgAAAABQABpfZFQAAAAABJRU5ErkJggg=='
)

FILES = [
    {'name': 'read_text_file', 'description': 'Read the complete contents of a file as text. Use head or tail for parts.',
     'inputSchema': {'type': 'object', 'additionalProperties': False, 'required': ['path'], 'properties': {
         'path': {'type': 'string', 'description': 'The file to read'},
         'head': {'type': 'number', 'description': 'Only the first N lines'},
         'tail': {'type': 'number'},
     }}},
    {'name': 'list_directory', 'description': 'List the entries of a directory. Directories end with /.',
     'inputSchema': {'type': 'object', 'required': ['path'], 'properties': {'path': {'type': 'string'}}}},
    {'name': 'write-file', 'description': 'Create or overwrite a file.',
     'inputSchema': {'type': 'object', 'required': ['path', 'content'], 'properties': {
         'path': {'type': 'string'}, 'content': {'type': 'string'},
         'dry-run': {'type': 'boolean', 'default': False}, 'mode': {'type': 'string', 'enum': ['w', 'a'], 'default': 'w'},
     }}},
]


def envelope(text, structured=None, images=(), is_error=False):
    content = [{'type': 'text', 'text': text}] + [{'type': 'image', 'mimeType': 'image/png', 'data': base64.b64encode(i).decode()} for i in images]
    result = {'content': content, 'isError': is_error}
    if structured is not None:
        result['structuredContent'] = structured
    return result


class ToolFunctionTests(WorkerTestCase):

    def answer(self, run_id, op, reply):
        """Answer the next rpc, which must be `op`; return its params."""
        rpc = self.worker.next_rpc(run_id)
        self.assertEqual(rpc['op'], op, rpc)
        self.worker.reply(rpc['id'], reply)
        return rpc['params']

    def catalogue(self, run_id, servers=('files',), tools=FILES, ttl=60000):
        self.answer(run_id, 'servers', {'servers': list(servers)})
        return self.answer(run_id, 'tools', {'tools': tools, 'ttlMs': ttl})

    def test_call_sends_the_bound_arguments_and_returns_a_tool_result(self):
        code = (
            'r = mcp.files.read_text_file("/a.txt", head=2, tail=None)\n'
            '[type(r).__name__, isinstance(r, dict), r.text, r.data, r.is_error, r["isError"], len(r.images)]'
        )
        run_id = self.worker.start(code)
        self.assertEqual(self.catalogue(run_id), {'server': 'files', 'timeout': 30.0})
        params = self.answer(run_id, 'call', envelope('{"lines": 2}', images=[PNG]))
        # tail=None leaves the optional argument out, as its default says
        self.assertEqual(params, {'server': 'files', 'tool': 'read_text_file', 'arguments': {'path': '/a.txt', 'head': 2}, 'timeout': 120.0})
        result, _ = self.worker.collect(run_id)
        self.assert_ok(result)
        self.assertEqual(result['value'], ['ToolResult', True, '{"lines": 2}', {'lines': 2}, False, False, 1])

    def test_catalogue_is_kept_for_its_ttl_and_refresh_forgets_it(self):
        run_id = self.worker.start('[mcp.files.read_text_file("/a").text, mcp.files["read_text_file"]("/b").text]')
        self.catalogue(run_id)
        self.answer(run_id, 'call', envelope('A'))
        self.answer(run_id, 'call', envelope('B'))  # no second listing: the first is fresh
        self.assertEqual(self.worker.collect(run_id)[0]['value'], ['A', 'B'])
        # A later cell asks for the servers again (a bridge lives one cell), not the tools.
        run_id = self.worker.start('mcp.files.read_text_file("/c").text')
        self.answer(run_id, 'servers', {'servers': ['files']})
        self.answer(run_id, 'call', envelope('C'))
        self.assertEqual(self.worker.collect(run_id)[0]['value'], 'C')
        run_id = self.worker.start('mcp.refresh()\nmcp.files.read_text_file("/d").text')
        self.answer(run_id, 'refresh', {'healthy': True})
        self.catalogue(run_id, ttl=0)
        self.answer(run_id, 'call', envelope('D'))
        self.assertEqual(self.worker.collect(run_id)[0]['value'], 'D')
        # ttlMs 0: nothing was kept, so the next use lists again
        run_id = self.worker.start('mcp.files.read_text_file("/e").text')
        self.catalogue(run_id)
        self.answer(run_id, 'call', envelope('E'))
        self.assertEqual(self.worker.collect(run_id)[0]['value'], 'E')

    def test_wrong_arguments_raise_type_error_before_any_call(self):
        cases = [
            ('mcp.files.read_text_file()', "TypeError: mcp.files.read_text_file(): missing a required argument: 'path'; help(mcp.files.read_text_file) shows its signature"),
            ('mcp.files.read_text_file(7)', "TypeError: mcp.files.read_text_file() argument 'path' must be str (its JSON schema type), not int"),
            ('mcp.files.read_text_file("/a", lines=3)', "TypeError: mcp.files.read_text_file(): got an unexpected keyword argument 'lines'"),
            ('mcp.files.read_text_file("/a", 3)', 'TypeError: mcp.files.read_text_file(): too many positional arguments'),
            ('mcp.files.read_text_file("/a", head="3")', "argument 'head' must be int or float (its JSON schema type), not str"),
            ('mcp.files.write_file("/a", "x", **{"dry-run": "yes"})', "TypeError: mcp.files.write_file() argument 'dry-run' must be bool"),
            ('mcp.files.write_file("/a", "x", **{"dry_run": True})', "got an unexpected keyword argument 'dry_run'"),
            ('mcp.files.nope', "AttributeError: mcp.files has no tool 'nope'; dir(mcp.files) or mcp.help('files') lists its tools"),
            ('mcp.files["nope"]', "KeyError: \"mcp.files has no tool 'nope'; dir(mcp.files) or mcp.help('files') lists its tools\""),
            # A tool the registry's allowedTools leave out: the broker's reason and action.
            ('mcp.files.write_text', "AttributeError: mcp.files has no tool 'write_text' that cells may call: "
             'The allowedTools of this server in /p/.mcp.json do not list this tool. '
             'Add the tool to the server\'s allowedTools in /p/.mcp.json, then call mcp.refresh().'),
            ('mcp.nowhere', "AttributeError: mcp has no server 'nowhere'; dir(mcp) and mcp.servers() list the servers"),
        ]
        explained = {
            'nope': {'status': 'tool_missing', 'evidence': 'cached_catalogue', 'reason': 'The cached catalogue of this server does not list the tool.', 'actions': ['Inspect mcp.list_tools(server).']},
            'write_text': {'status': 'not_granted', 'evidence': 'allowed_tools',
                           'reason': 'The allowedTools of this server in /p/.mcp.json do not list this tool.',
                           'actions': ["Add the tool to the server's allowedTools in /p/.mcp.json, then call mcp.refresh()."]},
        }
        for code, message in cases:
            with self.subTest(code=code):
                run_id = self.worker.start(code)
                self.answer(run_id, 'servers', {'servers': ['files']})
                if 'nowhere' not in code:
                    self.answer(run_id, 'tools', {'tools': FILES, 'ttlMs': 0})
                    tool = 'nope' if 'nope' in code else 'write_text' if 'write_text' in code else None
                    if tool is not None:
                        self.assertEqual(self.answer(run_id, 'explain', explained[tool]), {'server': 'files', 'tool': tool})
                result, events = self.worker.events_until_result(run_id)
                self.assertIn(message, result['error'])
                self.assertEqual(events, [], 'nothing may be sent after a refused call')

    def test_non_identifier_names_and_their_normalisation(self):
        code = (
            'w = mcp["files-writer"]["write-file"]\n'
            'n = mcp.files_writer.write_file\n'
            'r = n("/a", "text", **{"dry-run": True})\n'
            '[w.__name__, w.__qualname__, n.__qualname__, str(__import__("inspect").signature(w)), r.text]'
        )
        run_id = self.worker.start(code)
        self.answer(run_id, 'servers', {'servers': ['files-writer']})
        self.answer(run_id, 'tools', {'tools': FILES, 'ttlMs': 60000})
        params = self.answer(run_id, 'call', envelope('ok'))
        self.assertEqual(params['tool'], 'write-file')
        self.assertEqual(params['arguments'], {'path': '/a', 'content': 'text', 'dry-run': True})
        result, _ = self.worker.collect(run_id)
        self.assertEqual(result['value'], [
            'write_file', 'mcp.files_writer.write_file', 'mcp.files_writer.write_file',
            "(path: str, content: str, *, mode: Literal['w', 'a'] = 'w', **kwargs)", 'ok'])

    def test_collisions_keywords_and_members(self):
        code = (
            'names = dir(mcp)\n'
            'try:\n    mcp.a_b\nexcept AttributeError as e:\n    ambiguous = str(e)\n'
            '[[n for n in names if not n in ("acall", "ajournal", "call", "explain", "help", "journal", "list_tools", "refresh", "search", "servers", "text")],'
            ' ambiguous, repr(mcp["call"]), repr(mcp.class_), repr(mcp._2fa), repr(mcp.files_writer)]'
        )
        run_id = self.worker.start(code)
        self.answer(run_id, 'servers', {'servers': ['2fa', 'a-b', 'a.b', 'call', 'class', 'files-writer', 'files_writer']})
        result, _ = self.worker.collect(run_id)
        self.assert_ok(result)
        attrs, ambiguous, call, klass, two, writer = result['value']
        # files_writer is a real name: it wins over files-writer, which only [] reaches
        self.assertEqual(attrs, ['_2fa', 'class_', 'files_writer'])
        self.assertEqual(ambiguous, "mcp: 'a_b' could be any of 'a-b', 'a.b'; use mcp[name] with the exact name")
        self.assertIn("<MCP server 'call'", call)
        self.assertIn("<MCP server 'class'", klass)
        self.assertIn("<MCP server '2fa'", two)
        self.assertIn("<MCP server 'files_writer'", writer)

    def test_help_and_dir_show_python_signatures(self):
        code = 'help(mcp.files.read_text_file)\nprint("--")\nmcp.help("files")\nprint("--")\nprint(dir(mcp.files))'
        run_id = self.worker.start(code)
        self.catalogue(run_id)
        result, outputs = self.worker.collect(run_id)
        self.assert_ok(result)
        pydoc, server, listing = ''.join(o['text'] for o in outputs).split('--\n')
        self.assertIn('read_text_file(path: str, *, head: float = None, tail: float = None)\n', pydoc)
        self.assertIn('    Read the complete contents of a file as text. Use head or tail for parts.\n', pydoc)
        self.assertIn('      path (string, required): The file to read\n', pydoc)
        self.assertNotIn('inputSchema', pydoc + server)
        self.assertEqual(server.splitlines(), [
            'files.list_directory(path: str) — List the entries of a directory.',
            'files.read_text_file(path: str, *, head: float = None, tail: float = None) — Read the complete contents of a file as text.',
            "files.write_file(path: str, content: str, *, mode: Literal['w', 'a'] = 'w', **kwargs) — Create or overwrite a file.",
        ])
        self.assertEqual(listing.strip(), "['list_directory', 'read_text_file', 'write_file']")

    def test_gather_of_acall_and_await_once(self):
        code = (
            'import asyncio\nf = mcp.files.read_text_file\n'
            'rs = await asyncio.gather(*(f.acall(p) for p in ["/1", "/2", "/3"]))\n'
            'once = await f("/4")\n'
            '[r.text for r in rs] + [once.text]'
        )
        run_id = self.worker.start(code)
        self.catalogue(run_id)
        calls = [self.worker.next_rpc(run_id) for _ in range(3)]  # all three are sent before any reply
        self.assertEqual([c['params']['arguments']['path'] for c in calls], ['/1', '/2', '/3'])
        for c in reversed(calls):
            self.worker.reply(c['id'], envelope('r' + c['params']['arguments']['path'][1:]))
        self.answer(run_id, 'call', envelope('r4'))
        result, events = self.worker.events_until_result(run_id)
        self.assertEqual([result['value'], events], [['r1', 'r2', 'r3', 'r4'], []])

    def test_tool_error_and_images(self):
        code = (
            'try:\n    mcp.files.read_text_file("/x")\nexcept ToolError as e:\n    err = [type(e.result).__name__, e.result.is_error, e.result.text]\n'
            'r = mcp.files.read_text_file("/y")\n'
            'display(*r.images)\n'
            '[err, r.data, repr(r.images[0])]'
        )
        run_id = self.worker.start(code)
        self.catalogue(run_id)
        self.answer(run_id, 'call', envelope('no such file', is_error=True))
        self.answer(run_id, 'call', envelope('not json', structured={'size': 1}, images=[PNG]))
        result, _ = self.worker.collect(run_id)
        self.assert_ok(result)
        self.assertEqual(result['value'], [['ToolResult', True, 'no such file'], {'size': 1}, '<ToolImage image/png, 70 bytes; display() shows it>'])
        self.assertEqual([(i['mime'], i['width'], i['height']) for i in result['images']], [('image/png', 1, 1)])

    def test_search_ranks_and_bounds(self):
        code = 'mcp.search("read file")'
        run_id = self.worker.start(code)
        self.answer(run_id, 'servers', {'servers': ['down', 'files']})
        rpc = self.worker.next_rpc(run_id)
        self.worker.reply(rpc['id'], error='MCP transport unavailable; request was not retried')
        self.answer(run_id, 'tools', {'tools': FILES, 'ttlMs': 60000})
        result, _ = self.worker.collect(run_id)
        lines = [
            # both words in the name and the description, then one of them in the name
            'files.read_text_file(path: str, *, head: float = None, tail: float = None) — Read the complete contents of a file as text.',
            "files.write_file(path: str, content: str, *, mode: Literal['w', 'a'] = 'w', **kwargs) — Create or overwrite a file.",
            "server 'down' was not searched: MCP transport unavailable; request was not retried",
        ]
        self.assertEqual(result['value'], lines)
        # A list, read as lines: one per line where a person or a model reads it.
        self.assertEqual(result['return_repr'], '\n'.join(lines))
        run_id = self.worker.start('r = mcp.search("read file")\nprint(r)\n[type(r).__name__, isinstance(r, list), r[0][:5]]')
        self.answer(run_id, 'servers', {'servers': ['files']})
        result, outputs = self.worker.collect(run_id)
        self.assertEqual(''.join(o['text'] for o in outputs), '\n'.join(lines[:2]) + '\n')
        self.assertEqual(result['value'], ['ToolLines', True, 'files'])
        run_id = self.worker.start('[mcp.search("", limit=1), mcp.search("zebra")]')
        self.answer(run_id, 'servers', {'servers': ['files']})
        result, _ = self.worker.collect(run_id)  # the catalogue is still fresh: no listing
        self.assertEqual(result['value'], [
            ['files.list_directory(path: str) — List the entries of a directory.', '... 2 more matching tools; narrow the query or raise limit'],
            ["no tool of the 1 servers matches 'zebra'; mcp.help() lists the servers"],
        ])
        for code, message in (('mcp.search(3)', 'TypeError: mcp.search() query must be a str, not int'),
                              ('mcp.search("x", limit=0)', 'ValueError: mcp.search() limit must be an int from 1 to 50'),
                              ('mcp.search("x", limit=51)', 'ValueError: mcp.search() limit must be an int from 1 to 50')):
            with self.subTest(code=code):
                result, events = self.worker.events_until_result(self.worker.start(code))
                self.assertIn(message, result['error'])
                self.assertEqual(events, [])

    def test_a_malformed_tool_breaks_no_discovery(self):
        """A tool whose `required` names a parameter twice made mcp.search fail for every
        server and mcp.help fail for its own (ValueError: duplicate parameter name); one
        whose schema gives no signature at all gets the generic one, and says why."""
        odd = [
            {'name': 'twice', 'description': 'Required twice.', 'inputSchema': {'type': 'object', 'required': ['q', 'q']}},
            {'name': 'nested', 'description': 'Unions past the recursion limit.', 'inputSchema': {'type': 'object', 'properties': {'d': 'DEEP'}}},
            {'name': 'fine', 'inputSchema': {'type': 'object'}},
        ]
        # Written by hand: json.dumps itself cannot nest 5,000 levels.
        deep = '{"anyOf":[' * 5000 + '{"type":"string"}' + ']}' * 5000
        listing = json.dumps({'tools': odd, 'ttlMs': 60000}).replace('"DEEP"', deep)
        run_id = self.worker.start('[mcp.search("", limit=50), mcp.help("odd")]')
        self.answer(run_id, 'servers', {'servers': ['files', 'odd']})
        self.answer(run_id, 'tools', {'tools': FILES, 'ttlMs': 60000})
        rpc = self.worker.next_rpc(run_id)
        self.assertEqual(rpc['op'], 'tools')
        self.worker.send_raw(('{"type":"rpc_result","id":"%s","result":%s}\n' % (rpc['id'], listing)).encode())
        result, outputs = self.worker.collect(run_id)
        self.assert_ok(result)
        found, _ = result['value']
        self.assertEqual(len(found), 6, found)
        self.assertIn('odd.twice(q) — Required twice.', found)
        self.assertIn('odd.nested(**kwargs) — Unions past the recursion limit.', found)
        self.assertEqual(''.join(o['text'] for o in outputs), 'odd.fine()\nodd.nested(**kwargs) — Unions past the recursion limit.\nodd.twice(q) — Required twice.\n')
        run_id = self.worker.start('odd = mcp.odd\n[odd.twice("x").text, odd.nested(d="y", e=1).text, odd.nested.__doc__]')
        self.answer(run_id, 'servers', {'servers': ['files', 'odd']})
        self.assertEqual(self.answer(run_id, 'call', envelope('A'))['arguments'], {'q': 'x'})
        self.assertEqual(self.answer(run_id, 'call', envelope('B'))['arguments'], {'d': 'y', 'e': 1})
        result, _ = self.worker.collect(run_id)
        self.assert_ok(result)
        self.assertEqual(result['value'][:2], ['A', 'B'])
        self.assertIn('Its inputSchema gives no Python signature (RecursionError: ', result['value'][2])

    def test_tool_result_reads_as_python(self):
        # A trailing ToolResult shows as Python shows the dict it is, like every other value.
        run_id = self.worker.start('mcp.files.read_text_file("/a")')
        self.catalogue(run_id)
        self.answer(run_id, 'call', envelope('hi'))
        result, _ = self.worker.collect(run_id)
        self.assertEqual(result['value'], {'content': [{'type': 'text', 'text': 'hi'}], 'isError': False})
        self.assertEqual(result['return_repr'], "{'content': [{'type': 'text', 'text': 'hi'}], 'isError': False}")

    def test_mcp_itself_previews_its_servers_and_tools(self):
        run_id = self.worker.start('mcp')
        self.answer(run_id, 'servers', {'servers': ['down', 'files', 'files-writer']})
        listed = {}
        for _ in range(3):
            rpc = self.worker.next_rpc(run_id)
            self.assertEqual(rpc['op'], 'tools')
            listed[rpc['params']['server']] = rpc
        self.worker.reply(listed['down']['id'], error='MCP transport unavailable; request was not retried')
        self.worker.reply(listed['files']['id'], {'tools': FILES, 'ttlMs': 60000})
        self.worker.reply(listed['files-writer']['id'], {'tools': FILES[:1], 'ttlMs': 60000})
        result, _ = self.worker.collect(run_id)
        self.assert_ok(result)
        self.assertEqual(result['return_value'], "<mcp: 3 servers for the broker: mcp.down (tools not listed: MCP transport unavailable; "
                         "request was not retried), mcp.files (3 tools), mcp.files_writer (1 tool); mcp.search(words) finds a tool, "
                         "help(mcp) says how to call one>")
        run_id = self.worker.start('mcp')
        self.answer(run_id, 'servers', {'servers': []})
        self.assertEqual(self.worker.collect(run_id)[0]['return_value'], "<mcp: no MCP servers are configured for the broker; the project's "
                         ".mcp.json or --config registers them, mcp.explain(server) says why one is missing>")
        run_id = self.worker.start('mcp')
        rpc = self.worker.next_rpc(run_id)
        self.worker.reply(rpc['id'], error='Broker disabled')
        self.assertEqual(self.worker.collect(run_id)[0]['return_value'], '<mcp: the broker did not list its servers (Broker disabled); help(mcp) describes the bridge>')

    def test_help_of_a_server_without_tools_says_so(self):
        run_id = self.worker.start('mcp.help("bare")')
        self.answer(run_id, 'tools', {'tools': [], 'ttlMs': 0})
        self.answer(run_id, 'servers', {'servers': ['bare']})
        result, outputs = self.worker.collect(run_id)
        self.assert_ok(result)
        self.assertEqual(''.join(o['text'] for o in outputs), "Server 'bare' offers no tool the broker admits: its catalogue is empty, or its allowedTools admit none of it\n")

    def test_search_line_is_bounded(self):
        long = [{'name': 'x' * 300, 'description': 'word ' * 100, 'inputSchema': {'type': 'object'}}]
        run_id = self.worker.start('mcp.search("word")')
        self.catalogue(run_id, servers=['s'], tools=long)
        line, = self.worker.collect(run_id)[0]['value']
        self.assertEqual(len(line), 240)
        self.assertTrue(line.endswith('…'), line)
