"""The official Python MCP SDK's client against repl-mcp over stdio.

It lists tools, calls python_health, runs two execute_python calls sharing a variable
through the returned session_id and one that raises, follows a cell through the SDK's
progress callback (progress_case), and prints one JSON summary line
on stdout for interop_test.go to check. A failure before the summary prints
{"error": ...} and exits 1.

Usage: python py_client.py [--cases FILE] MODE COMMAND [ARGS...]
  MODE is "legacy" (the initialize handshake), "auto" (probe with server/discover, fall
  back to initialize) or a protocol version to adopt, such as 2026-07-28. COMMAND starts
  the server in this process's working directory with this process's environment.

With --cases, it makes instead the calls FILE lists (a JSON list of {"id", "tool",
"arguments", "session"}; "session" adds python_health's server.session_id once a
python_health call has returned one) and prints every result as the SDK hands it over:
{"results": [{"id", "isError", "structuredContent", "content"}, ...]}, or {"id",
"error"} for a call that raised (the SDK validates structuredContent against the
tool's outputSchema). modelview_sdk_test.go reads it.
"""

import json
import os
import sys
import traceback

import anyio
from importlib.metadata import version

from mcp import Client
from mcp.client.stdio import StdioServerParameters

TIMEOUT = 60.0

# A cell that prints a line every 0.5 s for about 2 s.
PROGRESS_CELL = "import time\nfor i in range(4):\n    print(f'progress step {i}', flush=True)\n    time.sleep(0.5)\n"


async def progress_case(client, sid):
    """execute_python with the SDK's progress_callback (which makes the SDK send a
    progressToken): what the callback saw before the reply."""
    notes = []

    async def on_progress(progress, total, message):
        notes.append({"progress": progress, "message": message})

    r = await client.call_tool("execute_python", {"code": PROGRESS_CELL, "session_id": sid}, progress_callback=on_progress)
    return {"isError": r.is_error, "stdout": (r.structured_content or {}).get("stdout"), "notes": notes}


async def run(mode, command, args):
    params = StdioServerParameters(command=command, args=args, env=dict(os.environ), cwd=os.getcwd())
    async with Client(params, mode=mode, read_timeout_seconds=TIMEOUT) as client:
        info = client.server_info
        summary = {
            "sdk": "mcp " + version("mcp"),
            "python": sys.version.split()[0],
            "mode": mode,
            "protocolVersion": client.protocol_version,
            "server": info.model_dump(mode="json", exclude_none=True) if info else None,
        }
        tools = await client.list_tools()
        summary["tools"] = [t.name for t in tools.tools]

        health = await client.call_tool("python_health", {})
        sid = (health.structured_content or {}).get("server", {}).get("session_id")
        summary["health"] = {"isError": health.is_error, "session_id": sid}

        async def execute(code):
            r = await client.call_tool("execute_python", {"code": code, "session_id": sid})
            sc = r.structured_content or {}
            return {
                "isError": r.is_error,
                "success": sc.get("success"),
                "value": sc.get("value"),
                "error": sc.get("error"),
                "session_id": sc.get("session_id"),
                "text": r.content[0].text if r.content else None,
            }

        summary["first"] = await execute("shared = 20 + 1\nshared")
        summary["second"] = await execute("shared * 2")
        summary["failure"] = await execute("raise ValueError('interop boom')")
        summary["progress"] = await progress_case(client, sid)
        return summary


async def run_cases(cases_file, mode, command, args):
    with open(cases_file, encoding="utf-8") as f:
        cases = json.load(f)
    params = StdioServerParameters(command=command, args=args, env=dict(os.environ), cwd=os.getcwd())
    async with Client(params, mode=mode, read_timeout_seconds=TIMEOUT) as client:
        summary = {"sdk": "mcp " + version("mcp"), "mode": mode, "protocolVersion": client.protocol_version}
        sid, results = None, []
        for case in cases:
            arguments = dict(case["arguments"])
            if case.get("session") and sid:
                arguments["session_id"] = sid
            try:
                r = await client.call_tool(case["tool"], arguments)
            except Exception:
                results.append({"id": case["id"], "error": traceback.format_exc()})
                continue
            if case["tool"] == "python_health" and r.structured_content:
                sid = r.structured_content.get("server", {}).get("session_id") or sid
            results.append({
                "id": case["id"],
                "isError": r.is_error,
                "structuredContent": r.structured_content,
                "content": [c.model_dump(mode="json", by_alias=True, exclude_none=True) for c in r.content],
            })
        summary["results"] = results
        return summary


def main():
    argv = sys.argv[1:]
    cases_file = None
    if argv[:1] == ["--cases"] and len(argv) >= 2:
        cases_file, argv = argv[1], argv[2:]
    if len(argv) < 2:
        print("usage: python py_client.py [--cases FILE] legacy|auto|VERSION COMMAND [ARGS...]", file=sys.stderr)
        return 2
    mode, command, args = argv[0], argv[1], argv[2:]
    try:
        if cases_file:
            summary = anyio.run(run_cases, cases_file, mode, command, args)
        else:
            summary = anyio.run(run, mode, command, args)
    except BaseException:
        print(json.dumps({"error": traceback.format_exc()}), flush=True)
        return 1
    print(json.dumps(summary), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
