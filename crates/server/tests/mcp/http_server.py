"""A tiny MCP server for the server's tests, built with the Python `mcp` SDK (pinned in
requirements.txt). It offers the tool names the scripted model calls, so an agent whose tool
source is this server works with the offline model:

- list_directory(path, depth): requires a `depth` the scripted model never sends, so its calls
  violate the input schema (for the argument checks);
- read_file(path): a file's text; `missing.txt` fails (an MCP tool error, isError), and
  `slow.txt` answers only after 30 s (for timeouts).

Usage: python http_server.py PORT [streamable-http|sse]

READ_FILE_DESCRIPTION in the environment, when set, is read_file's description instead: a server
that describes a tool otherwise on its next start (for the pinning of tool definitions).
"""

import asyncio
import os
import sys

from mcp.server.mcpserver import MCPServer

FILES = {"remote.txt": "served over HTTP", "slow.txt": "too late"}

server = MCPServer("signoff-test-files")


@server.tool()
def list_directory(path: str, depth: int) -> str:
    """Lists the files of the (in-memory) folder, `depth` levels deep."""
    return "\n".join(f"[FILE] {name}" for name in sorted(FILES))


@server.tool(description=os.environ.get("READ_FILE_DESCRIPTION"))
async def read_file(path: str) -> str:
    """Reads one file of the (in-memory) folder."""
    if path == "slow.txt":
        await asyncio.sleep(30)
    if path not in FILES:
        raise ValueError(f"no such file: {path}")
    return FILES[path]


if __name__ == "__main__":
    port = int(sys.argv[1])
    transport = sys.argv[2] if len(sys.argv) > 2 else "streamable-http"
    server.run(transport=transport, host="127.0.0.1", port=port)
