"""measure(), mark() and the result of a measured window."""
import functools
import os
import sys
import threading
import time
import weakref
from typing import Any, Callable, Dict, List, NamedTuple, Optional, Set, TypeVar

from . import _check, _errors
from ._bundle import present
from ._lazy import pb

# A measurement's boost lease: renewed every third of it while the block runs.
_BOOST_LEASE_S = 10.0
# A measurement's window lease: renewed every quarter of it while the block runs.
_WINDOW_LEASE_S = 10.0


# CLOCK_BOOTTIME (Python 3.6 lacks the name, not the clock: 7 on Linux).
_CLOCK_BOOTTIME = getattr(time, "CLOCK_BOOTTIME", 7 if sys.platform.startswith("linux") else None)


def boottime_ns() -> Optional[int]:
    """CLOCK_BOOTTIME now in ns, the clock every process on the machine (the
    daemon too) shares and that never steps: a window's edges are stamped on
    it. None where the platform has no such clock."""
    if _CLOCK_BOOTTIME is None:
        return None
    read_ns = getattr(time, "clock_gettime_ns", None)
    try:
        if read_ns is not None:
            return read_ns(_CLOCK_BOOTTIME)
        return int(time.clock_gettime(_CLOCK_BOOTTIME) * 1e9)
    except OSError:
        return None


def _warm(client: Any) -> None:
    """Before a stamped start: a client's first call sets up its channel (a
    few ms, more on a busy machine), so it is made before the stamp, not
    counted in the window. The board's info, which the result needs anyway."""
    client.device(refresh=False)


def check_rate(rate_hz: Any) -> Optional[int]:
    """A measurement's boost rate: None (no boost) or 1 to 1000 Hz."""
    if rate_hz is None:
        return None
    return _check.integer("rate_hz", rate_hz, 1, _check.MAX_BOOST_HZ)


def check_items(items: Any) -> Optional[float]:
    """A measurement's item count: None or a finite number > 0."""
    return None if items is None else _check.real("items", items, 0.0, None, low_open=True)


class RailEnergy(NamedTuple):
    name: str
    parent: str
    input: bool
    energy_j: Optional[float]     # None: not measured (never 0)
    avg_power_w: Optional[float]
    peak_power_w: Optional[float]


class TempRange(NamedTuple):
    """Degrees Celsius at the start (None when unread), and the minimum and
    maximum in the window."""
    start_c: Optional[float]
    min_c: float
    max_c: float


class LoadRange(NamedTuple):
    """A GPU's or engine's load in the window, 0..1: the mean over the samples
    that had a reading, and the highest."""
    kind: str  # "gpu" or "engine"
    mean: float
    peak: float


class PerItem(NamedTuple):
    """Per-item figures of the input rail over the items' phase (the whole
    window without ``items_phase``)."""
    energy_j: float       # J per item (the input rail's)
    items_per_j: Optional[float]
    per_s: Optional[float] = None  # items per second over the same span
    above_baseline_j: Optional[float] = None  # J per item above the idle baseline
    phase: Optional[str] = None  # the phase the figures cover (None: the window)


class Baseline(NamedTuple):
    """``measure(..., baseline=...)``: each rail's mean power (W, None where not
    measured) over ``seconds`` of stored history right before the window."""
    seconds: float
    from_ns: int
    to_ns: int
    power_w: Dict[str, Optional[float]]


def check_baseline(baseline: Any) -> Optional[int]:
    """A baseline length in ns: None, a duration string ("10s") or seconds > 0."""
    if baseline is None:
        return None
    if isinstance(baseline, str):
        from ._timespec import parse_duration_ns
        ns = parse_duration_ns(baseline)
        if ns <= 0:
            raise _errors.InvalidArgument("edgemon: baseline must be longer than 0")
        return ns
    return int(_check.real("baseline", baseline, 0.0, 86400.0 * 366, low_open=True) * 1e9)


