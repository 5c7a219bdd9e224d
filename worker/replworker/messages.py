"""Every message the worker gives a person or a program: results' errors, the exceptions
the helpers raise, the text of previews and skipped checkpoint entries, and the protocol
errors written to fd 2. Clients match substrings of many of them (docs/contract.md
§13.2), so they change only deliberately. Templates take str.format arguments."""

from .limits import (
    ARGV_ITEMS, ARTIFACT_JSON_DEPTH, ARTIFACT_JSON_NODES, EXECUTOR_PENDING_JOBS, INBOX_SLOTS,
    PREVIEW_INT_BITS, RPC_PENDING, RPC_QUEUED, SHELL_CAPTURE, SHELL_PROCESSES, CHECKPOINT_VARIABLES,
)
from .limits import IMAGE_ARTIFACTS, IMAGE_BYTES, IMAGE_COUNT, SEARCH_LIMIT_MAX

CHECKPOINT_FORMAT = 'repl-checkpoint-v1'  # the checkpoint file's format field, named in a message

# Runs and their policies.
INTERRUPTED = 'Execution interrupted ({}); namespace preserved'
TASKS_REFUSED = 'Background tasks refused cancellation; worker stopped and variables cleared'
THREADS_INTERRUPTED = (
    'Interrupted cell left active background threads or executor work ({}); worker stopped and '
    'variables cleared. Threads cannot be interrupted: give a long-running thread a stop flag '
    '(threading.Event) and join it before the cell ends.'
)
THREADS_MORE = '+{} more'  # the last entry of a background_threads list that was cut
EXECUTOR_JOB_QUEUED = '<queued default-executor job>'  # a background_threads entry with no thread yet
EXECUTOR_FULL = f'Too many pending default executor jobs (limit {EXECUTOR_PENDING_JOBS})'
INVENTORY_NOTE = 'Namespace metadata; inspect structured value'
STR_FAILED = '<exception str() failed>'

# Saved files.
FILE_TOO_LARGE = 'Python source file exceeds 256 KiB'
FILE_UNREADABLE = 'Cannot read Python source file: {}'
FILE_UNDECODABLE = 'Cannot decode Python source file {}: {}'
NOT_REGULAR_FILE = '{} is not a regular file'
ARGV_TOO_MANY = f'argv must contain at most {ARGV_ITEMS} strings'
ARGV_TOO_LARGE = 'argv exceeds 32 KiB'
FILE_EXITED = 'Saved Python file exited with status {}'
EXIT_CODE_STR_FAILED = '<exit code str() failed>'

# Output streams.
WRITE_NOT_STR = 'write() argument must be str, not {}'
WRITE_NOT_BYTES = "a bytes-like object is required, not '{}'"
OUTPUT_LEFT_OUT = '\n[... {:,} bytes left out ...]\n'
OUTPUT_SAVED = '\n[... {:,} bytes left out; all {:,} bytes are in output_artifacts.{} ...]\n'
OUTPUT_SAVED_PART = (
    '\n[... {:,} bytes left out; output_artifacts.{} keeps the first {:,} and the last {:,} of all {:,} bytes ...]\n'
)
OUTPUT_NOT_SAVED = '\n[... {:,} bytes left out; the complete output was not saved: {} ...]\n'
OUTPUT_INTERRUPTED = 'the run was interrupted'
LIVE_DROPPED = '[... {:,} characters not streamed live ...]\n'
INPUT_NO_STDIN = (
    'input() cannot read a line: stdin is not connected in repl-mcp (a cell has no terminal '
    'and nobody to answer); put the value in the code instead'
)
NO_NATIVE_FD = (
    '{} has no descriptor: the cell closed or replaced fd 1 and fd 2, and the worker kept no '
    'copy of the native-output pipe; write through print() or sys.{}.write() instead'
)

