"""The repl-mcp Python worker: one persistent CPython namespace driven over the wire
protocol in ../PROTOCOL.md. Standard library only: it runs inside the user's interpreter.

In a worker, bootstrap.py installs these modules under a private package name from the
sources the server sends, and runs main.run(). Importing the package runs nothing; tests
import its modules directly. One module per concern:

    limits, messages  every numeric limit (those shared with the server read from its
                      REPL_MCP_WORKER_LIMITS); every message (both shared by the others)
    common            the run-id context variable, type names, bounded UTF-8 text
    channel           frames on the protocol fds
    threads           which run each thread and pool job works for, and which threads
                      are a library's own daemons
    output            stdout/stderr as a terminal shows them, head and tail, spools,
                      background output, and the native-output pipe on fd 1 and 2
    cells             the event loop, the executor, running a cell or file, the epilogue
    tracebacks        the user's tracebacks and the source history behind them
    previews          previews of values (the rendering, the standard library's and
                      matplotlib's types) and the namespace inventory
    arraypreviews     previews of numpy arrays and scalars and pandas frames, Series
                      and Indexes
    libsummaries      summaries of library objects (Dask, Styler, Categorical, dtypes,
                      polars, xarray, torch) and the pandas display options previews honour
    checkpoint        checkpoint() and restore()
    children          tracked subprocesses, sh(), exiting with them killed
    bridge            the mcp bridge and its rpc frames
    toolfuncs         downstream tools as Python functions (mcp.<server>.<tool>), mcp.search
    toolresult        ToolResult, what every call returns
    artifacts         the artifact helpers and automatic artifacts
    interrupts        SIGINT
    main              the start
"""
