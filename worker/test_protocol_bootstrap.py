"""The bootstrap: how the modules arrive, where they are installed, what the project
directory can and cannot shadow, the bundle's checks and the compiled-code cache.
Every worker is started through the real bootstrap (harness.WorkerProcess)."""

import hashlib
import json
import marshal
import os
import shutil
import stat
import sys
import tempfile
import unittest

from harness import BOOTSTRAP, BUNDLE, DIGEST, LIMITS_VAR, PACKAGE_DIR, WorkerProcess, WorkerTestCase, build_bundle, server_limits

PACKAGE = '<repl-mcp worker>'
MODULES = sorted(name[:-3] for name in os.listdir(PACKAGE_DIR) if name.endswith('.py'))


def cache_entry(cache):
    return os.path.join(cache, f'worker-{DIGEST}-{sys.implementation.cache_tag}-{sys.hexversion:x}.code')


def compiled(package_dir=PACKAGE_DIR, **replace):
    """The code objects of a package's modules as the bootstrap compiles them, each module's
    source first edited by replace[module] = (old, new)."""
    codes = {}
    for module in MODULES:
        with open(os.path.join(package_dir, module + '.py'), encoding='utf-8') as file:
            source = file.read()
        if module in replace:
            old, new = replace[module]
            assert old in source, (module, old)
            source = source.replace(old, new)
        codes[module] = compile(source, f'{PACKAGE}/{module}.py', 'exec', dont_inherit=True)
    return codes


# A cache entry made to be told apart: its limits keep 10 bytes of stdout.
MARKED = {'limits': ("STREAM_HEAD = _server_int('STREAM_HEAD')", "STREAM_HEAD = _server_int('STREAM_HEAD') and 10")}


class PackageTests(WorkerTestCase):
    def test_modules_installed_under_the_private_name(self):
        names = self.worker.value(f'import sys\nsorted(n for n in sys.modules if n.startswith({PACKAGE!r}))')
        # Every module but the matplotlib backend, which only matplotlib imports
        # (data_test_display.py).
        self.assertEqual(names, sorted([PACKAGE] + [f'{PACKAGE}.{m}' for m in MODULES if m not in ('__init__', 'mplbackend')]))
        code = (
            f'import hashlib, sys\ncells = sys.modules["{PACKAGE}.cells"]\n'
            'source = cells.__spec__.loader.get_source(cells.__name__)\n'
            '[cells.__file__, cells.Worker.serve.__code__.co_filename, hashlib.sha256(source.encode()).hexdigest()]'
        )
        with open(os.path.join(PACKAGE_DIR, 'cells.py'), 'rb') as file:
            digest = hashlib.sha256(file.read()).hexdigest()
        self.assertEqual(self.worker.value(code), [f'{PACKAGE}/cells.py', f'{PACKAGE}/cells.py', digest])

    def test_source_is_not_on_argv(self):
        with open(f'/proc/{self.worker.proc.pid}/cmdline', 'rb') as file:
            argv = file.read().split(b'\0')[:-1]
        self.assertEqual(argv[1:], [b'-u', b'-c', BOOTSTRAP.encode()])


class ProjectDirectoryTests(unittest.TestCase):
    """The project directory is the worker's cwd and, with -c, first on sys.path."""

    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.addCleanup(self.tmp.cleanup)

    def write(self, name, text):
        path = os.path.join(self.tmp.name, name)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, 'w') as file:
            file.write(text)

    def test_project_modules_shadow_neither_the_worker_nor_its_imports(self):
        # Named like standard modules the bootstrap and the worker import...
        for name in ('signal.py', 'queue.py', 'json.py', 'importlib/__init__.py', 'subprocess.py', 'codecs.py'):
            self.write(name, f'raise SystemExit("the worker imported the project\'s {name}")\n')
        # ...and like the worker's own modules, which stay the project's to import.
        for module in ('cells', 'main', 'limits', 'replworker/__init__'):
            self.write(module + '.py', f'WHOSE = "project {module}"\n')
        worker = WorkerProcess(self.tmp.name)
        self.addCleanup(worker.close)
        self.assertEqual(worker.ready['type'], 'ready')
        code = 'import sys, cells, limits, replworker\n[sys.path[0], cells.WHOSE, limits.WHOSE, replworker.WHOSE]'
        self.assertEqual(worker.value(code), ['', 'project cells', 'project limits', 'project replworker/__init__'])


