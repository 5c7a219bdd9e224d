# Every numeric limit of the worker, one per line, as NAME = LITERAL  # what it bounds.
#
# Only such lines, blank lines and comments may appear here: Go reads this file line by
# line (repl/worker.Limits) and fails on anything else, and repl's
# TestWorkerLimitsMatchTheirTwins compares each limit that has a twin on the Go side (the
# frame size, the stream and preview budgets, the artifact sizes, ...) with that twin,
# and fails on a limit it does not know. Change both sides together.

# The wire protocol (channel.py).
MAX_FRAME = 1_048_576  # bytes per frame, newline included (Go: repl.MaxFrameBytes)
INBOX_SLOTS = 2  # commands parsed and not yet taken by the main thread
READ_CHUNK = 65_536  # bytes per read from a pipe (the command pipe, sh() pipes)

# Output capture (output.py).
STREAM_BUDGET = 50_000  # UTF-8 bytes kept per stream per cell, head, marker and tail (Go: repl.StreamLimit)
STREAM_HEAD = 20_000  # UTF-8 bytes of a cut stream's head, before the marker (Go: repl.streamHead)
STREAM_MARKER = 256  # UTF-8 bytes kept for the marker between a cut stream's head and tail
LINE_CHARS = 65_536  # characters of a line still rewritable by \r; a longer one is kept as written
LIVE_PENDING_CHARS = 16_384  # characters waiting for the next output frames, both streams (older ones dropped)
FLUSH_INTERVAL = 0.05  # seconds between output frames while a cell runs (protocol: <= 0.1)
PUMP_LINGER = 1.0  # seconds the output pump keeps ticking after a cell, so back-to-back cells never wake it
SPOOL_HEAD = 8_388_608  # bytes of a cut stream's complete output kept from its start past the artifact bound
SPOOL_BUFFER = 65_536  # bytes of complete output buffered before a write to its spool file
BACKGROUND_BUDGET = 16_384  # UTF-8 bytes per stream of what threads of earlier cells printed (Go: repl.backgroundLimit)
BACKGROUND_HEAD = 4_096  # UTF-8 bytes of a cut background stream's head

# Previews of trailing values (previews.py).
PREVIEW_BYTES = 20_000  # bytes of a return_value preview (Go: repl.PreviewLimit)
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
SOURCE_RUNS = 64  # runs the source history keeps (Go: repl.HistoryRuns)
SOURCE_BYTES = 1_048_576  # bytes the source history keeps, as retained objects' sizes

# Notebooks (nbdata.py, display.py).
HTML_BYTES = 131_072  # UTF-8 bytes of the text/html pandas renders for a trailing DataFrame or Styler (Go: repl.maxHTMLBytes)
DISPLAY_COUNT = 16  # display() calls of objects that are no image one run keeps for the notebook (Go: repl.maxDisplays)
DISPLAY_BYTES = 196_608  # UTF-8 bytes of what those keep, text, html and repr together (Go: repl.maxDisplayBytes)

# Saved files (cells.py).
SOURCE_FILE_BYTES = 262_144  # bytes of a saved file (Go: repl.MaxCodeBytes, the same 256 KiB)
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
BACKGROUND_THREAD_NAMES = 64  # thread names a result lists in background_threads (Go: repl.maxBackgroundThreads)
THREAD_NAME_BYTES = 200  # UTF-8 bytes of one name in background_threads (Go: repl.maxThreadNameBytes)
INTERRUPT_RETRY = 0.05  # seconds before SIGINT is delivered again to a cell it did not stop
STRAY_SIGINT_WAIT = 0.02  # seconds a SIGINT another thread took waits for the main thread's handler
EXECUTOR_PENDING_JOBS = 64  # unfinished jobs of the default executor

# The mcp bridge (bridge.py).
RPC_PENDING = 64  # bridge calls awaiting their rpc_result at once (Go: repl's maxOutstandingRPCs)
RPC_QUEUED = 1_024  # bridge calls waiting for one of those RPC_PENDING slots
MCP_TIMEOUT_MIN = 0.01  # seconds, the shortest timeout a bridge call accepts (Go: broker's minTimeout)
MCP_TIMEOUT_MAX = 3600.0  # seconds, the longest timeout a bridge call accepts (Go: broker's maxTimeout)
MCP_CALL_TIMEOUT = 120.0  # seconds, mcp.call's default timeout (Go: broker's defaultCallTimeout)
MCP_CATALOGUE_TIMEOUT = 30.0  # seconds, list_tools' and help's default (Go: broker's defaultListTimeout)
MCP_REPLY_SLACK = 1.0  # seconds a wait adds to the timeout the server enforces itself
MCP_OP_WAIT = 35.0  # seconds to wait for ops without a timeout of their own
TOOL_ERROR_CHARS = 2_000  # characters of a tool's text in a ToolError message
SEARCH_LIMIT_MAX = 50  # lines mcp.search() may be asked for
SEARCH_LINE_CHARS = 240  # characters of one line of mcp.search() and mcp.help(server)
SEARCH_SENTENCE_CHARS = 120  # characters of a description's first sentence in such a line
ENUM_LITERALS = 8  # values of an enum a tool function's annotation spells as Literal[...]
DOC_WIDTH = 88  # columns a tool function's __doc__ wraps its description to
TOOL_DOC_PARAM_CHARS = 300  # characters of one parameter's line in a tool function's __doc__

# Artifacts (artifacts.py).
ARTIFACT_CHUNK = 262_144  # raw bytes per artifact.append, base64 in the frame (Go: artifacts.ChunkBytes)
ARTIFACT_MAX_BYTES = 16_777_216  # bytes of one artifact (Go: artifacts.MaxArtifactBytes)
ARTIFACT_READ_MAX = 65_536  # bytes of one artifact_read (Go: artifacts.MaxReadLength)
ARTIFACT_JSON_DEPTH = 32  # containers a JSON artifact value may nest (Go: at most artifacts.MaxJSONDepth)
ARTIFACT_JSON_NODES = 100_000  # values of a JSON artifact value
ARTIFACT_STRING_BUDGET = 16_777_216  # bytes of a JSON value's strings, counted as 4 bytes per character
ARTIFACT_TEXT_SLICE = 8_192  # characters encoded to UTF-8 at a time (at most one chunk)
ARTIFACT_ABORT_WAIT = 5.0  # seconds a best-effort artifact.abort may take
ARTIFACT_ERROR_BYTES = 1_000  # UTF-8 bytes of an artifact_error (Go: repl's maxArtifactErrorBytes)

# Images (display.py): what one run shows inline, beside its result; past a bound an image
# becomes an artifact. Together they keep the MCP reply under its 1,000,000 bytes: 512 KiB
# is 699,052 bytes of base64, which leaves the rest of the result about 300,000.
IMAGE_COUNT = 8  # images one run shows inline (Go: repl.maxImages)
IMAGE_BYTES = 524_288  # bytes of the images one run shows inline, all together (Go: repl.maxImageBytes)
IMAGE_CHUNK = 262_144  # raw bytes of one image frame, base64 in the frame (Go: repl.imageChunkBytes)
IMAGE_ARTIFACTS = 8  # images one run keeps as artifacts once past the inline bounds (Go: repl.maxImageArtifacts)
