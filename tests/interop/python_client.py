#!/usr/bin/env python3
"""Interop check: the `a2a-sdk` Python client (PyPI) drives the Signoff demo agent end to end.

One run checks one A2A version (`--version 0.3` or `--version 1.0`) against a fresh server:
agent card, a streamed chat with a tool call, tasks/get, the approval flow (input-required
with the interrupt DataPart, the approve decision on the same task, completed, the file written),
and a push notification: a config set through the SDK's `create_task_push_notification_config`,
the task's next input-required POSTed to a receiver on a local thread, its JWT verified with
PyJWT's `PyJWKClient` against the server's `/.well-known/jwks.json` and its body hash checked.
Every passing check prints `interop ok: <what>`; the first failure prints what was expected and
what came, and exits 1. Run by tests/interop/run.sh inside the venv it makes.
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import http.server
import json
import os
import queue
import sys
import threading
import traceback
import uuid
from pathlib import Path
from typing import Any

import httpx
import jwt
from google.protobuf.json_format import MessageToDict, ParseDict
from google.protobuf.struct_pb2 import Value

from a2a.client import ClientConfig, ClientFactory
from a2a.client.card_resolver import parse_agent_card
from a2a.types.a2a_pb2 import (
    GetTaskRequest,
    Message,
    Part,
    Role,
    SendMessageRequest,
    TaskPushNotificationConfig,
)

try:
    from importlib.metadata import version as package_version

    SDK = f"a2a-sdk {package_version('a2a-sdk')}"
except Exception:  # noqa: BLE001 - only used for labels
    SDK = "a2a-sdk"

AGENT_PATH = "/api/a2a/default/demo"
CARD_PATH = "/.well-known/agent-card.json"
STEP_TIMEOUT_S = 60


class CheckFailed(Exception):
    """One interop check did not hold: what was checked, what was expected, what came."""

    def __init__(self, what: str, expected: Any, got: Any):
        super().__init__(what)
        self.what = what
        self.expected = expected
        self.got = got


def check(cond: bool, what: str, expected: Any, got: Any) -> None:
    if not cond:
        raise CheckFailed(what, expected, got)


class Run:
    def __init__(self, base: str, version: str, sandbox: Path | None):
        self.base = base.rstrip("/")
        self.version = version
        self.sandbox = sandbox
        self.label = f"python {SDK} v{version}"
        # What the client is doing, for the failure line when the SDK itself raises.
        self.doing = "starting"

    def ok(self, what: str) -> None:
        print(f"interop ok: {self.label}: {what}", flush=True)

    # ---- agent card -------------------------------------------------------------------------

    async def raw_card(self, url: str, v1: bool) -> dict[str, Any]:
        self.doing = f"GET {url}"
        headers = {"A2A-Version": "1.0"} if v1 else {}
        async with httpx.AsyncClient(timeout=30) as http:
            resp = await http.get(url, headers=headers)
        check(resp.status_code == 200, f"GET {url} status", 200, f"{resp.status_code} {resp.text[:300]}")
        card = resp.json()
        check(isinstance(card, dict), f"GET {url} is a JSON object", "object", card)
        return card

    async def make_client(self):
        agent_base = self.base + AGENT_PATH
        agent_url = agent_base
        if self.version == "0.3":
            # A v0.3 client reads the card's v0.3 fields (`url`, `protocolVersion`,
            # `preferredTransport`). The SDK prefers `supportedInterfaces` when a card has both,
            # so to make it take the v0.3 path we hand it the card as a v0.3-only peer would see
            # it: the same JSON without the v1.0 field. The SDK then maps the legacy fields to
            # an interface with protocolVersion 0.3 and picks its v0.3 compat transport.
            raw = await self.raw_card(agent_base + CARD_PATH, v1=False)
            for key, want in (("protocolVersion", "0.3.0"), ("preferredTransport", "JSONRPC")):
                check(raw.get(key) == want, f"v0.3 card field {key}", want, raw.get(key))
            check(
                str(raw.get("url", "")).rstrip("/") == agent_url,
                "v0.3 card field url",
                agent_url,
                raw.get("url"),
            )
            check(
                raw.get("capabilities", {}).get("streaming") is True,
                "card capabilities.streaming",
                True,
                raw.get("capabilities"),
            )
            legacy = {k: v for k, v in raw.items() if k != "supportedInterfaces"}
            card = parse_agent_card(legacy)
            factory = ClientFactory(ClientConfig(streaming=True))
            client = factory.create(card)
            self.ok(f"agent card at {AGENT_PATH}{CARD_PATH} read as a v0.3 card ({card.name})")
        else:
            # The SDK's own discovery: it asks with `A2A-Version: 1.0` and picks the interface.
            factory = ClientFactory(ClientConfig(streaming=True))
            self.doing = "resolving the agent card with the SDK"
            client = await factory.create_from_url(agent_base)
            card = client._card  # noqa: SLF001 - the resolved card, to check what was chosen
            ifaces = [MessageToDict(i) for i in card.supported_interfaces]
            check(
                any(
                    i.get("protocolVersion") in ("1.0", "1.0.0")
                    and i.get("protocolBinding") == "JSONRPC"
                    and i.get("url", "").rstrip("/") == agent_url
                    for i in ifaces
                ),
                "v1.0 card supportedInterfaces has JSONRPC 1.0 at the agent URL",
                {"url": agent_url, "protocolBinding": "JSONRPC", "protocolVersion": "1.0"},
                ifaces,
            )
            check(card.capabilities.streaming, "card capabilities.streaming", True, MessageToDict(card.capabilities))
            # What the SDK was served must be a strict v1.0 card: the schema allows no v0.3 field.
            raw = await self.raw_card(agent_base + CARD_PATH, v1=True)
            stray = sorted(set(raw) & {"url", "protocolVersion", "preferredTransport", "additionalInterfaces"})
            check(not stray, "v1.0 card (A2A-Version: 1.0) has no v0.3 field", [], stray)
            self.ok(f"agent card at {AGENT_PATH}{CARD_PATH} resolved by the SDK ({card.name})")

        transport = type(client._transport).__name__  # noqa: SLF001
        want_transport = "CompatJsonRpcTransport" if self.version == "0.3" else "JsonRpcTransport"
        check(transport == want_transport, "SDK transport chosen from the card", want_transport, transport)

        # The origin's well-known card (one-agent-per-origin convention) describes the same agent.
        origin = await self.raw_card(self.base + CARD_PATH, v1=self.version == "1.0")
        origin_card = parse_agent_card(origin)
        check(origin_card.name == card.name, "origin card names the default agent", card.name, origin_card.name)
        self.ok(f"origin card {CARD_PATH} is the default agent's")
        return client

    # ---- streaming --------------------------------------------------------------------------

    async def stream(self, client, message: Message, what: str) -> list[dict[str, Any]]:
        """Streams one message; returns every event as ProtoJSON (the SDK's v1.0 model)."""
        self.doing = f"streaming {what}"
        events: list[dict[str, Any]] = []

        async def collect() -> None:
            async for ev in client.send_message(SendMessageRequest(message=message)):
                events.append(MessageToDict(ev))

        try:
            await asyncio.wait_for(collect(), STEP_TIMEOUT_S)
        except asyncio.TimeoutError as e:
            raise CheckFailed(
                "stream ends", f"the stream closes within {STEP_TIMEOUT_S} s", summarize(events)
            ) from e
        check(len(events) > 0, "stream has events", "at least one event", events)
        return events

    async def get_task(self, client, task_id: str) -> dict[str, Any]:
        self.doing = f"tasks/get {task_id}"
        task = await asyncio.wait_for(
            client.get_task(GetTaskRequest(id=task_id, history_length=50)), STEP_TIMEOUT_S
        )
        return MessageToDict(task)

    # ---- scenarios --------------------------------------------------------------------------

    async def chat_with_tool(self, client) -> None:
        events = await self.stream(client, user_message("read readme.txt"), "'read readme.txt'")
        s = summarize(events)
        check(s["task_ids"] and len(s["task_ids"]) == 1, "one task id in the stream", "exactly one", s["task_ids"])
        check(len(s["context_ids"]) == 1, "one context id in the stream", "exactly one", s["context_ids"])
        check(s["final_state"] == "TASK_STATE_COMPLETED", "chat ends completed", "TASK_STATE_COMPLETED", s)
        check("TASK_STATE_WORKING" in s["states"], "chat goes through working", "TASK_STATE_WORKING", s["states"])
        self.ok("streamed chat 'read readme.txt' ends completed")

        calls = [c for c in s["calls"] if c.get("name") == "read_file"]
        check(len(calls) == 1, "one read_file function_call DataPart", 1, s["calls"])
        check(
            (calls[0].get("args") or {}).get("path") == "readme.txt",
            "read_file args.path",
            "readme.txt",
            calls[0].get("args"),
        )
        results = [r for r in s["results"] if r.get("name") == "read_file"]
        check(len(results) == 1, "one read_file function_response DataPart", 1, s["results"])
        check(results[0].get("id") == calls[0].get("id"), "function_response id = function_call id", calls[0].get("id"), results[0].get("id"))
        response = results[0].get("response")
        check(isinstance(response, dict) and not response.get("isError"), "read_file result is not an error", "response without isError", response)
        check(response_text(response) != "", "read_file result has the file's text", "non-empty text", response)
        if self.sandbox is not None:
            readme = (self.sandbox / "readme.txt").read_text()
            check(readme in response_text(response), "read_file result holds readme.txt's content", readme, response)
        self.ok("streamed read_file function_call and function_response DataParts")

        check(s["artifact_updates"] >= 2, "answer streams in several artifact chunks", ">= 2 artifact-update events", s["artifact_updates"])
        check(s["text"].strip() != "", "streamed answer text", "non-empty", s["text"])
        self.ok(f"streamed answer text in {s['artifact_updates']} chunks")

        task_id = s["task_ids"][0]
        task = await self.get_task(client, task_id)
        check(task.get("id") == task_id, "tasks/get id", task_id, task.get("id"))
        check(task.get("contextId") == s["context_ids"][0], "tasks/get contextId", s["context_ids"][0], task.get("contextId"))
        state = task.get("status", {}).get("state")
        check(state == "TASK_STATE_COMPLETED", "tasks/get state", "TASK_STATE_COMPLETED", state)
        history_texts = [t for m in task.get("history", []) for t in texts_of(m.get("parts", []))]
        check("read readme.txt" in history_texts, "tasks/get history holds the user's message", "read readme.txt", history_texts)
        stored = "".join(t for a in task.get("artifacts", []) for t in texts_of(a.get("parts", [])))
        check(stored == s["text"], "tasks/get artifacts = the streamed answer", s["text"], stored)
        self.ok("tasks/get returns the completed task with history and the answer artifact")

    async def approval_flow(self, client) -> None:
        events = await self.stream(client, user_message("write a.txt: hi and delete old.txt"), "'write a.txt: hi and delete old.txt'")
        s = summarize(events)
        check(s["final_state"] == "TASK_STATE_INPUT_REQUIRED", "turn pauses for approval", "TASK_STATE_INPUT_REQUIRED", s)
        check(len(s["task_ids"]) == 1 and len(s["context_ids"]) == 1, "one task and context", "one each", s)
        task_id, context_id = s["task_ids"][0], s["context_ids"][0]
        last = s["last_status_event"]
        check(
            (last.get("metadata") or {}).get("interrupt_type") == "tool_approval",
            "final status-update metadata.interrupt_type",
            "tool_approval",
            last.get("metadata"),
        )
        interrupt = interrupt_of(s["final_message"])
        check(interrupt is not None, "input-required message has an interrupt_data DataPart", "DataPart with metadata kagent_type=interrupt_data", s["final_message"])
        check(interrupt.get("interrupt_type") == "tool_approval", "interrupt_type", "tool_approval", interrupt)
        requests = interrupt.get("action_requests") or []
        got = [(r.get("name"), r.get("args")) for r in requests]
        want = [("write_file", {"path": "a.txt", "content": "hi"}), ("delete_file", {"path": "old.txt"})]
        check(got == want, "action_requests (one batch: write then delete)", want, got)
        check(all(r.get("id") for r in requests), "each action request has an id", "ids", requests)
        check(not s["results"], "no held call ran before a decision", "no function_response", s["results"])
        if self.sandbox is not None:
            check(not (self.sandbox / "a.txt").exists(), "a.txt not written before approval", "absent", "present")
            check((self.sandbox / "old.txt").exists(), "old.txt not deleted before approval", "present", "absent")
        self.ok("'write a.txt: hi and delete old.txt' ends input-required with the interrupt DataPart")

        task = await self.get_task(client, task_id)
        state = task.get("status", {}).get("state")
        check(state == "TASK_STATE_INPUT_REQUIRED", "tasks/get on the paused task", "TASK_STATE_INPUT_REQUIRED", state)
        paused = interrupt_of(task.get("status", {}).get("message") or {})
        check(paused == interrupt, "tasks/get status message holds the same interrupt", interrupt, paused)
        self.ok("tasks/get shows the paused task with the same pending batch")

        decision = Message(
            role=Role.ROLE_USER,
            message_id=str(uuid.uuid4()),
            task_id=task_id,
            context_id=context_id,
            parts=[data_part({"decision_type": "approve"}), Part(text="Approved")],
        )
        events = await self.stream(client, decision, "the approve decision on the paused task")
        r = summarize(events)
        check(r["task_ids"] == [task_id], "resume continues the same task", [task_id], r["task_ids"])
        check(r["final_state"] == "TASK_STATE_COMPLETED", "resumed task completes", "TASK_STATE_COMPLETED", r)
        by_id = {x.get("id"): x for x in r["results"]}
        for req in requests:
            res = by_id.get(req.get("id"))
            check(res is not None, f"function_response for {req.get('name')} ({req.get('id')})", "present", r["results"])
            check(res.get("name") == req.get("name"), "function_response name", req.get("name"), res.get("name"))
            resp = res.get("response")
            check(isinstance(resp, dict) and not resp.get("isError"), f"{req.get('name')} succeeded", "response without isError", resp)
        self.ok("approve decision on the same task resumes it: both calls ran, task completed")

        if self.sandbox is not None:
            a = self.sandbox / "a.txt"
            check(a.is_file(), "a.txt in the sandbox", str(a), "missing")
            check(a.read_text() == "hi", "a.txt content", "hi", a.read_text())
            check(not (self.sandbox / "old.txt").exists(), "old.txt deleted from the sandbox", "absent", "present")
            self.ok(f"sandbox has a.txt = 'hi' and no old.txt ({self.sandbox})")

        task = await self.get_task(client, task_id)
        state = task.get("status", {}).get("state")
        check(state == "TASK_STATE_COMPLETED", "tasks/get after the resume", "TASK_STATE_COMPLETED", state)
        self.ok("tasks/get shows the resumed task completed")

    async def push_notification(self, client) -> None:
        receiver = PushReceiver()
        try:
            await self.push_to(client, receiver)
        finally:
            receiver.close()

    async def push_to(self, client, receiver: "PushReceiver") -> None:
        # `then` makes a second round, so the task pauses twice: the config is set on the first
        # pause, and the second is pushed.
        events = await self.stream(
            client, user_message("write push1.txt: one then write push2.txt: two"), "a task that pauses twice"
        )
        s = summarize(events)
        check(s["final_state"] == "TASK_STATE_INPUT_REQUIRED", "the task pauses", "TASK_STATE_INPUT_REQUIRED", s)
        task_id, context_id = s["task_ids"][0], s["context_ids"][0]

        self.doing = "create_task_push_notification_config"
        token = "interop-" + uuid.uuid4().hex
        config = await asyncio.wait_for(
            client.create_task_push_notification_config(
                TaskPushNotificationConfig(task_id=task_id, url=receiver.url, token=token)
            ),
            STEP_TIMEOUT_S,
        )
        check(config.task_id == task_id, "the config set names the task", task_id, MessageToDict(config))
        check(config.url == receiver.url, "the config set has the receiver's URL", receiver.url, MessageToDict(config))
        check(config.id != "", "the server gave the config an id", "an id", MessageToDict(config))
        self.ok("push notification config set through create_task_push_notification_config")

        decision = Message(
            role=Role.ROLE_USER,
            message_id=str(uuid.uuid4()),
            task_id=task_id,
            context_id=context_id,
            parts=[data_part({"decision_type": "approve"})],
        )
        events = await self.stream(client, decision, "the approval that leads to the second pause")
        r = summarize(events)
        check(r["final_state"] == "TASK_STATE_INPUT_REQUIRED", "the task pauses again", "TASK_STATE_INPUT_REQUIRED", r)

        self.doing = "waiting for the push notification"
        push = await asyncio.to_thread(receiver.next, STEP_TIMEOUT_S)
        check(push is not None, "a push notification arrives", f"a POST to {receiver.url}", "nothing")
        headers, body = push
        pushed = json.loads(body)
        task = pushed if self.version == "0.3" else pushed.get("task", {})
        want_state = "input-required" if self.version == "0.3" else "TASK_STATE_INPUT_REQUIRED"
        check(task.get("id") == task_id, "the push is the task", task_id, pushed)
        check(task.get("status", {}).get("state") == want_state, "the push's state", want_state, pushed)
        check(headers.get("x-a2a-notification-token") == token, "the push carries the config's token", token, headers)

        self.doing = "verifying the push's JWT with PyJWKClient"
        signature = headers.get("x-a2a-notification-signature", "")
        jwks = jwt.PyJWKClient(self.base + "/.well-known/jwks.json")
        key = jwks.get_signing_key_from_jwt(signature)
        claims = jwt.decode(
            signature,
            key,
            algorithms=["EdDSA"],
            audience=receiver.url,
            issuer="signoff",
            options={"require": ["iss", "aud", "iat", "exp", "jti"]},
        )
        check(claims.get("taskId") == task_id, "the JWT's taskId", task_id, claims)
        digest = hashlib.sha256(body).hexdigest()
        check(claims.get("request_body_sha256") == digest, "the JWT covers the body", digest, claims)
        check(
            headers.get("authorization") == f"Bearer {signature}",
            "without credentials of its own the JWT is the bearer",
            f"Bearer {signature[:20]}…",
            headers.get("authorization"),
        )
        # A body changed on the way no longer matches the signed hash.
        forged = hashlib.sha256(body.replace(b"push", b"PUSH")).hexdigest()
        check(forged != claims["request_body_sha256"], "a changed body is told apart", "a different hash", forged)
        self.ok("push notification of input-required received; its JWT verified with PyJWKClient and the body hash matches")

    async def main(self) -> None:
        client = await self.make_client()
        try:
            await self.chat_with_tool(client)
            await self.approval_flow(client)
            await self.push_notification(client)
        finally:
            await client.close()


class PushReceiver:
    """A push notification receiver on 127.0.0.1, served by a thread: each POST is kept (its
    headers, lowercased, and its exact body bytes) and answered 200."""

    def __init__(self) -> None:
        got: queue.Queue[tuple[dict[str, str], bytes]] = queue.Queue()

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 - the http.server hook
                length = int(self.headers.get("Content-Length", "0"))
                body = self.rfile.read(length)
                got.put(({k.lower(): v for k, v in self.headers.items()}, body))
                self.send_response(200)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, *args: Any) -> None:
                pass

        self.got = got
        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/push"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def next(self, timeout: float) -> tuple[dict[str, str], bytes] | None:
        try:
            return self.got.get(timeout=timeout)
        except queue.Empty:
            return None

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


