#!/usr/bin/env python3
"""An MCP client on the Python `mcp` SDK (PyPI) that answers its servers' questions itself, for
the gateway tests. It connects to URL in the SDK's "auto" mode (`server/discover`, so the
stateless 2026-07-28 revision with this server), where a question comes back as an
`input_required` result that the SDK answers through the elicitation callback and retries with
the answer and the `requestState` echoed. It prints one JSON line each: {"revision": "..."} once
connected, {"elicited": {"message": ..., "mode": ...}} for each question, and
{"result": {"isError": bool, "text": "..."}} for the call of TOOL with the JSON ARGUMENTS.
Each question is answered by accepting the JSON object ANSWER as the form's content.

    python elicit_client.py URL TOOL ARGUMENTS ANSWER
"""

import asyncio
import json
import sys

import mcp_types as types
from mcp import Client


def main(url, tool, arguments, answer):
    async def answer_question(context, params):
        mode = getattr(params, "mode", None) or "form"
        print(json.dumps({"elicited": {"message": params.message, "mode": mode}}), flush=True)
        return types.ElicitResult(action="accept", content=answer)

    async def run():
        async with Client(url, elicitation_callback=answer_question) as client:
            print(json.dumps({"revision": client.protocol_version}), flush=True)
            result = await client.call_tool(tool, arguments)
            text = "\n".join(item.text for item in result.content if getattr(item, "text", None))
            print(json.dumps({"result": {"isError": bool(result.is_error), "text": text}}), flush=True)

    asyncio.run(run())


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], json.loads(sys.argv[3]), json.loads(sys.argv[4]))
