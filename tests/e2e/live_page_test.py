#!/usr/bin/env python3
"""edgemond's live page in a real browser.

edgemon-sim (orin-nano) + edgemond --metrics-listen on a loopback port, 250 ms
frames; a window measured with `edgemon record -- sleep 1` and a mark left
open. Debian's headless chromium, driven over the DevTools protocol on a pipe
(--remote-debugging-pipe: JSON messages on fds 3 and 4, no websocket module
needed), opens http://127.0.0.1:PORT/ and the checks read its DOM:
  * every rail of the board in the rail tree (sub-rails under VDD_IN) with a
    value, drawn in the live chart and in the history chart;
  * the values change with the simulator between two loads of the page, and
    a sensor that reads garbage (the fan's tachometer) shows "\u2014", not 0;
  * the recorded window and the open mark drawn on the history's time axis,
    the window's energy shown on click as /api/energy has it;
  * every request the browser made went to the daemon (the DevTools network
    events and the page's own Performance API list), none elsewhere;
  * edgemond stops at SIGTERM with the page still streaming.
A screenshot is kept under --artifacts (live-page.png).

chromium in a container, as root: --headless=new --no-sandbox --disable-gpu
--disable-dev-shm-usage, a throwaway --user-data-dir, and
--host-resolver-rules="MAP * ~NOTFOUND, EXCLUDE 127.0.0.1": no host name
resolves, so nothing but the daemon could answer.

  live_page_test.py --edgemon B --edgemond B --sim B --fixtures tests/fixtures \
                    --chromium /usr/bin/chromium --artifacts DIR
"""
import argparse
import base64
import fcntl
import glob
import json
import os
import select
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request

from harness import expect, free_port, run_on, start_sim, stop_process

ARGS = None
BOARD = "orin-nano"
INTERVAL_MS = 250
# Only turns a hang into a failure; no check depends on how fast things are.
LIMIT_S = 60


