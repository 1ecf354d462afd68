#!/usr/bin/env python3
"""A scripted Gemini API endpoint for driving Gemini CLI offline in tests.

    python3 gemini.py --port 0 --script turns.json --log requests.jsonl

Prints `PORT <n>` as its first stdout line once it listens on 127.0.0.1:<n>. Gemini CLI is
pointed at it with GOOGLE_GEMINI_BASE_URL=http://127.0.0.1:<n> and any GEMINI_API_KEY.

The script is a JSON list of turns, each `{"text": "..."}` or
`{"call": {"name": "write_file", "args": {...}}}` (a turn may carry both, text first). Each
POST .../models/<model>:streamGenerateContent?alt=sse of the main conversation (a request that
sends the agent's tools and asks for no JSON schema) is answered, as one SSE event, with the
next turn, in the order the requests come; once the script is exhausted every answer is
`{"text": "done"}`. Gemini CLI's side requests (its session context, checks that ask for a JSON
schema, :countTokens) get a short answer and do not consume the script; one that asks for a
schema gets a small value that satisfies it.

Every request is logged to --log as one JSON line:
    {"n": 1, "method": "POST", "path": "...", "kind": "main"|"side"|"other",
     "turn": <index answered or null>, "body": <parsed JSON or text>}
so a test can assert what Gemini CLI sent back (the functionResponse of a refused call).

Python 3 standard library only.
"""

import argparse
import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

DONE = {"text": "done"}
USAGE = {"promptTokenCount": 1, "candidatesTokenCount": 1, "totalTokenCount": 2}


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
            if self.log_file:
                self.log_file.write(json.dumps({"n": self.count, **entry}) + "\n")
                self.log_file.flush()


def schema_of(body):
    """The JSON schema a request asks its answer to follow, if any."""
    config = (body.get("generationConfig") or {}) if isinstance(body, dict) else {}
    return config.get("responseJsonSchema") or config.get("responseSchema")


def sample(schema):
    """A small value that satisfies a simple JSON schema (OpenAPI's upper-case types too)."""
    kind = schema.get("type") if isinstance(schema, dict) else None
    kind = kind.lower() if isinstance(kind, str) else None
    if kind == "object":
        return {k: sample(v) for k, v in (schema.get("properties") or {}).items()}
    if kind == "array":
        return []
    if kind in ("number", "integer"):
        return 0
    if kind == "boolean":
        return False
    if isinstance(schema, dict) and schema.get("enum"):
        # e.g. the next-speaker check: "user" ends the agent's turn.
        return "user" if "user" in schema["enum"] else schema["enum"][0]
    return "user"


def is_main(path, body):
    return (":streamGenerateContent" in path and isinstance(body, dict)
            and bool(body.get("tools")) and schema_of(body) is None)


def parts_of(turn):
    parts = []
    if turn.get("text"):
        parts.append({"text": turn["text"]})
    if turn.get("call"):
        parts.append({"functionCall": turn["call"]})
    return parts or [{"text": ""}]


def answer(parts):
    return {"candidates": [{"content": {"role": "model", "parts": parts},
                            "finishReason": "STOP", "index": 0}],
            "usageMetadata": USAGE, "modelVersion": "scripted"}


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "scripted-gemini/1"

    def log_message(self, format, *args):  # quiet: the JSON log says it all
        pass

    def read_body(self):
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        try:
            return json.loads(raw) if raw else None
        except ValueError:
            return raw.decode("utf-8", "replace")

    def send_json(self, obj):
        data = json.dumps(obj).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def send_sse(self, obj):
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Connection", "close")
        self.end_headers()
        self.close_connection = True
        self.wfile.write(("data: %s\r\n\r\n" % json.dumps(obj)).encode())
        self.wfile.flush()

    def record(self, kind, body, turn=None):
        self.server.script.log({"method": self.command, "path": self.path, "kind": kind,
                                "turn": turn, "body": body})

    def do_GET(self):
        self.record("other", None)
        self.send_json({})

    def do_POST(self):
        body = self.read_body()
        if ":countTokens" in self.path:
            self.record("other", body)
            return self.send_json({"totalTokens": 1})
        if is_main(self.path, body):
            turn, index = self.server.script.take()
            self.record("main", body, index)
            return self.send_sse(answer(parts_of(turn)))
        self.record("side", body)
        schema = schema_of(body)
        text = json.dumps(sample(schema)) if schema is not None else "ok"
        reply = answer([{"text": text}])
        if ":streamGenerateContent" in self.path:
            return self.send_sse(reply)
        self.send_json(reply)


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
