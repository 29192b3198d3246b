#!/usr/bin/python3
"""Attack: bad numbers through the Python packages (edgemon, and the jtop shim)
against a real edgemond on a fixture board.

A script given nan, inf, a huge, negative or tiny number, or a bool, where
the API takes a number once got: `jtop(interval=nan)` polling the daemon in a
busy loop (13,082 GetLatest calls in 2 s), `jtop(interval=inf)` a dead
sampling thread while ok() stayed True, `watch(interval=1e7)`, `query(1e30)`,
`boost(duration=1e10)`, `begin_window(lease=1e9)` a bare ValueError or
OverflowError, `begin_window(lease=-5)` a 1 ms lease without a word, and
`query(step=1e-12)` raw frames instead of an error. This starts edgemond,
runs each through the real packages and checks that each raises
edgemon.InvalidArgument naming the argument (raised before sending: its
code is None), that the daemon's CPU time over the 2 s after the
jtop(interval=nan) attempt stays small (a resource bound: /proc/PID/stat
utime + stime, not a timing), that the daemon still answers, and that
jtop.ok() is False (after raising the JtopException) once its sampling
thread has died.

  python_attack.py --edgemond build/daemon/edgemond --python-dir build/python \
      --fixtures tests/fixtures

The last line is "N passed, M failed"; the exit status is non-zero on failure.
"""
import argparse
import os
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "e2e"))
import interop_test  # noqa: E402 (the Daemon helper)
from harness import Checks, expect  # noqa: E402

NAN, INF = float("nan"), float("inf")
# The daemon's CPU time allowed over the 2 s after jtop(interval=nan): it
# samples a fixture board every 100 ms (a few ms of CPU); the busy loop cost
# about a second of it (see the README's figures).
CPU_BOUND_S = 0.5


def cpu_seconds(pid):
    """utime + stime of a process, in seconds (/proc/PID/stat fields 14 and 15)."""
    with open("/proc/%d/stat" % pid) as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


