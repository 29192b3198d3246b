#!/usr/bin/env python3
"""End-to-end tests of edgemond as a process: the systemd notify contract,
kill -9 during heavy writing, a full disk, a corrupt store, bad config and
SIGHUP reload. Real processes, a real SQLite file, a real tmpfs.

  daemon_test.py --edgemond build/daemon/edgemond --fixtures tests/fixtures [-k pattern]
"""
import argparse
import os
import random
import signal
import socket
import sqlite3
import subprocess
import sys
import tempfile
import time
import unittest

ARGS = None


class Notify:
    """A NOTIFY_SOCKET receiver, as systemd would be."""

    def __init__(self, directory):
        self.path = os.path.join(directory, "notify.sock")
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        self.sock.bind(self.path)
        self.messages = []

    def wait_for(self, needle, timeout):
        deadline = time.time() + timeout
        while time.time() < deadline:
            if any(needle in m for m in self.messages):
                return True
            self.sock.settimeout(max(0.01, deadline - time.time()))
            try:
                self.messages.append(self.sock.recv(4096).decode())
            except socket.timeout:
                pass
        return any(needle in m for m in self.messages)

    def drain(self, seconds):
        self.wait_for("\0never\0", seconds)

    def count(self, needle):
        return sum(needle in m for m in self.messages)

    def close(self):
        self.sock.close()


class Daemon:
    def __init__(self, tmp, db, root=None, extra=(), config=None, env=None, notify=None):
        self.log_path = os.path.join(tmp, f"edgemond-{time.time_ns()}.log")
        cmd = [ARGS.edgemond, "--root", root or os.path.join(ARGS.fixtures, "agx-orin"),
               "--db", db, "--listen", "unix:" + os.path.join(tmp, "api.sock"), *extra]
        if config is not None:
            cmd += ["--config", config]
        e = dict(os.environ)
        e.pop("JOURNAL_STREAM", None)
        if notify is not None:
            e["NOTIFY_SOCKET"] = notify.path
        e.update(env or {})
        self.log = open(self.log_path, "w")
        self.proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=self.log, env=e)

    def stop(self, sig=signal.SIGTERM, timeout=25):
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
        try:
            return self.proc.wait(timeout=timeout)
        finally:
            self.log.close()

    def output(self):
        if not self.log.closed:
            self.log.flush()
        with open(self.log_path) as f:
            return f.read()


def frames(db):
    con = sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=10)
    try:
        n, lo, hi, distinct = con.execute(
            "SELECT count(*), min(seq), max(seq), count(DISTINCT seq) FROM frames").fetchone()
        return n, lo, hi, distinct
    finally:
        con.close()


def integrity(db):
    con = sqlite3.connect(db, timeout=10)
    try:
        return con.execute("PRAGMA integrity_check").fetchone()[0]
    finally:
        con.close()


def wait_frames(db, at_least, timeout):
    deadline = time.time() + timeout
    while time.time() < deadline:
        try:
            n = frames(db)[0]
            if n >= at_least:
                return n
        except sqlite3.Error:
            pass
        time.sleep(0.05)
    return frames(db)[0]


