"""The two tables the modules share: every limit is a number and every message a str, and
the messages that state a limit state the one in force."""

import unittest

from replworker import limits, messages


def public(module):
    return {name: value for name, value in vars(module).items() if name.isupper()}


class TableTests(unittest.TestCase):
    def test_types(self):
        for name, value in public(limits).items():
            self.assertIn(type(value), (int, float), name)
            self.assertGreater(value, 0, name)
        for name, value in public(messages).items():
            if name not in vars(limits):  # the limits messages name
                self.assertIs(type(value), str, name)

    def test_messages_state_the_limits_in_force(self):
        kib, mib = 1024, 1024 * 1024
        stated = [
            (messages.FILE_TOO_LARGE, f'{limits.SOURCE_FILE_BYTES // kib} KiB'),
            (messages.ARGV_TOO_LARGE, f'{limits.ARGV_BYTES // kib} KiB'),
            (messages.ARGV_TOO_MANY, f'at most {limits.ARGV_ITEMS} strings'),
            (messages.CHECKPOINT_TOO_LARGE, f'{limits.CHECKPOINT_BYTES // kib} KiB'),
            (messages.SOURCE_UNKNOWN, f'{limits.SOURCE_RUNS} runs / {limits.SOURCE_BYTES // mib} MiB'),
            (messages.MCP_BAD_TIMEOUT, f'between {limits.MCP_TIMEOUT_MIN:g} and {limits.MCP_TIMEOUT_MAX:g} seconds'),
            (messages.MCP_FRAME_TOO_LARGE, f'{limits.MAX_FRAME // mib} MiB'),
            (messages.FRAME_TOO_LARGE, f'{limits.MAX_FRAME // mib} MiB'),
            (messages.ARTIFACT_TOO_LARGE, f'{limits.ARTIFACT_MAX_BYTES // mib} MiB'),
            (messages.ARTIFACT_STRINGS_TOO_LARGE, f'{limits.ARTIFACT_STRING_BUDGET // mib} MiB'),
            (messages.ARTIFACT_BAD_LENGTH, f'between 0 and {limits.ARTIFACT_READ_MAX} bytes'),
        ]
        for message, part in stated:
            self.assertIn(part, message)
        self.assertTrue(messages.CHECKPOINT_UNSUPPORTED.endswith(messages.CHECKPOINT_FORMAT))
        self.assertLessEqual(limits.FLUSH_INTERVAL, 0.1)  # PROTOCOL.md: output at least every 100 ms


if __name__ == '__main__':
    unittest.main()