def take_baseline(client: Any, ns: int) -> Baseline:
    """Each rail's mean power over the ``ns`` of history right before now;
    edgemon.Error when the store does not hold it or a window overlaps it
    (the board was not idle)."""
    to = client.daemon_now_ns()
    frm = to - ns
    what = "edgemon: baseline %.3f s: " % (ns / 1e9)
    s = client.summarize(from_ns=frm, to_ns=to)
    if s.HasField("requested_from_ns"):
        raise _errors.Error(what + "the store holds only %.3f s of history before now"
                            % s.duration_s)
    for w in client.windows(since="@%d.%09d" % divmod(frm, 10**9),
                            until="@%d.%09d" % divmod(to, 10**9)):
        raise _errors.Error(what + "window %d (%s) overlaps that history: the board was not "
                            "idle" % (w.id, w.label))
    power = {r.name: (r.energy_mj / s.duration_s / 1000.0
                      if r.HasField("energy_mj") and s.duration_s > 0 else None)
             for r in s.rails}
    if all(v is None for v in power.values()):
        raise _errors.Error(what + "no rail energy measured over it")
    return Baseline(s.duration_s, s.from_ns, s.to_ns, power)


class Spread(NamedTuple):
    """A figure over several runs: mean, sample standard deviation and the
    half-width of the mean's 95 % confidence interval (Student t, n - 1
    degrees of freedom); std and ci95 need two values."""
    mean: Optional[float]
    std: Optional[float]
    ci95: Optional[float]
    n: int


# t(0.975, df) for df 1..30 (then the usual steps down to the normal 1.960).
_T95 = (12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201, 2.179,
        2.160, 2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086, 2.080, 2.074, 2.069, 2.064,
        2.060, 2.056, 2.052, 2.048, 2.045, 2.042)


def student_t95(df: int) -> float:
    if df <= 30:
        return _T95[df - 1]
    return 2.021 if df <= 40 else 2.000 if df <= 60 else 1.980 if df <= 120 else 1.960


def spread(values: List[float]) -> Spread:
    n = len(values)
    if n == 0:
        return Spread(None, None, None, 0)
    mean = sum(values) / n
    if n < 2:
        return Spread(mean, None, None, 1)
    sd = (sum((v - mean) ** 2 for v in values) / (n - 1)) ** 0.5
    return Spread(mean, sd, student_t95(n - 1) * sd / n ** 0.5, n)


def stats(results: List[Any]) -> Dict[str, Any]:
    """The spread of repeated measurements (``Result`` or ``Measurement``
    objects, e.g. from a loop of ``measure()``): {"n": runs, and per figure
    "duration_s", "energy_j" (input rail), "avg_power_w", "j_per_item",
    "items_per_s": :class:`Spread`}, the shape of ``edgemon record
    --repeat``'s "aggregate". A figure a run did not measure is left out of
    that figure's values (its ``n`` says how many)."""
    rs = [r.result if isinstance(r, Measurement) else r for r in results]
    for r in rs:
        if not isinstance(r, Result):
            raise _errors.InvalidArgument("edgemon: stats() takes measure() results, not %s"
                                          % type(r).__name__)
    figures = {"duration_s": [], "energy_j": [], "avg_power_w": [], "j_per_item": [],
               "items_per_s": []}  # type: Dict[str, List[float]]
    for r in rs:
        figures["duration_s"].append(r.duration_s)
        if r.total_energy_j is not None:
            figures["energy_j"].append(r.total_energy_j)
        if r.avg_power_w is not None:
            figures["avg_power_w"].append(r.avg_power_w)
        if r.items:
            try:
                pi = r.per_item()
            except _errors.Error:
                continue
            figures["j_per_item"].append(pi.energy_j)
            if pi.per_s is not None:
                figures["items_per_s"].append(pi.per_s)
    out = {"n": len(rs)}  # type: Dict[str, Any]
    for k, v in figures.items():
        out[k] = spread(v)
    return out


class Phase(NamedTuple):
    """A ``client.mark()`` inside a measurement."""
    name: str
    window_id: int
    start_ns: int
    end_ns: Optional[int]
    summary: Optional["Result"]


