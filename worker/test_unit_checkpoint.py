"""checkpoint() and restore(), called directly on a namespace dict: what is saved,
skipped or omitted, the file they write, and the checks restore makes before it merges."""

import json
import os
import stat
import tempfile
import unittest

from replworker import checkpoint, messages
from replworker.limits import CHECKPOINT_BYTES, CHECKPOINT_VARIABLES, NAME_CHARS

RESERVED = frozenset({'__name__', '__builtins__', 'sh', 'mcp'})


class CheckpointTests(unittest.TestCase):
    def setUp(self):
        tmp = tempfile.TemporaryDirectory()
        self.addCleanup(tmp.cleanup)
        self.dir = tmp.name
        self.path = os.path.join(self.dir, 'state.json')

    def test_saved_skipped_and_omitted(self):
        namespace = {
            '__name__': '__repl__', 'sh': print, 'n': 1, 'text': 'é\udc80', 'nested': {'a': [1, (2, 3)]},
            'big': 's' * 3000, 'obj': object(), 'deep': [[[[[[1]]]]]], 'x' * (NAME_CHARS + 1): 1, 5: 'int key',
        }
        result = checkpoint.checkpoint(namespace, RESERVED, self.path)
        self.assertEqual(result, {
            'saved': 3,
            'skipped': {'big': 'large string', 'obj': 'custom object', 'deep': 'value too large or not plain JSON'},
            'omitted': 2,
        })
        with open(self.path) as file:
            document = json.load(file)
        self.assertEqual(document['format'], 'repl-checkpoint-v1')
        self.assertEqual(document['values'], {'n': 1, 'text': 'é\udc80', 'nested': {'a': [1, [2, 3]]}})
        self.assertEqual(stat.S_IMODE(os.stat(self.path).st_mode), 0o600)
        self.assertEqual(os.listdir(self.dir), ['state.json'])

        restored = {'n': 'old', '__name__': '__repl__'}
        self.assertEqual(checkpoint.restore(restored, RESERVED, self.path), {'restored': 3, 'state': 'merged'})
        self.assertEqual(restored['text'], 'é\udc80')  # exact, lone surrogate included
        self.assertEqual(restored['n'], 1)

    def test_byte_and_variable_limits(self):
        namespace = {f'v{i}': 'x' * 1500 for i in range(CHECKPOINT_VARIABLES + 20)}
        result = checkpoint.checkpoint(namespace, RESERVED, self.path)
        self.assertLessEqual(os.path.getsize(self.path), CHECKPOINT_BYTES)
        self.assertIn('snapshot byte limit', result['skipped'].values())
        self.assertGreaterEqual(result['omitted'], 20)
        self.assertEqual(result['saved'] + len(result['skipped']) + result['omitted'], len(namespace))

    def test_restore_validates_the_whole_file_first(self):
        def document(**fields):
            return json.dumps({'format': 'repl-checkpoint-v1', 'values': {}, **fields})
        cases = [
            ('not json', messages.CHECKPOINT_UNSUPPORTED),
            (json.dumps({'format': 'other', 'values': {}}), messages.CHECKPOINT_UNSUPPORTED),
            (document(values=[]), messages.CHECKPOINT_TOO_MANY),
            (document(values={f'v{i}': i for i in range(CHECKPOINT_VARIABLES + 1)}), messages.CHECKPOINT_TOO_MANY),
            (document(values={'ok': 1, 'sh': 2}), messages.CHECKPOINT_BAD_NAMES),
            (document(values={'ok': 1, 'y' * (NAME_CHARS + 1): 2}), messages.CHECKPOINT_BAD_NAMES),
            (document(values={'ok': 1, 'bad': [[[[[[1]]]]]]}), messages.CHECKPOINT_BAD_VALUE.format('bad')),
            (' ' * (CHECKPOINT_BYTES + 1), messages.CHECKPOINT_TOO_LARGE),
        ]
        for text, message in cases:
            with open(self.path, 'w') as file:
                file.write(text)
            namespace = {'kept': True}
            with self.assertRaises(ValueError) as caught:
                checkpoint.restore(namespace, RESERVED, self.path)
            self.assertEqual(str(caught.exception), message)
            self.assertEqual(namespace, {'kept': True})  # nothing merged

    def test_restore_refuses_what_is_not_a_regular_file(self):
        fifo = os.path.join(self.dir, 'fifo')
        os.mkfifo(fifo)
        with self.assertRaises(OSError):
            checkpoint.restore({}, RESERVED, fifo)  # refused at once, never waited on

    def test_a_failed_write_leaves_no_temporary_file(self):
        target = os.path.join(self.dir, 'a directory')
        os.mkdir(target)
        with self.assertRaises(OSError):
            checkpoint.checkpoint({'n': 1}, RESERVED, target)  # the rename over a directory fails
        self.assertEqual(os.listdir(self.dir), ['a directory'])
        with self.assertRaises(OSError):
            checkpoint.checkpoint({'n': 1}, RESERVED, os.path.join(self.dir, 'missing', 'state.json'))


if __name__ == '__main__':
    unittest.main()
