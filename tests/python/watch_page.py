"""Looks at a node's live page (core/observe/live_page.html) in a real browser, as a person
debugging a stall would: Debian's headless Chromium, driven over its DevTools protocol with
Debian's python3-websocket. It waits, inside the page, until the page has redrawn POLLS times
and its delivered count rose; then prints what the page shows as one JSON line (the actors
drawn, the stages, the first and last delivered counts, the diagnosis) and saves a screenshot.
Exit 1, saying what the page showed, when that does not happen within the deadline.

    watch_page.py URL SCREENSHOT.png [POLLS] [DEADLINE_S]
"""
import base64
import json
import shutil
import subprocess
import sys
import tempfile
import urllib.request

import websocket

WAIT_IN_PAGE = """
new Promise((resolve, reject) => {
  const deadline = Date.now() + %(deadline_ms)d;
  const seen = () => {
    const b = document.body;
    return {
      polls: Number(b.dataset.polls),
      first: Number(b.dataset.firstDelivered),
      delivered: Number(b.dataset.delivered),
      actors: [...document.querySelectorAll("[data-actor]")].map(e => e.dataset.actor),
      stages: [...document.querySelectorAll("[data-stage]")].map(e => e.dataset.stage),
      diagnosis: document.getElementById("diagnosis").textContent,
      status: document.getElementById("status").textContent,
    };
  };
  (function check() {
    const s = seen();
    if (s.polls >= %(polls)d && s.delivered > s.first) resolve(JSON.stringify(s));
    else if (Date.now() > deadline) reject(new Error("the page showed " + JSON.stringify(s)));
    else setTimeout(check, 100);
  })();
})
"""


class devtools:
    """One page's DevTools connection: commands in order, events read past."""

    def __init__(self, url, timeout_s):
        self.ws = websocket.create_connection(url, timeout=timeout_s)
        self.next_id = 0
        self.events = []

    def call(self, method, **params):
        self.next_id += 1
        self.ws.send(json.dumps({"id": self.next_id, "method": method, "params": params}))
        while True:
            message = json.loads(self.ws.recv())
            if message.get("id") == self.next_id:
                if "error" in message:
                    raise RuntimeError(f"{method}: {message['error']}")
                return message["result"]
            self.events.append(message.get("method"))

    def wait_for(self, event):
        while event not in self.events:
            self.events.append(json.loads(self.ws.recv()).get("method"))


def start_chromium(profile):
    browser = subprocess.Popen(
        ["chromium", "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
         "--window-size=1400,760", "--remote-debugging-port=0", "--user-data-dir=" + profile,
         "about:blank"],
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    for line in browser.stderr:  # ends when Chromium does
        if line.startswith("DevTools listening on ws://"):
            port = line.split("ws://", 1)[1].split("/", 1)[0].rsplit(":", 1)[1]
            return browser, int(port)
    browser.wait()
    raise RuntimeError("chromium ended before it listened for DevTools")


def page_socket(port):
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/json/list", timeout=30) as r:
        pages = [t for t in json.load(r) if t["type"] == "page"]
    return pages[0]["webSocketDebuggerUrl"]


def main(url, screenshot, polls=5, deadline_s=60):
    profile = tempfile.mkdtemp(prefix="conveyor-chromium-")
    browser = None
    try:
        browser, port = start_chromium(profile)
        page = devtools(page_socket(port), deadline_s + 30)
        page.call("Page.enable")
        page.call("Page.navigate", url=url)
        page.wait_for("Page.loadEventFired")
        result = page.call("Runtime.evaluate", awaitPromise=True, returnByValue=True,
                           expression=WAIT_IN_PAGE % {"deadline_ms": deadline_s * 1000,
                                                      "polls": polls})
        if "exceptionDetails" in result:
            print(result["exceptionDetails"].get("exception", {}).get("description"),
                  file=sys.stderr)
            return 1
        shot = page.call("Page.captureScreenshot", format="png")
        with open(screenshot, "wb") as f:
            f.write(base64.b64decode(shot["data"]))
        print(result["result"]["value"])
        return 0
    finally:
        if browser is not None:
            browser.kill()
            browser.wait()
        shutil.rmtree(profile, ignore_errors=True)


if __name__ == "__main__":
    args = sys.argv[1:]
    sys.exit(main(args[0], args[1], *(int(a) for a in args[2:])))