class Result(object):
    """The daemon's summary of a window, in SI units.

    ``energy_j``: J per rail; ``total_energy_j``: the board input rail's (its
    sub-rails are part of it, never added; None without exactly one input
    rail); ``avg_power_w``/``peak_power_w``: the input rail's (or, without one,
    None); ``rails``: every rail's :class:`RailEnergy`; ``temperatures``:
    :class:`TempRange` by zone; ``clock_residency``: {clock: {Hz: share}};
    ``loads``: :class:`LoadRange` by GPU and engine (those with a reading)."""

    def __init__(self, summary: Any, label: str = "", window_id: int = 0,
                 start_ns: int = 0, end_ns: int = 0, phases: Optional[List[Phase]] = None,
                 items: Optional[float] = None, boost_rate_hz: int = 0,
                 client: Any = None, device: Any = None,
                 baseline: Optional[Baseline] = None, items_phase: Optional[str] = None) -> None:
        self.summary = summary
        self.label = label
        self.window_id = window_id
        self.start_ns = start_ns or summary.from_ns
        self.end_ns = end_ns or summary.to_ns
        self.phases = phases or []
        self.items = items
        self.boost_rate_hz = boost_rate_hz
        self._client = client
        self._device = device
        self.baseline = baseline
        self.items_phase = items_phase
        # measure(nvtx=True): summary.json's "nvtx" entries (None without nvtx).
        self.nvtx = None  # type: Optional[List[Dict[str, Any]]]
        self.nvtx_notes = []  # type: List[str]
        self._rail_samples = None  # type: Any
        self.rails = {r.name: RailEnergy(r.name, r.parent, r.input,
                                         present(r, "energy_mj", 1000.0),
                                         present(r, "avg_power_mw", 1000.0),
                                         present(r, "peak_power_mw", 1000.0))
                      for r in summary.rails}

    @property
    def duration_s(self) -> float:
        return self.summary.duration_s

    @property
    def energy_j(self) -> Dict[str, Optional[float]]:
        return {n: r.energy_j for n, r in self.rails.items()}

    @property
    def input_rail(self) -> Optional[str]:
        """The name of the board's input rail, when there is exactly one."""
        inputs = [r.name for r in self.rails.values() if r.input]
        return inputs[0] if len(inputs) == 1 else None

    @property
    def total_energy_j(self) -> Optional[float]:
        n = self.input_rail
        return self.rails[n].energy_j if n else None

    @property
    def avg_power_w(self) -> Optional[float]:
        n = self.input_rail
        return self.rails[n].avg_power_w if n else None

    @property
    def peak_power_w(self) -> Optional[float]:
        n = self.input_rail
        return self.rails[n].peak_power_w if n else None

    @property
    def energy_above_baseline_j(self) -> Dict[str, Optional[float]]:
        """J per rail above its idle baseline power over the window (None
        without a baseline or a measurement)."""
        out = {}  # type: Dict[str, Optional[float]]
        for n, r in self.rails.items():
            w = self.baseline.power_w.get(n) if self.baseline else None
            out[n] = (r.energy_j - w * self.duration_s
                      if r.energy_j is not None and w is not None else None)
        return out

    @property
    def total_energy_above_baseline_j(self) -> Optional[float]:
        n = self.input_rail
        return self.energy_above_baseline_j[n] if n else None

    @property
    def temperatures(self) -> Dict[str, TempRange]:
        return {t.name: TempRange(present(t, "start_mc", 1000.0), t.min_mc / 1000.0,
                                  t.max_mc / 1000.0)
                for t in self.summary.temps}

    @property
    def clock_residency(self) -> Dict[str, Dict[int, float]]:
        return {r.name: {int(k) * 1000: v for k, v in sorted(r.khz_share.items())}
                for r in self.summary.residency}

    @property
    def loads(self) -> Dict[str, LoadRange]:
        return {ld.name: LoadRange(ld.kind, ld.mean_permille / 1000.0, ld.peak_permille / 1000.0)
                for ld in self.summary.loads}

    @property
    def samples(self) -> int:
        return self.summary.samples

    @property
    def gaps(self) -> int:
        return self.summary.gaps

    @property
    def note(self) -> str:
        return self.summary.note

    def items_span(self) -> "Result":
        """What the per-item figures cover: the ``items_phase`` phase's result,
        else the whole window. edgemon.Error when that phase is missing."""
        if not self.items_phase:
            return self
        for p in self.phases:
            if p.name == self.items_phase and p.summary is not None:
                return p.summary
        raise _errors.Error("edgemon: no ended mark named %r in this measurement (items_phase)"
                            % self.items_phase)

    def per_item(self, n: Optional[float] = None) -> PerItem:
        """Energy per item of the input rail (J/item), items per J, items per
        second and J per item above the baseline for ``n`` items (default:
        the ``items`` given to measure()), over the ``items_phase`` phase when
        one was named, else the whole window."""
        if n is None and self.items is None:
            raise _errors.InvalidArgument("edgemon: per_item needs a positive item count")
        n = _check.real("n", self.items if n is None else n, 0.0, None, low_open=True)
        span = self.items_span()
        total = span.total_energy_j
        if total is None:
            raise _errors.Error("edgemon: no board input rail: no total energy per item "
                                "(see energy_j by rail)")
        above = span.total_energy_above_baseline_j
        return PerItem(total / n, n / total if total > 0 else None,
                       n / span.duration_s if span.duration_s > 0 else None,
                       above / n if above is not None else None, self.items_phase or None)

    @property
    def rail_samples(self) -> Any:
        """The rail power samples the daemon kept over the result's range
        while the boost (``rate_hz``) was held, at the rate that held: a
        :class:`RailSamples` (read once, on first use; empty without a
        boost). None for a result without a client."""
        if self._rail_samples is None and self._client is not None:
            self._rail_samples = read_rail_samples(self._client, self.summary.from_ns,
                                                   self.summary.to_ns)
        return self._rail_samples

    def save(self, directory: str) -> None:
        """Writes summary.json, samples.csv and trace.json, the bundle of
        ``edgemon record --out``."""
        from . import _bundle
        _bundle.save(self, _check.text("directory", directory, nonempty=True))

    def __repr__(self) -> str:
        total = self.total_energy_j
        return "<edgemon.Result %r %.3f s %s>" % (
            self.label, self.duration_s,
            "%.3f J" % total if total is not None else "no input rail")


