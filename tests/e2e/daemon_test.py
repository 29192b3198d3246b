#!/usr/bin/env python3
"""End-to-end tests of edgemond as a process: the systemd notify contract,
kill -9 during heavy writing, a full disk, a corrupt store, bad config,
SIGHUP reload and wall-clock steps (libfaketime). Real processes, a real SQLite file, a real tmpfs.

  daemon_test.py --edgemond build/daemon/edgemond --fixtures tests/fixtures [-k pattern]
"""
import argparse
import os
import random
import signal
import socket
import sqlite3
import stat
import subprocess
import sys
import tempfile
import time
import unittest

from harness import faketime_lib, free_port

ARGS = None


class Notify:
    """A NOTIFY_SOCKET receiver, as systemd would be."""

    def __init__(self, directory):
        self.path = os.path.join(directory, "notify.sock")
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        self.sock.bind(self.path)
        self.messages = []

    def wait_for(self, needle, timeout, times=1):
        """Receives until `times` messages hold `needle` or `timeout` passes;
        whether they do."""
        deadline = time.time() + timeout
        while time.time() < deadline:
            if self.count(needle) >= times:
                return True
            self.sock.settimeout(max(0.01, deadline - time.time()))
            try:
                self.messages.append(self.sock.recv(4096).decode())
            except socket.timeout:
                pass
        return self.count(needle) >= times

    def drain(self, seconds):
        self.wait_for("\0never\0", seconds)

    def count(self, needle):
        return sum(needle in m for m in self.messages)

    def close(self):
        self.sock.close()


class Daemon:
    def __init__(self, tmp, db, root=None, extra=(), config=None, env=None, notify=None,
                 sock="api.sock", listen=None):
        self.log_path = os.path.join(tmp, f"edgemond-{time.time_ns()}.log")
        cmd = [ARGS.edgemond, "--root",
               root if root is not None else os.path.join(ARGS.fixtures, "agx-orin"),
               "--db", db, "--listen", listen or "unix:" + os.path.join(tmp, sock), *extra]
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


