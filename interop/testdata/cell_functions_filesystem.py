# Tool functions (docs/contract.md §7.5) against @modelcontextprotocol/server-filesystem,
# registered as "files" on the directory DATA: list, read every file in a loop, join the
# results in the cell, and return only the summary. A wrong argument type is refused
# before anything is sent; a path outside the allowed directory is the server's isError,
# raised as ToolError with its ToolResult.
import contextlib
import io

files = mcp.files
names = [line.removeprefix("[FILE] ") for line in files.list_directory(path=DATA).text.splitlines()]
counts = {name: len(files.read_text_file(path=f"{DATA}/{name}").data["content"].splitlines()) for name in names}
heads = {name: files.read_text_file(path=f"{DATA}/{name}", head=1).text for name in names[:2]}
try:
    files.read_text_file(path=f"{DATA}/{names[0]}", head="1")
    raise AssertionError("a wrong type was sent")
except TypeError as exc:
    refused = str(exc)
try:
    files.read_text_file(path="/definitely/not/allowed")
    raise AssertionError("a path outside the allowed directory was read")
except ToolError as exc:
    denied = [exc.result.is_error, "outside allowed directories" in exc.result.text]
out = io.StringIO()
with contextlib.redirect_stdout(out):
    mcp.help("files")
reads = [r["tool"] for r in mcp.journal() if r["server"] == "files"]
{
    "counts": counts,
    "heads": heads,
    "refused": refused,
    "denied": denied,
    "help": [line for line in out.getvalue().splitlines() if line.startswith("files.read_text_file(")],
    "search": mcp.search("read text file", limit=1)[0],
    "journal": [reads.count("list_directory"), reads.count("read_text_file")],
}