class Attack:
    def __init__(self, daemon):
        import edgemon
        self.edgemon = edgemon
        self.d = daemon
        self.target = "unix:" + daemon.sock
        self.client = edgemon.connect(self.target)
        os.environ["EDGEMON_CONNECT"] = self.target

    def alive(self, after):
        rc = self.d.proc.poll()
        expect(rc is None, "edgemond exited (%s) after %s:\n%s" % (rc, after, self.d.output()))
        expect(self.client.latest().seq > 0, "no frame from GetLatest after " + after)

    def refused(self, name, fn, *args, **kwargs):
        """fn(...) raises edgemon.InvalidArgument naming `name`, raised here
        (code None), not a bare ValueError/OverflowError nor the daemon's refusal."""
        return self.refused_as(name, "must be ", fn, *args, **kwargs)

    def refused_as(self, name, words, fn, *args, **kwargs):
        """refused(), the message "edgemon: NAME: WORDS..." (a time's own
        reason follows its name instead of "must be")."""
        what = "%s(%s)" % (getattr(fn, "__name__", "call"),
                           ", ".join([repr(a) for a in args] +
                                     ["%s=%r" % kv for kv in kwargs.items()]))
        try:
            fn(*args, **kwargs)
        except self.edgemon.InvalidArgument as e:
            expect(e.code is None, "%s: refused by the daemon (%s), not checked before sending"
                   % (what, e))
            expect(("edgemon: %s: %s" % (name, words)) in str(e),
                   "%s: the message does not name %s and its range: %s" % (what, name, e))
            return e
        except Exception as e:  # noqa: BLE001 - the defect: any other exception
            raise AssertionError("%s: %s: %s, want edgemon.InvalidArgument naming %s"
                                 % (what, type(e).__name__, e, name)) from None
        raise AssertionError("%s: accepted, want edgemon.InvalidArgument naming %s"
                             % (what, name))

    # 1. jtop(interval=nan): refused, and the daemon is not polled in a loop.
    def jtop_nan_interval(self):
        from jtop import JtopException, jtop
        pid = self.d.proc.pid
        started = None
        error = None
        try:
            started = jtop(interval=NAN)
            started.start()  # what `with jtop(interval=nan)` does
        except Exception as e:  # noqa: BLE001 - checked below
            error = e
        cpu0 = cpu_seconds(pid)
        time.sleep(2)
        spent = cpu_seconds(pid) - cpu0
        if started is not None and started.is_alive():
            try:
                started.close()
            except Exception:  # noqa: BLE001 - its join(nan) on the old package
                pass
        print("  edgemond CPU over the 2 s after jtop(interval=nan): %.3f s" % spent, flush=True)
        expect(isinstance(error, self.edgemon.InvalidArgument)
               and isinstance(error, JtopException),
               "jtop(interval=nan): %r, want a JtopException that is an edgemon.InvalidArgument"
               % (error,))
        expect("interval" in str(error), "the message does not name interval: %s" % error)
        expect(spent < CPU_BOUND_S, "edgemond spent %.3f s of CPU in 2 s (bound %.1f s): "
               "polled in a loop" % (spent, CPU_BOUND_S))
        self.alive("jtop(interval=nan)")

    # 2. The other intervals jtop refuses, as a JtopException and an InvalidArgument.
    def jtop_bad_intervals(self):
        from jtop import JtopException, jtop
        for bad in (INF, -INF, 0, -1, 1e-12, 1e7, True, "1", None):
            e = self.refused("interval", jtop, interval=bad)
            expect(isinstance(e, JtopException), "jtop(interval=%r): not a JtopException" % bad)

    # 3. A dead sampling thread: ok() raises its JtopException once, then is False.
    def jtop_ok_after_the_thread_died(self):
        from jtop import JtopException, jtop

        def broken(jetson):
            raise RuntimeError("observer bug")
        out = []

        def loop(jetson):
            try:
                while jetson.ok():
                    pass
                out.append("ok() went False without the error")
            except JtopException as e:
                out.append(e)
            out.append(jetson.ok())
        with jtop(interval=0.05) as jetson:
            jetson.attach(broken)
            t = threading.Thread(target=loop, args=(jetson,), daemon=True)
            t.start()
            t.join(30)
            expect(not t.is_alive(), "ok() still waits for samples from a dead sampling thread")
        expect(len(out) == 2 and isinstance(out[0], JtopException)
               and "observer bug" in str(out[0]), "ok() did not raise the thread's error: %r"
               % (out,))
        expect(out[1] is False, "ok() after the thread died: %r, want False" % (out[1],))

    # 4. The daemon going away ends the sampling thread too.
    def jtop_ok_after_the_daemon_died(self, tmp):
        from jtop import JtopException, jtop
        other = interop_test.Daemon(tmp, "gone", os.path.join(ARGS.fixtures, "agx-orin"))
        try:
            jetson = jtop(interval=0.05, address="unix:" + other.sock)
            jetson.start()
            expect(jetson.ok(), "ok() False on a running daemon")
            other.stop()
            other = None
            raised = None
            t_end = time.monotonic() + 30
            while time.monotonic() < t_end:
                try:
                    if not jetson.ok():
                        break
                except JtopException as e:
                    raised = e
                    break
            expect(raised is not None, "ok() did not raise the daemon's absence")
            expect(jetson.ok() is False, "ok() is not False after the sampling thread ended")
            jetson.close()
        finally:
            if other is not None:
                other.stop()

    # 5. The client's numbers, each as reported and its neighbours.
    def client_numbers(self):
        c = self.client
        cases = [
            ("interval", c.watch, (), {"interval": 1e7}),
            ("interval", c.watch, (), {"interval": NAN}),
            ("interval", c.watch, (), {"interval": INF}),
            ("interval", c.watch, (), {"interval": -1}),
            ("interval", c.watch, (), {"interval": True}),
            ("since", c.query, (1e30,), {}),
            ("since", c.query, (NAN,), {}),
            ("since", c.query, (-INF,), {}),
            ("since", c.query, (True,), {}),
            ("until", c.query, ("-1m",), {"until": 1e30}),
            ("step", c.query, ("-1m",), {"step": 1e-12}),
            ("step", c.query, ("-1m",), {"step": NAN}),
            ("step", c.query, ("-1m",), {"step": INF}),
            ("step", c.query, ("-1m",), {"step": -1}),
            ("step", c.query, ("-1m",), {"step": True}),
            ("limit", c.query, ("-1m",), {"limit": -1}),
            ("limit", c.query, ("-1m",), {"limit": 2 ** 32}),
            ("limit", c.query, ("-1m",), {"limit": NAN}),
            ("rate_hz", c.boost, (NAN,), {}),
            ("rate_hz", c.boost, (1e10,), {}),
            ("rate_hz", c.boost, (True,), {}),
            ("duration", c.boost, (100,), {"duration": 1e10}),
            ("duration", c.boost, (100,), {"duration": NAN}),
            ("duration", c.boost, (100,), {"duration": INF}),
            ("duration", c.boost, (100,), {"duration": -1}),
            ("duration", c.boost, (100,), {"duration": True}),
            ("lease", c.begin_window, ("attack",), {"lease": 1e9}),
            ("lease", c.begin_window, ("attack",), {"lease": -5}),
            ("lease", c.begin_window, ("attack",), {"lease": NAN}),
            ("lease", c.begin_window, ("attack",), {"lease": INF}),
            ("lease", c.begin_window, ("attack",), {"lease": 1e-12}),
            ("lease", c.begin_window, ("attack",), {"lease": True}),
            ("window_id", c.end_window, (NAN,), {}),
            ("window_id", c.renew_window, (2 ** 63,), {}),
            ("from_ns", c.summarize, (), {"from_ns": INF, "to_ns": 1}),
            ("since", c.windows, (), {"since": NAN}),
            ("limit", c.processes, (), {"limit": NAN}),
            ("limit", c.processes, (), {"limit": -1}),
            ("rate_hz", c.measure, ("attack",), {"rate_hz": NAN}),
            ("items", c.measure, ("attack",), {"items": NAN}),
            ("timeout", self.edgemon.connect, (self.target,), {"timeout": NAN}),
            ("timeout", self.edgemon.connect, (self.target,), {"timeout": INF}),
        ]
        failures = []
        for name, fn, args, kwargs in cases:
            try:
                self.refused(name, fn, *args, **kwargs)
            except AssertionError as e:
                failures.append(str(e))
        expect(not failures, "%d of %d calls not refused as they should be:\n  %s"
               % (len(failures), len(cases), "\n  ".join(failures)))
        self.alive("the client's bad numbers")

    # 5b. Every public function given arguments of the wrong type or value:
    # each an InvalidArgument naming the argument, never a bare TypeError
    # (protobuf's "bad argument type"), AttributeError (a number as an
    # address) or a silently misread value (a string as its letters, an int
    # as a file descriptor to read a token from).
    def client_types(self, tmp):
        c = self.client
        e = self.edgemon
        table = [
            # (function, argument, args, kwargs); "" for the message's words: any reason
            (e.connect, "address", (5,), {}),
            (e.connect, "address", (b"unix:/x",), {}),
            (e.connect, "token_file", (self.target,), {"token_file": 0}),
            (e.connect, "token_file", (self.target,), {"token_file": ["/etc/token"]}),
            (e.connect, "tls", ("127.0.0.1:1",), {"tls": 1}),
            (e.connect, "tls", ("127.0.0.1:1",), {"tls": b"/ca.pem"}),
            (e.connect, "tls_server_name", ("127.0.0.1:1",), {"tls": True, "tls_server_name": 5}),
            (e.connect, "timeout", (self.target,), {"timeout": "10"}),
            (c.device, "refresh", (), {"refresh": "yes"}),
            (c.latest, "channels", ("rail/VDD_IN/power",), {}),
            (c.latest, "channels", ([1, 2],), {}),
            (c.latest, "channels", (5,), {}),
            (c.watch, "channels", (), {"channels": "cpu"}),
            (c.watch, "interval", (), {"interval": "0.1"}),
            (c.query, "channels", ("-1m",), {"channels": [b"rail"]}),
            (c.query, "since", ([1],), {}),
            (c.query, "until", ("-1m",), {"until": object()}),
            (c.query, "step", ("-1m",), {"step": "1s"}),
            (c.query, "limit", ("-1m",), {"limit": "10"}),
            (c.processes, "sort", (), {"sort": 5}),
            (c.processes, "limit", (), {"limit": "5"}),
            (c.boost, "rate_hz", ("100",), {}),
            (c.begin_window, "label", (5,), {}),
            (c.begin_window, "label", ("a\0b",), {}),
            (c.begin_window, "label", ("x" * 5000,), {}),
            (c.begin_window, "boottime_ns", ("attack",), {"boottime_ns": "1"}),
            (c.renew_window, "window_id", ("7",), {}),
            (c.end_window, "window_id", (None,), {}),
            (c.windows, "until", (), {"until": [1]}),
            (c.summarize, "window_id", (), {"window_id": "3"}),
            (c.summarize, "to_ns", (), {"from_ns": 1, "to_ns": "2"}),
            (c.measure, "label", (None,), {}),
            (c.measure, "rate_hz", ("attack",), {"rate_hz": "200"}),
            (c.measure, "items", ("attack",), {"items": "8"}),
            (c.mark, "name", (5,), {}),
            (e.measured, "label", (5,), {}),
            (e.measured, "rate_hz", ("attack",), {"rate_hz": 0}),
            (e.measured, "results", ("attack",), {"results": "list"}),
            (e.measured, "client", ("attack",), {"client": "unix:/x"}),
            (e.control, "address", (5,), {}),
            (e.control, "address", ("127.0.0.1:5",), {}),
            (e.Result.per_item, "n", (None, "8"), {}),
        ]
        ctl = e.control("unix:" + os.path.join(tmp, "no-helper.sock"))
        table += [
            (ctl.set_mode, "mode_id", ("2",), {}),
            (ctl.set_mode, "detach", (2,), {"detach": "no"}),
            (ctl.set_fan, "fan", (50,), {"fan": 1}),
            (ctl.set_fan, "percent", ("50",), {}),
            (ctl.lock_clocks, "duration_s", (), {"duration_s": "1h"}),
            (ctl.release, "kind", (None,), {}),
            (ctl.release, "kind", ("",), {}),
        ]
        failures = []
        for fn, name, args, kwargs in table:
            try:
                self.refused_as(name, "", fn, *args, **kwargs)
            except AssertionError as err:
                failures.append(str(err))
        ctl.close()
        expect(not failures, "%d of %d calls not refused as they should be:\n  %s"
               % (len(failures), len(table), "\n  ".join(failures)))
        expect(not [w for w in c.windows() if w.label in ("attack", "a\0b")],
               "a refused begin_window opened a window")
        self.alive("the client's arguments of the wrong type")

    # 6. Nothing clamped: a refused lease opened no window.
    def no_window_from_a_refused_lease(self):
        c = self.client
        before = [w.id for w in c.windows() if w.label == "attack-clamp"]
        for bad in (-5, 0, 1e-12):
            self.refused("lease", c.begin_window, "attack-clamp", lease=bad)
        after = [w.id for w in c.windows() if w.label == "attack-clamp"]
        expect(after == before, "a refused lease opened windows %s" % (after,))

    # 7. The control helper's numbers, refused before connecting.
    def control_numbers(self, tmp):
        ctl = self.edgemon.control("unix:" + os.path.join(tmp, "no-helper.sock"))
        self.refused("mode_id", ctl.set_mode, NAN)
        self.refused("mode_id", ctl.set_mode, True)
        self.refused("percent", ctl.set_fan, INF)
        self.refused("percent", ctl.set_fan, 1e9)
        self.refused("duration_s", ctl.lock_clocks, duration_s=NAN)
        self.refused("duration_s", ctl.lock_clocks, duration_s=-1)