def threads_by_name(pid):
    """{name: thread id} of a process's threads (one id for a name shared)."""
    out = {}
    for tid in os.listdir(f"/proc/{pid}/task"):
        try:
            with open(f"/proc/{pid}/task/{tid}/comm") as f:
                out.setdefault(f.read().strip(), int(tid))
        except OSError:  # the thread ended
            pass
    return out


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

    def test_its_threads_are_named_for_what_they_do(self):
        # ps -L, top -H and the floor bench tell the daemon's threads apart
        # by name; unnamed, every one of its own reads "edgemond".
        notify = Notify(self.tmp)
        d = Daemon(self.tmp, self.db, extra=["--interval-ms", "100"], notify=notify)
        try:
            self.assertTrue(notify.wait_for("READY=1", 20), d.output())
            wanted = {"sampler", "store-writer", "watch-hub", "api-worker", "window-worker",
                      "lease-timer", "accept"}
            # READY=1 comes with the first stored frame, before every thread
            # has started.
            deadline = time.monotonic() + 20
            while True:
                names = threads_by_name(d.proc.pid)
                if wanted <= set(names) or time.monotonic() > deadline:
                    break
                time.sleep(0.05)
            self.assertLessEqual(wanted, set(names), names)
        finally:
            self.assertEqual(d.stop(), 0, d.output())

    def test_the_sampler_is_real_time_only_when_asked(self):
        # By default the sampler is lifted 10 nice levels where that is
        # allowed, and the threads that serve requests keep the daemon's
        # priority; SCHED_FIFO costs every tick more CPU and is taken only
        # with daemon.realtime = true (and where the kernel allows it).
        may_raise = os.geteuid() == 0
        probe = subprocess.run(["chrt", "-f", "1", "true"], capture_output=True)
        may_realtime = probe.returncode == 0
        for realtime in (False, True):
            cfg = self.config(f"[daemon]\nrealtime = {'true' if realtime else 'false'}\n")
            d = Daemon(self.tmp, self.db, extra=["--interval-ms", "100"], config=cfg)
            try:
                tids = {}
                deadline = time.monotonic() + 20
                while time.monotonic() < deadline and not {"sampler", "api-worker"} <= set(tids):
                    tids = threads_by_name(d.proc.pid)
                    time.sleep(0.05)
                self.assertIn("sampler", tids, d.output())
                self.assertIn("api-worker", tids, d.output())
                # The log line comes after the sampler set its priority.
                deadline = time.monotonic() + 20
                while "sampler: " not in d.output() and time.monotonic() < deadline:
                    time.sleep(0.05)
                policy = os.sched_getscheduler(tids["sampler"])
                daemon_nice = os.getpriority(os.PRIO_PROCESS, d.proc.pid)
                sampler_nice = os.getpriority(os.PRIO_PROCESS, tids["sampler"])
                worker_nice = os.getpriority(os.PRIO_PROCESS, tids["api-worker"])
                if realtime and may_realtime:
                    # Threads it starts run at normal priority.
                    self.assertEqual(policy, os.SCHED_FIFO | os.SCHED_RESET_ON_FORK, d.output())
                    self.assertIn("sampler: real-time priority (SCHED_FIFO 1)", d.output())
                else:
                    self.assertEqual(policy, os.SCHED_OTHER, d.output())
                    if may_raise:
                        self.assertEqual(sampler_nice, max(-20, daemon_nice - 10), d.output())
                        self.assertIn("sampler: 10 nice levels above the daemon" +
                                      (" (daemon.realtime: real-time refused)" if realtime
                                       else ""), d.output())
                if may_raise:
                    # Lifted or real-time, the sampler runs ahead of the
                    # request threads, which are not lowered.
                    self.assertEqual(worker_nice, daemon_nice, d.output())
            finally:
                self.assertEqual(d.stop(), 0, d.output())

    def test_journal_lines_carry_syslog_priorities(self):
        # Under systemd (JOURNAL_STREAM set) stderr goes to journald, which
        # reads a leading "<N>" as the line's priority: no libsystemd needed.
        # Committed as they come: three stored frames say the daemon has run.
        cfg = self.config("[store]\ncommit_interval_ms = 0\n")
        d = Daemon(self.tmp, self.db, extra=["--interval-ms", "100"], config=cfg,
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

    def test_kill9_loses_at_most_the_last_frame(self):
        # Frames are committed every 5 s; a kill -9 used to lose everything
        # since the last commit (2.4 s on average at 100 ms frames). The
        # flight recorder on the runtime directory gives them back at the
        # next start: at most the frame being sampled is lost.
        cfg = self.config("[store]\ncommit_interval_ms = 5000\n")
        notify = Notify(self.tmp)
        rng = random.Random(7)
        for i in range(4):
            notify.messages.clear()
            d = Daemon(self.tmp, self.db, config=cfg, notify=notify,
                       extra=["--interval-ms", "100"])
            try:
                self.assertTrue(notify.wait_for("READY=1", 20), d.output())
                time.sleep(rng.uniform(1.5, 3.0))  # well inside one commit interval
            finally:
                killed_at = time.clock_gettime_ns(time.CLOCK_BOOTTIME)
                d.stop(signal.SIGKILL)
            self.assertEqual(integrity(self.db), "ok", f"round {i}: {d.output()}")
            notify.messages.clear()
            d = Daemon(self.tmp, self.db, config=cfg, notify=notify,
                       extra=["--interval-ms", "100"])
            try:
                self.assertTrue(notify.wait_for("READY=1", 20), d.output())
                con = sqlite3.connect(f"file:{self.db}?mode=ro", uri=True, timeout=10)
                try:
                    last = con.execute("SELECT max(boottime_ns) FROM frames "
                                       "WHERE boottime_ns < ?", (killed_at,)).fetchone()[0]
                    n, lo, hi, distinct = frames(self.db)
                finally:
                    con.close()
            finally:
                self.assertEqual(d.stop(), 0)
            self.assertEqual(n, distinct, f"round {i}: duplicate seq")
            lost_ms = (killed_at - last) / 1e6
            # One 100 ms frame, plus the time the kill itself takes to land.
            self.assertLess(lost_ms, 300, f"round {i}: {lost_ms:.0f} ms of frames lost; "
                            f"{d.output()}")
            self.assertIn("stored", d.output())
        notify.close()

    def test_commits_every_10min_with_the_flight_recorder_and_every_5s_without(self):
        # store.commit_interval_ms unset: 10 minutes (or 512 frames) while the
        # flight recorder (beside the unix socket) keeps what is not committed
        # yet, 5 s with a TCP listener alone, where a crash would lose the
        # interval.
        d = Daemon(self.tmp, self.db, extra=["--interval-ms", "100"])
        try:
            self.assertGreaterEqual(wait_frames(self.db, 1, 20), 1, d.output())
            time.sleep(8)  # 80 frames: past a 5 s commit, inside 10 minutes and a batch
            committed = frames(self.db)[0]
        finally:
            self.assertEqual(d.stop(), 0)
        self.assertLess(committed, 10, d.output())  # the first frame, committed at start
        self.assertGreater(frames(self.db)[0], 60)  # a clean stop commits the rest

        db = os.path.join(self.tmp, "tcp.db")
        d = Daemon(self.tmp, db, extra=["--interval-ms", "100"],
                   listen=f"127.0.0.1:{free_port()}")
        try:
            committed = wait_frames(db, 20, 30)
        finally:
            self.assertEqual(d.stop(), 0)
        self.assertGreaterEqual(committed, 20, d.output())

    def test_warns_when_the_flight_recorder_is_not_on_tmpfs(self):
        # The ring beside the socket is meant for the runtime directory's
        # tmpfs (/run/edgemon under systemd); on a disk file system every
        # frame's record reaches the disk, and the daemon says so.
        run = os.path.join(self.tmp, "run")
        os.mkdir(run)
        subprocess.run(["mount", "-t", "tmpfs", "-o", "size=8m", "tmpfs", run], check=True)
        try:
            for directory in (run, self.tmp):
                sock = os.path.join(directory, "api.sock")
                fs = subprocess.run(["stat", "-f", "-c", "%T", directory], check=True,
                                    capture_output=True, text=True).stdout.strip()
                db = os.path.join(self.tmp, f"{len(directory)}.db")
                d = Daemon(self.tmp, db, listen="unix:" + sock)
                try:
                    self.assertGreaterEqual(wait_frames(db, 1, 20), 1, d.output())
                finally:
                    self.assertEqual(d.stop(), 0)
                warned = f"flight recorder: {sock}.flight is not on tmpfs" in d.output()
                self.assertEqual(warned, fs not in ("tmpfs", "ramfs"), f"{fs}: {d.output()}")
        finally:
            subprocess.run(["umount", run], check=True)

    def test_disk_full_keeps_sampling_and_resumes(self):
        mnt = os.path.join(self.tmp, "small")
        os.mkdir(mnt)
        subprocess.run(["mount", "-t", "tmpfs", "-o", "size=3m", "tmpfs", mnt], check=True)
        try:
            db = os.path.join(mnt, "edgemon.db")
            # A MiB set aside first: the store's own WAL (up to 32 MiB at the
            # default cap) may fill the 3 MiB before the filler below does, and
            # removing the filler must still give space back.
            filler = os.path.join(mnt, "filler")
            with open(filler, "wb") as f:
                f.write(b"\0" * (1 << 20))
            cfg = self.config("[store]\ncommit_interval_ms = 50\n")
            d = Daemon(self.tmp, db, config=cfg, extra=["--interval-ms", "20", "--print"])
            try:
                wait_frames(db, 5, 20)
                # Unbuffered: a write cut short by the full disk leaves nothing
                # for close() to flush again (which raised ENOSPC).
                with open(filler, "ab", buffering=0) as f:
                    try:
                        while True:
                            f.write(b"\0" * 65536)
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

    def refused_bad_store(self, want):
        """Starts on self.db and expects exit 3 (not restarted by systemd)
        with one line naming the file, what is wrong and --recreate-bad-db."""
        d = Daemon(self.tmp, self.db)
        rc = d.proc.wait(timeout=20)
        d.log.close()
        lines = d.output().strip().splitlines()
        self.assertEqual(rc, 3, lines)
        self.assertEqual(len(lines), 1, lines)
        self.assertIn(self.db, lines[0])
        self.assertIn(want, lines[0])
        self.assertIn("--recreate-bad-db", lines[0])

    def test_corrupt_store_is_refused_or_moved_aside_never_lost(self):
        garbage = bytes(random.Random(7).getrandbits(8) for _ in range(65536))
        with open(self.db, "wb") as f:
            f.write(garbage)
        self.refused_bad_store("not an SQLite database")
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

    def test_store_from_a_newer_edgemon_or_truncated_exits_3(self):
        d = Daemon(self.tmp, self.db, extra=["--interval-ms", "20"])
        try:
            self.assertGreaterEqual(wait_frames(self.db, 100, 20), 100, d.output())
        finally:
            self.assertEqual(d.stop(), 0)
        size = os.path.getsize(self.db)
        con = sqlite3.connect(self.db)
        con.execute("PRAGMA user_version = 99")
        con.close()
        self.refused_bad_store("newer edgemon")
        con = sqlite3.connect(self.db)
        con.execute("PRAGMA user_version = 4")
        con.close()
        # A file cut short (as if truncated while the daemon ran).
        os.truncate(self.db, size // 3)
        self.refused_bad_store("corrupt")
        # Moved aside, never deleted, and a new store begins.
        d = Daemon(self.tmp, self.db, extra=["--recreate-bad-db", "--interval-ms", "20"])
        try:
            self.assertGreaterEqual(wait_frames(self.db, 3, 20), 3, d.output())
        finally:
            self.assertEqual(d.stop(), 0)
        moved = [n for n in os.listdir(self.tmp) if n.startswith("edgemon.db.bad-")]
        self.assertEqual(len(moved), 1, os.listdir(self.tmp))
        self.assertEqual(os.path.getsize(os.path.join(self.tmp, moved[0])), size // 3)

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
            # READY=1 again once the new interval holds, however long the
            # reload took on a busy machine.
            self.assertTrue(notify.wait_for("READY=1", 20, times=2), notify.messages)
            time.sleep(0.1)
            n1 = frames(self.db)[0]
            time.sleep(2)
            fast = frames(self.db)[0] - n1
        finally:
            self.assertEqual(d.stop(), 0)
        self.assertLess(slow, 14)       # ~10 frames at 5 Hz
        self.assertGreater(fast, 25)    # ~40 frames at 20 Hz
        self.assertIn("reloaded", d.output())
        notify.close()


    def test_hostile_config_files_and_flags_exit_2_with_one_line(self):
        fifo = os.path.join(self.tmp, "fifo.toml")
        os.mkfifo(fifo)
        deep = self.config("[" + ".".join(["a"] * 40000) + "]\n")
        cases = [
            (["--config", self.tmp], "is not a regular file"),
            (["--config", fifo], "is not a regular file"),  # used to block start
            (["--config", "/dev/zero"], "is not a regular file"),  # read without bound
            (["--config", deep], "nested deeper than"),  # crashed the parser
        ]
        def refused(want, **kw):
            d = Daemon(self.tmp, kw.pop("db", self.db), **kw)
            rc = d.proc.wait(timeout=10)
            d.log.close()
            lines = d.output().strip().splitlines()
            self.assertEqual(rc, 2, (kw, lines))
            self.assertEqual(len(lines), 1, (kw, lines))
            self.assertIn(want, lines[0])

        for extra, want in cases:
            refused(want, extra=extra)
        refused("flag --root", root="")  # aborted with exit 134
        refused("flag --db", db="")
        refused("store.retention", config=self.config("[store]\nretention = 18446744074\n"))
        self.assertFalse(os.path.exists(self.db), "nothing may be written on bad config")

    def test_deep_config_on_sighup_keeps_the_daemon_running(self):
        cfg = self.config("[daemon]\ninterval_ms = 100\n")
        notify = Notify(self.tmp)
        d = Daemon(self.tmp, self.db, config=cfg, notify=notify)
        try:
            self.assertTrue(notify.wait_for("READY=1", 20), d.output())
            self.config("[daemon]\nx." + ".".join(["a"] * 40000) + " = 1\n")
            d.proc.send_signal(signal.SIGHUP)
            self.assertTrue(notify.wait_for("RELOADING=1", 5))
            time.sleep(0.5)
            self.assertIsNone(d.proc.poll(), "a deep config on reload killed the daemon")
        finally:
            self.assertEqual(d.stop(), 0)
        self.assertIn("keeping the running configuration", d.output())
        notify.close()

    def test_one_daemon_per_store_and_per_socket(self):
        notify = Notify(self.tmp)
        # Frames committed within 0.1 s: the first daemon is seen to go on storing.
        cfg = self.config("[store]\ncommit_interval_ms = 100\n")
        first = Daemon(self.tmp, self.db, notify=notify, config=cfg)
        try:
            self.assertTrue(notify.wait_for("READY=1", 20), first.output())
            # Same database, another socket: refused, naming the holder.
            second = Daemon(self.tmp, self.db, sock="other.sock")
            rc = second.proc.wait(timeout=15)
            second.log.close()
            self.assertEqual(rc, 2, second.output())
            self.assertIn(f"pid {first.proc.pid}", second.output())
            # Same socket, another database: refused; the first keeps serving.
            sock = os.path.join(self.tmp, "api.sock")
            inode = os.stat(sock).st_ino
            third = Daemon(self.tmp, os.path.join(self.tmp, "other.db"))
            rc = third.proc.wait(timeout=15)
            third.log.close()
            self.assertNotEqual(rc, 0, third.output())
            # Refused by the socket's lock, before anything was touched.
            self.assertIn(f"is in use by pid {first.proc.pid}", third.output())
            self.assertEqual(os.stat(sock).st_ino, inode, "the live socket was replaced")
            c = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            c.connect(sock)  # the first daemon still answers
            c.close()
            n = frames(self.db)[0]
            self.assertEqual(wait_frames(self.db, n + 1, 15) > n, True)
        finally:
            self.assertEqual(first.stop(), 0)
        # After a crash the lock is gone with the process and the stale socket
        # is replaced.
        d = Daemon(self.tmp, self.db, notify=notify)
        self.assertTrue(notify.wait_for("READY=1", 20) and d.proc.poll() is None, d.output())
        d.stop(signal.SIGKILL)
        notify.messages.clear()
        d = Daemon(self.tmp, self.db, notify=notify)
        try:
            self.assertTrue(notify.wait_for("READY=1", 20), d.output())
        finally:
            self.assertEqual(d.stop(), 0)
        notify.close()

    def test_files_are_private_whatever_the_umask(self):
        notify = Notify(self.tmp)
        old = os.umask(0)
        try:
            d = Daemon(self.tmp, self.db, notify=notify)
        finally:
            os.umask(old)
        try:
            self.assertTrue(notify.wait_for("READY=1", 20), d.output())
            self.assertEqual(stat.S_IMODE(os.stat(self.db).st_mode), 0o600)
            sock = os.path.join(self.tmp, "api.sock")
            self.assertEqual(stat.S_IMODE(os.stat(sock + ".lock").st_mode), 0o600)
            self.assertFalse(os.path.exists(self.db + ".lock"))  # the store locks itself
            self.assertEqual(stat.S_IMODE(os.stat(sock).st_mode), 0o660)
        finally:
            self.assertEqual(d.stop(), 0)
        notify.close()

class ClockJumpTest(unittest.TestCase):
    """Real wall-clock steps under libfaketime (Debian's faketime): the offset
    is changed at run time through FAKETIME_TIMESTAMP_FILE; CLOCK_MONOTONIC and
    CLOCK_BOOTTIME are left real, as a clock step leaves them."""

    def setUp(self):
        self.lib = faketime_lib()
        if self.lib is None:
            self.skipTest("libfaketime is not installed (scripts/install-deps.sh)")
        self._tmp = tempfile.TemporaryDirectory(prefix="edgemond-clock-")
        self.tmp = self._tmp.name
        self.db = os.path.join(self.tmp, "edgemon.db")
        self.rc = os.path.join(self.tmp, "faketime.rc")
        self.set_offset("+0")

    def tearDown(self):
        self._tmp.cleanup()

    def set_offset(self, spec):
        tmp = self.rc + ".new"
        with open(tmp, "w") as f:
            f.write(spec + "\n")
        os.replace(tmp, self.rc)

    def daemon(self):
        cfg = os.path.join(self.tmp, "edgemond.toml")
        with open(cfg, "w") as f:
            f.write('[store]\ncommit_interval_ms = 20\nretention = "60s"\n')
        env = {"LD_PRELOAD": self.lib, "FAKETIME_TIMESTAMP_FILE": self.rc,
               "FAKETIME_NO_CACHE": "1", "FAKETIME_DONT_FAKE_MONOTONIC": "1"}
        return Daemon(self.tmp, self.db, config=cfg, env=env, extra=["--interval-ms", "50"])

    def stored(self):
        con = sqlite3.connect(f"file:{self.db}?mode=ro", uri=True, timeout=10)
        try:
            rows = con.execute("SELECT seq, realtime_ns FROM frames ORDER BY seq").fetchall()
            try:
                jumps = con.execute("SELECT count(*) FROM clock_jumps").fetchone()[0]
            except sqlite3.OperationalError:  # a store without the table
                jumps = None
            return rows, jumps
        finally:
            con.close()

    def assert_monotonic(self, rows):
        back = [(a, b) for a, b in zip(rows, rows[1:]) if b[1] < a[1]]
        self.assertEqual(back, [], "stored realtime went backwards")

    def test_forward_jump_and_back_keeps_the_history(self):
        # Retention 60 s: before, a +8 d step expired every frame but the new ones.
        d = self.daemon()
        try:
            before = wait_frames(self.db, 60, 20)
            self.assertGreaterEqual(before, 60, d.output())
            self.set_offset("+8d")
            time.sleep(3)
            self.set_offset("+0")
            time.sleep(2)
            rows, jumps = self.stored()
        finally:
            self.assertEqual(d.stop(), 0)
        self.assertGreaterEqual(len(rows), before + 40, d.output())  # nothing expired
        self.assertEqual(rows[0][0], 1)  # the first frame is still held
        self.assert_monotonic(rows)
        self.assertIsNotNone(jumps)
        self.assertEqual(jumps, 1)  # the step back left stored time as it was
        # Both steps logged, once each.
        self.assertEqual(d.output().count("wall clock stepped"), 2, d.output())

    def test_backward_jump_then_correction_keeps_the_history(self):
        d = self.daemon()
        try:
            before = wait_frames(self.db, 60, 20)
            self.set_offset("-30d")
            time.sleep(2)
            self.set_offset("+0")
            time.sleep(2)
            rows, _ = self.stored()
        finally:
            self.assertEqual(d.stop(), 0)
        self.assertGreaterEqual(len(rows), before + 40, d.output())
        self.assertEqual(rows[0][0], 1)
        self.assert_monotonic(rows)
        # Restarted 30 days behind: stored time still never goes back.
        self.set_offset("-30d")
        d = self.daemon()
        try:
            wait_frames(self.db, len(rows) + 20, 20)
            rows, _ = self.stored()
        finally:
            self.assertEqual(d.stop(), 0)
        self.assertEqual(rows[0][0], 1)
        self.assert_monotonic(rows)


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
