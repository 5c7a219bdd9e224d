"""A small server built with the official Python MCP SDK (FastMCP, called MCPServer in
mcp 2.x), run over stdio as a downstream server of repl-mcp's broker in the interop
suite. Its tools cover a text result, structured content from a typed return value, and
a tool error.
"""

from typing import TypedDict

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError

server = MCPServer("interop-fastmcp", version="1.0.0")


class Stats(TypedDict):
    count: int
    total: float
    mean: float
    labels: list[str]


@server.tool(structured_output=False)
def greet(name: str) -> str:
    """Greet someone by name (text content only)."""
    return f"Hello, {name}!"


@server.tool()
def stats(values: list[float], label: str = "v") -> Stats:
    """Count, total and mean of values, returned as structured content."""
    total = sum(values)
    return Stats(
        count=len(values),
        total=total,
        mean=total / len(values) if values else 0.0,
        labels=[f"{label}{i}" for i in range(len(values))],
    )


@server.tool()
def fail(reason: str) -> str:
    """Always fails with an anticipated ToolError, whose message the caller sees."""
    raise ToolError(f"refused: {reason}")


if __name__ == "__main__":
    server.run("stdio")
