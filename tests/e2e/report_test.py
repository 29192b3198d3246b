#!/usr/bin/env python3
"""report.html of a record bundle, drawn by a real browser.

edgemon-sim (agx-orin) + edgemond on a unix socket; then
  * `edgemon record --out DIR -- sh -c 'sleep 1; edgemon mark begin warm; ...'`
    (about 3 s with one phase), and
  * the Python client's measure() with a mark, Result.save(DIR), under a label
    that tries to end the data's <script> element;
each DIR/report.html is opened from disk by Debian's headless chromium with
the network blocked, and the DOM it renders is checked against the bundle's
summary.json and samples.csv: every rail of the board with its energy (whole
run and phase), one drawn line per rail with a point per stored frame, the
phase shaded, evenly spaced axis labels, the notes, the SVG export; and the
HTML names no http(s) address. Screenshots are kept under --artifacts.

chromium in a container, as root: --headless=new --no-sandbox (its sandbox
needs user namespaces the container does not give root) --disable-gpu
--disable-dev-shm-usage (a small /dev/shm) and a throwaway --user-data-dir;
--virtual-time-budget=5000 lets the page's script finish before --dump-dom or
--screenshot; --host-resolver-rules="MAP * ~NOTFOUND" makes any host name
unresolvable (no network). The D-Bus errors it prints are harmless.

  report_test.py --edgemon B --edgemond B --sim B --python-dir build/python \
                 --fixtures tests/fixtures --chromium /usr/bin/chromium --artifacts DIR
"""
import argparse
import csv
import html.parser
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

from harness import expect, run_on, start_sim, stop_process

ARGS = None
BOARD = "agx-orin"
INTERVAL_MS = 100
HOSTILE = "py </script><script>alert(1)</script><!-- & -->"
CHROMIUM_FLAGS = ["--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                  "--no-first-run", "--virtual-time-budget=5000",
                  "--host-resolver-rules=MAP * ~NOTFOUND"]


class Node:
    def __init__(self, tag, attrs, parent):
        self.tag, self.attrs, self.parent = tag, dict(attrs), parent
        self.children = []
        self.text = ""

    def all_text(self):
        return self.text + "".join(c.all_text() for c in self.children)

    def matches(self, tag, attrs):
        if tag is not None and self.tag != tag:
            return False
        for k, v in attrs.items():
            have = self.attrs.get("class" if k == "class_" else k.replace("_", "-"))
            if have is None or (v not in have.split() if k == "class_" else have != v):
                return False
        return True

    def find_all(self, tag=None, **attrs):
        """Descendants of this tag with these attributes (data_x: data-x;
        class_: one of the classes)."""
        out = []
        for c in self.children:
            if c.matches(tag, attrs):
                out.append(c)
            out.extend(c.find_all(tag, **attrs))
        return out

    def find(self, tag=None, **attrs):
        found = self.find_all(tag, **attrs)
        return found[0] if found else None


class Dom(html.parser.HTMLParser):
    """The rendered DOM as a tree of Nodes (class_ matches one class)."""
    VOID = {"meta", "link", "br", "img", "input", "hr", "col", "source", "wbr"}

    def __init__(self, text):
        super().__init__(convert_charrefs=True)
        self.root = Node("#root", [], None)
        self.at = self.root
        self.feed(text)

    def handle_starttag(self, tag, attrs):
        n = Node(tag, attrs, self.at)
        self.at.children.append(n)
        if tag not in self.VOID:
            self.at = n

    def handle_startendtag(self, tag, attrs):
        self.at.children.append(Node(tag, attrs, self.at))

    def handle_endtag(self, tag):
        n = self.at
        while n is not None and n.tag != tag:
            n = n.parent
        if n is not None and n.parent is not None:
            self.at = n.parent

    def handle_data(self, data):
        self.at.text += data  # the open element's (all_text: its own, then its children's)


def fixed3(v):
    if v is None:
        return "\u2014"
    s = "%.3f" % v
    return s[1:] if s.startswith("-") and s.strip("-0.") == "" else s


def chromium(*args, timeout=60):
    profile = tempfile.mkdtemp(prefix="chromium-profile-")
    try:
        return subprocess.run([ARGS.chromium, *CHROMIUM_FLAGS, "--user-data-dir=" + profile,
                               *args], capture_output=True, text=True, timeout=timeout)
    finally:
        shutil.rmtree(profile, ignore_errors=True)


def render(path):
    r = chromium("--dump-dom", "file://" + path)
    expect(r.returncode == 0 and "<html" in r.stdout,
           f"chromium --dump-dom exit {r.returncode}: {r.stderr[-2000:]}")
    return r.stdout


