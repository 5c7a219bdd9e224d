# Tool functions (docs/contract.md §7.5) against servers/fastmcp_server.py, a server built
# with the Python MCP SDK: the SDK's generated schemas become Python signatures (required
# first, the default of `label` from the schema), a tool error raises ToolError whose
# .result is a ToolResult, and .data is structuredContent or nothing for plain text.
import inspect

f = mcp.fast
sigs = {name: str(inspect.signature(getattr(f, name))) for name in dir(f)}
greet = f.greet("repl-mcp")
stats = f.stats([1, 2, 4.5], label="x")
try:
    f.greet()
    raise AssertionError("a call without its required argument was sent")
except TypeError as exc:
    missing = str(exc)
try:
    f.fail("on purpose")
    raise AssertionError("fail did not raise")
except ToolError as exc:
    failure = [type(exc.result).__name__, exc.result.is_error, exc.result.text]
calls = [r["tool"] for r in mcp.journal() if r["server"] == "fast"]
{
    "signatures": sigs,
    "greet": [greet.text, greet.data],
    "stats": stats.data,
    "missing": missing,
    "failure": failure,
    "calls": calls,
}
