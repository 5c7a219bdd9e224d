"""Every numeric limit of the worker, one per line: NAME = value  # what it bounds.

The limits the server enforces or relies on too (the frame size, the stream and preview
budgets, the artifact sizes, the bridge's timeouts: those read with _server_int and
_server_seconds) are declared once, in Go (repl/workerlimits.go), and reach the worker in
its environment: REPL_MCP_WORKER_LIMITS, a JSON object by name
(PROTOCOL.md, The limits). They have no value here. A worker started without that variable, or with a name
missing, one this table does not know or a value of the wrong kind, writes one line about
it to fd 2 and exits with status 2 before its ready frame. The worker's tests get the
variable from the Go test that runs them (package worker's TestWorkerUnit); main.run()
removes it from os.environ before the first cell. The other limits are the worker's own:
nothing on the Go side depends on them."""

import json
import os

_variable = 'REPL_MCP_WORKER_LIMITS'


def unset_variable():
    """Remove REPL_MCP_WORKER_LIMITS from os.environ: read as this module loaded, it is no
    business of a cell or a child process."""
    os.environ.pop(_variable, None)


def _refuse(reason):
    """One line about limits the worker cannot take on fd 2, then exit 2 (a protocol error:
    the line has the form of messages.PROTOCOL_ERROR, which imports this module)."""
    os.write(2, f'repl-mcp worker: protocol error: {_variable} {reason}\n'.encode('utf-8', 'replace'))
    raise SystemExit(2)


def _from_server():
    text = os.environ.get(_variable)
    if text is None:
        _refuse('is not set: the server gives every worker its limits (run the worker\'s tests with go test ./worker)')
    try:
        limits = json.loads(text)
    except ValueError as exc:
        _refuse(f'is not JSON: {exc}')
    if type(limits) is not dict:
        _refuse('is not a JSON object')
    return limits


_given = _from_server()
_taken = set()


def _server_value(name, kinds):
    if name not in _given:
        _refuse(f'has no {name}')
    value = _given[name]
    if type(value) not in kinds:
        _refuse(f'has {name} = {value!r}, not a number of the kind this limit is')
    _taken.add(name)
    return value


def _server_int(name):
    """The server's value of the int limit `name`."""
    return _server_value(name, (int,))


def _server_seconds(name):
    """The server's value of the duration `name`, in seconds (a float, as Python writes one)."""
    return float(_server_value(name, (int, float)))


# The wire protocol (channel.py).
MAX_FRAME = _server_int('MAX_FRAME')  # bytes per frame, newline included (from Go: repl.MaxFrameBytes)
INBOX_SLOTS = 2  # commands parsed and not yet taken by the main thread
READ_CHUNK = 65_536  # bytes per read from a pipe (the command pipe, sh() pipes)
FRAME_REASON_CHARS = 200  # characters of the decoder's reason when a frame cannot be decoded

# Output capture (output.py).
STREAM_BUDGET = _server_int('STREAM_BUDGET')  # UTF-8 bytes kept per stream per cell, head, marker and tail (from Go: repl.StreamLimit)
STREAM_HEAD = _server_int('STREAM_HEAD')  # UTF-8 bytes of a cut stream's head, before the marker (from Go: repl.streamHead)
STREAM_MARKER = _server_int('STREAM_MARKER')  # UTF-8 bytes kept for the marker between a cut stream's head and tail
LINE_CHARS = 65_536  # characters of a line still rewritable by \r; a longer one is kept as written
LIVE_PENDING_CHARS = 16_384  # characters waiting for the next output frames, both streams (older ones dropped)
FLUSH_INTERVAL = 0.05  # seconds between output frames while a cell runs (protocol: <= 0.1)
PUMP_LINGER = 1.0  # seconds the output pump keeps ticking after a cell, so back-to-back cells never wake it
SPOOL_HEAD = _server_int('SPOOL_HEAD')  # bytes of a cut stream's complete output kept from its start past the artifact bound (from Go: repl's spoolHead)
SPOOL_BUFFER = 65_536  # bytes of complete output buffered before a write to its spool file
BACKGROUND_BUDGET = _server_int('BACKGROUND_BUDGET')  # UTF-8 bytes per stream of what threads of earlier cells printed (from Go: repl.backgroundLimit)
BACKGROUND_HEAD = _server_int('BACKGROUND_HEAD')  # UTF-8 bytes of a cut background stream's head
LANE_CHUNK = 65_536  # UTF-8 bytes stdout's fast lane gathers in C before it hands them on as one piece (sinks.py)