ARGS = None


def main():
    global ARGS
    ap = argparse.ArgumentParser()
    for a in ("--edgemond", "--python-dir", "--fixtures"):
        ap.add_argument(a, required=True)
    ARGS = ap.parse_args()
    sys.path.insert(0, ARGS.python_dir)
    interop_test.ARGS = ARGS
    checks = Checks()
    with tempfile.TemporaryDirectory(prefix="edgemon-python-attack-") as tmp:
        daemon = interop_test.Daemon(tmp, "edgemond", os.path.join(ARGS.fixtures, "agx-orin"))
        try:
            a = Attack(daemon)
            a.alive("start")
            checks.run("jtop_nan_interval", a.jtop_nan_interval)
            checks.run("jtop_bad_intervals", a.jtop_bad_intervals)
            checks.run("jtop_ok_after_the_thread_died", a.jtop_ok_after_the_thread_died)
            checks.run("jtop_ok_after_the_daemon_died", a.jtop_ok_after_the_daemon_died, tmp)
            checks.run("client_numbers", a.client_numbers)
            checks.run("client_types", a.client_types, tmp)
            checks.run("no_window_from_a_refused_lease", a.no_window_from_a_refused_lease)
            checks.run("control_numbers", a.control_numbers, tmp)
            checks.run("daemon_alive_at_the_end", a.alive, "every attack")
        finally:
            rc = daemon.stop()
            if rc not in (0, None):
                checks.failed.append("edgemond exit status %s" % rc)
    print("%d passed, %d failed" % (checks.passed, len(checks.failed)), flush=True)
    return 1 if checks.failed else 0


if __name__ == "__main__":
    sys.exit(main())
