"""measure() and mark() stamp their edges on CLOCK_BOOTTIME, so a late call
(a busy client, threads, a fresh channel, a slow store write) never lengthens
the window: the end before the EndWindow call, the body's start once the
BeginWindow call has returned (sent with EndWindow, which moves the window's
start there). The delays are injected around the calls by wrapping the
client's stub; the assertions compare the window with the stamps the requests
carried, not with how long anything took."""
import time

import pytest

import edgemon
from edgemon import _measure
from edgemon._client import _caller_stamp

# The delays are long beside the body: a busy machine oversleeping the body
# by a few hundred milliseconds stays well under half of either.
DELAY_S = 1.2  # the end call held back this long after its stamp
BEGIN_DELAY_S = 1.0  # the begin call's reply held back this long
BODY_S = 0.2
# The daemon maps stamps with its wall clock's offset now: an NTP slew may
# move it by microseconds between two edges, never by a millisecond.
SLEW_NS = 1000000


class Delayed(object):
    """Wraps a stub method: records each request's caller stamps (the edge's,
    and the work's start sent with EndWindow), sleeps `before` and sends it,
    then sleeps `after` before handing back the reply."""

    def __init__(self, method, before=0.0, after=0.0):
        self.method = method
        self.before = before
        self.after = after
        self.stamps = []
        self.starts = []

    def __call__(self, request, **kwargs):
        self.stamps.append(request.caller_boottime_ns
                           if request.HasField("caller_boottime_ns") else None)
        if hasattr(request, "caller_start_boottime_ns"):
            self.starts.append(request.caller_start_boottime_ns
                               if request.HasField("caller_start_boottime_ns") else None)
        time.sleep(self.before)
        reply = self.method(request, **kwargs)
        time.sleep(self.after)
        return reply


def delayed_client(board, monkeypatch, begin_after=0.0, end_before=DELAY_S):
    c = edgemon.connect(board.target)
    begin = Delayed(c._stub.BeginWindow, after=begin_after)
    end = Delayed(c._stub.EndWindow, before=end_before)
    monkeypatch.setattr(c._stub, "BeginWindow", begin)
    monkeypatch.setattr(c._stub, "EndWindow", end)
    return c, begin, end


def assert_stamped(window_ns, start_stamp, end_stamp):
    """The window is exactly as long as the stamps EndWindow carried are apart."""
    assert start_stamp is not None and end_stamp is not None
    assert abs(window_ns - (end_stamp - start_stamp)) <= SLEW_NS, (window_ns,
                                                                   end_stamp - start_stamp)


def test_a_late_end_call_does_not_lengthen_the_measurement(nano, monkeypatch):
    c, begin, end = delayed_client(nano, monkeypatch)
    with c.measure("late-end") as m:
        time.sleep(BODY_S)
    window_ns = m.end_ns - m.start_ns
    # The body, never the end call's delay (stamped on arrival, the window
    # was over BODY_S + DELAY_S) ...
    assert BODY_S * 1e9 <= window_ns < (BODY_S + DELAY_S / 2) * 1e9, window_ns
    # ... exactly as long as the stamps the end request carried are apart.
    assert_stamped(window_ns, end.starts[0], end.stamps[0])
    r = m.result
    assert r.duration_s == pytest.approx(window_ns / 1e9, abs=1e-6)  # a double of int64 ns


def test_a_late_end_call_does_not_lengthen_a_mark(nano, monkeypatch):
    c, begin, end = delayed_client(nano, monkeypatch)
    with c.measure("outer") as m:
        with c.mark("phase") as p:
            time.sleep(BODY_S)
    mark_ns = p.end_ns - p.start_ns
    assert BODY_S * 1e9 <= mark_ns < (BODY_S + DELAY_S / 2) * 1e9, mark_ns
    # Two begins (a lease renewal is a BeginWindow without a stamp), two ends.
    assert len([b for b in begin.stamps if b is not None]) == 2 and len(end.stamps) == 2
    assert_stamped(mark_ns, end.starts[0], end.stamps[0])
    # The measurement is its own stamps apart (its block ends after the
    # mark's, delayed call included).
    outer_ns = m.end_ns - m.start_ns
    assert_stamped(outer_ns, end.starts[1], end.stamps[1])
    assert outer_ns >= mark_ns + DELAY_S * 1e9


def test_a_slow_begin_call_does_not_lengthen_the_measurement(nano, monkeypatch):
    # BeginWindow's reply comes BEGIN_DELAY_S late (a slow store write, a busy
    # machine): the window starts when the body does, after the call returned.
    c, begin, end = delayed_client(nano, monkeypatch, begin_after=BEGIN_DELAY_S, end_before=0.0)
    with c.measure("slow-begin") as m:
        time.sleep(BODY_S)
    # The daemon's account of the window: stamped before the call (or on its
    # arrival), it held the delay.
    r = m.result
    assert BODY_S <= r.duration_s < BODY_S + BEGIN_DELAY_S / 2, r.duration_s
    window_ns = m.end_ns - m.start_ns
    assert r.duration_s == pytest.approx(window_ns / 1e9, abs=1e-6)
    assert_stamped(window_ns, end.starts[0], end.stamps[0])
    assert end.starts[0] - begin.stamps[0] >= BEGIN_DELAY_S * 1e9
    assert m.start_ns - m.window.start_ns >= BEGIN_DELAY_S * 1e9  # the daemon moved the start
    assert r.start_ns == m.start_ns and r.summary.from_ns == m.start_ns
    # The store keeps the moved start.
    kept = [w for w in c.windows() if w.id == m.window.id]
    assert len(kept) == 1 and kept[0].start_ns == m.start_ns


