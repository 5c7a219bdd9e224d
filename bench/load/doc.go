// Command load is repl-mcp's load harness (`make bench-load`, not part of `make
// test`): the figures a server under many clients and a long session gives, for
// README.md ("Load"). It owns only its clients and the servers it starts.
//
// It starts the binary given by -binary (an HTTP server per scenario on 127.0.0.1,
// with a token of its own, then one stdio server), drives it with real MCP clients
// (go-sdk's Streamable HTTP and stdio client transports) and checks every answer:
//
//   - HTTP scenarios: 8, 32 and 64 concurrent clients, each with -cells mixed cells
//     (64 clients share 32 Python sessions, two clients each, so a pair's cells meet
//     the busy refusal, which the client retries and counts);
//   - a stdio soak: -soak mixed cells in one session, one after the other, timed per
//     block of 1,000.
//
// The cells cycle through prints, values, errors, images (display() of PNG bytes),
// python_start followed by python_run, and prints past the stream bound whose whole
// output becomes an artifact; each answer is checked against what that client's cell
// must give, and any other answer is a wrong answer (there must be none). It reports
// p50/p90/p99 latency and throughput, the server's RSS, descriptors and threads and
// its workers' RSS under load and again after every client has hung up (HTTP), and,
// for the soak, each block's p50 and the server's RSS and descriptors, as a markdown
// report (stdout, and -out). Every process it starts leads a group of its own and is
// stopped on every path; the whole run is bounded by -budget.
//
// Usage:
//
//	go run ./bench/load -binary ./bin/repl-mcp [-python python3] [-clients 8,32,64]
//	                    [-cells 200] [-soak 20000] [-budget 15m] [-out bench/load-report.txt]
package main
