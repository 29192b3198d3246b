"""Numbers given to the edgemon and jtop APIs: nan, inf, huge, negative, too
small, or a bool is edgemon.InvalidArgument (also a ValueError) naming the
argument and its range, raised here before anything is sent (``code`` is
None: not the daemon's refusal), never a bare ValueError or OverflowError,
never a value clamped or rounded into range behind the caller's back."""
import datetime
import math

import pytest

import edgemon
from jtop import JtopException, jtop

NAN, INF = float("nan"), float("inf")


def refused(fn, *args, **kwargs):
    """The local InvalidArgument that fn(*args, **kwargs) raises."""
    with pytest.raises(edgemon.InvalidArgument) as e:
        fn(*args, **kwargs)
    assert isinstance(e.value, ValueError)
    assert e.value.code is None, "refused by the daemon, not checked before sending: %s" % e.value
    return str(e.value)


# (call on a Client, argument name in the message)
CLIENT_CASES = [
    (lambda c: c.watch(interval=NAN), "interval"),
    (lambda c: c.watch(interval=INF), "interval"),
    (lambda c: c.watch(interval=1e7), "interval"),
    (lambda c: c.watch(interval=-1), "interval"),
    (lambda c: c.watch(interval=True), "interval"),
    (lambda c: c.watch(interval="1"), "interval"),
    (lambda c: c.query(1e30), "since"),
    (lambda c: c.query(NAN), "since"),
    (lambda c: c.query(-INF), "since"),
    (lambda c: c.query(True), "since"),
    (lambda c: c.query("-1m", until=INF), "until"),
    (lambda c: c.query("-1m", until=datetime.datetime(9999, 1, 1)), "until"),
    (lambda c: c.query("-1m", step=1e-12), "step"),
    (lambda c: c.query("-1m", step=0.0009), "step"),
    (lambda c: c.query("-1m", step=NAN), "step"),
    (lambda c: c.query("-1m", step=INF), "step"),
    (lambda c: c.query("-1m", step=-1), "step"),
    (lambda c: c.query("-1m", step=1e30), "step"),
    (lambda c: c.query("-1m", step=True), "step"),
    (lambda c: c.query("-1m", step=datetime.timedelta(microseconds=1)), "step"),
    (lambda c: c.query("-1m", limit=-1), "limit"),
    (lambda c: c.query("-1m", limit=2 ** 32), "limit"),
    (lambda c: c.query("-1m", limit=NAN), "limit"),
    (lambda c: c.query("-1m", limit=2.5), "limit"),
    (lambda c: c.query("-1m", limit=True), "limit"),
    (lambda c: c.boost(NAN), "rate_hz"),
    (lambda c: c.boost(0), "rate_hz"),
    (lambda c: c.boost(1001), "rate_hz"),
    (lambda c: c.boost(1e10), "rate_hz"),
    (lambda c: c.boost(True), "rate_hz"),
    (lambda c: c.boost(100, duration=1e10), "duration"),
    (lambda c: c.boost(100, duration=NAN), "duration"),
    (lambda c: c.boost(100, duration=INF), "duration"),
    (lambda c: c.boost(100, duration=0), "duration"),
    (lambda c: c.boost(100, duration=-1), "duration"),
    (lambda c: c.boost(100, duration=True), "duration"),
    (lambda c: c.begin_window("x", lease=1e9), "lease"),
    (lambda c: c.begin_window("x", lease=-5), "lease"),
    (lambda c: c.begin_window("x", lease=0), "lease"),
    (lambda c: c.begin_window("x", lease=0.0001), "lease"),
    (lambda c: c.begin_window("x", lease=NAN), "lease"),
    (lambda c: c.begin_window("x", lease=INF), "lease"),
    (lambda c: c.begin_window("x", lease=True), "lease"),
    (lambda c: c.renew_window(NAN), "window_id"),
    (lambda c: c.end_window(INF), "window_id"),
    (lambda c: c.end_window(2 ** 63), "window_id"),
    (lambda c: c.end_window(True), "window_id"),
    (lambda c: c.summarize(window_id=1.5), "window_id"),
    (lambda c: c.summarize(from_ns=NAN, to_ns=1), "from_ns"),
    (lambda c: c.summarize(from_ns=0, to_ns=2 ** 64), "to_ns"),
    (lambda c: c.summarize(since=INF), "since"),
    (lambda c: c.windows(since=NAN), "since"),
    (lambda c: c.windows(until=-1e30), "until"),
    (lambda c: c.processes(limit=NAN), "limit"),
    (lambda c: c.processes(limit=-1), "limit"),
    (lambda c: c.processes(limit=10001), "limit"),
    (lambda c: c.processes(limit=True), "limit"),
    (lambda c: c.measure("x", rate_hz=NAN), "rate_hz"),
    (lambda c: c.measure("x", rate_hz=True), "rate_hz"),
    (lambda c: c.measure("x", rate_hz=5000), "rate_hz"),
    (lambda c: c.measure("x", items=NAN), "items"),
    (lambda c: c.measure("x", items=0), "items"),
    (lambda c: c.measure("x", items=-1), "items"),
]