class Cdp:
    """chromium with the DevTools protocol on a pipe: it reads commands on
    fd 3 and writes answers and events on fd 4, each a JSON text ending in NUL."""

    def __init__(self, chromium, log):
        self.profile = tempfile.mkdtemp(prefix="chromium-profile-")
        cmd_r, self.cmd_w = os.pipe()
        self.out_r, out_w = os.pipe()

        def fds():  # in the child: the pipe ends as fds 3 and 4 (kept across exec)
            a = fcntl.fcntl(cmd_r, fcntl.F_DUPFD, 10)
            b = fcntl.fcntl(out_w, fcntl.F_DUPFD, 10)
            os.dup2(a, 3)
            os.dup2(b, 4)

        self.proc = subprocess.Popen(
            [chromium, "--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
             "--no-first-run", "--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1",
             "--remote-debugging-pipe", "--user-data-dir=" + self.profile, "about:blank"],
            stdin=subprocess.DEVNULL, stdout=log, stderr=log, close_fds=False, preexec_fn=fds)
        os.close(cmd_r)
        os.close(out_w)
        self.buf = b""
        self.next_id = 0
        self.events = []
        self.session = None
        # Requests that open(intercept=...) pauses: this many are answered
        # 503 (Retry-After: 1), as a busy daemon does; the rest go through.
        self.refusals = 0
        self.refused = 0
        self.raw_id = 1 << 30  # ids of the commands answering paused requests

    def send(self, method, params=None, session=True):
        self.next_id += 1
        msg = {"id": self.next_id, "method": method, "params": params or {}}
        if session and self.session:
            msg["sessionId"] = self.session
        os.write(self.cmd_w, json.dumps(msg).encode() + b"\0")
        deadline = time.time() + LIMIT_S
        while True:
            for m in self._messages(deadline):
                if m.get("id") == self.next_id:
                    if "error" in m:
                        raise AssertionError(f"{method}: {m['error']}")
                    return m.get("result", {})
                if m.get("method") == "Fetch.requestPaused":
                    self._paused(m)
                self.events.append(m)

    def _paused(self, m):
        """Answers a paused request: refused while refusals last, else sent on."""
        rid = m["params"]["requestId"]
        if self.refusals > 0:
            self.refusals -= 1
            self.refused += 1
            cmd = {"method": "Fetch.fulfillRequest", "params": {
                "requestId": rid, "responseCode": 503,
                "responseHeaders": [{"name": "Retry-After", "value": "1"},
                                    {"name": "Content-Type", "value": "application/json"}],
                "body": base64.b64encode(b'{"error":"busy: retry"}').decode()}}
        else:
            cmd = {"method": "Fetch.continueRequest", "params": {"requestId": rid}}
        self.raw_id += 1
        cmd["id"] = self.raw_id
        if "sessionId" in m:
            cmd["sessionId"] = m["sessionId"]
        os.write(self.cmd_w, json.dumps(cmd).encode() + b"\0")

    def _messages(self, deadline):
        while b"\0" not in self.buf:
            left = deadline - time.time()
            if left <= 0 or not select.select([self.out_r], [], [], left)[0]:
                raise AssertionError("chromium did not answer")
            chunk = os.read(self.out_r, 1 << 20)
            if not chunk:
                raise AssertionError("chromium closed its DevTools pipe")
            self.buf += chunk
        out = []
        while b"\0" in self.buf:
            text, self.buf = self.buf.split(b"\0", 1)
            out.append(json.loads(text))
        return out

    def open(self, url, intercept=None):
        target = self.send("Target.createTarget", {"url": "about:blank"}, session=False)
        self.session = self.send("Target.attachToTarget",
                                 {"targetId": target["targetId"], "flatten": True},
                                 session=False)["sessionId"]
        self.send("Network.enable")
        self.send("Page.enable")
        if intercept:
            self.send("Fetch.enable", {"patterns": [{"urlPattern": intercept}]})
        self.viewport(1280)
        self.send("Page.navigate", {"url": url})

    def viewport(self, width):
        """A desktop window `width` CSS pixels wide (1500 high)."""
        self.send("Emulation.setDeviceMetricsOverride",
                  {"width": width, "height": 1500, "deviceScaleFactor": 1, "mobile": False})

    def eval(self, expr):
        r = self.send("Runtime.evaluate", {"expression": expr, "returnByValue": True})
        if "exceptionDetails" in r:
            raise AssertionError(f"{expr[:80]}: {r['exceptionDetails']}")
        return r["result"].get("value")

    def wait_for(self, expr, what):
        """Evaluates `expr` until it is truthy; returns its value."""
        deadline = time.time() + LIMIT_S
        while time.time() < deadline:
            v = self.eval(expr)
            if v:
                return v
            time.sleep(0.1)
        raise AssertionError(f"the page never showed {what}")

    def requested_urls(self):
        return [e["params"]["request"]["url"] for e in self.events
                if e.get("method") == "Network.requestWillBeSent"]

    def screenshot(self, path):
        data = self.send("Page.captureScreenshot", {"format": "png", "captureBeyondViewport": True})
        with open(path, "wb") as f:
            f.write(base64.b64decode(data["data"]))

    def close(self):
        try:
            os.write(self.cmd_w, json.dumps({"id": 0, "method": "Browser.close"}).encode() + b"\0")
        except OSError:
            pass
        try:
            self.proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        os.close(self.cmd_w)
        os.close(self.out_r)
        shutil.rmtree(self.profile, ignore_errors=True)


