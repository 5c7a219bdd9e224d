// The TypeScript SDK v2 client (@modelcontextprotocol/client) against repl-mcp over
// stdio: list tools, python_health, two execute_python calls sharing a variable through
// the returned session_id, a Python error arriving as isError, and a cell followed
// through the SDK's progress callback (progressCase). It prints one JSON
// summary line on stdout for interop_test.go to check and exits 0 once it could print
// one; a failure before that prints {"error": ...} and exits 1.
//
// Usage: node ts_client.mjs [--cases FILE] MODE COMMAND [ARGS...]
//   MODE is "legacy" (the initialize handshake), "auto" (probe with server/discover,
//   fall back to initialize) or a protocol version to pin, such as 2026-07-28
//   (server/discover, then per-request _meta). COMMAND starts the server in this
//   process's working directory and environment.
//
// With --cases, it makes instead the calls FILE lists (a JSON list of {id, tool,
// arguments, session}; session adds python_health's server.session_id once a
// python_health call has returned one) and prints every result as the SDK hands it
// over: {results: [{id, isError, structuredContent, content}, ...]}, or {id, error}
// for a call that threw (the SDK validates structuredContent against the tool's
// outputSchema). modelview_sdk_test.go reads it.
import { readFileSync } from "node:fs";
import { Client } from "@modelcontextprotocol/client";
import { StdioClientTransport } from "@modelcontextprotocol/client/stdio";

const argv = process.argv.slice(2);
const casesFile = argv[0] === "--cases" ? argv[1] : undefined;
const [mode, command, ...args] = casesFile ? argv.slice(2) : argv;
if (!mode || !command) {
  console.error("usage: node ts_client.mjs [--cases FILE] legacy|auto|VERSION COMMAND [ARGS...]");
  process.exit(2);
}

const options =
  mode === "legacy"
    ? {}
    : { versionNegotiation: { mode: mode === "auto" ? "auto" : { pin: mode } } };
const client = new Client({ name: "repl-mcp-interop-ts", version: "1.0.0" }, options);
const transport = new StdioClientTransport({
  command,
  args,
  env: { ...process.env },
  cwd: process.cwd(),
  stderr: "inherit",
});

const timeout = { timeout: 60_000 };

async function main() {
  await client.connect(transport, timeout);
  const summary = {
    sdk: "@modelcontextprotocol/client",
    node: process.version,
    mode,
    protocolVersion: client.getNegotiatedProtocolVersion(),
    era: client.getProtocolEra(),
    server: client.getServerVersion(),
  };
  const { tools } = await client.listTools(undefined, timeout);
  summary.tools = tools.map((t) => t.name);

  const health = await client.callTool({ name: "python_health", arguments: {} }, timeout);
  const sid = health.structuredContent?.server?.session_id;
  summary.health = { isError: health.isError ?? false, session_id: sid };

  const exec = async (code) => {
    const r = await client.callTool(
      { name: "execute_python", arguments: { code, session_id: sid } },
      timeout,
    );
    const sc = r.structuredContent ?? {};
    return {
      isError: r.isError ?? false,
      success: sc.success,
      value: sc.value,
      error: sc.error,
      session_id: sc.session_id,
      text: r.content?.[0]?.text,
    };
  };
  summary.first = await exec("shared = 20 + 1\nshared");
  summary.second = await exec("shared * 2");
  summary.failure = await exec("raise ValueError('interop boom')");
  summary.progress = await progressCase(sid);
  return summary;
}

async function runCases(file) {
  const cases = JSON.parse(readFileSync(file, "utf8"));
  await client.connect(transport, timeout);
  const summary = {
    sdk: "@modelcontextprotocol/client",
    mode,
    protocolVersion: client.getNegotiatedProtocolVersion(),
  };
  // The tool list gives the SDK the output schemas it validates results against.
  await client.listTools(undefined, timeout);
  let sid;
  const results = [];
  for (const c of cases) {
    const callArgs = { ...c.arguments };
    if (c.session && sid) callArgs.session_id = sid;
    try {
      const r = await client.callTool({ name: c.tool, arguments: callArgs }, timeout);
      if (c.tool === "python_health") sid = r.structuredContent?.server?.session_id ?? sid;
      results.push({
        id: c.id,
        isError: r.isError ?? false,
        structuredContent: r.structuredContent ?? null,
        content: r.content ?? [],
      });
    } catch (err) {
      results.push({ id: c.id, error: String(err?.stack ?? err) });
    }
  }
  summary.results = results;
  return summary;
}

// A cell that prints a line every 0.5 s for about 2 s.
const PROGRESS_CELL =
  "import time\nfor i in range(4):\n    print(f'progress step {i}', flush=True)\n    time.sleep(0.5)\n";

// progressCase calls execute_python with the SDK's onprogress callback (which makes
// the SDK send a progressToken) and reports what the callback saw before the reply.
async function progressCase(sid) {
  const notes = [];
  const r = await client.callTool(
    { name: "execute_python", arguments: { code: PROGRESS_CELL, session_id: sid } },
    { ...timeout, onprogress: (p) => notes.push({ progress: p.progress, message: p.message ?? null }) },
  );
  return { isError: r.isError ?? false, stdout: r.structuredContent?.stdout, notes };
}

let code = 0;
try {
  console.log(JSON.stringify(await (casesFile ? runCases(casesFile) : main())));
} catch (err) {
  console.log(JSON.stringify({ error: String(err?.stack ?? err) }));
  code = 1;
} finally {
  await client.close().catch(() => {});
}
process.exit(code);
