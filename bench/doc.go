// Command bench is repl-mcp's benchmark harness. It owns the measurement of the
// performance targets in docs/design.md ("Performance targets"), each as a ratio to a
// baseline measured in the same run, on the same machine and the same interpreter:
// a warm trivial cell against a bare pipe round trip to a Python exec loop, the cold
// start against a bare Python start with the worker's imports, the idle server's
// RSS, an output flood against the same loop in plain Python, a broker call from a
// cell (mcp.call to a stdio MCP server) against a direct go-sdk client call to the
// same server, and a 16 MiB artifact uploaded from a cell (artifact(data)) and read
// back whole by the bench client in artifact_read ranges, against the same bytes
// written to and read from a file in the same cell, and the data cells (bench/datacells.go:
// a print-heavy loop, a \r progress line, a groupby and a describe() of a million-row
// DataFrame with their values shown, a figure rendered to PNG) against the same cells in
// a bare exec loop of the same interpreter, -data-python (interop/.venv-data's by
// default), in interleaved rounds. A floor is timed in the same
// rounds as its figure: one bare pipe round trip beside each warm cell (and each round
// trip of the worker alone), the bare Python starts beside each cold start. It prints a table of figure,
// value, baseline, ratio, target and whether the target was met, and writes it to a
// file when asked.
//
// It does not own the server, the worker or any verdict: a missed target is
// reported, never a failure. The exit status is non-zero only when a figure could
// not be measured at all, and the error says which.
//
// Every process the bench starts leads a process group of its own and is waited for
// with a deadline; on every path it is stopped (stdin closed, then SIGTERM, then
// SIGKILL to the group). On Linux the bench also watches the server's guardians and
// workers: any that outlive the server are reported and killed. The whole run is
// bounded by -budget.
//
// Usage:
//
//	go run ./bench -binary ./bin/repl-mcp [-python PATH] [-n 200] [-out bench/report.txt]
//	               [-cold-runs 7] [-budget 135s] [-figures all|warm,cold,broker,artifacts,spare,cells,notebook]
//	               [-data-python interop/.venv-data/bin/python]
//	go run ./bench -peers -binary ./bin/repl-mcp [-venvs bench] [-rounds 10] [-round-cells 30]
//	               [-slow-cells 2] [-peer-cold-runs 3] [-out bench/peers-report.txt]
//	go run ./bench -compare OLD_BINARY -binary ./bin/repl-mcp [-rounds 10] [-round-cells 30]
//
// The downstream server of the broker figure is internal/mcpfixture, served by the
// bench executable itself: run with REPL_MCP_BENCH_FIXTURE=1, it is that fixture over
// stdio and nothing else.
//
// The spare figures (bench/spare.go) are `reset=True` and python_session_open, each
// followed by a trivial cell, timed once the server reports a spare worker ready,
// beside a warm cell timed between them.
//
// The notebook figures (bench/notebook.go) are a trivial cell and a cell that prints
// 100 KB, each after 10 and after 1,000 cells of its kind, in a server with
// --notebook-dir beside the same cells in a server without it.
//
// The snapshot figures (bench/snapshot.go) are a pass and a restore of a 1 GiB
// DataFrame and of 10,000 small variables, each beside the same objects pickled into a
// file and loaded back in a cell; a trivial cell with snapshots on beside one with
// --no-snapshot, interleaved; and a trivial cell that arrives while a pass writes,
// beside the same cell idle. They run on an interpreter with numpy and pandas (-python,
// else the data venv's), their state directories in the scratch directory.
//
// Beside the targets it reports one diagnostic: the same trivial cell sent to the
// embedded worker over its own wire protocol, with no server, which splits a warm
// cell's cost between Python and Go.
//
// With -peers (`make bench-peers`, not part of `make test`) it measures repl-mcp beside
// the comparable MCP Python servers instead: mcp-python-interpreter, jupyter-mcp-server
// and posit's mcp-repl (run with --interpreter python --sandbox danger-full-access: its
// default sandbox needs bubblewrap), each installed by `make peers-deps` into a venv of its own under
// -venvs from the lock files bench/requirements-peers-*.txt. One lean synchronous
// client (the same minimal stdio client as the targets) sends every server the same
// cell in interleaved rounds, beside the bare pipe floor in the same run, and reports
// p50 and p90, cold start, and the RSS of each server's process tree idle and after
// the cells, as the markdown table README.md carries. It starts the Jupyter server
// jupyter-mcp-server needs (on 127.0.0.1, with a token of its own and its files in the
// scratch directory), shuts down the kernels each start leaves, and stops it at the
// end. A peer that cannot run is reported with the reason, never skipped silently. Then
// it measures repl-mcp and mcp-python-interpreter again through a plain synchronous
// Python stdio client (json and pipes, on the bench's interpreter), the client whose own
// cost dilutes the ratio most, in interleaved rounds, as a second table.
//
// With -compare it measures -binary against a baseline binary instead: in each of
// -rounds rounds, in an order swapped every round, each binary's warm p50 (a warm
// session of each, kept for the run), a cold start of each and an idle server of each,
// beside the bare pipe and bare Python floors of the same round; each binary's servers
// get a cache directory of their own (XDG_CACHE_HOME), or two workers would replace each
// other's compiled code at every start. It reports each figure's
// median over the rounds with their range, and the candidate's ratio to the baseline as
// the median of the per-round ratios: how a change's effect is measured on a noisy machine.
//
// The targets and why they are ratios are in docs/design.md ("Performance targets").
package main
