# One repl-mcp cell against @modelcontextprotocol/server-everything, registered as
# "everything" (over stdio or Streamable HTTP): list its tools, echo, read structured
# content, cancel a long-running call twice (an mcp.acall task cancelled in flight, and
# an mcp.call past its own timeout), then echo again on the same connection.
import asyncio
import json
import time

names = [t["name"] for t in mcp.list_tools("everything")]
for want in ["echo", "get-structured-content", "trigger-long-running-operation"]:
    assert want in names, names

r = mcp.call("everything", "echo", message="hello from repl-mcp")
assert r["isError"] is False, r
assert mcp.text(r) == "Echo: hello from repl-mcp", r

s = mcp.call("everything", "get-structured-content", location="Chicago")
weather = {"temperature": 36, "conditions": "Light rain / drizzle", "humidity": 82}
assert s["isError"] is False, s
assert s["structuredContent"] == weather, s
assert json.loads(mcp.text(s)) == weather, s

LONG = "trigger-long-running-operation"

def statuses():
    return [r["status"] for r in mcp.journal() if r["server"] == "everything" and r["tool"] == LONG]

# The task is cancelled once its request is out (journalled as dispatched) and had a
# moment to reach the server, long before the server's 30 s would end.
task = asyncio.ensure_future(mcp.acall("everything", LONG, duration=30, steps=30))
limit = time.monotonic() + 10
while statuses() != ["dispatched"]:
    assert time.monotonic() < limit and not task.done(), (statuses(), task)
    await asyncio.sleep(0.05)
await asyncio.sleep(0.3)
assert not task.done(), task
start = time.monotonic()
task.cancel()
try:
    await task
    raise AssertionError("the cancelled call completed")
except asyncio.CancelledError:
    pass
cancel_seconds = time.monotonic() - start
assert cancel_seconds < 5, cancel_seconds

start = time.monotonic()
try:
    mcp.call("everything", LONG, duration=30, steps=3, timeout=1)
    raise AssertionError("the call outlived its timeout")
except ToolError as e:
    assert e.result is None, e.result
    assert "deadline exceeded" in str(e), str(e)
deadline_seconds = time.monotonic() - start
assert deadline_seconds < 5, deadline_seconds
assert statuses() == ["outcome_unknown", "outcome_unknown"], statuses()

after = mcp.call("everything", "echo", message="still here")
assert mcp.text(after) == "Echo: still here", after

{
    "tools": len(names),
    "echo": mcp.text(r),
    "structured": dict(s["structuredContent"]),
    "cancelled": statuses(),
    "after": mcp.text(after),
    "cancel_seconds": round(cancel_seconds, 3),
    "deadline_seconds": round(deadline_seconds, 3),
}