def screenshot(path, name):
    os.makedirs(ARGS.artifacts, exist_ok=True)
    png = os.path.join(ARGS.artifacts, name)
    if os.path.exists(png):
        os.unlink(png)
    r = chromium("--screenshot=" + png, "--window-size=1280,2000", "file://" + path)
    expect(r.returncode == 0 and os.path.exists(png) and os.path.getsize(png) > 20000,
           f"no screenshot {png}: exit {r.returncode}: {r.stderr[-2000:]}")
    print(f"screenshot: {png}", flush=True)


def load_bundle(out):
    with open(os.path.join(out, "summary.json")) as f:
        summary = json.load(f)
    with open(os.path.join(out, "samples.csv")) as f:
        rows = list(csv.reader(f))[1:]
    with open(os.path.join(out, "report.html"), encoding="utf-8") as f:
        page = f.read()
    return summary, rows, page


def check_no_address(page):
    refs = re.findall(r"""(?:\b(?:src|href|xlink:href|action)\s*=\s*["']?|url\(\s*["']?)"""
                      r"""\s*((?:https?:)?//[^\s"')>]*)""", page, re.I)
    expect(not refs, f"addresses in src/href/url(): {refs[:5]}")
    expect(not re.search(r"https?://", page), "an http(s):// address in report.html")


def check_data_element(page, summary):
    """The embedded data ends where the template's element does: up to the
    first "</script" it is the whole JSON, holding summary.json."""
    head = '<script type="application/json" id="edgemon-data">'
    expect(page.count(head) == 1, "no data element")
    text = page[page.index(head) + len(head):]
    text = text[:text.lower().index("</script")]
    expect("<!--" not in text and "<script" not in text.lower(), "markup inside the data")
    try:
        data = json.loads(text)
    except ValueError as e:
        raise AssertionError(f"the data element is cut short: {e}: ...{text[-200:]}")
    expect(data["format"] == "edgemon-report" and data["summary"] == summary,
           "the embedded summary is not summary.json")


def embedded(page):
    head = '<script type="application/json" id="edgemon-data">'
    text = page[page.index(head) + len(head):]
    return json.loads(text[:text.lower().index("</script")])


def point_count(d):
    return len(re.findall(r"[ML]\s*-?[0-9.]+[ ,]+-?[0-9.]+", d))


def check_report(out, board_rails, label, shot):
    summary, rows, page = load_bundle(out)
    check_no_address(page)
    check_data_element(page, summary)
    path = os.path.abspath(os.path.join(out, "report.html"))
    rendered = render(path)
    dom = Dom(rendered).root
    # The answer comes first: duration, energy, power and the phases above the first chart.
    expect('id="answer"' in rendered and 'id="chart-power"' in rendered and
           rendered.index('id="answer"') < rendered.index('id="phases"') <
           rendered.index('id="chart-power"'), "the answer and phases are not above the charts")
    answer = dom.find("table", id="answer")
    fig = {f.attrs["data-fig"]: f.all_text() for f in answer.find_all("span")
           if "data-fig" in f.attrs}
    expect(fig.get("duration_s") == fixed3(summary["run"]["duration_s"]), f"duration {fig}")
    if summary["total_energy_j"] is not None:
        expect(fig.get("energy_j") == fixed3(summary["total_energy_j"]), f"energy {fig}")
    else:
        expect("no board input rail" in answer.all_text(), answer.all_text())
    # GPU and CPU load and memory drawn beside power, one line per channel with a value.
    for cid in ("chart-load", "chart-memory"):
        chart = dom.find("svg", id=cid)
        expect(chart is not None and chart.find_all("path", class_="series"), f"no {cid}")
    # The page drew itself (no "holds no report data"), under its own label.
    h1 = dom.find("h1", id="title")
    expect(h1 is not None, "no title: the script did not run")
    expect(label in h1.all_text(), f"title {h1.all_text()!r} lacks {label!r}")
    # The label made no script of its own: the template's two, no more.
    scripts = dom.find_all("script")
    expect(len(scripts) == 2, f"{len(scripts)} script elements")
    expect(summary["board"] in dom.find("table", id="run").all_text(), "no board line")

    # Every rail of the board, with its energy as summary.json has it.
    rails = {r["name"]: r for r in summary["rails"]}
    expect(sorted(rails) == sorted(board_rails), f"rails {sorted(rails)} vs {sorted(board_rails)}")
    for name, r in rails.items():
        cell = dom.find("td", data_rail=name, data_col="run")
        expect(cell is not None, f"no energy cell for {name}")
        expect(cell.all_text().strip() == fixed3(r["energy_j"]),
               f"{name}: {cell.all_text()!r} vs {r['energy_j']}")
    # Per phase.
    expect(len(summary["phases"]) == 1, f"phases {summary['phases']}")
    phase = summary["phases"][0]
    for r in phase["rails"]:
        cell = dom.find("td", data_rail=r["name"], data_col="phase", data_phase=phase["name"])
        expect(cell is not None and cell.all_text().strip() == fixed3(r["energy_j"]),
               f"phase {phase['name']}/{r['name']}: "
               f"{cell.all_text() if cell else None!r} vs {r['energy_j']}")

    # The power chart: one drawn line per rail, a point per stored frame.
    svg = dom.find("svg", id="chart-power")
    expect(svg is not None, "no power chart")
    paths = {p.attrs["data-series"]: p for p in svg.find_all("path", class_="series")}
    expect(sorted(paths) == sorted(board_rails), f"lines {sorted(paths)}")
    expect(len(rows) == summary["samples"] and len(rows) >= 20,
           f"{len(rows)} csv rows, {summary['samples']} samples")
    for name, p in paths.items():
        n = point_count(p.attrs["d"])
        expect(n == len(rows), f"{name}: {n} points for {len(rows)} samples")
    # The phase shaded, where it was: its width against the axis is its share of the range.
    shade = svg.find("rect", class_="phase", data_phase=phase["name"])
    expect(shade is not None, "phase not shaded")
    end_ns = phase["end_ns"] if phase["end_ns"] is not None else summary["run"]["end_ns"]
    share = (end_ns - phase["start_ns"]) / 1e9 / summary["range"]["duration_s"]
    width = float(shade.attrs["width"])
    expect(abs(width / 880 - share) < 0.06, f"shade {width} px for a {share:.2f} share")
    for cid in ("chart-power", "chart-temp", "chart-clock"):
        chart = dom.find("svg", id=cid)
        expect(chart is not None and chart.find_all("path", class_="series"), f"no {cid}")
        # Tick labels evenly spaced (a 2.5 step once printed 33 35 38 40).
        ticks = [float(t.all_text()) for t in chart.find_all("text", class_="ytick")]
        steps = {round(b - a, 6) for a, b in zip(ticks, ticks[1:])}
        expect(len(ticks) >= 3 and len(steps) == 1, f"{cid}: y ticks {ticks}")
        expect(dom.find("button", data_svg=cid) is not None, f"no SVG download for {cid}")

    # The notes: every uncertainty note and every note.
    notes = [li.all_text() for li in dom.find("ul", id="notes").find_all("li")]
    for n in summary["uncertainty"] + summary["notes"]:
        expect(n in notes, f"note missing: {n!r} in {notes}")
    expect(notes, "no notes list")

    # Missing temperatures are gaps, and tables never show a missing value as 0.
    for zone in (t["name"] for t in summary["temps"]):
        expect(zone in dom.find("table", id="temps").all_text(), f"zone {zone} not listed")

    check_svg_export(path)
    screenshot(path, shot)


