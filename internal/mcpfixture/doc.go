// Package mcpfixture is a downstream MCP server for tests: test binaries re-run
// themselves as this server so that broker and end-to-end tests talk to a real MCP
// peer over real stdio or real Streamable HTTP. It owns only the fixture's tools and
// its two transports; it starts no other process.
//
// [Main] serves over stdin and stdout until stdin ends; with --http URLFILE it listens
// on 127.0.0.1, writes the endpoint URL to URLFILE atomically once it is listening,
// and serves until SIGINT or SIGTERM. [Handler] serves the same server for httptest.
// Every server reads its environment when it is built: MCPFIXTURE_LOG=PATH appends
// "<pid> <method>[ <tool>]" to PATH for every message it receives, and
// MCPFIXTURE_HUGE=1 adds a tool whose 2,000,000-byte description pushes the
// tools/list response past 1 MiB.
//
// The catalogue, in listing order, spans exactly two pages of five: big, collision,
// count, echo, fail, then multi, native_hold, reject_once, slow_write (and huge with
// MCPFIXTURE_HUGE). Every input schema is an object with additionalProperties false,
// and unknown arguments are a tool error. The tools:
//
//   - echo {text}: one text block, text; structuredContent {"text": text}.
//   - multi: two text blocks, "first" and "second".
//   - fail: isError, one text block "bad arguments".
//   - slow_write {marker, timeout}: waits timeout seconds (default 2); if cancelled
//     first it writes "cancelled" to marker+".cancelled" (if marker is given; a test
//     waits for that file instead of sleeping past the timeout), never to marker, and
//     returns isError "cancelled"; else it writes "written" to marker (if given) and
//     returns "wrote".
//   - collision {server, tool, timeout, arguments}: returns
//     "server=<server> tool=<tool> timeout=<timeout> arguments=<arguments>", timeout
//     in shortest decimal form (empty if absent) and arguments as compact JSON with
//     sorted keys ("null" if absent), so tests can see that parameters named like the
//     Python helper's own keywords arrive intact.
//   - native_hold {marker}: writes its pid to marker, then sleeps 8 s without
//     watching cancellation, like a call stuck in C code; returns "held".
//   - count {marker}: an effect counter: reads the integer in marker (missing is 0),
//     writes n+1 back atomically and returns "<n+1>".
//   - big {size, marker}: counts an effect in marker like count (if given), then
//     returns one text block of exactly size bytes of 'x' (default 950000, at most
//     4000000).
//   - reject_once {marker}: the first call to a server fails with JSON-RPC error
//     -32602 and counts nothing; later calls count an effect in marker and return
//     "accepted".
//   - huge: returns "huge"; only with MCPFIXTURE_HUGE=1.
//
// docs/design.md ("Tests") says where the fixture is used.
package mcpfixture