# ---- helpers over ProtoJSON dicts ---------------------------------------------------------------


def user_message(text: str) -> Message:
    return Message(role=Role.ROLE_USER, message_id=str(uuid.uuid4()), parts=[Part(text=text)])


def data_part(data: dict[str, Any]) -> Part:
    return Part(data=ParseDict(data, Value()))


def texts_of(parts: list[dict[str, Any]]) -> list[str]:
    return [p["text"] for p in parts if "text" in p]


def data_parts(parts: list[dict[str, Any]], kagent_type: str) -> list[dict[str, Any]]:
    return [
        p["data"]
        for p in parts
        if isinstance(p.get("data"), dict) and (p.get("metadata") or {}).get("kagent_type") == kagent_type
    ]


def interrupt_of(message: dict[str, Any]) -> dict[str, Any] | None:
    found = data_parts(message.get("parts", []), "interrupt_data")
    return found[0] if found else None


def response_text(response: Any) -> str:
    """Any text in a tool result, however the tool shaped it (MCP content list, plain fields)."""
    if isinstance(response, str):
        return response
    if isinstance(response, dict):
        return "".join(response_text(v) for v in response.values())
    if isinstance(response, list):
        return "".join(response_text(v) for v in response)
    return ""


def summarize(events: list[dict[str, Any]]) -> dict[str, Any]:
    """What a stream said: ids, states in order, tool calls and results, the streamed answer."""
    task_ids: list[str] = []
    context_ids: list[str] = []
    states: list[str] = []
    calls: list[dict[str, Any]] = []
    results: list[dict[str, Any]] = []
    chunks: dict[str, str] = {}
    artifact_updates = 0
    final_message: dict[str, Any] = {}
    last_status_event: dict[str, Any] = {}

    def note(tid: str | None, cid: str | None) -> None:
        if tid and tid not in task_ids:
            task_ids.append(tid)
        if cid and cid not in context_ids:
            context_ids.append(cid)

    def note_message(msg: dict[str, Any]) -> None:
        parts = msg.get("parts", [])
        calls.extend(data_parts(parts, "function_call"))
        results.extend(data_parts(parts, "function_response"))

    for ev in events:
        if "task" in ev:
            t = ev["task"]
            note(t.get("id"), t.get("contextId"))
            st = t.get("status", {})
            states.append(st.get("state", ""))
            final_message = st.get("message") or {}
        elif "statusUpdate" in ev:
            u = ev["statusUpdate"]
            note(u.get("taskId"), u.get("contextId"))
            st = u.get("status", {})
            states.append(st.get("state", ""))
            msg = st.get("message") or {}
            note_message(msg)
            final_message = msg
            last_status_event = u
        elif "artifactUpdate" in ev:
            u = ev["artifactUpdate"]
            note(u.get("taskId"), u.get("contextId"))
            art = u.get("artifact", {})
            aid = art.get("artifactId", "")
            text = "".join(texts_of(art.get("parts", [])))
            chunks[aid] = (chunks.get(aid, "") + text) if u.get("append") else text
            artifact_updates += 1
        elif "message" in ev:
            m = ev["message"]
            note(m.get("taskId"), m.get("contextId"))
            note_message(m)
    return {
        "task_ids": task_ids,
        "context_ids": context_ids,
        "states": states,
        "final_state": states[-1] if states else None,
        "calls": calls,
        "results": results,
        "text": "".join(chunks.values()),
        "artifact_updates": artifact_updates,
        "final_message": final_message,
        "last_status_event": last_status_event,
    }


def show(value: Any) -> str:
    text = json.dumps(value, indent=None, default=str, ensure_ascii=False)
    return text if len(text) <= 4000 else text[:4000] + " …"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--base", required=True, help="server origin, e.g. http://127.0.0.1:8080")
    ap.add_argument("--version", required=True, choices=["0.3", "1.0"])
    ap.add_argument("--sandbox", type=Path, help="the demo agent's sandbox folder, to check files")
    args = ap.parse_args()
    run = Run(args.base, args.version, args.sandbox)
    try:
        asyncio.run(run.main())
    except CheckFailed as e:
        print(f"interop FAIL: {run.label}: {e.what}", file=sys.stderr)
        print(f"  expected: {show(e.expected)}", file=sys.stderr)
        print(f"  got:      {show(e.got)}", file=sys.stderr)
        return 1
    except Exception as e:  # noqa: BLE001 - any SDK/transport error is a failed interop check
        print(f"interop FAIL: {run.label}: {run.doing}", file=sys.stderr)
        print("  expected: the SDK call to succeed", file=sys.stderr)
        print(f"  got:      {type(e).__name__}: {e}", file=sys.stderr)
        if os.environ.get("INTEROP_DEBUG"):
            traceback.print_exc()
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