class BundleTests(unittest.TestCase):
    """A bundle the bootstrap cannot use ends the worker with status 2 and one line on fd 2."""

    def start(self, bundle):
        tmp = tempfile.TemporaryDirectory()
        self.addCleanup(tmp.cleanup)
        worker = WorkerProcess(tmp.name, cache=None, bundle=bundle, wait_ready=False)
        self.addCleanup(worker.close)
        return worker

    def assert_refused(self, bundle, says):
        worker = self.start(bundle)
        worker.hang_up()  # a short bundle then ends at EOF
        self.assertEqual(worker.wait_exit(), 2)
        native = worker.drain_native(0).decode()
        self.assertTrue(native.startswith('repl-mcp worker: protocol error: '), native)
        self.assertIn(says, native)
        self.assertEqual(native.count('\n'), 1, native)

    def test_bad_bundles_are_refused(self):
        header, payload = BUNDLE.split(b'\n', 1)
        self.assert_refused(b'', 'no bundle header')
        self.assert_refused(b'x' * 200, 'no bundle header')
        self.assert_refused(b'twelve digest\n', 'is not SIZE DIGEST')
        self.assert_refused(b'0 digest\n', 'bundle size 0')
        self.assert_refused(b'%d digest\n' % (1 << 25), 'bundle size')
        self.assert_refused(header + b'\n' + payload[:1000], 'the bundle ended after 1000')
        index, sources = payload.split(b'\n', 1)
        for bad_index in (b'', b'main', index + b' extra 1', index.replace(b' ', b'  x ', 1)):
            body = bad_index + b'\n' + sources
            self.assert_refused(b'%d %s\n' % (len(body), DIGEST.encode()) + body, "the bundle's index")

    def test_a_worker_bug_names_the_module_and_line(self):
        package = tempfile.mkdtemp()
        self.addCleanup(shutil.rmtree, package)
        for module in MODULES:
            shutil.copy(os.path.join(PACKAGE_DIR, module + '.py'), package)
        path = os.path.join(package, 'cells.py')
        with open(path) as file:
            source = file.read()
        broken = "raise RuntimeError('a worker bug, for the test')"
        source = source.replace('    def serve(self):\n', f'    def serve(self):\n        {broken}\n', 1)
        with open(path, 'w') as file:
            file.write(source)
        lineno = source.split('\n').index(f'        {broken}') + 1
        worker = self.start(build_bundle(package)[0])
        self.assertEqual(worker.next_frame()['type'], 'ready')
        self.assertEqual(worker.wait_exit(), 1)
        native = worker.drain_native(0).decode()
        self.assertIn(f'File "{PACKAGE}/cells.py", line {lineno}, in serve\n    {broken}\n', native)
        self.assertIn(f'File "{PACKAGE}/main.py"', native)
        self.assertTrue(native.rstrip().endswith('RuntimeError: a worker bug, for the test'), native)


class LimitsTests(unittest.TestCase):
    """The limits the worker shares with the server arrive in REPL_MCP_WORKER_LIMITS and
    nowhere else: the worker uses the values it is given, and one given none, or limits it
    cannot take, ends with status 2 and one line on fd 2 before its ready frame."""

    def start(self, limits, wait_ready):
        tmp = tempfile.TemporaryDirectory()
        self.addCleanup(tmp.cleanup)
        worker = WorkerProcess(tmp.name, cache=None, wait_ready=wait_ready, env={LIMITS_VAR: limits})
        self.addCleanup(worker.close)
        return worker

    def test_the_worker_uses_the_values_it_is_given(self):
        limits = dict(server_limits(), STREAM_BUDGET=1_000, STREAM_HEAD=300)
        worker = self.start(json.dumps(limits), wait_ready=True)
        stdout = worker.run('print("x" * 5_000, end="")')['stdout']
        head, marker, tail = stdout.partition('\n[... ')
        self.assertEqual(len(head), 300, stdout)
        self.assertLessEqual(len(stdout.encode()), 1_000)
        self.assertTrue(marker and tail.endswith('x'), stdout)

    def test_missing_or_bad_limits_are_refused(self):
        good = server_limits()
        extra = dict(good, NEW_LIMIT=1)
        for limits, says in (
            (None, 'is not set'),
            ('', 'is not JSON'),
            ('[1, 2]', 'is not a JSON object'),
            (json.dumps({k: v for k, v in good.items() if k != 'MAX_FRAME'}), 'has no MAX_FRAME'),
            (json.dumps(dict(good, STREAM_HEAD='20000')), "has STREAM_HEAD = '20000'"),
            (json.dumps(dict(good, STREAM_HEAD=20000.0)), 'has STREAM_HEAD = 20000.0'),
            (json.dumps(dict(good, MAX_FRAME=True)), 'has MAX_FRAME = True'),
            (json.dumps(dict(good, MCP_CALL_TIMEOUT='120')), "has MCP_CALL_TIMEOUT = '120'"),
            (json.dumps(extra), 'has limits this worker does not know: NEW_LIMIT'),
        ):
            with self.subTest(limits=limits):
                worker = self.start(limits, wait_ready=False)
                self.assertEqual(worker.wait_exit(), 2)
                native = worker.drain_native(0).decode()
                self.assertEqual(native.count('\n'), 1, native)
                self.assertTrue(native.startswith(f'repl-mcp worker: protocol error: {LIMITS_VAR} '), native)
                self.assertIn(says, native)


