"""The repl-mcp Python worker: one persistent CPython namespace driven over the wire
protocol in ../PROTOCOL.md. Standard library only: it runs inside the user's interpreter.

In a worker, bootstrap.py installs these modules under a private package name from the
sources the server sends, and runs main.run(). Importing the package runs nothing; tests
import its modules directly. One module per concern; their imports run one way, with no
cycle, and use only each other's public names (test_unit_structure.py holds them to it):

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
    rendering         the core of previews: reading types from their slots, the rendering
                      and its budget, plain JSON, and the registry of renderers by
                      (package, qualname) that the three modules below register into
    stdpreviews       previews of the standard library's types
    arraypreviews     previews of numpy arrays, scalars and dtypes and pandas frames,
                      Series and Indexes, and the pandas display options previews honour
    libsummaries      summaries of library objects (matplotlib, Dask, Styler, Categorical,
                      polars, xarray, torch)
    previews          the preview of a value (registering the worker's own types) and
                      the namespace inventory
    checkpoint        checkpoint() and restore()
    children          tracked subprocesses, sh(), exiting with them killed
    bridge            the rpc transport: frames out, replies routed to their calls
    toolfuncs         the `mcp` object: downstream tools as Python functions
                      (mcp.<server>.<tool>), mcp.search and mcp.help, the preview of mcp
    toolspecs         a tool's inputSchema as a signature, argument checks and a docstring
    toolresult        ToolResult, what every call returns, and the envelope's text
    artifacts         the artifact helpers and automatic artifacts
    interrupts        SIGINT
    main              the start
"""