# Previews of trailing values (previews.py).
PREVIEW_BYTES = _server_int('PREVIEW_BYTES')  # bytes of a return_value preview (from Go: repl.PreviewLimit)
PREVIEW_NESTING = 32  # containers a preview (its JSON value or its rendering) may nest
PREVIEW_INT_BITS = 4_096  # bits of an int in a preview or an artifact
PREVIEW_SORT_ITEMS = 10_000  # entries of a Counter a preview sorts by count, as its repr does
FRAME_ROWS = 60  # rows of a DataFrame or Series a preview shows whole, as pandas' max_rows
FRAME_ROWS_SHORT = 10  # rows shown of a longer one (the first and last 5), as pandas' min_rows
FRAME_COLUMNS = 20  # columns of a DataFrame a preview shows (the first and last 10)
FRAME_ROWS_MAX = 500  # rows a preview shows at most when the user's display.max_rows asks for more
FRAME_COLUMNS_MAX = 100  # columns likewise, for display.max_columns
FRAME_COLWIDTH = 50  # characters of one cell or label in a DataFrame or Series preview
INDEX_ITEMS = 20  # labels of a pandas Index a preview shows (pandas' max_seq_items)
ARRAY_THRESHOLD = 1_000  # elements of a numpy array shown whole (numpy's threshold)
ARRAY_EDGE_ITEMS = 3  # elements shown at each end of a longer axis (numpy's edgeitems)
ARRAY_SHOWN_ITEMS = 2_000  # elements a summarised array preview formats; fewer edge items beyond
ARRAY_ITEM_CHARS = 100  # characters of one element of an object or string array

# Checkpointed values (checkpoint.py, through previews.plain_json).
PREVIEW_NODES = 100  # values a checkpointed variable may hold
PREVIEW_DEPTH = 5  # containers a checkpointed variable may nest
PREVIEW_ITEMS = 100  # items of one list or dict in a checkpointed variable
PREVIEW_STR_CHARS = 2_000  # characters of one string inside a checkpointed variable

# Tracebacks and the source history (tracebacks.py).
TRACEBACK_FRAMES = 20  # innermost user frames a traceback keeps
TRACEBACK_SOURCE_CHARS = 500  # characters of the source line shown under a frame
TRACEBACK_MESSAGE_CHARS = 4_000  # characters of the exception's message
TRACEBACK_CAUSE_CHARS = 500  # characters of the message of its cause or context
TRACEBACK_CHARS = 10_000  # characters of a whole traceback
TRACEBACK_CHAIN = 8  # exceptions of a chain (causes and contexts) a traceback shows, the newest
TYPE_NAME_CHARS = 200  # characters of a type name anywhere in a result
SOURCE_RUNS = _server_int('SOURCE_RUNS')  # runs the source history keeps (from Go: repl.HistoryRuns)
SOURCE_BYTES = 1_048_576  # bytes the source history keeps, as retained objects' sizes

# Notebooks (nbdata.py, display.py).
HTML_BYTES = _server_int('HTML_BYTES')  # UTF-8 bytes of the text/html pandas renders for a trailing DataFrame or Styler (from Go: repl.maxHTMLBytes)
DISPLAY_COUNT = _server_int('DISPLAY_COUNT')  # display() calls of objects that are no image one run keeps for the notebook (from Go: repl.maxDisplays)
DISPLAY_BYTES = _server_int('DISPLAY_BYTES')  # UTF-8 bytes of what those keep, text, html and repr together (from Go: repl.maxDisplayBytes)

# Saved files (cells.py).
SOURCE_FILE_BYTES = _server_int('SOURCE_FILE_BYTES')  # bytes of a saved file (from Go: repl.MaxCodeBytes, the same 256 KiB)
ARGV_ITEMS = 128  # strings of a saved file's argv
ARGV_BYTES = 32_768  # UTF-8 bytes of a saved file's argv, all strings together
EXIT_STATUS_BITS = 31  # a SystemExit int beyond a signed 32-bit status is reported like a message
EXIT_MESSAGE_CHARS = 4_000  # characters of a SystemExit message written to stderr