def read_rail_samples(client: Any, from_ns: int, to_ns: int) -> Any:
    """The kept rail samples of [from_ns, to_ns]; the newest reach the store
    with the next frame, so this reads again (for up to 3 s) until the daemon
    says the range is complete."""
    deadline = time.monotonic() + 3
    while True:
        got = client._rail_samples(pb.ReadRailSamplesRequest(from_ns=from_ns, to_ns=to_ns + 1))
        if got.complete_to_ns > to_ns or time.monotonic() >= deadline:
            return got
        time.sleep(0.1)


class Renewals(object):
    """The leases a client keeps alive: the windows of its measurements and
    their marks, and their rate boosts.

    One daemon thread per client, started with the first lease and kept for
    the client's life, renews each lease on its own schedule (absolute
    deadlines on the monotonic clock) and sleeps on a condition variable
    while none is held. A process that dies stops renewing: the daemon
    closes its windows as abandoned and lets its boosts run out. The thread
    never keeps the process alive (a daemon thread), holds the client weakly
    (a client dropped without close() ends it), and stops at close(). After
    fork() the child holds no leases and no thread (the parent's thread
    renews the parent's); its first lease starts its own thread.

    Thread-safe: add() and discard() may be called from any thread; a
    renewal runs on the renewal thread, and its errors (the daemon away for
    a moment) are left to the next renewal."""

    def __init__(self, client: Any) -> None:
        self._client = weakref.ref(client, self._client_gone)
        self._stopped = False
        self._reset()
        _LIVE.add(self)

    def _reset(self) -> None:
        self._cond = threading.Condition(threading.Lock())
        self._leases = set()  # type: Set[_Lease]
        self._thread = None  # type: Optional[threading.Thread]

    def start(self) -> None:
        """Starts the renewal thread (once; add() does it too)."""
        with self._cond:
            self._start_locked()

    def _start_locked(self) -> None:
        if self._thread is None and not self._stopped:
            self._thread = threading.Thread(target=self._run, name="edgemon-leases",
                                            daemon=True)
            self._thread.start()

    def add(self, period_s: float, renew: Callable[[Any], Any]) -> "_Lease":
        """Calls ``renew(client)`` every ``period_s`` seconds, the first time
        one period from now, until ``discard``."""
        lease = _Lease(period_s, time.monotonic() + period_s, renew)
        with self._cond:
            self._leases.add(lease)
            self._start_locked()
            self._cond.notify()
        return lease

    def discard(self, lease: Optional["_Lease"]) -> None:
        if lease is not None:
            with self._cond:
                self._leases.discard(lease)

    def stop(self) -> Optional[threading.Thread]:
        """Ends the renewals and the thread (without waiting for it, which it
        returns)."""
        with self._cond:
            self._stopped = True
            self._leases.clear()
            self._cond.notify()
            return self._thread

    def _client_gone(self, _ref: Any) -> None:
        # May run on any thread, this one's too (a collection while it holds
        # the lock): it never waits for the lock.
        self._stopped = True
        if self._cond.acquire(False):
            try:
                self._cond.notify()
            finally:
                self._cond.release()

    def _due(self) -> Optional[List["_Lease"]]:
        """Waits for the next renewals due; None once stopped."""
        with self._cond:
            while not self._stopped:
                now = time.monotonic()
                if not self._leases:
                    self._cond.wait()
                    continue
                soonest = min(lease.due for lease in self._leases)
                if soonest > now:
                    self._cond.wait(soonest - now)
                    continue
                due = [lease for lease in self._leases if lease.due <= now]
                for lease in due:
                    lease.due += lease.period_s
                    if lease.due <= now:  # late (a slow renewal): the next period from now
                        lease.due = now + lease.period_s
                return due
        return None

    def _run(self) -> None:
        while True:
            due = self._due()
            client = self._client()
            if due is None or client is None:
                return
            for lease in due:
                try:
                    lease.renew(client)
                except Exception:  # noqa: BLE001 - the next renewal tries again
                    pass
            del client