class DaemonTest(unittest.TestCase):
    def setUp(self):
        self._tmp = tempfile.TemporaryDirectory(prefix="edgemond-e2e-")
        self.tmp = self._tmp.name
        self.db = os.path.join(self.tmp, "edgemon.db")

    def tearDown(self):
        self._tmp.cleanup()

    def config(self, text):
        path = os.path.join(self.tmp, "edgemond.toml")
        with open(path, "w") as f:
            f.write(text)
        return path

    def test_ready_after_first_stored_frame_watchdog_and_clean_stop(self):
        notify = Notify(self.tmp)
        d = Daemon(self.tmp, self.db, extra=["--interval-ms", "100"], notify=notify,
                   env={"WATCHDOG_USEC": "400000"})
        try:
            self.assertTrue(notify.wait_for("READY=1", 20), d.output())
            # READY means the first frame is already in the file.
            self.assertGreaterEqual(frames(self.db)[0], 1)
            ready = next(m for m in notify.messages if "READY=1" in m)
            self.assertIn("STATUS=", ready)
            self.assertIn("channels", ready)
            notify.drain(1.2)
            self.assertGreaterEqual(notify.count("WATCHDOG=1"), 3)  # every 200 ms
            time.sleep(0.5)
        finally:
            rc = d.stop()
        self.assertEqual(rc, 0, d.output())
        self.assertTrue(notify.wait_for("STOPPING=1", 2))
        n, lo, hi, distinct = frames(self.db)
        # ~2 s at 10 Hz, all flushed at stop.
        self.assertGreaterEqual(n, 12)
        self.assertEqual(n, distinct)
        self.assertEqual(hi - lo + 1, n)
        self.assertEqual(integrity(self.db), "ok")
        notify.close()

    def test_journal_lines_carry_syslog_priorities(self):
        # Under systemd (JOURNAL_STREAM set) stderr goes to journald, which
        # reads a leading "<N>" as the line's priority: no libsystemd needed.
        d = Daemon(self.tmp, self.db, extra=["--interval-ms", "100"],
                   env={"JOURNAL_STREAM": "8:12345"})
        try:
            self.assertGreaterEqual(wait_frames(self.db, 3, 20), 3, d.output())
        finally:
            self.assertEqual(d.stop(), 0)
        lines = [line for line in d.output().splitlines() if line]
        self.assertTrue(lines, "no log lines")
        for line in lines:
            self.assertRegex(line, r"^<[2-7]>\S", line)  # no timestamp: journald adds its own
        self.assertTrue(any(line.startswith("<6>") for line in lines), lines)

    def test_notify_on_an_abstract_socket_and_watchdog_for_another_pid(self):
        # NOTIFY_SOCKET=@name is an abstract address; WATCHDOG_PID naming
        # another process means the watchdog is not ours (sd_watchdog_enabled).
        name = f"edgemon-notify-{os.getpid()}-{time.time_ns()}"
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        sock.bind("\0" + name)
        notify = Notify.__new__(Notify)
        notify.path, notify.sock, notify.messages = "@" + name, sock, []
        d = Daemon(self.tmp, self.db, extra=["--interval-ms", "100"], notify=notify,
                   env={"WATCHDOG_USEC": "400000", "WATCHDOG_PID": "1"})
        try:
            self.assertTrue(notify.wait_for("READY=1", 20), d.output())
            notify.drain(1.0)
            self.assertEqual(notify.count("WATCHDOG=1"), 0, notify.messages)
        finally:
            self.assertEqual(d.stop(), 0)
        self.assertTrue(notify.wait_for("STOPPING=1", 2))
        notify.close()

    def test_watchdog_outlasts_long_frame_periods(self):
        notify = Notify(self.tmp)
        d = Daemon(self.tmp, self.db, extra=["--interval-ms", "2000"], notify=notify,
                   env={"WATCHDOG_USEC": "1000000"})
        try:
            self.assertTrue(notify.wait_for("READY=1", 20), d.output())
            # Three frame periods, or systemd would kill a healthy daemon.
            self.assertTrue(notify.wait_for("WATCHDOG_USEC=6000000", 5), notify.messages)
        finally:
            self.assertEqual(d.stop(), 0)
        notify.close()

    def test_kill9_during_heavy_writing_never_corrupts(self):
        cfg = self.config("[store]\ncommit_interval_ms = 20\n")
        last_hi = -1
        rng = random.Random(42)
        for i in range(15):
            d = Daemon(self.tmp, self.db, config=cfg,
                       extra=["--interval-ms", "10", "--energy-rate-hz", "200"])
            try:
                wait_frames(self.db, max(1, last_hi + 2) if last_hi >= 0 else 1, 20)
                time.sleep(rng.uniform(0.02, 0.4))
            finally:
                d.stop(signal.SIGKILL)
            self.assertEqual(integrity(self.db), "ok", f"round {i}: {d.output()}")
            n, lo, hi, distinct = frames(self.db)
            self.assertEqual(n, distinct, f"round {i}: duplicate seq")
            self.assertGreater(hi, last_hi, f"round {i}: seq did not continue")
            last_hi = hi
        self.assertGreater(last_hi, 15)

    def test_disk_full_keeps_sampling_and_resumes(self):
        mnt = os.path.join(self.tmp, "small")
        os.mkdir(mnt)
        subprocess.run(["mount", "-t", "tmpfs", "-o", "size=3m", "tmpfs", mnt], check=True)
        try:
            db = os.path.join(mnt, "edgemon.db")
            cfg = self.config("[store]\ncommit_interval_ms = 50\n")
            d = Daemon(self.tmp, db, config=cfg, extra=["--interval-ms", "20", "--print"])
            try:
                wait_frames(db, 5, 20)
                filler = os.path.join(mnt, "filler")
                with open(filler, "wb") as f:
                    try:
                        while True:
                            f.write(b"\0" * 65536)
                            f.flush()
                    except OSError:
                        pass
                time.sleep(2)
                self.assertIsNone(d.proc.poll(), "edgemond died on a full disk:\n" + d.output())
                out = d.output()
                self.assertIn("store:", out)
                # Logged once (at most once a minute), not per batch.
                self.assertLessEqual(out.count("batches dropped so far"), 2, out)
                full_hi = frames(db)[2]
                os.remove(filler)
                deadline = time.time() + 10
                while time.time() < deadline and frames(db)[2] <= full_hi + 10:
                    time.sleep(0.1)
                self.assertGreater(frames(db)[2], full_hi + 10, "no frames stored after space "
                                   "returned:\n" + d.output())
            finally:
                rc = d.stop()
            self.assertEqual(rc, 0, d.output())
            self.assertEqual(integrity(db), "ok")
        finally:
            subprocess.run(["umount", "-l", mnt], check=False)

    def test_corrupt_store_is_refused_or_moved_aside_never_lost(self):
        garbage = bytes(random.Random(7).getrandbits(8) for _ in range(65536))
        with open(self.db, "wb") as f:
            f.write(garbage)
        d = Daemon(self.tmp, self.db)
        rc = d.proc.wait(timeout=20)
        d.log.close()
        self.assertEqual(rc, 1, d.output())
        self.assertIn("store", d.output())
        with open(self.db, "rb") as f:
            self.assertEqual(f.read(), garbage, "the file was modified")
        notify = Notify(self.tmp)
        d = Daemon(self.tmp, self.db, extra=["--recreate-bad-db"], notify=notify)
        try:
            self.assertTrue(notify.wait_for("READY=1", 20), d.output())
        finally:
            self.assertEqual(d.stop(), 0)
        moved = [n for n in os.listdir(self.tmp) if n.startswith("edgemon.db.bad")]
        self.assertEqual(len(moved), 1, os.listdir(self.tmp))
        with open(os.path.join(self.tmp, moved[0]), "rb") as f:
            self.assertEqual(f.read(), garbage)
        self.assertEqual(integrity(self.db), "ok")
        notify.close()

    def test_bad_config_exits_2_with_one_line_naming_the_key(self):
        cfg = self.config("[daemon]\ninterval_ms = \"fast\"\n")
        d = Daemon(self.tmp, self.db, config=cfg)
        rc = d.proc.wait(timeout=10)
        d.log.close()
        self.assertEqual(rc, 2)
        lines = d.output().strip().splitlines()
        self.assertEqual(len(lines), 1, lines)
        self.assertIn("daemon.interval_ms", lines[0])
        self.assertFalse(os.path.exists(self.db), "nothing may be written on bad config")
        d = Daemon(self.tmp, self.db, extra=["--interval-ms", "1"])
        self.assertEqual(d.proc.wait(timeout=10), 2)
        d.log.close()
        self.assertIn("daemon.interval_ms", d.output())

    def test_sighup_reloads_the_interval(self):
        cfg = self.config("[daemon]\ninterval_ms = 200\n[store]\ncommit_interval_ms = 50\n")
        notify = Notify(self.tmp)
        d = Daemon(self.tmp, self.db, config=cfg, notify=notify)
        try:
            self.assertTrue(notify.wait_for("READY=1", 20), d.output())
            n0 = frames(self.db)[0]
            time.sleep(2)
            slow = frames(self.db)[0] - n0
            self.config("[daemon]\ninterval_ms = 50\n[store]\ncommit_interval_ms = 50\n")
            d.proc.send_signal(signal.SIGHUP)
            self.assertTrue(notify.wait_for("RELOADING=1", 5))
            time.sleep(0.3)
            n1 = frames(self.db)[0]
            time.sleep(2)
            fast = frames(self.db)[0] - n1
        finally:
            self.assertEqual(d.stop(), 0)
        self.assertLess(slow, 14)       # ~10 frames at 5 Hz
        self.assertGreater(fast, 25)    # ~40 frames at 20 Hz
        self.assertIn("reloaded", d.output())
        notify.close()


def main():
    global ARGS
    ap = argparse.ArgumentParser()
    ap.add_argument("--edgemond", required=True)
    ap.add_argument("--fixtures", required=True)
    ap.add_argument("-k", default=None)
    ARGS, rest = ap.parse_known_args()
    argv = [sys.argv[0], "-v"] + (["-k", ARGS.k] if ARGS.k else []) + rest
    prog = unittest.main(argv=argv, exit=False)
    r = prog.result
    failed = len(r.failures) + len(r.errors)
    print(f"{r.testsRun - failed} passed, {failed} failed")
    sys.exit(1 if failed or r.testsRun == 0 else 0)


if __name__ == "__main__":
    main()