# Appended to a copy of the page: clicks "Download SVG" of the power chart,
# catches the Blob it makes and the link it clicks (whose download itself is
# left out: a headless download can stall the page's virtual time), and
# writes both into the page.
EXPORT_PROBE = """<script>
(function () {
  var made = URL.createObjectURL, blobs = {};
  URL.createObjectURL = function (blob) {
    var url = made.call(URL, blob);
    blobs[url] = blob;
    return url;
  };
  HTMLAnchorElement.prototype.click = function () {
    var a = this, blob = blobs[a.href];
    if (!blob) return;
    blob.text().then(function (t) {
      var pre = document.createElement("pre");
      pre.id = "exported";
      pre.setAttribute("data-type", blob.type);
      pre.setAttribute("data-file", a.download);
      pre.textContent = t;
      document.body.appendChild(pre);
    });
  };
  document.querySelector('button[data-svg="chart-power"]').click();
})();
</script>"""


def check_svg_export(path):
    probe = path + ".export.html"
    with open(path, encoding="utf-8") as f:
        page = f.read()
    with open(probe, "w", encoding="utf-8") as f:
        at = page.rindex("</body>")
        f.write(page[:at] + EXPORT_PROBE + page[at:])
    try:
        dom = Dom(render(probe)).root
    finally:
        os.unlink(probe)
    pre = dom.find("pre", id="exported")
    expect(pre is not None, "Download SVG made no file")
    expect(pre.attrs.get("data-type") == "image/svg+xml", f"type {pre.attrs.get('data-type')}")
    expect(pre.attrs.get("data-file", "").endswith("power.svg"), f"file {pre.attrs.get('data-file')}")
    svg = Dom(pre.all_text()).root.find("svg")
    expect(svg is not None and svg.attrs.get("xmlns", "").endswith("/2000/svg"),
           "the export is no standalone SVG")
    expect(len(svg.find_all("path", class_="series")) >= 1, "the export has no lines")