def test_a_slow_begin_call_does_not_lengthen_a_mark(nano, monkeypatch):
    c, begin, end = delayed_client(nano, monkeypatch, begin_after=BEGIN_DELAY_S, end_before=0.0)
    with c.measure("outer") as m:
        with c.mark("phase") as p:
            time.sleep(BODY_S)
    phase = m.result.phases[0]
    mark_s = phase.summary.duration_s
    assert BODY_S <= mark_s < BODY_S + BEGIN_DELAY_S / 2, mark_s
    mark_ns = p.end_ns - p.start_ns
    assert phase.summary.duration_s == pytest.approx(mark_ns / 1e9, abs=1e-6)
    assert_stamped(mark_ns, end.starts[0], end.stamps[0])
    assert phase.start_ns == p.start_ns and phase.summary.summary.from_ns == p.start_ns
    # The measurement holds the mark's slow begin (inside its body), not its own.
    outer_ns = m.end_ns - m.start_ns
    assert_stamped(outer_ns, end.starts[1], end.stamps[1])
    assert outer_ns >= mark_ns + BEGIN_DELAY_S * 1e9


def test_a_refused_begin_is_raised_before_the_body_runs(nano):
    c = edgemon.connect(nano.target)
    ran = []
    with pytest.raises(edgemon.InvalidArgument):
        with c.measure("x" * 300):  # a label over 256 bytes
            ran.append(1)
    assert ran == []


def test_boottime_is_the_clock_the_daemon_stamps_with():
    clock = getattr(time, "CLOCK_BOOTTIME", None)
    if clock is None:
        pytest.skip("no time.CLOCK_BOOTTIME")
    a = time.clock_gettime_ns(clock)
    b = _measure.boottime_ns()
    c = time.clock_gettime_ns(clock)
    assert a <= b <= c


def test_stamps_are_sent_over_a_unix_socket_only():
    assert _caller_stamp("unix:/run/edgemon/edgemond.sock", 5) == 5
    assert _caller_stamp("unix-abstract:edgemon", 5) == 5
    assert _caller_stamp("127.0.0.1:7070", 5) is None   # another machine's boottime
    assert _caller_stamp("unix:/x", None) is None
    with pytest.raises(edgemon.InvalidArgument):
        _caller_stamp("unix:/x", 1.5)

    class Capture(object):
        def __init__(self):
            self.requests = []

        def __call__(self, request, **kwargs):
            self.requests.append(request)
            return request

    tcp = edgemon.connect("127.0.0.1:7070")  # no I/O: the stub is replaced
    tcp._stub.BeginWindow = Capture()
    tcp._stub.EndWindow = Capture()
    tcp.begin_window("x", boottime_ns=_measure.boottime_ns())
    tcp.end_window(1, boottime_ns=_measure.boottime_ns(),
                   start_boottime_ns=_measure.boottime_ns())
    assert not tcp._stub.BeginWindow.requests[0].HasField("caller_boottime_ns")
    assert not tcp._stub.EndWindow.requests[0].HasField("caller_boottime_ns")
    assert not tcp._stub.EndWindow.requests[0].HasField("caller_start_boottime_ns")


def test_an_implausible_stamp_is_refused_by_the_daemon(nano):
    c = edgemon.connect(nano.target)
    with pytest.raises(edgemon.InvalidArgument) as e:
        c.begin_window("stale", boottime_ns=_measure.boottime_ns() - 11 * 10**9)
    assert "caller_boottime_ns" in str(e.value) and "old" in str(e.value)
    w = c.begin_window("ok", boottime_ns=_measure.boottime_ns())
    with pytest.raises(edgemon.InvalidArgument) as e:
        c.end_window(w.id, boottime_ns=_measure.boottime_ns() + 60 * 10**9)
    assert "future" in str(e.value)
    # A work's start before the window's recorded start (another machine's
    # boottime, a stamp taken before the call) or after its end.
    now = _measure.boottime_ns()
    for start in (now - 60 * 10**9, now + 10**9, now + 10**6):
        with pytest.raises(edgemon.InvalidArgument) as e:
            c.end_window(w.id, boottime_ns=now, start_boottime_ns=start)
        assert "caller_start_boottime_ns" in str(e.value)
    assert c.end_window(w.id, boottime_ns=_measure.boottime_ns()).HasField("end_ns")
