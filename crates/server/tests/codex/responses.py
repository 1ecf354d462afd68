#!/usr/bin/env python3
"""A scripted OpenAI Responses API endpoint for driving Codex offline in tests.

    python3 responses.py --port 0 --script turns.json --log requests.jsonl

Prints `PORT <n>` as its first stdout line once it listens on 127.0.0.1:<n>.

The script is a JSON list of turns, each `{"text": "..."}` (a final message, which ends
Codex's turn) or `{"shell": "touch marker"}` (a call of the shell tool Codex offered, with
that command line, asking to run it outside the sandbox so that Codex asks for approval; its
call_id is call_scripted_<n>, n the request's number in the log).
Each POST .../responses is answered, as a server-sent event stream, with the next turn in the
order the requests come; once the script is exhausted every answer is `{"text": "done"}`.

Codex offers its shell under a name that depends on its version and model family, so the
function call uses whichever of the known shell tools the request lists (`shell`,
`shell_command`, `exec_command`), with the arguments that tool takes.

Every request is logged to --log as one JSON line:
    {"n": 1, "method": "POST", "path": "/v1/responses", "turn": <index answered or null>,
     "body": <parsed JSON or text>}
so a test can assert what Codex sent back (e.g. the output of a command it ran or refused).

Python 3 standard library only.
"""

import argparse
import json
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

DONE = {"text": "done"}


class Script:
    def __init__(self, turns, log_path):
        self.turns = list(turns)
        self.next = 0
        self.count = 0
        self.lock = threading.Lock()
        self.log_file = open(log_path, "a", encoding="utf-8") if log_path else None

    def take(self):
        """The next turn of the script (and its index), or DONE (and None)."""
        with self.lock:
            if self.next < len(self.turns):
                self.next += 1
                return self.turns[self.next - 1], self.next - 1
            return DONE, None

    def log(self, entry):
        with self.lock:
            self.count += 1
            entry = {"n": self.count, **entry}
            if self.log_file:
                self.log_file.write(json.dumps(entry) + "\n")
                self.log_file.flush()
            return self.count


def tool_names(body):
    names = []
    for tool in body.get("tools", []) if isinstance(body, dict) else []:
        name = tool.get("name") or (tool.get("function") or {}).get("name")
        if name:
            names.append(name)
    return names


def shell_call(command, offered, call_id):
    """A function_call item running `command` with the shell tool Codex offered."""
    if "exec_command" in offered:
        name, arguments = "exec_command", {"cmd": command}
    elif "shell_command" in offered:
        name, arguments = "shell_command", {"command": command}
    else:
        name, arguments = "shell", {"command": ["bash", "-lc", command]}
    # Asking to run outside the sandbox is what makes Codex ask for approval under its
    # `on-request` policy.
    arguments["sandbox_permissions"] = "require_escalated"
    arguments["justification"] = "The test asks for this command to run."
    return {
        "type": "function_call",
        "id": "fc_" + call_id,
        "call_id": call_id,
        "name": name,
        "arguments": json.dumps(arguments),
        "status": "completed",
    }


def message(text, n):
    return {
        "type": "message",
        "id": f"msg_scripted_{n}",
        "role": "assistant",
        "status": "completed",
        "content": [{"type": "output_text", "text": text, "annotations": []}],
    }


def events(turn, offered, n):
    """The server-sent events of one response."""
    response_id = f"resp_scripted_{n}"
    base = {"id": response_id, "object": "response", "status": "in_progress", "output": []}
    yield "response.created", {"type": "response.created", "response": base}
    if "shell" in turn:
        item = shell_call(turn["shell"], offered, f"call_scripted_{n}")
    else:
        item = message(turn.get("text", ""), n)
    yield "response.output_item.added", {
        "type": "response.output_item.added", "output_index": 0, "item": item}
    yield "response.output_item.done", {
        "type": "response.output_item.done", "output_index": 0, "item": item}
    done = dict(base, status="completed", output=[item], usage={
        "input_tokens": 10, "input_tokens_details": {"cached_tokens": 0},
        "output_tokens": 5, "output_tokens_details": {"reasoning_tokens": 0},
        "total_tokens": 15})
    yield "response.completed", {"type": "response.completed", "response": done}


def handler(script):
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args):
            pass

        def body(self):
            length = int(self.headers.get("content-length") or 0)
            raw = self.rfile.read(length).decode("utf-8", "replace") if length else ""
            try:
                return json.loads(raw)
            except ValueError:
                return raw

        def do_GET(self):
            script.log({"method": "GET", "path": self.path, "turn": None, "body": None})
            # A models listing, if Codex asks for one: none beyond the configured model.
            self.reply(200, {"object": "list", "data": [], "models": []})

        def do_POST(self):
            body = self.body()
            if not self.path.rstrip("/").endswith("/responses"):
                script.log({"method": "POST", "path": self.path, "turn": None, "body": body})
                self.reply(404, {"error": {"message": "not scripted"}})
                return
            turn, index = script.take()
            n = script.log({"method": "POST", "path": self.path, "turn": index, "body": body})
            chunks = []
            for name, data in events(turn, tool_names(body), n):
                chunks.append(f"event: {name}\ndata: {json.dumps(data)}\n\n")
            payload = "".join(chunks).encode("utf-8")
            self.send_response(200)
            self.send_header("content-type", "text/event-stream")
            self.send_header("content-length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)

        def reply(self, status, value):
            payload = json.dumps(value).encode("utf-8")
            self.send_response(status)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)

    return Handler


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--script", required=True)
    parser.add_argument("--log")
    args = parser.parse_args()
    with open(args.script, encoding="utf-8") as file:
        turns = json.load(file)
    server = ThreadingHTTPServer(("127.0.0.1", args.port), handler(Script(turns, args.log)))
    print(f"PORT {server.server_address[1]}", flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    sys.exit(0)


if __name__ == "__main__":
    main()
