#!/usr/bin/env python3
"""An MCP client on the Python `mcp` SDK (PyPI), for the gateway tests: connects to URL over
streamable HTTP (the SDK's default "auto" mode: `server/discover`, then `initialize`), lists the
tools and prints {"tools": [names], "revision": "..."} (the revision it negotiated), then calls
TOOL with the JSON ARGUMENTS and prints {"result": {"isError": bool, "text": "..."}}.

    python mcp_client.py URL TOOL ARGUMENTS
"""

import asyncio
import json
import sys

from mcp import Client


async def main(url, tool, arguments):
    async with Client(url) as client:
        listed = await client.list_tools()
        # Printed before the call, so the test knows the client is waiting on it.
        print(json.dumps({"tools": [t.name for t in listed.tools], "revision": client.protocol_version}), flush=True)
        result = await client.call_tool(tool, arguments)
        text = "\n".join(item.text for item in result.content if getattr(item, "text", None))
        print(json.dumps({"result": {"isError": bool(result.is_error), "text": text}}), flush=True)


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], sys.argv[2], json.loads(sys.argv[3])))