class _Lease(object):
    __slots__ = ("period_s", "due", "renew")

    def __init__(self, period_s: float, due: float, renew: Callable[[Any], Any]) -> None:
        self.period_s = period_s
        self.due = due
        self.renew = renew


# Every Renewals alive, reset in a child after fork(): its copies of the
# parent's leases are the parent's to renew, and its lock may have been held
# by the parent's renewal thread, which the child does not have.
_LIVE = weakref.WeakSet()  # type: Any


def _after_fork_in_child() -> None:
    for r in list(_LIVE):
        r._reset()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)


def _window_renewal(window_id: int) -> Callable[[Any], Any]:
    return lambda client: client.renew_window(window_id)


class _Booster(object):
    """A rate boost, renewed every third of its lease until stopped."""

    def __init__(self, client: Any, rate_hz: int) -> None:
        self.rate_hz = rate_hz
        self.effective = client.boost(rate_hz, _BOOST_LEASE_S)
        self._renewals = client._renewals()
        self._lease = self._renewals.add(_BOOST_LEASE_S / 3, self._renew)

    def _renew(self, client: Any) -> None:
        self.effective = client.boost(self.rate_hz, _BOOST_LEASE_S)

    def stop(self) -> None:
        self._renewals.discard(self._lease)


class Measurement(object):
    """The context manager of ``client.measure()``; ``.result`` after the block."""

    def __init__(self, client: Any, label: str, rate_hz: Optional[int],
                 items: Optional[float], baseline_ns: Optional[int] = None,
                 items_phase: Optional[str] = None, nvtx: bool = False) -> None:
        self.client = client
        self.label = label
        self.rate_hz = rate_hz
        self.items = items
        self.baseline_ns = baseline_ns
        self.items_phase = items_phase
        self.baseline = None  # type: Optional[Baseline]
        self.nvtx = nvtx
        self._nvtx_file = None  # type: Optional[str]
        self._nvtx_offset = 0
        self.window = None  # type: Any
        self.start_ns = 0  # the window's start as it ended (the body's, when stamped)
        self.end_ns = 0
        self._start_boottime = None  # type: Optional[int]
        self.marks = []  # type: List[Any]
        self._booster = None  # type: Optional[_Booster]
        self._lease = None  # type: Optional[_Lease]
        self._result = None  # type: Optional[Result]

    def __enter__(self) -> "Measurement":
        # The client's renewal thread, started (once) before any call of the
        # window, which then only adds its lease to it.
        if self.nvtx:
            from . import _nvtx
            self._nvtx_file = _nvtx.attach()
            _nvtx.flush()  # ranges before the block stay before the offset
            self._nvtx_offset = _nvtx.size(self._nvtx_file)
        renewals = self.client._renewals()
        renewals.start()
        if self.baseline_ns:  # the history right before the block, refused before it runs
            self.baseline = take_baseline(self.client, self.baseline_ns)
        if self.rate_hz:
            self._booster = _Booster(self.client, self.rate_hz)
        # The window starts where the block does: BeginWindow is stamped right
        # before its call, and the body's start, read once that call returned
        # (its errors come first), is sent with EndWindow, which moves the
        # start there.
        try:
            _warm(self.client)
            self.window = self.client.begin_window(self.label, lease=_WINDOW_LEASE_S,
                                                   boottime_ns=boottime_ns())
        except Exception:
            if self._booster:
                self._booster.stop()
            raise
        self._lease = renewals.add(_WINDOW_LEASE_S / 4, _window_renewal(self.window.id))
        self.client._stack().append(self)
        self._start_boottime = boottime_ns()  # the body's start: the last thing before it
        return self

    def __exit__(self, *exc: Any) -> None:
        end = boottime_ns()  # the block's end, before any call
        stack = self.client._stack()
        if stack and stack[-1] is self:
            stack.pop()
        try:
            ended = self.client.end_window(self.window.id, boottime_ns=end,
                                           start_boottime_ns=self._start_boottime,
                                           items=self.items)
            self.start_ns = ended.start_ns
            self.end_ns = ended.end_ns
        finally:
            self.client._renewals().discard(self._lease)
            if self._booster:
                self._booster.stop()

    @property
    def window_id(self) -> int:
        return self.window.id if self.window is not None else 0

    @property
    def result(self) -> Result:
        """The summary (fetched on first use, once the daemon has stored a
        frame after the window's end)."""
        if self._result is None:
            if not self.end_ns:
                raise _errors.Error("edgemon: the measurement %r has not ended" % self.label)
            c = self.client
            device = c.device()
            # The counters' interpolation at the window's end needs a frame
            # stored at or after it.
            c._wait_stored(self.end_ns, time.monotonic() + 15)
            summary = c.summarize(window_id=self.window.id)
            phases = []
            for m in self.marks:
                s = c.summarize(window_id=m.window.id) if m.end_ns else None
                phases.append(Phase(m.name, m.window.id, m.start_ns or m.window.start_ns,
                                    m.end_ns or None,
                                    Result(s, m.name, m.window.id, baseline=self.baseline)
                                    if s is not None else None))
            boost = self._booster.effective if self._booster else 0
            if boost and boost <= device.energy_rate_hz:
                boost = 0  # the boost did not raise the rate
            self._result = Result(summary, self.label, self.window.id, self.start_ns,
                                  self.end_ns, phases, self.items, boost, c, device,
                                  self.baseline, self.items_phase)
            if self._nvtx_file is not None:
                self._result.nvtx = self._nvtx_ranges()
        return self._result

    def _nvtx_ranges(self) -> List[Dict[str, Any]]:
        """The NVTX ranges that ended inside the window, with their energy."""
        from . import _nvtx
        _nvtx.flush()
        ranges, bad, open_ = _nvtx.read(self._nvtx_file, self._nvtx_offset)
        ranges = [r for r in ranges if self.start_ns <= r[0] and r[1] <= self.end_ns]
        notes = self._result.nvtx_notes
        if bad:
            notes.append("%d NVTX lines that did not parse were left out" % bad)
        if open_:
            notes.append("%d NVTX ranges still open when their thread ended were left out"
                         % open_)
        if not ranges:
            notes.append("no NVTX range ended inside the block: nothing called NVTX, or NVTX "
                         "was first called in this process before measure(nvtx=True) set "
                         "NVTX_INJECTION64_PATH")
        return _nvtx.stats(self.client, ranges, notes)


