"""Clicks an action of the one notification Signoff's service worker shows, inside the worker,
through Chromium's own DevTools endpoint (chromedriver reaches pages, not workers): a
`notificationclick` event with that action is dispatched to the worker's real handler (the
caller then watches what the worker shows, as a person would).

    worker_click.py DEVTOOLS_PORT ORIGIN ACTION

Prints what the worker answered ("clicked", or why not) as JSON; exits 1 on a protocol error.
"""

import json
import sys
import time
import urllib.request

import websocket

CLICK = """(async () => {
  const shown = await self.registration.getNotifications();
  if (shown.length !== 1) return "the worker shows " + shown.length + " notifications";
  self.dispatchEvent(new NotificationEvent("notificationclick", {notification: shown[0], action: %s}));
  return "clicked";
})()"""


def worker_target(port, origin):
    """The service worker of `origin` among the browser's targets, once it is listed."""
    for _ in range(100):
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/json/list") as answer:
            targets = json.load(answer)
        for target in targets:
            if target.get("type") == "service_worker" and target["url"].startswith(origin):
                return target
        time.sleep(0.1)
    raise SystemExit(f"no service worker of {origin} among {[t.get('url') for t in targets]}")


def main():
    port, origin, action = sys.argv[1:4]
    target = worker_target(port, origin)
    ws = websocket.create_connection(target["webSocketDebuggerUrl"], suppress_origin=True, timeout=30)
    # A worker DevTools attaches to waits for the debugger first (it says only
    # Inspector.workerScriptLoaded): let it run.
    ws.send(json.dumps({"id": 0, "method": "Runtime.runIfWaitingForDebugger"}))
    ws.send(json.dumps({
        "id": 1,
        "method": "Runtime.evaluate",
        "params": {"expression": CLICK % json.dumps(action), "awaitPromise": True,
                   "returnByValue": True},
    }))
    while True:
        message = json.loads(ws.recv())
        if message.get("id") == 1:
            break
    # Stay attached a while: the dispatched event's waitUntil keeps no worker alive, and once
    # DevTools lets go a loaded browser may stop the worker in the middle of its decision's fetch.
    time.sleep(3)
    ws.close()
    result = message.get("result", {})
    if "exceptionDetails" in result or "error" in message:
        print(json.dumps(message), file=sys.stderr)
        sys.exit(1)
    print(json.dumps(result["result"].get("value")))


if __name__ == "__main__":
    main()
