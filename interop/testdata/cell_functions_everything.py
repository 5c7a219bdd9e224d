# Tool functions (docs/contract.md §7.5) against @modelcontextprotocol/server-everything,
# registered under a name that is not an identifier ("server-everything"): its tools
# (get-sum, get-tiny-image, ...) are reached as mcp.server_everything.get_sum and as
# mcp["server-everything"]["get-sum"]; help() and dir() show Python; a wrong call is a
# TypeError before anything is sent (the journal has no record of it); results are
# ToolResult values; asyncio.gather over .acall; search ranks and bounds.
import asyncio
import contextlib
import inspect
import io

e = mcp.server_everything
assert mcp["server-everything"]["get-sum"].__qualname__ == "mcp.server_everything.get_sum"
assert "server_everything" in dir(mcp), dir(mcp)
assert {"echo", "get_sum", "get_tiny_image", "get_structured_content"} <= set(dir(e)), dir(e)
assert str(inspect.signature(e.get_sum)) == "(a: float, b: float)", inspect.signature(e.get_sum)

out = io.StringIO()
with contextlib.redirect_stdout(out):
    help(e.get_sum)
    mcp.help("server-everything")
helped = out.getvalue()
assert "get_sum(a: float, b: float)\n" in helped, helped
assert "server_everything.echo(message: str) — Echoes back the input string" in helped, helped
assert "inputSchema" not in helped and '"type"' not in helped, helped


def journalled():
    return [r["tool"] for r in mcp.journal() if r["server"] == "server-everything"]


refused = []
for call in (lambda: e.get_sum(1), lambda: e.get_sum("1", 2), lambda: e.echo(message="x", msg="x"),
             lambda: e.get_structured_content(location=3)):
    try:
        call()
    except TypeError as exc:
        refused.append(str(exc))
assert len(refused) == 4 and journalled() == [], (refused, journalled())

total = e.get_sum(2, b=3)
weather = e.get_structured_content(location="Chicago")
image = e["get-tiny-image"]()
display(*image.images)
echoes = await asyncio.gather(*(e.echo.acall(message=f"m{i}") for i in range(10)))
once = await e.echo("awaited")

hits = mcp.search("sum numbers")
assert hits == ["server_everything.get_sum(a: float, b: float) — Returns the sum of two numbers"], hits
hits = mcp.search("resource", limit=2)
assert [h.split("(")[0] for h in hits[:2]] == ["server_everything.get_resource_links", "server_everything.get_resource_reference"], hits
assert len(hits) == 3 and hits[2].startswith("... ") and hits[2].endswith("more matching tools; narrow the query or raise limit"), hits

{
    "refused": refused,
    "sum": [total.text, total.is_error, total.data],
    "weather": weather.data,
    "image": [[i.mime_type for i in image.images], image.text],
    "echoes": [r.text for r in echoes] + [once.text],
    "journal": journalled(),
}