class Daemon:
    def __init__(self, tmp):
        self.tmp = tmp
        self.log = open(os.path.join(tmp, "log.txt"), "w")
        self.sim, self.sidecar = start_sim(ARGS.sim, BOARD, os.path.join(tmp, "board"),
                                           ARGS.fixtures, self.log)
        self.port = free_port()
        self.origin = f"http://127.0.0.1:{self.port}"
        self.target = "unix:" + os.path.join(tmp, "api.sock")
        self.started_ms = time.time() * 1000  # before edgemond's first frame
        # 2 s rollup periods: rollup rows exist within seconds, as after a
        # minute on a daemon of the default period.
        config = os.path.join(tmp, "edgemond.toml")
        with open(config, "w") as f:
            f.write('[store]\nrollup_period = "2s"\n')
        self.proc = subprocess.Popen(
            [ARGS.edgemond, "--config", config, "--root", os.path.join(tmp, "board"), "--db",
             os.path.join(tmp, "edgemon.db"), "--listen", self.target,
             "--metrics-listen", str(self.port), "--interval-ms", str(INTERVAL_MS)],
            stdout=self.log, stderr=subprocess.STDOUT)
        deadline = time.time() + LIMIT_S
        while True:
            try:
                self.get("/metrics")
                break
            except OSError:
                if self.proc.poll() is not None or time.time() > deadline:
                    raise RuntimeError("edgemond did not serve /metrics")
                time.sleep(0.05)

    def get(self, path):
        with urllib.request.urlopen(self.origin + path, timeout=LIMIT_S) as r:
            return r.status, r.read().decode()

    def stop(self):
        stop_process(self.proc)
        stop_process(self.sim)
        self.log.close()


def rails_now(cdp):
    """{rail: the power cell's text} from the rail table."""
    return cdp.eval("""(function () {
      var out = {};
      document.querySelectorAll('#rails tr[data-rail]').forEach(function (tr) {
        var td = tr.querySelector('td[data-key$="/power"]');
        out[tr.getAttribute('data-rail')] = td ? td.textContent : null;
      });
      return out; })()""")


def seq_now(cdp):
    text = cdp.eval("document.getElementById('status').textContent")
    return int(text.split()[1]) if text.startswith("frame ") else -1


def record_window(d):
    env = dict(os.environ)
    env["PATH"] = os.path.dirname(ARGS.edgemon) + ":" + env.get("PATH", "/usr/bin:/bin")
    r = subprocess.run([ARGS.edgemon, "--connect", d.target, "record", "--label", "live-e2e",
                        "--", "sleep", "1"], capture_output=True, text=True, timeout=LIMIT_S,
                       env=env)
    expect(r.returncode == 0, f"record exit {r.returncode}: {r.stderr}")
    line = [ln for ln in r.stderr.splitlines() if "(window " in ln][0]
    window = int(line.split("(window ")[1].split(")")[0])
    # Seven short runs moments apart: their labels must not overlap.
    for i in range(7):
        for what in ("begin", "end"):
            r = subprocess.run([ARGS.edgemon, "--connect", d.target, "mark", what,
                                f"run-{i}-resnet50"], capture_output=True, text=True,
                               timeout=LIMIT_S, env=env)
            expect(r.returncode == 0, f"mark {what} exit {r.returncode}: {r.stderr}")
    r = subprocess.run([ARGS.edgemon, "--connect", d.target, "mark", "begin", "live-open"],
                       capture_output=True, text=True, timeout=LIMIT_S, env=env)
    expect(r.returncode == 0, f"mark begin exit {r.returncode}: {r.stderr}")
    return window


def log_line_url(d):
    """--metrics-listen PORT: the log names the URL a browser takes."""
    d.log.flush()
    with open(os.path.join(d.tmp, "log.txt")) as f:
        log = f.read()
    want = f"live page: http://127.0.0.1:{d.port}/"
    expect(want in log and f"metrics: http://127.0.0.1:{d.port}/metrics" in log,
           f"{want!r} not in the log: {log[-1500:]!r}")


