"""The worker package's structure, read from its sources with ast (nothing is imported):
its modules depend on each other one way, use only each other's public names, and stay
within the house bound on a module's length. The three guards sit together so that
none rewards splitting for its own sake: a module split past the length bound must still
import one way and keep its helpers to itself.

Every import of a module of the package counts, at module level and inside a function
alike. A function-level import only delays the import system's cycle; the two modules
still need each other, to be read, tested and changed together (`from .bridge import
ToolError  # bridge imports this module` inside a function was such a cycle). So does a
name reached through a module bound by `from . import m` (`m._name`).

A private name (`_x`, not a dunder) belongs to its module: another module that needs it
means the helper is public in the module that owns it, or lives elsewhere. Imported under
an alias, the name at its origin is what counts (`from .m import text as _text` is fine)."""

import ast
import os
import unittest

from harness import PACKAGE_DIR


def is_private(name):
    return name.startswith('_') and not (name.startswith('__') and name.endswith('__'))


def read_package(directory):
    """{module name: source} of every module of the package in `directory`."""
    sources = {}
    for entry in sorted(os.listdir(directory)):
        if entry.endswith('.py'):
            with open(os.path.join(directory, entry), encoding='utf-8') as file:
                sources[entry[:-3]] = file.read()
    return sources


def dependencies(sources):
    """({module: {module it imports: first line}}, [(module, line, 'other.name')] private
    names used across modules), from every relative import of every module, wherever it
    stands, and every attribute read of a module bound by `from . import m`."""
    graph, private = {}, []
    for module, source in sources.items():
        tree = ast.parse(source, filename=f'{module}.py')
        edges = graph.setdefault(module, {})
        bound = {}  # local name -> module of the package, from `from . import m`
        for node in ast.walk(tree):
            if not isinstance(node, ast.ImportFrom) or node.level == 0:
                continue
            if node.module is None:  # from . import a, b
                for alias in node.names:
                    edges.setdefault(alias.name, node.lineno)
                    bound[alias.asname or alias.name] = alias.name
                continue
            target = node.module.partition('.')[0]
            edges.setdefault(target, node.lineno)
            for alias in node.names:
                if is_private(alias.name):
                    private.append((module, node.lineno, f'{target}.{alias.name}'))
        for node in ast.walk(tree):
            if (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name)
                    and node.value.id in bound and is_private(node.attr)):
                private.append((module, node.lineno, f'{bound[node.value.id]}.{node.attr}'))
    return graph, private


def cycles(graph):
    """Every strongly connected component of more than one module (or a module that
    imports itself), as a sorted list of names: Tarjan's algorithm, iteratively."""
    index, low, on_stack, stack, found = {}, {}, set(), [], []
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph.get(root, ()))))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, successors = work[-1]
            advanced = False
            for successor in successors:
                if successor not in index:
                    index[successor] = low[successor] = len(index)
                    stack.append(successor)
                    on_stack.add(successor)
                    work.append((successor, iter(sorted(graph.get(successor, ())))))
                    advanced = True
                    break
                if successor in on_stack:
                    low[node] = min(low[node], index[successor])
            if advanced:
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1 or node in graph.get(node, ()):
                    found.append(sorted(component))
    return sorted(found)


def describe(graph, component):
    """The imports inside one cycle, `a:12 -> b`, for the failure message."""
    members = set(component)
    return ', '.join(f'{module}:{line} -> {target}' for module in component
                     for target, line in sorted(graph[module].items()) if target in members)


# The house bound on a worker module: one that grows past it is split by concern (as
# previews.py was, into the rendering core and the previews that register into it).
MODULE_LINES_BOUND = 700


class StructureTests(unittest.TestCase):
    def setUp(self):
        self.sources = read_package(PACKAGE_DIR)
        self.graph, self.private = dependencies(self.sources)

    def test_modules_within_bound(self):
        long = {module: source.count('\n') for module, source in self.sources.items()
                if source.count('\n') > MODULE_LINES_BOUND}
        self.assertEqual(long, {}, f'worker modules over the bound of {MODULE_LINES_BOUND} lines: split them by concern')
        self.assertGreater(len(self.sources), 20)

    def test_no_import_cycle(self):
        found = cycles(self.graph)
        self.assertEqual(found, [], 'import cycles among the worker\'s modules (module- and function-level imports both count): '
                         + '; '.join(describe(self.graph, component) for component in found))

    def test_no_private_name_across_modules(self):
        self.assertEqual(self.private, [], 'private names used outside the module that owns them: '
                         + ', '.join(f'{module}.py:{line} uses {name}' for module, line, name in self.private))

    def test_every_import_names_a_module_of_the_package(self):
        unknown = [(module, target) for module, edges in self.graph.items() for target in edges if target not in self.graph]
        self.assertEqual(unknown, [])


class CheckerTests(unittest.TestCase):
    """The checks above catch what they are for, on a package made up here."""

    SOURCES = {
        'a': 'from .b import run\n',
        'b': 'def run():\n    from .c import helper  # a function-level import counts\n',
        'c': 'from . import a\nfrom .d import _hidden, public as _alias\nx = a._secret + a.__name__\n',
        'd': 'from . import d\n_hidden = public = 1\n',
        'e': 'from .d import public\n',
    }

    def test_cycles_counts_function_level_imports(self):
        graph, _ = dependencies(self.SOURCES)
        self.assertEqual(cycles(graph), [['a', 'b', 'c'], ['d']])
        self.assertEqual(describe(graph, ['a', 'b', 'c']), 'a:1 -> b, b:2 -> c, c:1 -> a')

    def test_private_names_imported_or_read_through_a_module(self):
        _, private = dependencies(self.SOURCES)
        self.assertEqual(sorted(private), [('c', 2, 'd._hidden'), ('c', 3, 'a._secret')])

    def test_a_one_way_package_passes(self):
        graph, private = dependencies({'core': 'X = 1\n', 'user': 'from .core import X\nfrom . import core\ny = core.X\n'})
        self.assertEqual((cycles(graph), private), ([], []))


if __name__ == '__main__':
    unittest.main()
