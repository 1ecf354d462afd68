#!/usr/bin/env python3
"""What a person waits for when the UI loads, on a slow link: headless Chromium through
chromedriver, with CDP's network (1.6 Mbit/s down, 750 kbit/s up, 150 ms RTT) and CPU (4x
slower) emulation, against a running Signoff server on loopback. Prints, for a fresh chat and
for a stored chat, the UI bytes fetched before the composer is usable (each file counted at its
brotli size in dist/, as the server sends it to browsers that accept brotli), the total of all
UI files, and the median (of --runs, each with a fresh profile) of the time from navigation to
a usable composer; and the time from the first click on Approvals to its page.

Standard library only. scripts/ui-load-bench.sh starts the server and runs this."""

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request

# Records, in the page's own clock (ms from navigation start), when the composer is first
# usable and when the Approvals page is first shown after the click the bench makes.
PROBE = """
(() => {
  const mark = () => {
    const input = document.querySelector('[data-testid=composer-input]');
    if (window.__composerAt === undefined && input && !input.disabled) {
      window.__composerAt = performance.now();
    }
    if (window.__approvalsClickAt !== undefined && window.__approvalsAt === undefined
        && document.querySelector('[data-testid=approvals-page] [data-testid=approvals-count]')) {
      window.__approvalsAt = performance.now();
    }
  };
  new MutationObserver(mark).observe(document, {subtree: true, childList: true, attributes: true});
})();
"""


def call(method, url, body=None):
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(url, data=data, method=method,
                                     headers={"content-type": "application/json"})
    with urllib.request.urlopen(request, timeout=120) as response:
        return json.loads(response.read() or b"null")


class Browser:
    """One chromedriver session with a fresh profile."""

    def __init__(self, driver, chromium):
        self.driver = driver
        self.profile = tempfile.TemporaryDirectory()
        args = ["--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                "--disable-quic", "--no-first-run", "--disable-background-networking",
                "--disable-component-update", "--disable-sync", "--disable-extensions",
                "--window-size=1280,900", f"--user-data-dir={self.profile.name}"]
        caps = {"capabilities": {"alwaysMatch": {"browserName": "chrome", "goog:chromeOptions": {
            "binary": chromium, "args": args}}}}
        self.session = call("POST", f"{driver}/session", caps)["value"]["sessionId"]
        self.base = f"{driver}/session/{self.session}"

    def cdp(self, cmd, params=None):
        return call("POST", f"{self.base}/goog/cdp/execute", {"cmd": cmd, "params": params or {}})

    def js(self, script):
        return call("POST", f"{self.base}/execute/sync", {"script": script, "args": []})["value"]

    def wait(self, script, what, limit=60.0):
        start = time.monotonic()
        while time.monotonic() - start < limit:
            value = self.js(script)
            if value is not None:
                return value
            time.sleep(0.05)
        raise RuntimeError(f"timed out waiting for {what}")

    def close(self):
        try:
            call("DELETE", self.base)
        finally:
            self.profile.cleanup()


def slow(browser):
    browser.cdp("Network.enable")
    browser.cdp("Network.emulateNetworkConditions", {
        "offline": False, "latency": 150,
        "downloadThroughput": 1.6e6 / 8, "uploadThroughput": 750e3 / 8})
    browser.cdp("Emulation.setCPUThrottlingRate", {"rate": 4})
    # Chromium offers brotli over HTTPS only; the server on loopback is plain HTTP. Asking for
    # it lets the emulated link carry the bytes a deployment behind TLS sends.
    browser.cdp("Network.setExtraHTTPHeaders", {"headers": {"Accept-Encoding": "br, gzip"}})
    browser.cdp("Page.addScriptToEvaluateOnNewDocument", {"source": PROBE})


def ui_files(dist):
    """Each UI file's brotli size, by its URL path."""
    sizes = {}
    for name in os.listdir(dist):
        if name.endswith((".wasm", ".js", ".css", ".html")):
            br = os.path.join(dist, name + ".br")
            sizes["/" + name] = os.path.getsize(br if os.path.exists(br) else os.path.join(dist, name))
    return sizes


FETCHED = """
return performance.getEntriesByType('resource').concat(performance.getEntriesByType('navigation'))
  .map(e => [new URL(e.name).pathname, e.responseEnd]);
"""


def one_run(args, path, sizes, approvals):
    browser = Browser(args.driver, args.chromium)
    try:
        slow(browser)
        call("POST", f"{browser.base}/url", {"url": args.base + path})
        usable = browser.wait("return window.__composerAt ?? null", "a usable composer")
        fetched = browser.js(FETCHED)
        ui_bytes = sum(sizes.get("/index.html" if p.startswith("/agents") else p, 0)
                       for p, end in fetched if end <= usable and (p in sizes or p.startswith("/agents")))
        click = None
        if approvals:
            browser.js("window.__approvalsClickAt = performance.now();"
                       "document.querySelector('[data-testid=approvals-link]').click();")
            shown = browser.wait("return window.__approvalsAt ?? null", "the Approvals page")
            click = shown - browser.js("return window.__approvalsClickAt")
        return usable, ui_bytes, click
    finally:
        browser.close()


def seed(base, turns):
    """A stored chat of 2 x turns messages: every other turn lists files (a tool card)."""
    context = None
    for turn in range(turns):
        text = "list files" if turn % 2 == 0 else f"message {turn}: hello"
        message = {"kind": "message", "role": "user", "messageId": f"bench-{turn}",
                   "parts": [{"kind": "text", "text": text}]}
        if context:
            message["contextId"] = context
        answer = call("POST", f"{base}/api/a2a/default/demo",
                      {"jsonrpc": "2.0", "id": turn, "method": "message/send",
                       "params": {"message": message}})
        if "error" in answer:
            raise RuntimeError(f"seeding failed: {answer['error']}")
        context = answer["result"]["contextId"]
    return context


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--base", required=True, help="the server, e.g. http://127.0.0.1:8080")
    parser.add_argument("--dist", required=True, help="the dist/ folder the server serves")
    parser.add_argument("--driver", required=True, help="chromedriver, e.g. http://127.0.0.1:9515")
    parser.add_argument("--chromium", default="/usr/bin/chromium")
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("--turns", type=int, default=100)
    args = parser.parse_args()
    sizes = ui_files(args.dist)
    session = seed(args.base, args.turns)
    total = sum(size for path, size in sizes.items() if path != "/index.html") + sizes.get("/index.html", 0)
    print(f"UI files, all chunks, brotli: {total} bytes")
    for name, path, approvals in [
        ("fresh chat", "/agents/default/demo/chat", True),
        (f"stored chat ({2 * args.turns} messages, {args.turns // 2} tool cards)",
         f"/agents/default/demo/chat/{session}", False),
    ]:
        runs = [one_run(args, path, sizes, approvals) for _ in range(args.runs)]
        usable = statistics.median(run[0] for run in runs)
        ui_bytes = statistics.median(run[1] for run in runs)
        print(f"{name}: UI bytes before a usable composer {ui_bytes:.0f} (brotli); "
              f"usable composer median {usable / 1000:.2f} s "
              f"(min {min(r[0] for r in runs) / 1000:.2f}, max {max(r[0] for r in runs) / 1000:.2f})")
        if approvals:
            clicks = [run[2] for run in runs]
            print(f"{name}: Approvals page shown after its first click, median "
                  f"{statistics.median(clicks) / 1000:.2f} s (max {max(clicks) / 1000:.2f})")
    sys.stdout.flush()


if __name__ == "__main__":
    main()