class Board:
    def __init__(self, tmp):
        self.tmp = tmp
        self.root = os.path.join(tmp, "root")
        self.sock = os.path.join(tmp, "edgemond.sock")
        self.target = "unix:" + self.sock
        self.log = open(os.path.join(tmp, "edgemond.log"), "w")
        self.sim, self.sidecar = start_sim(ARGS.sim, BOARD, self.root, ARGS.fixtures, self.log)
        env = dict(os.environ)
        env.pop("NOTIFY_SOCKET", None)
        self.daemon = subprocess.Popen(
            [ARGS.edgemond, "--root", self.root, "--db", os.path.join(tmp, "store.db"),
             "--listen", self.target, "--interval-ms", str(INTERVAL_MS),
             "--energy-rate-hz", "50"], stdout=subprocess.DEVNULL, stderr=self.log, env=env)
        deadline = time.time() + 15
        while not os.path.exists(self.sock):
            if self.daemon.poll() is not None or time.time() > deadline:
                raise RuntimeError("edgemond does not listen")
            time.sleep(0.02)
        time.sleep(0.5)

    def stop(self):
        for p in (self.daemon, self.sim):
            stop_process(p)


def record_report(board):
    out = os.path.join(board.tmp, "record")
    env = dict(os.environ)
    env["PATH"] = os.path.dirname(ARGS.edgemon) + ":" + env.get("PATH", "/usr/bin:/bin")
    r = subprocess.run([ARGS.edgemon, "--connect", board.target, "record", "--label",
                        "report-e2e", "--out", out, "--", "sh", "-c",
                        "sleep 1; edgemon mark begin warm; sleep 1; edgemon mark end warm; "
                        "sleep 1"], capture_output=True, text=True, timeout=60, env=env)
    expect(r.returncode == 0, f"record exit {r.returncode}: {r.stderr}")
    expect("report.html" in r.stderr, "the printed bundle line does not name report.html")
    check_report(out, list(board.sidecar["rails"]), "report-e2e", "record-report.png")


PY_MEASURE = """
import sys, time
sys.path.insert(0, sys.argv[1])
import edgemon
c = edgemon.connect(sys.argv[2])
with c.measure(sys.argv[4]) as m:
    time.sleep(1.0)
    with c.mark("warm"):
        time.sleep(1.0)
    time.sleep(1.0)
m.result.save(sys.argv[3])
"""


def python_report(board):
    out = os.path.join(board.tmp, "python")
    r = subprocess.run([sys.executable, "-c", PY_MEASURE, ARGS.python_dir, board.target, out,
                        HOSTILE], capture_output=True, text=True, timeout=60)
    expect(r.returncode == 0, f"measure exit {r.returncode}: {r.stderr}")
    check_report(out, list(board.sidecar["rails"]), HOSTILE, "python-report.png")
    # The same window through `edgemon attach --out`: report data of the same shape.
    summary, _, page = load_bundle(out)
    ref = os.path.join(board.tmp, "python-attach")
    r = subprocess.run([ARGS.edgemon, "--connect", board.target, "attach", "--window",
                        str(summary["window"]["id"]), "--out", ref],
                       capture_output=True, text=True, timeout=60)
    expect(r.returncode == 0, f"attach exit {r.returncode}: {r.stderr}")
    a, b = embedded(page), embedded(load_bundle(ref)[2])
    expect(sorted(a) == sorted(b), f"keys {sorted(a)} vs {sorted(b)}")
    expect(len(a["series"]["t_s"]) == len(b["series"]["t_s"]), "frame counts differ")
    expect(a["series"]["t_s"] == b["series"]["t_s"], "frame times differ")

    def shape(d):
        return [(g["id"], g["title"], g["unit"], g["scale"],
                 [(ln["name"], len(ln["values"])) for ln in g["lines"]])
                for g in d["series"]["groups"]]
    expect(shape(a) == shape(b), f"series {shape(a)} vs {shape(b)}")
    for ga, gb in zip(a["series"]["groups"], b["series"]["groups"]):
        for la, lb in zip(ga["lines"], gb["lines"]):
            expect(la["values"] == lb["values"], f"{la['name']}: values differ")
    # Python's phases are marks of the window; attach finds them as well.
    trees = [[row["name"] for row in t] if t else None for t in a["phase_rail_trees"]]
    expect(trees == [[row["name"] for row in t] if t else None for t in b["phase_rail_trees"]],
           f"phase rail trees {a['phase_rail_trees']} vs {b['phase_rail_trees']}")


def main():
    global ARGS
    p = argparse.ArgumentParser()
    for name in ("--edgemon", "--edgemond", "--sim", "--python-dir", "--fixtures", "--chromium",
                 "--artifacts"):
        p.add_argument(name, required=True)
    ARGS = p.parse_args()
    ARGS.artifacts = os.path.abspath(ARGS.artifacts)
    return run_on("edgemon-report-", Board,
                  [("record_report", record_report), ("python_report", python_report)],
                  ARGS.artifacts)


if __name__ == "__main__":
    sys.exit(main())
