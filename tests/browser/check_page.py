#!/usr/bin/env python3
"""Opens a page in headless Chromium with the network off and reports, as
one JSON object on stdout, what a reader's browser did with it.

    check_page.py PAGE.html SCREENSHOT.png [EXPRESSION ...]

Chromium is driven over the DevTools protocol on a pipe
(``--remote-debugging-pipe``: fd 3 in, fd 4 out, messages ending in NUL),
with the standard library only. The page loads from ``file://`` with
network emulation offline; every request other than the page itself is
recorded, as are uncaught exceptions, console errors and log errors (a
Content-Security-Policy violation is one). After the load event each
EXPRESSION is evaluated in the page and its value returned. The
screenshot is 1280x800; ``ink`` is the share of its pixels that are not
the page's white background.

Output: {"title", "requests", "errors", "values", "ink", "width", "height"}.
Exit 0 when the page was opened and measured (what it found is for the
caller to judge), 2 on a usage error, 3 when Chromium could not be driven.
"""

import base64
import fcntl
import json
import os
import shutil
import struct
import subprocess
import sys
import tempfile
import time
import zlib

TIMEOUT_S = 60


class Browser:
    def __init__(self, binary):
        self.profile = tempfile.mkdtemp(prefix="sb-chromium-")
        to_child, self.w = os.pipe()
        self.r, from_child = os.pipe()
        # Above 4, so that putting them at 3 and 4 in the child never
        # overwrites one with the other; closed on exec unless duplicated.
        high = lambda fd: (fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, 10), os.close(fd))[0]  # noqa: E731
        to_child, from_child = high(to_child), high(from_child)
        # fd 3 is what Chromium reads, fd 4 what it writes.
        flags = [
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-quic",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--disable-extensions",
            "--remote-debugging-pipe",
            "--user-data-dir=" + self.profile,
            "about:blank",
        ]

        def fds():
            os.dup2(to_child, 3)
            os.dup2(from_child, 4)

        self.proc = subprocess.Popen(
            [binary] + flags,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            preexec_fn=fds,
            # Only 3 and 4 (made inheritable by dup2) reach Chromium.
            close_fds=False,
            start_new_session=True,
        )
        os.close(to_child)
        os.close(from_child)
        self.next_id = 0
        self.buffer = b""
        self.events = []
        self.deadline = time.monotonic() + TIMEOUT_S

    def close(self):
        try:
            os.killpg(self.proc.pid, 9)
        except ProcessLookupError:
            pass
        self.proc.wait(timeout=TIMEOUT_S)
        os.close(self.w)
        os.close(self.r)
        shutil.rmtree(self.profile, ignore_errors=True)

    def _read_message(self):
        import select

        while b"\0" not in self.buffer:
            left = self.deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError("Chromium did not answer in %d s" % TIMEOUT_S)
            ready, _, _ = select.select([self.r], [], [], left)
            if not ready:
                continue
            chunk = os.read(self.r, 1 << 20)
            if not chunk:
                raise EOFError("Chromium closed its pipe")
            self.buffer += chunk
        msg, self.buffer = self.buffer.split(b"\0", 1)
        return json.loads(msg)

    def call(self, method, params=None, session=None):
        self.next_id += 1
        msg = {"id": self.next_id, "method": method, "params": params or {}}
        if session:
            msg["sessionId"] = session
        os.write(self.w, json.dumps(msg).encode() + b"\0")
        while True:
            m = self._read_message()
            if m.get("id") == self.next_id:
                if "error" in m:
                    raise RuntimeError("%s: %s" % (method, m["error"]))
                return m.get("result", {})
            self.events.append(m)

    def wait_for(self, method):
        for i, m in enumerate(self.events):
            if m.get("method") == method:
                return self.events.pop(i)
        while True:
            m = self._read_message()
            if m.get("method") == method:
                return m
            self.events.append(m)


