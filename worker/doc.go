// Package worker holds the Python worker, embedded into the binary, and gives package
// repl what it needs to start one: [Bootstrap], the -c program a worker starts as, and
// [Bundle], the worker's modules as the bootstrap reads them from the protocol pipe. It
// starts nothing itself; package repl starts and supervises workers. It sits at the top
// of the tree, beside guardian, because it is a process of its own: repl supervises it
// over the protocol and a guardian runs it (docs/design.md, "Processes").
//
// The layout, every Python file standard library only (it runs inside the user's own
// interpreter):
//
//	PROTOCOL.md        the wire protocol, the bundle and the code cache
//	bootstrap.py       python -u -c <this>: version check, bundle, cache, start
//	replworker/*.py    the worker, one module per concern (see its __init__.py), installed
//	                   at run time as the private package "<repl-mcp worker>"
//	harness.py         what the Python tests share: the bundle built from replworker/,
//	                   and a worker started through the bootstrap as the server starts one
//	test_unit_*.py     fast tests that import the modules directly
//	test_protocol_*.py tests that drive a worker over the protocol
//	bench_micro.py     the worker's fast paths timed against their plain paths (make
//	                   bench-micro; TestWorkerBenchMicro runs one round of each)
//
// TestWorkerUnit runs every Python test on every interpreter the machine has, with the
// limits a server gives every worker (repl.WorkerLimitsEnv) in their environment: the
// worker has no values of its own for them.
package worker