# Previews.
PREVIEW_OMITTED = '<{}; safe preview omitted>'
PREVIEW_OMITTED_LENGTH = '<{}; length={}; safe preview omitted>'
PREVIEW_INT_OMITTED = '<int; {} bits; safe preview omitted>'
PREVIEW_TOO_DEEP = '<{}; length={}; nested too deep>'
PREVIEW_TOO_DEEP_OBJECT = '<{}; nested too deep>'
PREVIEW_SIZED = '<{}; shape={}>'  # a frame, Series, Index or array inside a cell or an element
PREVIEW_MORE_ITEMS = '... {} more'
PREVIEW_MORE_CHARS = '... {} more characters'
PREVIEW_MORE_BYTES = '... {} more bytes'
PREVIEW_CLASS = "<class '{}'>"
PREVIEW_FUNCTION = '<function {}>'
PREVIEW_BUILTIN = '<built-in function {}>'
PREVIEW_MODULE = "<module '{}'>"
PREVIEW_POLARS_OBJECTS = 'rows not shown: a column holds Python objects'
PREVIEW_XARRAY_DATA = '<values not loaded: {}; dtype={}>'  # an xarray variable's data that is not numpy's
PREVIEW_STYLER = '<Styler of the DataFrame below; its styles are not rendered>'
PREVIEW_FRAME_SHAPE = '[{} rows x {} columns]'  # pandas' own
PREVIEW_ARRAY = 'shape={}, dtype={})'  # the end of numpy's repr, always with both
PREVIEW_ARRAY_OMITTED = '<ndarray; shape={}; dtype={}; too many dimensions to preview>'

# The source history.
SOURCE_UNKNOWN = 'Run source unknown or evicted (source history: 64 runs / 1 MiB)'

# sh().
SHELL_BUSY = f'Too many active sh processes (limit {SHELL_PROCESSES})'
SHELL_FAILED = 'Shell exited with status {}; inspect exception.stderr'
SHELL_FAILED_TAIL = SHELL_FAILED + '. Its stderr ends:\n{}'
SHELL_LINE_FAILED = "Shell exited with status {}; its stderr is the cell's stderr; the rest of the cell did not run"
PIP_MISSING = (
    '%pip: {0} has no pip (a venv made by `uv venv` has none) and uv is not on PATH; '
    'add pip with `!{0} -m ensurepip`, or put uv on PATH'
)
COMMAND_ECHO = '$ {}\n'  # written to a cell's stdout before a !cmd or %pip line runs
_SHELL_FORMS = (
    'repl-mcp runs `!cmd`, `x = !cmd` (the list of its stdout lines) and `%pip ARGS` as lines of '
    'their own, at the top level of a cell or inside its blocks'
)
SHELL_FORM_UNSUPPORTED = '`{}` is not run here: ' + _SHELL_FORMS + '; write anything else as Python'
SHELL_FORM_HINT = _SHELL_FORMS + '; anything else is Python'
SHELL_CAPTURE_CUT = (
    f'x = !cmd: the list holds the lines of the first {SHELL_CAPTURE:,} bytes of the command\'s stdout; '
    'the rest was read and dropped (write large output to a file)\n'
)
SHELL_BAD_TIMEOUT = 'sh() timeout must be a finite positive number of seconds'

# Checkpoints: refusals, and the reasons listed in `skipped`.
CHECKPOINT_TOO_LARGE = 'Checkpoint exceeds 256 KiB'
CHECKPOINT_UNSUPPORTED = f'Unsupported checkpoint format; expected {CHECKPOINT_FORMAT}'
CHECKPOINT_TOO_MANY = f'Checkpoint values must be an object of at most {CHECKPOINT_VARIABLES} variables'
CHECKPOINT_BAD_NAMES = 'Checkpoint contains invalid or reserved variable names'
CHECKPOINT_BAD_VALUE = 'Checkpoint value {!r} is not a small exact JSON value'
SKIP_LARGE_STRING = 'large string'
SKIP_NOT_PLAIN = 'value too large or not plain JSON'
SKIP_CUSTOM = 'custom object'
SKIP_BYTE_LIMIT = 'snapshot byte limit'