class Mark(object):
    """The context manager of ``client.mark()``."""

    def __init__(self, client: Any, name: str) -> None:
        self.client = client
        self.name = name
        self.window = None  # type: Any
        self.start_ns = 0  # the window's start as it ended (the phase's, when stamped)
        self.end_ns = 0
        self._start_boottime = None  # type: Optional[int]
        self.parent = None  # type: Optional[Measurement]
        self._lease = None  # type: Optional[_Lease]

    def __enter__(self) -> "Mark":
        stack = self.client._stack()
        self.parent = stack[-1] if stack else None
        label = ("%d:%s" % (self.parent.window_id, self.name)) if self.parent else self.name
        _warm(self.client)
        # Inside a measurement the mark is leased and renewed with it.
        self.window = self.client.begin_window(
            label, lease=_WINDOW_LEASE_S if self.parent is not None else None,
            boottime_ns=boottime_ns())
        if self.parent is not None:
            self.parent.marks.append(self)
            self._lease = self.client._renewals().add(_WINDOW_LEASE_S / 4,
                                                      _window_renewal(self.window.id))
        self._start_boottime = boottime_ns()  # the phase's start, after BeginWindow returned
        return self

    def __exit__(self, *exc: Any) -> None:
        end = boottime_ns()  # the phase's end, before any call
        if self._lease is not None:
            self.client._renewals().discard(self._lease)
        ended = self.client.end_window(self.window.id, boottime_ns=end,
                                       start_boottime_ns=self._start_boottime)
        self.start_ns = ended.start_ns
        self.end_ns = ended.end_ns