class CodeCacheTests(unittest.TestCase):
    """REPL_MCP_WORKER_CACHE: an entry is the code of every module, keyed by the bundle's
    digest and the interpreter's exact version; a problem with it means compiling."""

    def setUp(self):
        tmp = tempfile.TemporaryDirectory()
        self.addCleanup(tmp.cleanup)
        self.project = os.path.join(tmp.name, 'project')
        os.mkdir(self.project)
        self.cache = os.path.join(tmp.name, 'cache')
        self.entry = cache_entry(self.cache)

    def stdout_head(self):
        """The head of a cut stdout: 10 bytes when the worker runs the MARKED entry, 20,000
        when it compiled its own."""
        worker = WorkerProcess(self.project, cache=self.cache)
        try:
            return len(worker.run('print("x" * 100_000, end="")')['stdout'].partition('\n[... ')[0])
        finally:
            worker.close()

    def plant(self, codes, mode=0o600, path=None):
        os.makedirs(self.cache, 0o700, exist_ok=True)
        with open(path or self.entry, 'wb') as file:
            file.write(marshal.dumps(codes))
        os.chmod(path or self.entry, mode)

    def test_entry_is_private_and_loaded(self):
        self.assertEqual(self.stdout_head(), 20_000)
        self.assertEqual(stat.S_IMODE(os.stat(self.cache).st_mode), 0o700)
        self.assertEqual(stat.S_IMODE(os.stat(self.entry).st_mode), 0o600)
        with open(self.entry, 'rb') as file:
            self.assertEqual(sorted(marshal.loads(file.read())), MODULES)
        self.plant(compiled(**MARKED))
        self.assertEqual(self.stdout_head(), 10)

    def test_unsafe_or_unusable_entries_are_compiled_over(self):
        marked = compiled(**MARKED)
        incomplete = dict(marked)
        del incomplete['main']
        cases = {
            'writable by the group': lambda: self.plant(marked, mode=0o620),
            'writable by others': lambda: self.plant(marked, mode=0o602),
            'a symbolic link': lambda: self.symlink(marked),
            'missing a module': lambda: self.plant(incomplete),
            'with an extra module': lambda: self.plant({**marked, 'extra': marked['main']}),
            'not code': lambda: self.plant({name: 'x = 1' for name in MODULES}),
            'not marshal data': lambda: self.write(b'not marshal data'),
            'too large': lambda: self.oversized(marked),
        }
        for case, plant in cases.items():
            with self.subTest(case):
                if os.path.lexists(self.entry):
                    os.unlink(self.entry)
                plant()
                self.assertEqual(self.stdout_head(), 20_000)
                self.assertFalse(os.path.islink(self.entry))
                with open(self.entry, 'rb') as file:  # compiled again and kept
                    self.assertEqual(sorted(marshal.loads(file.read())), MODULES)

    def symlink(self, codes):
        target = os.path.join(os.path.dirname(self.cache), 'elsewhere.code')
        self.plant(codes, path=target)
        os.symlink(target, self.entry)

    def write(self, data):
        os.makedirs(self.cache, 0o700, exist_ok=True)
        with open(self.entry, 'wb') as file:
            file.write(data)

    def oversized(self, codes):
        self.plant(codes)
        with open(self.entry, 'ab') as file:
            file.truncate((1 << 24) + 1)  # sparse: marshal stops at the end of its data

    def test_an_unwritable_cache_only_means_compiling(self):
        os.makedirs(self.cache, 0o500)
        self.addCleanup(os.chmod, self.cache, 0o700)
        self.assertEqual(self.stdout_head(), 20_000)
        if os.geteuid() != 0:  # root writes anyway
            self.assertFalse(os.path.exists(self.entry))
        blocked = os.path.join(os.path.dirname(self.cache), 'a file, not a directory')
        with open(blocked, 'w'):
            pass
        self.cache = blocked
        self.assertEqual(self.stdout_head(), 20_000)


if __name__ == '__main__':
    unittest.main()