def ink(png):
    """The share of a PNG's pixels that are not white (8-bit RGB or RGBA)."""
    assert png[:8] == b"\x89PNG\r\n\x1a\n"
    pos, idat, width, height, kind = 8, b"", 0, 0, 0
    while pos < len(png):
        (n,) = struct.unpack(">I", png[pos : pos + 4])
        tag, body = png[pos + 4 : pos + 8], png[pos + 8 : pos + 8 + n]
        if tag == b"IHDR":
            width, height, depth, kind = struct.unpack(">IIBB", body[:10])
            assert depth == 8 and kind in (2, 6), (depth, kind)
        elif tag == b"IDAT":
            idat += body
        pos += 12 + n
    bpp = 3 if kind == 2 else 4
    raw = zlib.decompress(idat)
    stride = width * bpp
    prev = bytearray(stride)
    inked = 0
    for y in range(height):
        f = raw[y * (stride + 1)]
        line = bytearray(raw[y * (stride + 1) + 1 : (y + 1) * (stride + 1)])
        for i in range(stride):
            a = line[i - bpp] if i >= bpp else 0
            b = prev[i]
            c = prev[i - bpp] if i >= bpp else 0
            if f == 1:
                line[i] = (line[i] + a) & 255
            elif f == 2:
                line[i] = (line[i] + b) & 255
            elif f == 3:
                line[i] = (line[i] + (a + b) // 2) & 255
            elif f == 4:
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                pred = a if pa <= pb and pa <= pc else (b if pb <= pc else c)
                line[i] = (line[i] + pred) & 255
        for x in range(0, stride, bpp):
            if line[x] < 250 or line[x + 1] < 250 or line[x + 2] < 250:
                inked += 1
        prev = line
    return inked / float(width * height), width, height


def main(argv):
    if len(argv) < 3:
        print(__doc__, file=sys.stderr)
        return 2
    page, shot, expressions = os.path.abspath(argv[1]), argv[2], argv[3:]
    binary = os.environ.get("STAGEBENCH_CHROMIUM") or shutil.which("chromium") or shutil.which("chromium-browser")
    if not binary:
        print("no chromium on PATH (apt-get install chromium)", file=sys.stderr)
        return 3
    url = "file://" + page
    b = Browser(binary)
    try:
        target = b.call("Target.createTarget", {"url": "about:blank"})["targetId"]
        s = b.call("Target.attachToTarget", {"targetId": target, "flatten": True})["sessionId"]
        for domain in ("Page", "Runtime", "Network", "Log"):
            b.call(domain + ".enable", session=s)
        b.call(
            "Network.emulateNetworkConditions",
            {"offline": True, "latency": 0, "downloadThroughput": -1, "uploadThroughput": -1},
            session=s,
        )
        b.call(
            "Emulation.setDeviceMetricsOverride",
            {"width": 1280, "height": 800, "deviceScaleFactor": 1, "mobile": False},
            session=s,
        )
        b.call("Page.navigate", {"url": url}, session=s)
        b.wait_for("Page.loadEventFired")
        values = []
        for e in expressions:
            r = b.call("Runtime.evaluate", {"expression": e, "returnByValue": True}, session=s)
            if "exceptionDetails" in r:
                values.append({"exception": r["exceptionDetails"].get("text", "")})
            else:
                values.append(r.get("result", {}).get("value"))
        title = b.call("Runtime.evaluate", {"expression": "document.title", "returnByValue": True}, session=s)
        png = base64.b64decode(
            b.call("Page.captureScreenshot", {"format": "png"}, session=s)["data"]
        )
        with open(shot, "wb") as f:
            f.write(png)
        requests, errors = [], []
        for m in b.events:
            method, p = m.get("method"), m.get("params", {})
            if method == "Network.requestWillBeSent" and p.get("request", {}).get("url") != url:
                requests.append(p["request"]["url"])
            elif method == "Runtime.exceptionThrown":
                errors.append(p.get("exceptionDetails", {}).get("text", "exception"))
            elif method == "Runtime.consoleAPICalled" and p.get("type") in ("error", "assert"):
                errors.append("console: " + " ".join(str(a.get("value")) for a in p.get("args", [])))
            elif method == "Log.entryAdded" and p.get("entry", {}).get("level") == "error":
                errors.append("log: " + p["entry"].get("text", ""))
        share, width, height = ink(png)
        out = {
            "title": title.get("result", {}).get("value"),
            "requests": requests,
            "errors": errors,
            "values": values,
            "ink": share,
            "width": width,
            "height": height,
        }
    except (OSError, EOFError, TimeoutError, RuntimeError) as e:
        print("could not drive chromium: %s" % e, file=sys.stderr)
        return 3
    finally:
        b.close()
    print(json.dumps(out))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