F = TypeVar("F", bound=Callable[..., Any])


def measured(label: Optional[str] = None, rate_hz: Optional[int] = None,
             client: Any = None, results: Optional[List[Result]] = None) -> Callable[[F], F]:
    """A decorator measuring every call of the function as a window:

        @edgemon.measured("inference", rate_hz=200)
        def infer(batch): ...

    The latest result is ``infer.last_result`` (fetched on use); ``results``,
    if given, collects every call's Measurement."""
    rate_hz = check_rate(rate_hz)
    label = _check.optional_text("label", label)
    if results is not None and not isinstance(results, list):
        raise _errors.InvalidArgument("edgemon: results: must be a list or None, got %r"
                                      % (results,))
    if client is not None and not callable(getattr(client, "measure", None)):
        raise _errors.InvalidArgument("edgemon: client: must be an edgemon.Client or None, "
                                      "got %r" % (client,))

    def wrap(fn: F) -> F:
        name = label or getattr(fn, "__name__", "measured")

        @functools.wraps(fn)
        def inner(*args: Any, **kwargs: Any) -> Any:
            c = client if client is not None else _default_client()
            with c.measure(name, rate_hz=rate_hz) as m:
                out = fn(*args, **kwargs)
            inner.last_measurement = m  # type: ignore[attr-defined]
            if results is not None:
                results.append(m)  # type: ignore[arg-type]
            return out

        def last_result() -> Result:
            m = getattr(inner, "last_measurement", None)
            if m is None:
                raise _errors.Error("edgemon: %s has not been called yet" % name)
            return m.result
        inner.last_result = last_result  # type: ignore[attr-defined]
        return inner  # type: ignore[return-value]
    return wrap


_default = None  # type: Any
_default_lock = threading.Lock()


def _default_client() -> Any:
    global _default
    with _default_lock:
        if _default is None:
            from ._client import connect
            _default = connect()
        return _default
