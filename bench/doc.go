// Command bench is repl-mcp's benchmark harness. It owns the measurement of the
// performance targets in DESIGN.md ("Performance targets"), each as a ratio to a
// baseline measured in the same run, on the same machine and the same interpreter:
// a warm trivial cell against a bare pipe round trip to a Python exec loop, the cold
// start against a bare Python start with the worker's imports, the idle server's
// RSS, an output flood against the same loop in plain Python, a broker call from a
// cell (mcp.call to a stdio MCP server) against a direct go-sdk client call to the
// same server, and a 16 MiB artifact uploaded from a cell (artifact(data)) and read
// back whole by the bench client in artifact_read ranges, against the same bytes
// written to and read from a file in the same cell. It prints a table of figure,
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
//	               [-cold-runs 7] [-budget 115s] [-figures all|warm,cold,broker,artifacts]
//
// The downstream server of the broker figure is internal/mcpfixture, served by the
// bench executable itself: run with REPL_MCP_BENCH_FIXTURE=1, it is that fixture over
// stdio and nothing else.
//
// Beside the targets it reports one diagnostic: the same trivial cell sent to the
// embedded worker over its own wire protocol, with no server, which splits a warm
// cell's cost between Python and Go.
//
// The targets and why they are ratios are in docs/design.md ("Performance targets").
package main