# The mcp bridge.
MCP_FOREIGN = 'MCP calls must belong to their originating active cell; use mcp.acall for concurrency'
MCP_BUSY = f'Too many pending MCP calls (limit {RPC_PENDING} in flight and {RPC_QUEUED} waiting)'
MCP_BAD_TIMEOUT = 'MCP timeout must be finite and between 0.01 and 3600 seconds'
MCP_BOTH_ARGUMENTS = 'Use either arguments={...} or keyword tool arguments, not both'
MCP_ARGUMENTS_NOT_DICT = 'arguments must be a dict'
MCP_FRAME_TOO_LARGE = 'Worker frame exceeds 1 MiB; reduce code/arguments/result'
MCP_NO_REPLY = 'MCP {} got no reply within {:g} seconds; call may have completed. Inspect mcp.journal()'
MCP_MALFORMED = 'MCP bridge returned a malformed {} result'
MCP_REPLY_UNDECODABLE = 'MCP reply could not be decoded in the worker ({}); the call may have completed. Inspect mcp.journal()'
MCP_UNKNOWN_TOOL = "Unknown tool '{}'; use mcp.list_tools(server)"
MCP_TEXT_NOT_ENVELOPE = 'mcp.text() expects a CallToolResult dict, not {}'
MCP_REPR = '<mcp bridge; help(mcp) describes it, mcp.help() lists servers>'
TOOL_FAILED = 'MCP tool failed: {}'
MCP_IMAGE_NOT_BASE64 = 'image block {} of the result has data that is not base64'
MCP_AMBIGUOUS_NAME = "mcp: {!r} could be any of {}; use mcp[name] with the exact name"
MCP_NO_SUCH_SERVER = "mcp has no server {!r}; dir(mcp) and mcp.servers() list the servers"
MCP_NO_SUCH_TOOL = '{} has no tool {!r}; dir({}) or mcp.help({!r}) lists its tools'
# A tool the registry's allowedTools do not admit: the broker's reason and action (mcp.explain).
MCP_TOOL_NOT_ALLOWED = '{} has no tool {!r} that cells may call: {} {}'
# The preview of `mcp` itself: what it reaches, listed while the cell ran.
MCP_PREVIEW = '<mcp: {} for the broker: {}; mcp.search(words) finds a tool, help(mcp) says how to call one>'
MCP_PREVIEW_NONE = "<mcp: no MCP servers are configured for the broker; the project's .mcp.json or --config registers them, mcp.explain(server) says why one is missing>"
MCP_PREVIEW_FAILED = '<mcp: the broker did not list its servers ({}); help(mcp) describes the bridge>'
MCP_PREVIEW_TOOLS = '{} ({} tool{})'
MCP_PREVIEW_UNLISTED = '{} (tools not listed: {})'
MCP_PREVIEW_MORE = 'and {} more'
MCP_TOOL_BAD_CALL = '{}(): {}; help({}) shows its signature'
MCP_TOOL_NO_SIGNATURE = ('Its inputSchema gives no Python signature ({}): keyword arguments go to the tool as they are,\n'
                         'and the broker checks them against the schema.')
MCP_TOOL_ARG_TYPE = '{}() argument {!r} must be {} (its JSON schema type), not {}'
MCP_BAD_SEARCH_QUERY = 'mcp.search() query must be a str, not {}'
MCP_BAD_SEARCH_LIMIT = f'mcp.search() limit must be an int from 1 to {SEARCH_LIMIT_MAX}'
MCP_SEARCH_MORE = '... {} more matching tools; narrow the query or raise limit'
MCP_SEARCH_NONE = 'no tool of the {1} servers matches {0!r}; mcp.help() lists the servers'
MCP_SEARCH_UNAVAILABLE = 'server {!r} was not searched: {}'
MCP_HELP_SERVERS = 'MCP servers of this session (mcp.<name>, or mcp[name] where shown):'
MCP_HELP_NO_SERVERS = "No MCP servers are configured for this session: the project's .mcp.json or --config registers them"
MCP_HELP_NO_TOOLS = 'Server {!r} offers no tool the broker admits: its catalogue is empty, or its allowedTools admit none of it'
MCP_HELP_HINT = 'mcp.help(server) lists its tools as Python signatures; mcp.search(query) finds tools.'