# The namespace inventory (previews.py).
INVENTORY_SCANNED = 1_024  # namespace entries an inventory looks at
INVENTORY_LISTED = 512  # variables an inventory lists
INVENTORY_BYTES = 60_000  # bytes of an inventory's JSON
INVENTORY_ENVELOPE = 256  # bytes kept for everything but the listed variables
NAME_CHARS = 256  # longest variable name an inventory lists or a checkpoint holds
INVENTORY_TYPE_CHARS = 128  # characters of a type name in an inventory

# Checkpoints (checkpoint.py).
CHECKPOINT_BYTES = 262_144  # bytes of a checkpoint file
CHECKPOINT_RESERVE = 16_384  # bytes kept for the envelope beyond the saved and skipped entries
CHECKPOINT_VARIABLES = 256  # variables a checkpoint considers or restores

# Children and sh() (children.py).
SHELL_CAPTURE = 50_000  # bytes kept per sh() stream, while reading and again as UTF-8 text
SHELL_PROCESSES = 64  # sh() processes running at once
SHELL_TIMEOUT = 120.0  # seconds sh() waits by default
SHELL_EXIT_CHECK = 0.05  # seconds between checks whether the shell itself has exited
SHELL_DRAIN = 1_048_576  # bytes read after the shell exited, from descendants still writing
SHELL_ERROR_TAIL = 2_000  # characters of stderr a ShellError's message ends with
REAP_INTERVAL = 0.05  # seconds between sweeps that reap finished children
CHILD_EXIT_WAIT = 1.0  # seconds an exiting worker waits for the children it killed

# The cell loop and interrupts (cells.py, interrupts.py).
TASK_CANCEL_GRACE = 0.25  # seconds the tasks a cell left get to finish once cancelled
BACKGROUND_EXIT_GRACE = 0.1  # seconds for threads and executor jobs that are just finishing
BACKGROUND_THREAD_NAMES = _server_int('BACKGROUND_THREAD_NAMES')  # thread names a result lists in background_threads (from Go: repl.maxBackgroundThreads)
THREAD_NAME_BYTES = _server_int('THREAD_NAME_BYTES')  # UTF-8 bytes of one name in background_threads (from Go: repl.maxThreadNameBytes)
INTERRUPT_RETRY = 0.05  # seconds before SIGINT is delivered again to a cell it did not stop
STRAY_SIGINT_WAIT = 0.02  # seconds a SIGINT another thread took waits for the main thread's handler
EXECUTOR_PENDING_JOBS = 64  # unfinished jobs of the default executor

# The mcp bridge (bridge.py).
RPC_PENDING = _server_int('RPC_PENDING')  # bridge calls awaiting their rpc_result at once (from Go: repl's maxOutstandingRPCs)
RPC_QUEUED = 1_024  # bridge calls waiting for one of those RPC_PENDING slots
MCP_TIMEOUT_MIN = _server_seconds('MCP_TIMEOUT_MIN')  # seconds, the shortest timeout a bridge call accepts (from Go: broker.MinTimeout)
MCP_TIMEOUT_MAX = _server_seconds('MCP_TIMEOUT_MAX')  # seconds, the longest timeout a bridge call accepts (from Go: broker.MaxTimeout)
MCP_CALL_TIMEOUT = _server_seconds('MCP_CALL_TIMEOUT')  # seconds, mcp.call's default timeout (from Go: broker.DefaultCallTimeout)
MCP_CATALOGUE_TIMEOUT = _server_seconds('MCP_CATALOGUE_TIMEOUT')  # seconds, list_tools' and help's default (from Go: broker.DefaultListTimeout)
MCP_REPLY_SLACK = 1.0  # seconds a wait adds to the timeout the server enforces itself
MCP_OP_WAIT = 35.0  # seconds to wait for ops without a timeout of their own
MCP_PREVIEW_WAIT = 5.0  # seconds the preview of `mcp` itself waits for the servers' listings, in all
MCP_PREVIEW_SERVERS = 8  # servers the preview of `mcp` names, then how many more
TOOL_ERROR_CHARS = 2_000  # characters of a tool's text in a ToolError message
SEARCH_LIMIT_MAX = 50  # lines mcp.search() may be asked for
SEARCH_LINE_CHARS = 240  # characters of one line of mcp.search() and mcp.help(server)
SEARCH_SENTENCE_CHARS = 120  # characters of a description's first sentence in such a line
ENUM_LITERALS = 8  # values of an enum a tool function's annotation spells as Literal[...]
DOC_WIDTH = 88  # columns a tool function's __doc__ wraps its description to
TOOL_DOC_PARAM_CHARS = 300  # characters of one parameter's line in a tool function's __doc__

