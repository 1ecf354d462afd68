#!/usr/bin/env python3
"""A payments tool for the spending-cap example of docs/policies.md: an MCP server over stdio
(newline-delimited JSON-RPC, Python's standard library only) with one tool, `pay`, whose
`amount` is a whole number of cents. It pays nobody: a call answers what it would have paid.
docs/policies/agents.toml starts it, so `signoff policy check` and `signoff policy test` see
the tool's schema as the server would.
"""

import json
import sys

PAY = {
    "name": "pay",
    "description": "Pay an amount (in cents) to someone. An example: it pays nobody.",
    "inputSchema": {
        "type": "object",
        "properties": {
            "amount": {"type": "integer", "minimum": 1, "description": "Cents to pay."},
            "to": {"type": "string", "description": "Who is paid."},
        },
        "required": ["amount", "to"],
    },
}


def answer(request):
    """The result of one request, or None for a notification."""
    method = request.get("method")
    if "id" not in request:
        return None
    if method == "initialize":
        asked = request.get("params", {}).get("protocolVersion", "2025-06-18")
        return {"protocolVersion": asked, "capabilities": {"tools": {}},
                "serverInfo": {"name": "payments-example", "version": "1.0.0"}}
    if method == "ping":
        return {}
    if method == "tools/list":
        return {"tools": [PAY]}
    if method == "tools/call":
        args = request.get("params", {}).get("arguments", {})
        text = f"would pay {args.get('amount')} cents to {args.get('to')}"
        return {"content": [{"type": "text", "text": text}], "isError": False}
    raise LookupError(method)


def main():
    for line in sys.stdin:
        if not line.strip():
            continue
        request = json.loads(line)
        try:
            result = answer(request)
            if result is None:
                continue
            reply = {"jsonrpc": "2.0", "id": request["id"], "result": result}
        except LookupError as unknown:
            reply = {"jsonrpc": "2.0", "id": request["id"],
                     "error": {"code": -32601, "message": f"unknown method {unknown}"}}
        sys.stdout.write(json.dumps(reply) + "\n")
        sys.stdout.flush()


if __name__ == "__main__":
    main()
