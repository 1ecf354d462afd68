"""The bench's coding agent: an Agent Client Protocol agent (newline-delimited JSON-RPC 2.0 on
stdio) with no model, so the acp phase of signoff-bench measures Signoff's bridge and not a
model. Python 3 standard library only.

    python3 acp_agent.py LOG

Each `session/prompt` reports one `edit` tool call whose title carries the prompt's marker
(`bench <uuid>`, or a fresh one), asks `session/request_permission` for it (allow_once and
reject_once), then answers with one message chunk and `end_turn`. Just before it writes the
permission request, and as soon as the answer's line arrives, it appends a line to LOG:

    asked <unix seconds> <marker>
    answered <unix seconds> <marker> <optionId, or the outcome>

The times are time.time(): the wall clock, the one the bench reads as SystemTime. Every process
of the agent appends to the same LOG, one write per line.
"""

import json
import os
import re
import sys
import time
import uuid

MARKER = re.compile(r"bench [0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")

stdin = sys.stdin.buffer
stdout = sys.stdout.buffer
log_fd = os.open(sys.argv[1], os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
# Messages read while waiting for an answer, handled afterwards.
early = []
next_id = 0


def log(*words):
    os.write(log_fd, (" ".join(words) + "\n").encode())


def send(message):
    message["jsonrpc"] = "2.0"
    stdout.write(json.dumps(message, separators=(",", ":")).encode() + b"\n")
    stdout.flush()


def read():
    """The next message from the client, or None when its stdin ends."""
    if early:
        return early.pop(0)
    while True:
        line = stdin.readline()
        if not line:
            return None
        line = line.strip()
        if line:
            return json.loads(line)


def answer_to(request_id):
    """Reads until the response to our request `request_id` arrives; the time its line did."""
    while True:
        line = stdin.readline()
        at = time.time()
        if not line:
            return None, at
        line = line.strip()
        if not line:
            continue
        message = json.loads(line)
        if message.get("id") == request_id and "method" not in message:
            return message, at
        early.append(message)


def update(session, body):
    send({"method": "session/update", "params": {"sessionId": session, "update": body}})


def prompt(request):
    global next_id
    params = request["params"]
    session = params["sessionId"]
    text = " ".join(block.get("text", "") for block in params.get("prompt", []))
    found = MARKER.search(text)
    marker = found.group(0) if found else "bench " + str(uuid.uuid4())
    next_id += 1
    call = "call-%d" % next_id
    path = os.path.join(os.getcwd(), "bench.txt")
    title = "Write bench.txt (%s)" % marker
    update(session, {
        "sessionUpdate": "tool_call",
        "toolCallId": call,
        "title": title,
        "kind": "edit",
        "status": "pending",
        "rawInput": {"file_path": path, "content": "x\n"},
        "locations": [{"path": path}],
        "content": [{"type": "diff", "path": path, "oldText": None, "newText": "x\n"}],
    })
    asked = "perm-%d" % next_id
    log("asked", "%.6f" % time.time(), marker)
    send({
        "id": asked,
        "method": "session/request_permission",
        "params": {
            "sessionId": session,
            "toolCall": {"toolCallId": call, "title": title, "kind": "edit"},
            "options": [
                {"optionId": "allow", "name": "Allow", "kind": "allow_once"},
                {"optionId": "reject", "name": "Reject", "kind": "reject_once"},
            ],
        },
    })
    answer, at = answer_to(asked)
    if answer is None:
        return False
    outcome = (answer.get("result") or {}).get("outcome") or {}
    chosen = outcome.get("optionId") or outcome.get("outcome") or "error"
    log("answered", "%.6f" % at, marker, chosen)
    update(session, {
        "sessionUpdate": "tool_call_update",
        "toolCallId": call,
        "status": "completed" if chosen == "allow" else "failed",
    })
    update(session, {
        "sessionUpdate": "agent_message_chunk",
        "content": {"type": "text", "text": "Done: %s." % chosen},
    })
    send({"id": request["id"], "result": {"stopReason": "end_turn"}})
    return True


def main():
    while True:
        message = read()
        if message is None:
            return
        method = message.get("method")
        if "id" not in message:
            continue  # a notification (session/cancel: nothing runs between prompts)
        if method == "initialize":
            send({"id": message["id"], "result": {
                "protocolVersion": 1,
                "agentCapabilities": {"loadSession": False},
                "authMethods": [],
            }})
        elif method == "session/new":
            send({"id": message["id"], "result": {"sessionId": str(uuid.uuid4())}})
        elif method == "session/prompt":
            if not prompt(message):
                return
        elif method is not None:
            send({"id": message["id"], "error": {"code": -32601, "message": "no " + method}})


if __name__ == "__main__":
    main()
