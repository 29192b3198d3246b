"""measure() and mark() stamp their edges on CLOCK_BOOTTIME before any call,
so a late call (a busy client, threads, a fresh channel) never lengthens the
window. The delays are injected between the stamp and the send by wrapping
the client's stub; the assertions compare the window with the stamps the
requests carried, not with how long anything took."""
import time

import pytest

import edgemon
from edgemon import _measure
from edgemon._client import _caller_stamp

DELAY_S = 0.4   # the end call held back this long after its stamp
BODY_S = 0.2
# The daemon maps stamps with its wall clock's offset now: an NTP slew may
# move it by microseconds between two edges, never by a millisecond.
SLEW_NS = 1000000


class Delayed(object):
    """Wraps a stub method: records each request's caller stamp, then sleeps
    `delay` before sending it."""

    def __init__(self, method, delay):
        self.method = method
        self.delay = delay
        self.stamps = []

    def __call__(self, request, **kwargs):
        self.stamps.append(request.caller_boottime_ns
                           if request.HasField("caller_boottime_ns") else None)
        time.sleep(self.delay)
        return self.method(request, **kwargs)


def delayed_client(board, monkeypatch):
    c = edgemon.connect(board.target)
    begin = Delayed(c._stub.BeginWindow, 0.0)
    end = Delayed(c._stub.EndWindow, DELAY_S)
    monkeypatch.setattr(c._stub, "BeginWindow", begin)
    monkeypatch.setattr(c._stub, "EndWindow", end)
    return c, begin, end


def test_a_late_end_call_does_not_lengthen_the_measurement(nano, monkeypatch):
    c, begin, end = delayed_client(nano, monkeypatch)
    with c.measure("late-end") as m:
        time.sleep(BODY_S)
    window_ns = m.end_ns - m.window.start_ns
    # The body and its begin call, never the end call's delay (stamped on
    # arrival, the window was over BODY_S + DELAY_S) ...
    assert BODY_S * 1e9 <= window_ns < (BODY_S + DELAY_S / 2) * 1e9, window_ns
    # ... exactly as long as the stamps the requests carried are apart.
    start_stamp, end_stamp = begin.stamps[0], end.stamps[0]
    assert start_stamp is not None and end_stamp is not None
    assert abs(window_ns - (end_stamp - start_stamp)) <= SLEW_NS, (window_ns,
                                                                   end_stamp - start_stamp)
    r = m.result
    assert r.duration_s == pytest.approx(window_ns / 1e9, abs=1e-6)  # a double of int64 ns


def test_a_late_end_call_does_not_lengthen_a_mark(nano, monkeypatch):
    c, begin, end = delayed_client(nano, monkeypatch)
    with c.measure("outer") as m:
        with c.mark("phase") as p:
            time.sleep(BODY_S)
    mark_ns = p.end_ns - p.window.start_ns
    assert BODY_S * 1e9 <= mark_ns < (BODY_S + DELAY_S / 2) * 1e9, mark_ns
    assert len(begin.stamps) == 2 and len(end.stamps) == 2
    assert abs(mark_ns - (end.stamps[0] - begin.stamps[1])) <= SLEW_NS
    # The measurement is its own stamps apart (its block ends after the
    # mark's, delayed call included).
    outer_ns = m.end_ns - m.window.start_ns
    assert abs(outer_ns - (end.stamps[1] - begin.stamps[0])) <= SLEW_NS
    assert outer_ns >= mark_ns + DELAY_S * 1e9


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
    tcp.end_window(1, boottime_ns=_measure.boottime_ns())
    assert not tcp._stub.BeginWindow.requests[0].HasField("caller_boottime_ns")
    assert not tcp._stub.EndWindow.requests[0].HasField("caller_boottime_ns")


def test_an_implausible_stamp_is_refused_by_the_daemon(nano):
    c = edgemon.connect(nano.target)
    with pytest.raises(edgemon.InvalidArgument) as e:
        c.begin_window("stale", boottime_ns=_measure.boottime_ns() - 11 * 10**9)
    assert "caller_boottime_ns" in str(e.value) and "old" in str(e.value)
    w = c.begin_window("ok", boottime_ns=_measure.boottime_ns())
    with pytest.raises(edgemon.InvalidArgument) as e:
        c.end_window(w.id, boottime_ns=_measure.boottime_ns() + 60 * 10**9)
    assert "future" in str(e.value)
    assert c.end_window(w.id, boottime_ns=_measure.boottime_ns()).HasField("end_ns")