def history_on_a_young_daemon(d):
    """/api/history over a range longer than the daemon's life: steps at the
    asked step from its raw frames, none dated before its first frame."""
    deadline = time.time() + LIMIT_S
    while True:
        _, body = d.get("/api/history?from=-5m&to=now&step=1s&channels=rail/VDD_IN/power")
        t = json.loads(body)["series"][0]["t"] if json.loads(body)["series"] else []
        if len(t) >= 3 or time.time() > deadline:
            break
        time.sleep(0.5)
    expect(len(t) >= 3, f"history steps on a young daemon: {t}")
    expect(all(x >= d.started_ms - 1 for x in t),
           f"steps dated before the daemon started ({d.started_ms:.0f}): {t[:3]}")
    expect(all(0 < b - a < 2000 for a, b in zip(t, t[1:])), f"not 1 s steps: {t}")


def bad_requests(d):
    for path, what in (("/api/history?from=now&to=-1h", "from must be before to"),
                       ("/api/history?step=1us", "step: at least 1ms"),
                       ("/api/energy?window=nope", "window: ")):
        try:
            d.get(path)
            raise AssertionError(f"{path} was answered")
        except urllib.error.HTTPError as e:
            body = json.loads(e.read().decode())
            expect(e.code == 400 and what in body["error"], f"{path}: {e.code} {body}")


def seed_after_a_refusal(d):
    """The live chart's first read of the stored frames refused by a busy
    daemon (503, Retry-After: 1): the page asks again when told and still
    draws the stored frames on load, not only the streamed ones."""
    cdp = Cdp(ARGS.chromium, d.log)
    try:
        cdp.refusals = 1
        cdp.open(d.origin + "/", intercept="*/api/history?from=-*&to=now&step=*")
        cdp.wait_for("(function () { var s = document.getElementById('status');"
                     " return s && s.textContent.indexOf('frame ') === 0; })()", "a frame")
        seq = seq_now(cdp)
        live = cdp.wait_for(f"""(function () {{
          var p = document.querySelector('#live-chart path.series');
          var n = p ? (p.getAttribute('d').match(/[ML]/g) || []).length : 0;
          var s = +document.getElementById('status').textContent.split(' ')[1];
          return n >= 20 && n > s - {seq} + 5 ? [n, s] : null; }})()""",
                            "the stored frames on the live chart after a refusal")
        seeds = [u for u in cdp.requested_urls() if "/api/history?from=-" in u and "step=" in u]
        expect(cdp.refused == 1, f"{cdp.refused} history reads refused (one meant)")
        expect(len(seeds) >= 2, f"the refused read was not asked again: {seeds}")
        print(f"  live chart: {live[0]} points after one refusal, {live[1] - seq} frames streamed")
    finally:
        cdp.close()


