#!/usr/bin/env python3
"""A scripted Anthropic Messages API endpoint for driving Claude Code offline in tests.

    python3 anthropic.py --port 0 --script turns.json --log requests.jsonl

Prints `PORT <n>` as its first stdout line once it listens on 127.0.0.1:<n>.

The script is a JSON list of turns, each `{"text": "..."}` or
`{"tool_use": {"name": "Write", "input": {...}}}` (a turn may carry both, text first; the
tool_use may name its "id", else it is toolu_scripted_<n>, n the request's number in the log).
A turn may start with a `{"thinking": "..."}` block too (the model's extended thinking).
A turn without tool_use ends Claude Code's run (stop_reason end_turn).
Each POST /v1/messages of the main conversation is answered with the next turn, in the
order the requests come; once the script is exhausted every answer is `{"text": "done"}`.
Claude Code's side requests (title / summary / topic generation, quota checks, requests
without the agent's tools) get a short plain text and do not consume the script.

Every request is logged to --log as one JSON line:
    {"n": 1, "method": "POST", "path": "/v1/messages", "kind": "main"|"side"|"other",
     "turn": <index answered or null>, "headers": {...}, "body": <parsed JSON or text>}
so a test can assert what Claude Code sent back (e.g. the tool_result of a denied tool).

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


def system_text(body):
    system = body.get("system")
    if isinstance(system, str):
        return system
    if isinstance(system, list):
        return " ".join(b.get("text", "") for b in system if isinstance(b, dict))
    return ""


def is_side_request(body):
    """Whether a /v1/messages request is not a turn of the main agent conversation.

    The main loop always sends the agent's tools (Write, Bash, ... and the MCP tools);
    Claude Code's side requests (quota check with max_tokens 1, session title / topic
    generation, summaries) send no tools, ask for a tiny answer, or ask for a JSON schema
    (the interactive session title: no tools, output_config.format json_schema {title}).
    """
    if not isinstance(body, dict):
        return True
    if output_schema(body) is not None:  # e.g. the session title: {"title": string}
        return True
    if (body.get("max_tokens") or 0) <= 1:
        return True
    tools = body.get("tools") or []
    if not tools:
        return True
    return False


def output_schema(body):
    """The JSON schema a request asks its answer to follow (output_config.format), if any."""
    fmt = (body.get("output_config") or {}).get("format") or body.get("output_format") or {}
    if isinstance(fmt, dict) and fmt.get("type") == "json_schema":
        return fmt.get("schema") or {}
    return None


def sample(schema):
    """A small value that satisfies a simple JSON schema."""
    kind = schema.get("type") if isinstance(schema, dict) else None
    if kind == "object":
        props = schema.get("properties") or {}
        return {k: sample(v) for k, v in props.items()}
    if kind == "array":
        return []
    if kind in ("number", "integer"):
        return 0
    if kind == "boolean":
        return False
    if kind == "null":
        return None
    if isinstance(schema, dict) and schema.get("enum"):
        return schema["enum"][0]
    return "Scripted session"


def side_turn(body):
    """The plain answer to a side request: JSON when it asks for a schema, else short text."""
    schema = output_schema(body) if isinstance(body, dict) else None
    if schema is not None:
        return {"text": json.dumps(sample(schema))}
    return {"text": "ok"}


def content_blocks(turn, tool_id):
    blocks = []
    if turn.get("thinking"):
        blocks.append({"type": "thinking", "thinking": turn["thinking"],
                       "signature": "scripted"})
    if turn.get("text"):
        blocks.append({"type": "text", "text": turn["text"]})
    if turn.get("tool_use"):
        use = turn["tool_use"]
        blocks.append({"type": "tool_use", "id": tool_id, "name": use["name"],
                       "input": use.get("input", {})})
    if not blocks:
        blocks.append({"type": "text", "text": ""})
    return blocks


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "scripted-anthropic/1"

    def log_message(self, format, *args):  # quiet: the JSON log says it all
        pass

    def read_body(self):
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        try:
            return json.loads(raw) if raw else None
        except ValueError:
            return raw.decode("utf-8", "replace")

    def send_json(self, status, obj):
        data = json.dumps(obj).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.send_header("request-id", "req_scripted")
        self.end_headers()
        self.wfile.write(data)

    def record(self, kind, body, turn=None):
        return self.server.script.log({"method": self.command, "path": self.path, "kind": kind,
                                "turn": turn, "headers": dict(self.headers.items()),
                                "body": body})

    def do_HEAD(self):
        self.record("other", None)
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", "0")
        self.end_headers()

    def do_GET(self):
        self.record("other", None)
        self.send_json(200, {})

    def do_POST(self):
        body = self.read_body()
        path = self.path.split("?", 1)[0]
        if path.rstrip("/") != "/v1/messages":
            self.record("other", body)
            if path.endswith("/count_tokens"):
                self.send_json(200, {"input_tokens": 1})
            else:
                self.send_json(200, {})
            return
        if is_side_request(body):
            req_id = self.record("side", body)
            turn = side_turn(body)
        else:
            turn, index = self.server.script.take()
            req_id = self.record("main", body, index)
        message_id = "msg_scripted_%d" % req_id
        tool_id = (turn.get("tool_use") or {}).get("id") or "toolu_scripted_%d" % req_id
        model = body.get("model", "claude") if isinstance(body, dict) else "claude"
        blocks = content_blocks(turn, tool_id)
        stop = "tool_use" if turn.get("tool_use") else "end_turn"
        if isinstance(body, dict) and body.get("stream"):
            self.stream(message_id, model, blocks, stop)
        else:
            self.send_json(200, {
                "id": message_id, "type": "message", "role": "assistant", "model": model,
                "content": blocks, "stop_reason": stop, "stop_sequence": None,
                "usage": {"input_tokens": 1, "output_tokens": 1}})

    def stream(self, message_id, model, blocks, stop):
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Connection", "close")
        self.send_header("request-id", "req_scripted")
        self.end_headers()
        self.close_connection = True

        def event(name, data):
            data = dict(data, type=name)
            self.wfile.write(("event: %s\ndata: %s\n\n" % (name, json.dumps(data))).encode())
            self.wfile.flush()

        event("message_start", {"message": {
            "id": message_id, "type": "message", "role": "assistant", "model": model,
            "content": [], "stop_reason": None, "stop_sequence": None,
            "usage": {"input_tokens": 1, "output_tokens": 1}}})
        for i, block in enumerate(blocks):
            if block["type"] == "thinking":
                event("content_block_start", {"index": i, "content_block": {
                    "type": "thinking", "thinking": "", "signature": ""}})
                event("content_block_delta", {"index": i, "delta": {
                    "type": "thinking_delta", "thinking": block["thinking"]}})
                event("content_block_delta", {"index": i, "delta": {
                    "type": "signature_delta", "signature": block["signature"]}})
            elif block["type"] == "text":
                event("content_block_start", {"index": i,
                                              "content_block": {"type": "text", "text": ""}})
                event("content_block_delta", {"index": i, "delta": {
                    "type": "text_delta", "text": block["text"]}})
            else:
                event("content_block_start", {"index": i, "content_block": {
                    "type": "tool_use", "id": block["id"], "name": block["name"], "input": {}}})
                event("content_block_delta", {"index": i, "delta": {
                    "type": "input_json_delta", "partial_json": json.dumps(block["input"])}})
            event("content_block_stop", {"index": i})
        event("message_delta", {"delta": {"stop_reason": stop, "stop_sequence": None},
                                "usage": {"output_tokens": 1}})
        event("message_stop", {})


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--port", type=int, default=0, help="0 picks a free port")
    parser.add_argument("--script", help="JSON list of turns")
    parser.add_argument("--log", help="file to append one JSON line per request to")
    args = parser.parse_args()
    turns = []
    if args.script:
        with open(args.script, encoding="utf-8") as f:
            turns = json.load(f)
    server = ThreadingHTTPServer(("127.0.0.1", args.port), Handler)
    server.daemon_threads = True
    server.script = Script(turns, args.log)
    print("PORT %d" % server.server_address[1], flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass


if __name__ == "__main__":
    main()
