#!/usr/bin/python3
"""Runs the examples of README.md and docs/*.md as written.

Every fenced code block in those files is preceded by a marker comment
(docs/testing.md, "The documentation's examples"):

  <!-- run -->             a shell or Python example: run, exit 0 expected
  <!-- run: interrupt -->  runs until Ctrl-C: SIGINT after a few seconds, exit 0
  <!-- run: terminal -->   needs a terminal (edgetop): run in tmux, `q` pressed
  <!-- run: board=NAME --> EDGEMON_CONNECT points at a daemon on that board
  <!-- output -->          what the run block before it printed: same shape
  <!-- fragment -->        not run (configuration, synopses, root, a board)

A block without a marker fails, so every new block is classified. The blocks
run against real programs: edgemon-sim boards with edgemond on them
(EDGEMON_CONNECT set to the default board's socket), the built programs first
on PATH and the built Python packages on PYTHONPATH, in a scratch directory
per page that links the source tree's top-level entries; in shell blocks
/tmp/ is replaced by the page's scratch directory. Processes a block leaves
in the background live until the page's last block has run.

Also checked: every page under docs/ is linked from docs/README.md and from
README.md, every relative link and anchor of those files resolves, and
README.md has at most 450 lines.

  docs_snippets.py --source . --edgemon build/client/cli/edgemon \\
      --edgemond build/daemon/edgemond --edgetop build/tui/edgetop \\
      --sim build/daemon/sim/edgemon-sim --probe build/daemon/edgemon-probe \\
      --python-dir build/python --fixtures tests/fixtures --tmux /usr/bin/tmux \\
      [--only docs/cli.md]

The last line is "N passed, M failed"; the exit status is non-zero on failure.
"""
import argparse
import glob
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "e2e"))
from harness import Checks, expect, start_sim, stop_process  # noqa: E402

README_MAX_LINES = 450
DEFAULT_BOARD = "orin-nano"
SHELLS = ("sh", "bash", "shell")
PYTHONS = ("python", "py")
BLOCK_TIMEOUT_S = 180      # a plain block (far past any example's run time)
INTERRUPT_AFTER_S = 5      # a long-running block runs this long before Ctrl-C
STOP_TIMEOUT_S = 30        # after each Ctrl-C or `q`, before the next one
MARKER = re.compile(r"^<!--\s*(run|output|fragment)\b\s*:?\s*(.*?)\s*-->\s*$")
FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})\s*([\w+-]*)")


class Block:
    def __init__(self, path, line, lang, kind, options, text):
        self.path, self.line, self.lang = path, line, lang
        self.kind, self.options, self.text = kind, options, text
        self.output = None   # what a run block printed

    def where(self):
        return "%s:%d" % (self.path, self.line)


def parse_blocks(path, rel):
    """The fenced blocks of a Markdown file, with the marker before each
    (None when there is none)."""
    lines = open(path, encoding="utf-8").read().split("\n")
    blocks = []
    i = 0
    while i < len(lines):
        m = FENCE.match(lines[i])
        if not m:
            i += 1
            continue
        fence, lang = m.group(1), m.group(2).lower()
        start = i
        body = []
        i += 1
        while i < len(lines):
            s = lines[i].strip()
            if s and set(s) == {fence[0]} and len(s) >= len(fence):
                break
            body.append(lines[i])
            i += 1
        i += 1
        j = start - 1
        while j >= 0 and not lines[j].strip():
            j -= 1
        marker = MARKER.match(lines[j].strip()) if j >= 0 else None
        kind, options = (marker.group(1), marker.group(2)) if marker else (None, "")
        blocks.append(Block(rel, start + 1, lang, kind, options, "\n".join(body) + "\n"))
    return blocks


def run_options(block):
    """{'interrupt': bool, 'terminal': bool, 'board': name} from the marker."""
    opts = {"interrupt": False, "terminal": False, "board": DEFAULT_BOARD}
    for word in block.options.split():
        if word in ("interrupt", "terminal"):
            opts[word] = True
        elif word.startswith("board="):
            opts["board"] = word[len("board="):]
        else:
            raise AssertionError("%s: unknown run option %r" % (block.where(), word))
    return opts