# Artifacts: refusals of artifact() and their details, and the argument checks.
ARTIFACT_UNSUPPORTED = 'Artifact supports only exact JSON builtins, bytes or explicit files'
ARTIFACT_UNSUPPORTED_DETAIL = ARTIFACT_UNSUPPORTED + ' ({})'
# A value of exact JSON builtins past a bound: its types are fine, its size is not.
ARTIFACT_OVER_BOUNDS = "Artifact JSON is past its bounds ({}); write the value to a file and pass artifact(path=...)"
ARTIFACT_STRINGS_TOO_LARGE = 'strings exceed the 16 MiB budget at 4 bytes per character'
ARTIFACT_TOO_MANY_VALUES = f'more than {ARTIFACT_JSON_NODES:,} values'
ARTIFACT_INT_TOO_LARGE = f'int over {PREVIEW_INT_BITS} bits'
ARTIFACT_NOT_FINITE = 'NaN or infinite float'
ARTIFACT_TOO_DEEP = f'nesting deeper than {ARTIFACT_JSON_DEPTH}'
ARTIFACT_BAD_KEY = 'dict key of type {}'
ARTIFACT_BAD_TYPE = 'found {}'
ARTIFACT_ONE_SOURCE = 'artifact() needs exactly one of value or path='
ARTIFACT_BAD_FORMAT = 'Artifact format must be json, text or binary'
ARTIFACT_FORMAT_MISMATCH = "Artifact format '{}' does not fit a {} value (text needs str, binary needs bytes, json a JSON value)"
ARTIFACT_TOO_LARGE = 'Artifact exceeds 16 MiB'
ARTIFACT_BAD_ENCODING = 'artifact_read encoding must be text, base64 or hex'
ARTIFACT_BAD_LENGTH = 'artifact_read length must be between 0 and 65536 bytes'
ARTIFACT_BAD_FORWARD_FORMAT = 'Forward format must be json, text or explicit base64'
ARTIFACT_AUTO_FAILED = 'Automatic artifact upload failed: {}'
ARTIFACT_AUTO_NOT_MADE = 'Automatic artifact not made: {}'  # refused before any upload
ARTIFACT_AUTO_INTERRUPTED = 'Automatic artifact upload skipped: the run was interrupted'
NOT_STR_PATH = '{} must be a str path'
NOT_STR = '{} must be a str, not {}'
NOT_INT = '{} must be an int, not {}'
NEGATIVE = '{} must not be negative'
NOT_BOOL_OVERWRITE = 'overwrite must be True or False'

# Protocol errors: one line on fd 2 before the worker exits with status 2.
PROTOCOL_ERROR = 'repl-mcp worker: protocol error: {}\n'
BAD_FDS = 'REPL_MCP_WORKER_FDS={!r} is not two open fds "R,W": {}'
BAD_NATIVE_SOCKET = 'REPL_MCP_WORKER_NATIVE={!r} is not an open socket: {}'
FRAME_NOT_JSON = 'frame is not UTF-8 JSON'
FRAME_UNKNOWN = 'unknown or malformed frame (type {})'
FRAME_TOO_LARGE = 'frame exceeds 1 MiB'
# A frame that cannot be decoded but names its run: that run fails, the worker goes on.
RUN_UNDECODABLE = 'The worker could not decode the request of this run ({}); nothing ran, and the variables are kept'
INBOX_FULL = f'more than {INBOX_SLOTS} commands queued'

# Tracebacks, laid out as Python's own.
TRACEBACK_HEAD = 'Traceback (most recent call last):'
GROUP_TRACEBACK_HEAD = 'Exception Group Traceback (most recent call last):'
GROUP_MORE = 'and {} more exception{}'
GROUP_DEPTH_CUT = '... (max_group_depth is {})'
CHAIN_CAUSE = '\n\nThe above exception was the direct cause of the following exception:\n\n'
CHAIN_CONTEXT = '\n\nDuring handling of the above exception, another exception occurred:\n\n'
CHAIN_ELIDED = '[{} earlier exceptions of the chain not shown]\n\n'
SYNTAX_NO_DETAIL = '<no detail available>'