# Artifacts (artifacts.py).
ARTIFACT_CHUNK = _server_int('ARTIFACT_CHUNK')  # raw bytes per artifact.append, base64 in the frame (from Go: artifacts.ChunkBytes)
ARTIFACT_MAX_BYTES = _server_int('ARTIFACT_MAX_BYTES')  # bytes of one artifact (from Go: artifacts.MaxArtifactBytes)
ARTIFACT_READ_MAX = _server_int('ARTIFACT_READ_MAX')  # bytes of one artifact_read (from Go: artifacts.MaxReadLength)
ARTIFACT_JSON_DEPTH = _server_int('ARTIFACT_JSON_DEPTH')  # containers a JSON artifact value may nest (from Go: repl's artifactJSONDepth, at most artifacts.MaxJSONDepth)
ARTIFACT_JSON_NODES = 100_000  # values of a JSON artifact value
ARTIFACT_STRING_BUDGET = 16_777_216  # bytes of a JSON value's strings, counted as 4 bytes per character
ARTIFACT_TEXT_SLICE = 8_192  # characters encoded to UTF-8 at a time (at most one chunk)
ARTIFACT_ABORT_WAIT = 5.0  # seconds a best-effort artifact.abort may take
ARTIFACT_ERROR_BYTES = _server_int('ARTIFACT_ERROR_BYTES')  # UTF-8 bytes of an artifact_error (from Go: repl's maxArtifactErrorBytes)

# Images (display.py): what one run shows inline, beside its result; past a bound an image
# becomes an artifact. Together they keep the MCP reply under its 1,000,000 bytes: 512 KiB
# is 699,052 bytes of base64, which leaves the rest of the result about 300,000.
IMAGE_COUNT = _server_int('IMAGE_COUNT')  # images one run shows inline (from Go: repl.maxImages)
IMAGE_BYTES = _server_int('IMAGE_BYTES')  # bytes of the images one run shows inline, all together (from Go: repl.maxImageBytes)
IMAGE_CHUNK = _server_int('IMAGE_CHUNK')  # raw bytes of one image frame, base64 in the frame (from Go: repl.imageChunkBytes)
IMAGE_ARTIFACTS = _server_int('IMAGE_ARTIFACTS')  # images one run keeps as artifacts once past the inline bounds (from Go: repl.maxImageArtifacts)

if set(_given) != _taken:
    _refuse(f'has limits this worker does not know: {", ".join(sorted(set(_given) - _taken))}')

# Snapshots of the namespace and their restore (snapshots.py, restore.py; docs/contract.md §6.7).
SNAPSHOT_VARIABLES = 100_000  # variables one snapshot holds; the rest are skipped
SNAPSHOT_CHUNK = 8 << 20  # bytes written, hashed or read at once: a command stops a pass within one
RECHECK_BYTES = 2 << 30  # an entry up to this size is pickled again after every cell; a larger one is marked possibly older
MANIFEST_BYTES = 64 << 20  # bytes of a manifest read back
CODE_LINE_BYTES = 120  # characters of the first code line of the run that bound a variable
SNAPSHOT_REASON_CHARS = 200  # characters of why a variable was not saved or not restored
RESTORE_LISTED = 200  # variables a restore report lists by name, each way; the rest are counted
RESTORE_REPORT_BYTES = 60_000  # bytes of a restore report's JSON
SNAPSHOT_JOIN = 0.5  # seconds a new pass waits for the one before it to end
SNAPSHOT_STOP_WAIT = 5.0  # seconds a restore waits for a pass to stop before it restores without adopting