# -- shapes -----------------------------------------------------------------------------

SPARK = re.compile("[\u2580-\u259f]+")


def first_word(line):
    """A line's first word with digits as placeholders (values change between
    runs) and a sparkline as one placeholder."""
    word = line.split()[0]
    return SPARK.sub("#", re.sub(r"[0-9]", "0", word))


def words(text):
    return [first_word(l) for l in text.split("\n")
            if l.strip() and not l.strip().startswith("...")]


def json_value(text):
    """The first JSON value in text, or None."""
    start = min([i for i in (text.find("{"), text.find("[")) if i >= 0], default=-1)
    if start < 0:
        return None
    try:
        return json.JSONDecoder().raw_decode(text[start:])[0]
    except ValueError:
        return None


def same_shape(shown, real):
    """Raises AssertionError when the output shown in the documentation does
    not have the shape of the real output: the same top-level keys for JSON,
    else every shown line's first word among the real lines' first words."""
    if shown.lstrip().startswith(("{", "[")):
        want, got = json_value(shown), json_value(real)
        expect(want is not None, "the output shown is not JSON")
        expect(got is not None, "the real output holds no JSON:\n" + real[-2000:])
        if isinstance(want, dict):
            expect(isinstance(got, dict), "the real output is not a JSON object")
            missing = sorted(set(want) - set(got))
            expect(not missing, "keys shown but not in the real output: %s" % missing)
        return
    real_words = set(words(real))
    missing = [w for w in words(shown) if w not in real_words]
    expect(not missing, "lines shown that the real output lacks (first words %s); "
           "the real output:\n%s" % (missing, real[-3000:]))


# -- links ------------------------------------------------------------------------------

LINK = re.compile(r"\]\(([^)\s]+)\)")


def slug(heading):
    """GitHub's anchor for a heading."""
    text = re.sub(r"[^\w\- ]", "", heading.strip().lower())
    return text.replace(" ", "-")


def anchors(path):
    out = set()
    in_fence = False
    for line in open(path, encoding="utf-8"):
        if FENCE.match(line):
            in_fence = not in_fence
        elif not in_fence and re.match(r"^#{1,6} ", line):
            out.add(slug(line.lstrip("#")))
    return out


def check_links(source, files):
    """Every relative link of `files` names an existing file, and an anchor
    that one of its headings makes."""
    bad = []
    for rel in files:
        path = os.path.join(source, rel)
        text = open(path, encoding="utf-8").read()
        text = re.sub(r"```.*?```", "", text, flags=re.S)
        for target in LINK.findall(text):
            if re.match(r"^[a-z]+:", target) or target.startswith("<"):
                continue
            file_part, _, anchor = target.partition("#")
            dest = os.path.normpath(os.path.join(os.path.dirname(path), file_part)) \
                if file_part else path
            if not os.path.exists(dest):
                bad.append("%s: link to %s: no such file" % (rel, target))
            elif anchor and dest.endswith(".md") and anchor not in anchors(dest):
                bad.append("%s: link to %s: no such heading" % (rel, target))
    expect(not bad, "\n".join(bad))


def check_index(source, pages):
    readme = open(os.path.join(source, "README.md"), encoding="utf-8").read()
    index = open(os.path.join(source, "docs", "README.md"), encoding="utf-8").read()
    missing = []
    for page in pages:
        name = os.path.basename(page)
        if name != "README.md" and not re.search(r"\]\((\./)?%s(#[^)]*)?\)" % re.escape(name),
                                                 index):
            missing.append("docs/README.md does not link %s" % name)
        alts = ["docs/" + name] + (["docs/", "docs"] if name == "README.md" else [])
        if not any(re.search(r"\]\(%s(#[^)]*)?\)" % re.escape(a), readme) for a in alts):
            missing.append("README.md does not link docs/%s" % name)
    expect(not missing, "\n".join(missing))