# display() and the images of a run.
DISPLAY_NO_CELL = (
    'display() needs a running cell: call it from the cell\'s own code (a thread that '
    'outlived its cell cannot show images)'
)
IMAGE_DAMAGED = 'display(): the bytes start like {} but the header is damaged (no width and height); pass the whole image file'
IMAGE_REPR_NOT_BYTES = '{}.{}() returned {}, not the bytes of an image'
IMAGE_REPR_NOT_IMAGE = '{}.{}() returned bytes that are not a PNG, JPEG, GIF or WebP image'
IMAGE_PAST_COUNT = f'more than {IMAGE_COUNT} images in one run'
IMAGE_PAST_BYTES = f'past the {IMAGE_BYTES // 1024} KiB of images one run shows inline'
IMAGE_ARTIFACTS_FULL = f'the run already kept {IMAGE_ARTIFACTS} images as artifacts'
IMAGE_NOT_KEPT = 'display(): an image ({}, {} bytes) was not shown ({}) and not kept as an artifact: {}; save it to a file instead\n'
FIGURE_FAILED = 'display(): figure {} could not be drawn, and is closed: {}\n'

# Snapshots and restores (docs/contract.md §6.7): why a variable was not saved, why it
# did not come back, and why a snapshot is refused.
SNAP_NOT_PICKLABLE = 'not picklable: {}'
SNAP_CELL_CODE = (
    'not picklable: a function or class defined in a cell (or an instance of one) needs cloudpickle or dill '
    'in the session\'s interpreter'
)
SNAP_BUDGET = 'over the snapshot budget ({} MiB a session; --snapshot-max-mib)'
SNAP_TOO_MANY = 'more than 100,000 variables'
SNAP_MODULE_UNNAMED = 'a module that cannot be imported again by its name'
SNAP_STALE = 'possibly older than the variable: larger than {} MiB, so not re-checked after a later cell'
SNAP_DIR_OPEN = 'snapshot directory {} cannot be opened: {}'
SNAP_DIR_LINK = 'snapshot directory {} is a symbolic link: refused'
SNAP_DIR_NOT_DIR = 'snapshot directory {} is not a directory (or changed while it was opened): refused'
SNAP_DIR_FOREIGN = 'snapshot directory {} is not private (owner uid {}, mode {:04o}): refused'
SNAP_FILE_NOT_PRIVATE = 'snapshot file {} is refused: {}'
SNAP_MANIFEST_MISSING = 'the snapshot has no manifest: it was never completed'
SNAP_MANIFEST_TOO_LARGE = 'the snapshot\'s manifest is larger than 64 MiB: refused'
SNAP_MANIFEST_FORMAT = 'the snapshot\'s manifest is not a repl-mcp snapshot manifest: refused'
SNAP_MANIFEST_FOREIGN = 'the snapshot was written with another key (another user, machine or state directory): refused'
SNAP_MANIFEST_TAMPERED = 'the snapshot\'s manifest does not match its HMAC (tampered or damaged): refused'
SNAP_MANIFEST_PROJECT = 'the snapshot belongs to project {}, not this session\'s: refused'
RESTORE_TAMPERED = 'refused: the entry does not match its HMAC (tampered, damaged or moved)'
RESTORE_TRUNCATED = 'refused: truncated ({} of {} bytes)'
RESTORE_UNREADABLE = 'refused: its segment cannot be read: {}'
RESTORE_OTHER_PYTHON = 'written by Python {} with functions or classes pickled by value, which need the same Python (this is {})'
RESTORE_NO_MODULE = 'a library missing in this interpreter: no module named {!r}'
RESTORE_FAILED = 'unpickling failed: {}'
RESTORE_DEPENDS = 'depends on {}, which did not come back'
RESTORE_CYCLE = 'refers to {} in a cycle of references'
RESTORE_INTERRUPTED = 'the restore was interrupted before it'
RESTORE_NOT_SAVED = 'not saved: {}'
RESTORE_STALE = 'possibly older than the variable was: not re-checked after run {}'
RESTORE_NOTE = 'Restore report; inspect structured value'
SNAP_NOT_RESTORED = 'Snapshot not restored: {}'