def live_page(d):
    window = record_window(d)
    rails = list(d.sidecar["rails"])
    cdp = Cdp(ARGS.chromium, d.log)
    try:
        cdp.open(d.origin + "/")
        # The rails with values, both charts drawn, the window on the time axis.
        cdp.wait_for(f"""(function () {{
          var rows = document.querySelectorAll('#rails tr[data-rail]');
          var filled = Array.prototype.every.call(rows, function (tr) {{
            var td = tr.querySelector('td[data-key$="/power"]');
            return td && /^[0-9.]+ W$/.test(td.textContent); }});
          return rows.length === {len(rails)} && filled &&
            document.querySelectorAll('#live-chart path.series').length === {len(rails)} &&
            document.querySelectorAll('#history-chart path.series').length === {len(rails)} &&
            !!document.querySelector('#history-chart rect.window[data-window="{window}"]') &&
            !!document.querySelector('#history-chart rect.window.open'); }})()""",
                     "every rail with a value, both charts and the windows")
        first = rails_now(cdp)
        expect(sorted(first) == sorted(rails), f"rails {sorted(first)} vs the board's {rails}")
        tree = cdp.eval("""Array.prototype.map.call(document.querySelectorAll('#rails tr[data-rail]'),
          function (tr) { return [tr.getAttribute('data-rail'),
            parseInt(tr.firstChild.style.paddingLeft)]; })""")
        expect(tree[0][0] == "VDD_IN" and all(pad > tree[0][1] for _, pad in tree[1:]),
               f"the rail tree: {tree}")
        points = cdp.eval("""Array.prototype.map.call(
          document.querySelectorAll('#history-chart path.series'),
          function (p) { return +p.getAttribute('data-points'); })""")
        expect(all(n > 0 for n in points), f"history points per rail: {points}")
        labels = cdp.eval("""Array.prototype.map.call(
          document.querySelectorAll('#history-chart text.wlabel'),
          function (t) { return t.textContent; })""")
        expect("live-e2e" in labels and "live-open" in labels, f"window labels {labels}")
        # The window's energy on click, as the API has it.
        cdp.eval(f"""document.querySelector('#history-chart rect.window[data-window="{window}"]')
                     .dispatchEvent(new MouseEvent('click', {{bubbles: true}}))""")
        shown = cdp.wait_for(f"""(function () {{
          var t = document.querySelector('#energy-table[data-window="{window}"]');
          if (!t) return null;
          var out = {{}};
          t.querySelectorAll('tr[data-rail]').forEach(function (tr) {{
            out[tr.getAttribute('data-rail')] = tr.children[1].textContent; }});
          return out; }})()""", "the window's energy")
        _, body = d.get(f"/api/energy?window={window}")
        api = {r["name"]: r["energy_j"] for r in json.loads(body)["rails"]}
        expect(sorted(shown) == sorted(api), f"energy rails {sorted(shown)} vs {sorted(api)}")
        for name, j in api.items():
            expect(shown[name] == f"{j:.3f} J", f"{name}: page {shown[name]} vs API {j:.3f} J")
        os.makedirs(ARGS.artifacts, exist_ok=True)
        png = os.path.join(ARGS.artifacts, "live-page.png")
        cdp.screenshot(png)
        expect(os.path.getsize(png) > 20000, "the screenshot is nearly empty")
        print(f"screenshot: {png}", flush=True)
        # At a phone's, a tablet's and two desktop widths every card fits the
        # page and its content fits the card (no card scrolls sideways, none
        # is cut off), both charts are drawn, and no two run labels overlap.
        for width in (320, 768, 1400, 1920):
            cdp.viewport(width)
            fit = cdp.wait_for(f"""(function () {{
              if (window.innerWidth !== {width}) return null;
              var hc = document.getElementById('history-chart');  // redrawn for this width
              if (Math.abs(+hc.getAttribute('data-width') - hc.getBoundingClientRect().width) > 1)
                return null;
              var out = {{page: document.documentElement.scrollWidth, cut: [], scroll: [],
                          charts: [], overlaps: []}};
              document.querySelectorAll('main > section').forEach(function (s) {{
                var r = s.getBoundingClientRect();
                if (r.left < 0 || r.right > {width} + 0.5) out.cut.push(s.id + ' ' + r.left + '-' + r.right);
                if (s.scrollWidth > s.clientWidth + 1) out.scroll.push(s.id + ' ' + s.scrollWidth + '>' + s.clientWidth);
              }});
              ['live-chart', 'history-chart'].forEach(function (id) {{
                var c = document.getElementById(id), b = c.getBoundingClientRect();
                out.charts.push([id, c.querySelectorAll('path.series').length, Math.round(b.width)]);
              }});
              var boxes = Array.prototype.map.call(
                document.querySelectorAll('#history-chart text.wlabel'),
                function (t) {{ return [t.textContent, t.getBoundingClientRect()]; }});
              for (var i = 0; i < boxes.length; i++) for (var j = i + 1; j < boxes.length; j++) {{
                var a = boxes[i][1], b = boxes[j][1];
                if (a.left < b.right && b.left < a.right && a.top < b.bottom && b.top < a.bottom)
                  out.overlaps.push(boxes[i][0] + ' / ' + boxes[j][0]);
              }}
              return out; }})()""", f"the page laid out {width} px wide")
            expect(not fit["cut"] and fit["page"] <= width and not fit["scroll"],
                   f"at {width} px: cards cut off {fit['cut']}, scrolling {fit['scroll']}, "
                   f"page {fit['page']} px wide")
            expect(all(n == len(rails) and w > 0 for _, n, w in fit["charts"]),
                   f"at {width} px: charts {fit['charts']}")
            expect(not fit["overlaps"], f"at {width} px: run labels overlap: {fit['overlaps']}")
        cdp.viewport(1280)
        # A second load, some frames later: the values moved with the simulator.
        # Meanwhile the fan's tachometer reads garbage: its speed is missing.
        tach = glob.glob(os.path.join(d.tmp, "board", "sys", "class", "hwmon", "*", "rpm"))
        expect(len(tach) == 1, f"the board's tachometer: {tach}")
        with open(tach[0], "w") as f:
            f.write("garbage\n")
        seq = seq_now(cdp)
        cdp.send("Page.reload")
        cdp.wait_for(f"""(function () {{ var e = document.getElementById('status');
          var s = e ? e.textContent : '';
          return s.indexOf('frame ') === 0 && +s.split(' ')[1] > {seq + 2} &&
            document.querySelectorAll('#rails td[data-key$="/power"]:not(.missing)').length
              === {len(rails)}; }})()""", "a later frame after reloading")
        # The live chart is drawn on load from the stored frames, not only
        # from those streamed since: more points than frames came.
        live = cdp.eval("""(function () {
          var p = document.querySelector('#live-chart path.series');
          var s = document.getElementById('status').textContent;
          return [p ? (p.getAttribute('d').match(/[ML]/g) || []).length : 0, +s.split(' ')[1]]; })()""")
        expect(live[0] >= 20 and live[0] > live[1] - seq + 5,
               f"the live chart on load: {live[0]} points, {live[1] - seq} frames since")
        # A missing value reads as a dash, never 0.
        fan = cdp.wait_for("""(function () {
          var td = document.querySelector('#fan-table td[data-key$="/speed"]');
          return td && td.textContent === '\u2014' && td.className === 'missing' &&
            td.getAttribute('data-key'); })()""", "the fan's speed as missing")
        expect(fan.startswith("fan/"), f"the fan's cell: {fan}")
        second = rails_now(cdp)
        expect(sorted(second) == sorted(first), f"rails changed: {second}")
        expect(any(second[r] != first[r] for r in rails),
               f"no rail's value changed between loads: {first} then {second}")
        # Nothing but the daemon was asked for anything.
        time.sleep(1.2)  # the page lists its resources every second
        listed = json.loads(cdp.eval("document.getElementById('resources').textContent"))
        urls = cdp.requested_urls()
        expect(urls and listed, "no requests seen")
        others = [u for u in urls + listed if not u.startswith(d.origin + "/")]
        expect(not others, f"requests to other hosts: {others}")
        expect(any(u.startswith(d.origin + "/api/live") for u in urls), f"no stream in {urls}")
        # Stopping the daemon with the page streaming: it exits, cleanly.
        expect(d.proc.poll() is None, "edgemond died")
        d.proc.terminate()
        try:
            code = d.proc.wait(timeout=LIMIT_S)
        except subprocess.TimeoutExpired:
            raise AssertionError("edgemond did not stop with a page open")
        expect(code == 0, f"edgemond exited {code}")
    finally:
        cdp.close()


def main():
    global ARGS
    p = argparse.ArgumentParser()
    for name in ("--edgemon", "--edgemond", "--sim", "--fixtures", "--chromium", "--artifacts"):
        p.add_argument(name, required=True)
    ARGS = p.parse_args()
    ARGS.artifacts = os.path.abspath(ARGS.artifacts)
    return run_on("edgemon-live-", Daemon,
                  [("log_line_url", log_line_url),
                   ("history_on_a_young_daemon", history_on_a_young_daemon),
                   ("bad_requests", bad_requests),
                   ("seed_after_a_refusal", seed_after_a_refusal), ("live_page", live_page)],
                  ARGS.artifacts)


if __name__ == "__main__":
    sys.exit(main())