def check_readme_length(source):
    with open(os.path.join(source, "README.md"), encoding="utf-8") as f:
        n = sum(1 for _ in f)
    expect(n <= README_MAX_LINES, "README.md has %d lines; at most %d (the reference goes "
           "to docs/)" % (n, README_MAX_LINES))


# -- running ----------------------------------------------------------------------------

class Boards:
    """One edgemon-sim board with edgemond on it per board name, started on
    first use and kept for the whole run."""

    def __init__(self, args, scratch):
        self.args, self.scratch = args, scratch
        self.running = {}
        self.log = open(os.path.join(scratch, "boards.log"), "w")

    def connect(self, board):
        if board not in self.running:
            self.running[board] = self._start(board)
        return self.running[board][2]

    def _start(self, board):
        base = os.path.join(self.scratch, "board-" + board)
        os.makedirs(base)
        sim, _ = start_sim(self.args.sim, board, os.path.join(base, "root"), self.args.fixtures,
                           self.log)
        sock = os.path.join(base, "edgemond.sock")
        daemon = subprocess.Popen(
            [self.args.edgemond, "--root", os.path.join(base, "root"), "--db",
             os.path.join(base, "edgemon.db"), "--listen", "unix:" + sock],
            stdout=self.log, stderr=subprocess.STDOUT)
        target = "unix:" + sock
        deadline = time.time() + 60
        while True:
            r = subprocess.run([self.args.edgemon, "--connect", target, "now", "--json"],
                               stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
            if r.returncode == 0 and b'"values"' in r.stdout:
                break
            if daemon.poll() is not None or time.time() > deadline:
                stop_process(daemon)
                stop_process(sim)
                raise RuntimeError("edgemond on %s did not serve a frame" % board)
            time.sleep(0.2)
        return sim, daemon, target

    def stop(self):
        for sim, daemon, _ in self.running.values():
            rc = stop_process(daemon)
            if rc != 0:
                print("edgemond exited %s" % rc, flush=True)
            stop_process(sim)
        self.log.close()


class Page:
    """The scratch space of one Markdown file: a work directory that looks
    like the top of the source tree, a /tmp of its own, and the process
    groups its blocks started."""

    def __init__(self, args, scratch, rel, bin_dir, boards):
        self.args, self.boards = args, boards
        base = os.path.join(scratch, re.sub(r"[^\w.-]", "_", rel))
        self.work = os.path.join(base, "work")
        self.tmp = os.path.join(base, "tmp")
        os.makedirs(self.work)
        os.makedirs(self.tmp)
        for entry in os.listdir(args.source):
            if entry not in (".git",):
                os.symlink(os.path.join(args.source, entry), os.path.join(self.work, entry))
        self.bin_dir = bin_dir
        self.groups = []
        self.count = 0

    def env(self, board):
        env = dict(os.environ)
        for k in ("EDGEMON_TOKEN_FILE", "EDGEMON_CONTROL", "EDGEMON_WINDOW",
                  "EDGEMON_WINDOW_START", "NO_COLOR", "TMUX"):
            env.pop(k, None)
        env.update({
            "PATH": self.bin_dir + os.pathsep + env.get("PATH", "/usr/bin:/bin"),
            "PYTHONPATH": self.args.python_dir,
            "PYTHONDONTWRITEBYTECODE": "1",
            "EDGEMON_CONNECT": self.boards.connect(board),
            "EDGEMON_FIXTURES_DIR": self.args.fixtures,
            "LANG": "C.UTF-8",
            "TMPDIR": self.tmp,
        })
        return env

    def script(self, block):
        """The block as a file to run, and the command that runs it."""
        self.count += 1
        if block.lang in SHELLS:
            path = os.path.join(self.tmp, "block-%d.sh" % self.count)
            with open(path, "w") as f:
                f.write(block.text.replace("/tmp/", self.tmp + "/"))
            return ["bash", "-e", "-o", "pipefail", path]
        path = os.path.join(self.tmp, "block-%d.py" % self.count)
        with open(path, "w") as f:
            f.write(block.text)
        return [sys.executable, path]

    def run(self, block):
        expect(block.lang in SHELLS + PYTHONS,
               "a run block must be shell (sh, bash) or python, not %r" % block.lang)
        opts = run_options(block)
        cmd = self.script(block)
        env = self.env(opts["board"])
        if opts["terminal"]:
            return self._run_in_terminal(cmd, env)
        out_path = os.path.join(self.tmp, "block-%d.out" % self.count)
        with open(out_path, "wb") as out:
            proc = subprocess.Popen(cmd, cwd=self.work, env=env, stdin=subprocess.DEVNULL,
                                    stdout=out, stderr=subprocess.STDOUT,
                                    start_new_session=True)
        self.groups.append(proc.pid)
        if opts["interrupt"]:
            try:
                proc.wait(timeout=INTERRUPT_AFTER_S)
                rc = proc.returncode
                block.output = open(out_path, errors="replace").read()
                raise AssertionError("ended (exit %d) before Ctrl-C: mark it `run`, or make "
                                     "it run until interrupted:\n%s" % (rc, block.output[-2000:]))
            except subprocess.TimeoutExpired:
                pass
            for _ in range(5):
                os.killpg(proc.pid, signal.SIGINT)
                try:
                    proc.wait(timeout=STOP_TIMEOUT_S)
                    break
                except subprocess.TimeoutExpired:
                    continue
        try:
            proc.wait(timeout=BLOCK_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
            block.output = open(out_path, errors="replace").read()
            raise AssertionError("still running after %d s:\n%s"
                                 % (BLOCK_TIMEOUT_S, block.output[-2000:]))
        block.output = open(out_path, errors="replace").read()
        expect(proc.returncode == 0, "exit %d%s:\n%s" % (
            proc.returncode, " after Ctrl-C" if opts["interrupt"] else "", block.output[-3000:]))

    def _run_in_terminal(self, cmd, env):
        """Runs cmd in a tmux window of 120x24; after a few seconds keeps the
        screen, then presses q until the command ends. Returns its output
        (the screen)."""
        server = "docs-%d-%d" % (os.getpid(), self.count)
        rc_path = os.path.join(self.tmp, "block-%d.rc" % self.count)
        pid_path = os.path.join(self.tmp, "block-%d.pid" % self.count)
        inner = "echo $$ > %s.new; mv %s.new %s; cd %s; %s; echo $? > %s.new; mv %s.new %s; " \
                "sleep 600" % (pid_path, pid_path, pid_path, self.work, " ".join(cmd),
                               rc_path, rc_path, rc_path)
        tmux = [self.args.tmux, "-L", server, "-f", "/dev/null"]
        subprocess.run(tmux + ["new-session", "-d", "-x", "120", "-y", "24", "-s", "docs",
                               "bash", "-c", inner], env=env, check=True)
        try:
            deadline = time.time() + 10
            while not os.path.exists(pid_path) and time.time() < deadline:
                time.sleep(0.05)
            expect(os.path.exists(pid_path), "the terminal did not start")
            self.groups.append(int(open(pid_path).read()))
            time.sleep(INTERRUPT_AFTER_S)
            screen = subprocess.run(tmux + ["capture-pane", "-p", "-t", "docs"], env=env,
                                    stdout=subprocess.PIPE, check=True).stdout.decode(
                                        "utf-8", "replace")
            with open(os.path.join(self.tmp, "block-%d.screen" % self.count), "w") as f:
                f.write(screen)
            deadline = time.time() + 6 * STOP_TIMEOUT_S
            while not os.path.exists(rc_path) and time.time() < deadline:
                subprocess.run(tmux + ["send-keys", "-t", "docs", "q"], env=env)
                for _ in range(20):
                    if os.path.exists(rc_path):
                        break
                    time.sleep(0.1)
            expect(os.path.exists(rc_path), "still running after q was pressed:\n" + screen)
            rc = int(open(rc_path).read().strip())
            expect(rc == 0, "exit %d; the screen before q:\n%s" % (rc, screen))
            expect(screen.strip(), "nothing on the screen")
            return screen
        finally:
            subprocess.run(tmux + ["kill-server"], env=env, stderr=subprocess.DEVNULL)

    def finish(self):
        """Ends what the page's blocks left running (SIGTERM, then SIGKILL)."""
        for sig in (signal.SIGTERM, signal.SIGKILL):
            alive = []
            for g in self.groups:
                try:
                    os.killpg(g, sig)
                    alive.append(g)
                except ProcessLookupError:
                    pass
            if not alive:
                break
            deadline = time.time() + 10
            while time.time() < deadline and any(group_alive(g) for g in alive):
                time.sleep(0.1)


def group_alive(pgid):
    try:
        os.killpg(pgid, 0)
        return True
    except ProcessLookupError:
        return False


def run_page(checks, page, blocks):
    previous = None
    for b in blocks:
        name = "%s %s" % (b.where(), b.kind or "(no marker)")
        if b.kind is None:
            checks.run(name, raise_, "a ```%s block without a marker: put <!-- run -->, "
                       "<!-- output --> or <!-- fragment --> on the line before it "
                       "(docs/testing.md)" % (b.lang or ""))
        elif b.kind == "run":
            def run(b=b):
                out = page.run(b)
                if out is not None:
                    b.output = out
            checks.run(name, run)
        elif b.kind == "output":
            def compare(b=b, previous=previous):
                expect(previous is not None and previous.kind == "run",
                       "an output block must follow a run block")
                expect(previous.output is not None, "the run block before it did not run")
                same_shape(b.text, previous.output)
            checks.run(name, compare)
        previous = b


def raise_(msg):
    raise AssertionError(msg)


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--source", required=True)
    for prog in ("edgemon", "edgemond", "edgetop", "sim", "probe"):
        ap.add_argument("--" + prog, required=True)
    ap.add_argument("--python-dir", required=True)
    ap.add_argument("--fixtures", required=True)
    ap.add_argument("--tmux", required=True)
    ap.add_argument("--only", action="append", default=[],
                    help="run only these files' blocks (README.md, docs/cli.md, ...)")
    args = ap.parse_args()
    args.source = os.path.abspath(args.source)
    for k in ("edgemon", "edgemond", "edgetop", "sim", "probe", "python_dir", "fixtures"):
        setattr(args, k, os.path.abspath(getattr(args, k)))

    pages = sorted(os.path.relpath(p, args.source)
                   for p in glob.glob(os.path.join(args.source, "docs", "*.md")))
    files = ["README.md"] + pages
    checks = Checks()
    checks.run("every docs page linked from docs/README.md and README.md", check_index,
               args.source, pages)
    checks.run("relative links and anchors resolve", check_links, args.source, files)
    checks.run("README.md at most %d lines" % README_MAX_LINES, check_readme_length, args.source)

    scratch = tempfile.mkdtemp(prefix="docs_snippets.")
    bin_dir = os.path.join(scratch, "bin")
    os.makedirs(bin_dir)
    for name, path in (("edgemon", args.edgemon), ("edgemond", args.edgemond),
                       ("edgetop", args.edgetop), ("edgemon-sim", args.sim),
                       ("edgemon-probe", args.probe)):
        os.symlink(path, os.path.join(bin_dir, name))
    boards = Boards(args, scratch)
    ok = False
    try:
        for rel in files:
            if args.only and rel not in args.only:
                continue
            blocks = parse_blocks(os.path.join(args.source, rel), rel)
            page = Page(args, scratch, rel, bin_dir, boards)
            try:
                run_page(checks, page, blocks)
            finally:
                page.finish()
        ok = True
    finally:
        boards.stop()
        if ok and not checks.failed:
            shutil.rmtree(scratch, ignore_errors=True)
        else:
            print("scratch kept in %s" % scratch, flush=True)
    print("%d passed, %d failed" % (checks.passed, len(checks.failed)), flush=True)
    for f in checks.failed:
        print("FAILED: " + f)
    return 1 if checks.failed else 0


if __name__ == "__main__":
    sys.exit(main())