@pytest.mark.parametrize("call,name", CLIENT_CASES,
                         ids=["case%02d" % i for i in range(len(CLIENT_CASES))])
def test_client_refuses_bad_numbers_before_sending(nano, call, name):
    c = edgemon.connect(nano.target)
    msg = refused(call, c)
    assert msg.startswith("edgemon: %s: must be " % name), msg
    assert ", got " in msg, msg


def test_messages_give_the_accepted_range(nano):
    c = edgemon.connect(nano.target)
    assert "from 0 to 3600 (0: every frame), got nan" in refused(c.watch, interval=NAN)
    assert "from 0.001 to 86400, got -5" in refused(c.begin_window, "x", lease=-5)
    assert "from 0.001 to 3600, got 10000000000.0" in refused(c.boost, 100, duration=1e10)
    assert "an integer from 1 to 1000, got True" in refused(c.boost, True)
    assert "(0 or None: raw frames), got 1e-12" in refused(c.query, "-1m", step=1e-12)
    assert "got 1e+30" in refused(c.query, 1e30)


def test_connect_refuses_a_bad_timeout(nano):
    for bad in (NAN, INF, 0, -1, 1e9, True, "10"):
        assert refused(edgemon.connect, nano.target, timeout=bad).startswith(
            "edgemon: timeout: must be ")
    assert edgemon.connect(nano.target, timeout=None).timeout is None


def test_the_edges_of_each_range_are_accepted(nano):
    c = edgemon.connect(nano.target)
    c.watch(interval=0).close()
    c.watch(interval=3600).close()
    c.watch(interval=0.1).close()
    assert c.boost(1000, duration=0.001) >= 1
    assert c.boost(1.0, duration=1) >= 1          # an integral float is an integer
    assert c.begin_window("edge-lease-min", lease=0.001).lease_ms == 1
    w = c.begin_window("edge-lease-max", lease=86400)
    assert w.lease_ms == 86400000
    c.end_window(w.id)
    key = next(ch.key for ch in c.channels() if ch.kind == "cpu" and ch.field == "load")
    # 1 ms steps: accepted (what the buckets hold is test_edgemon's business)
    assert all(isinstance(r, edgemon.BucketRow) for r in c.query("-2s", channels=[key],
                                                                 step=0.001))
    assert c.query("-2s", step=0)  # 0: raw frames
    assert all(isinstance(r, edgemon.Row) for r in c.query("-2s", step=0.0))
    assert c.query(-2, limit=1)
    assert c.processes(limit=10000) is not None
    assert c.summarize(from_ns=0, to_ns=2 ** 63 - 1) is not None


def test_a_lease_is_never_clamped(nano):
    """begin_window(lease=-5) used to become a 1 ms lease without a word."""
    c = edgemon.connect(nano.target)
    before = len([w for w in c.windows() if w.label == "clamped?"])
    refused(c.begin_window, "clamped?", lease=-5)
    assert len([w for w in c.windows() if w.label == "clamped?"]) == before


