#!/usr/bin/env python3
"""Asks Signoff whether one tool call may run, over REST, as a program's approval callback
would (an OpenAI Agents SDK `needs_approval`, a LangGraph interrupt handler). The README shows
this function; the gateway tests run it.

    python ask_over_rest.py SIGNOFF_URL AGENT TOOL ARGUMENTS_JSON [TOKEN]

Prints the request's final state as one JSON line.
"""

import json
import sys
import urllib.request


def ask_signoff(signoff, agent, tool, arguments, token=None):
    """Blocks until a person (or a rule) settles the call; returns Signoff's answer:
    status "allowed" with the arguments to run, or "rejected" / "ended" with a reason."""
    headers = {"Content-Type": "application/json"}
    if token:
        headers["Authorization"] = f"Bearer {token}"

    def call(method, path, body=None):
        data = json.dumps(body).encode() if body is not None else None
        request = urllib.request.Request(signoff + path, data, headers, method=method)
        with urllib.request.urlopen(request, timeout=90) as response:
            return json.load(response)

    asked = call("POST", "/api/approvals/requests?wait=60",
                 {"agent": agent, "tool": tool, "arguments": arguments})
    while asked["status"] == "waiting":
        asked = call("GET", f"/api/approvals/requests/{asked['taskId']}?wait=60")
    return asked


if __name__ == "__main__":
    url, agent, tool, arguments = sys.argv[1:5]
    token = sys.argv[5] if len(sys.argv) > 5 else None
    print(json.dumps(ask_signoff(url, agent, tool, json.loads(arguments), token)), flush=True)
