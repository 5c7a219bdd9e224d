# One repl-mcp cell against servers/fastmcp_server.py, registered as "fast": a server
# built with the Python MCP SDK (MCPServer, FastMCP before mcp 2), reached over stdio
# through the broker. Text content, structured content with its outputSchema, a tool
# error as ToolError with the envelope, and the SDK's generated inputSchema enforced
# before anything is sent.
import json

tools = {t["name"]: t for t in mcp.list_tools("fast")}
assert sorted(tools) == ["fail", "greet", "stats"], sorted(tools)
assert tools["stats"]["outputSchema"]["required"] == ["count", "total", "mean", "labels"], tools["stats"]

g = mcp.call("fast", "greet", name="repl-mcp")
assert g["isError"] is False, g
assert mcp.text(g) == "Hello, repl-mcp!", g
assert g.get("structuredContent") is None, g

st = mcp.call("fast", "stats", values=[1, 2, 4.5], label="x")
stats = {"count": 3, "total": 7.5, "mean": 2.5, "labels": ["x0", "x1", "x2"]}
assert st["isError"] is False, st
assert st["structuredContent"] == stats, st
assert json.loads(mcp.text(st)) == stats, st

try:
    mcp.call("fast", "fail", reason="on purpose")
    raise AssertionError("fail did not raise")
except ToolError as e:
    assert e.result is not None and e.result["isError"] is True, e.result
    failure = mcp.text(e.result)
assert failure.endswith("refused: on purpose"), failure

try:
    mcp.call("fast", "stats", values="not a list")
    raise AssertionError("a schema violation was sent")
except ToolError as e:
    assert e.result is None, e.result
    assert "MCP arguments violate inputSchema" in str(e), str(e)

journal = [(r["tool"], r["status"]) for r in mcp.journal() if r["server"] == "fast"]
assert journal == [("greet", "completed"), ("stats", "completed"), ("fail", "tool_error")], journal

{"greet": mcp.text(g), "structured": dict(st["structuredContent"]), "failure": failure}