def test_control_refuses_bad_numbers_before_connecting(tmp_path):
    ctl = edgemon.control("unix:" + str(tmp_path / "no-helper.sock"))
    for fn, name in ((lambda: ctl.set_mode(NAN), "mode_id"),
                     (lambda: ctl.set_mode(2 ** 31), "mode_id"),
                     (lambda: ctl.set_mode(True), "mode_id"),
                     (lambda: ctl.set_fan(NAN), "percent"),
                     (lambda: ctl.set_fan(101), "percent"),
                     (lambda: ctl.set_fan(-1), "percent"),
                     (lambda: ctl.lock_clocks(duration_s=INF), "duration_s"),
                     (lambda: ctl.lock_clocks(duration_s=-1), "duration_s"),
                     (lambda: ctl.lock_clocks(duration_s=31 * 86400), "duration_s"),
                     (lambda: ctl.set_mode(0, duration_s=NAN), "duration_s")):
        assert refused(fn).startswith("edgemon: %s: must be " % name)


def test_per_item_refuses_nan_and_non_positive_counts(nano):
    c = edgemon.connect(nano.target)
    with c.measure("per-item") as m:
        pass
    r = m.result
    for bad in (NAN, INF, 0, -3, True):
        assert "edgemon: n: must be " in refused(r.per_item, bad)


@pytest.mark.parametrize("bad", [NAN, INF, -INF, 0, -1, 1e-9, 0.001, 1e7, True, "1", None])
def test_jtop_refuses_a_bad_interval(nano, monkeypatch, bad):
    """jtop(interval=nan) used to poll the daemon in a busy loop, inf to kill
    the sampling thread while ok() stayed True."""
    monkeypatch.setenv("EDGEMON_CONNECT", nano.target)
    with pytest.raises(JtopException) as e:
        jtop(interval=bad)
    assert isinstance(e.value, edgemon.InvalidArgument) and isinstance(e.value, ValueError)
    assert str(e.value).startswith("edgemon: interval: must be a number from 0.01 to 3600")


def test_jtop_interval_edges(nano, monkeypatch):
    monkeypatch.setenv("EDGEMON_CONNECT", nano.target)
    assert jtop(interval=0.01).interval == 0.01
    assert jtop(interval=3600).interval == 3600.0
    assert jtop(interval=1).interval == 1.0


def test_jtop_ok_is_false_once_the_sampling_thread_died(nano, monkeypatch):
    """An observer raising ends the sampling thread: ok() raises that
    JtopException once (with the cause), then is False at once, never waiting
    for samples that will not come. (It used to stay True, or wait for ever.)"""
    monkeypatch.setenv("EDGEMON_CONNECT", nano.target)

    def broken(jetson):
        raise RuntimeError("observer bug")

    with jtop(interval=0.05) as jetson:
        jetson.attach(broken)
        jetson.join(30)
        assert not jetson.is_alive()
        with pytest.raises(JtopException, match="sampling stopped: RuntimeError: observer bug") \
                as e:
            jetson.ok(spin=True)
        assert isinstance(e.value.__cause__, RuntimeError)
        assert jetson.ok() is False
        assert jetson.ok(spin=True) is False


def test_jtop_setters_refuse_bad_numbers_as_jtop_exceptions(nano, monkeypatch, tmp_path):
    monkeypatch.setenv("EDGEMON_CONNECT", nano.target)
    monkeypatch.setenv("EDGEMON_CONTROL", "unix:" + str(tmp_path / "no-helper.sock"))
    with jtop(interval=0.5) as jetson:
        for bad in (NAN, INF, 101, 1e9, True):
            with pytest.raises(JtopException, match="percent: must be a number from 0 to 100"):
                jetson.fan.speed = bad
        for bad in (NAN, INF, 1e10, 0.5, True):
            with pytest.raises(JtopException, match="mode_id: must be an integer"):
                jetson.nvpmodel = bad
        assert math.isfinite(jetson.interval)
