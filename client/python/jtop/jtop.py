"""The jtop class: jetson-stats' client API over edgemon."""
import datetime
import os
import platform
import socket
import struct
import threading
import time
from typing import Any, Callable, Dict, List, Optional, Tuple

import edgemon
from edgemon import _check
from edgemon._feed import open_feed
from edgemon._measure import boottime_ns
from edgemon._model import _cpu_index, _names_by_kind

from .core import Fan, JetsonClocks, JtopException, NVPModel, _no_control

# jtop(interval=...) in seconds: from the fastest live rate edgemond serves a
# Watch (100 Hz) to its longest Watch interval (an hour).
MIN_INTERVAL_S = _check.MIN_LIVE_INTERVAL_MS / 1000.0
MAX_INTERVAL_S = _check.MAX_INTERVAL_MS / 1000.0
# How long after a frame's expected stamp the sampling thread reads it.
_READ_AFTER_NS = 2000000
# ok() raises after this long (or four intervals) without a new sample.
_STALL_S = 10.0
# Sampling from the local feed, the gRPC channel (with gRPC's timer threads)
# is closed once no call used it since the previous sample and for this long.
_CHANNEL_IDLE_S = 1.0


class InvalidArgument(JtopException, edgemon.InvalidArgument):
    """A bad argument to the jtop API: a JtopException, as jetson-stats raises,
    and an edgemon.InvalidArgument (so also a ValueError)."""

_STRIP = ("-thermal", "_thermal", "-therm", "_therm")


def _short(name: str) -> str:
    """Thermal zone names as jtop shows them: "cpu-thermal" -> "cpu"."""
    for s in _STRIP:
        if name.endswith(s):
            return name[:-len(s)]
    return name


def _i(v: Optional[float]) -> Optional[int]:
    return None if v is None else int(round(v))


def _pct(v: Optional[float]) -> Optional[float]:
    return None if v is None else v * 100.0


def _khz(v: Optional[float]) -> Optional[int]:
    return None if v is None else int(round(v / 1000.0))


def _engine_group(name: str) -> str:
    if name.startswith("NV") or name.startswith("DLA") or name.startswith("PVA"):
        base = name.rstrip("0123456789")
        if name.startswith("NV"):
            return base
    return name


def _interfaces() -> Dict[str, str]:
    """IPv4 address by interface name (SIOCGIFADDR), loopback left out."""
    out = {}  # type: Dict[str, str]
    try:
        import fcntl
        names = [n for _, n in socket.if_nameindex()]
    except (ImportError, OSError):
        return out
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        for n in names:
            if n == "lo":
                continue
            try:
                packed = fcntl.ioctl(s.fileno(), 0x8915, struct.pack("256s", n[:15].encode()))
                out[n] = socket.inet_ntoa(packed[20:24])
            except OSError:
                continue
    return out


class _Views(object):
    """A sample's edgemon.Snapshot whose views (cpus, rails, memory, ...) are
    each built once, on first use: the properties of one sample share them."""

    def __init__(self, snap: Any) -> None:
        self._snapshot = snap

    def __getattr__(self, name: str) -> Any:
        value = getattr(self._snapshot, name)
        setattr(self, name, value)  # two readers at once may both build it: the same value
        return value


class _Sample(object):
    """One frame as the daemon sent it, decoded the first time a property
    reads it (a sample nobody reads is never decoded)."""

    __slots__ = ("frame", "device", "_views")

    def __init__(self, frame: Any, device: Any, snap: Any = None) -> None:
        self.frame = frame
        self.device = device
        self._views = _Views(snap) if snap is not None else None

    def views(self) -> _Views:
        v = self._views
        if v is None:  # two readers at once may both decode: the same values
            v = self._views = _Views(edgemon.Snapshot(self.frame, self.device))
        return v

    def values(self) -> Dict[int, int]:
        """The daemon's integers by channel id (no decoding into views)."""
        ids = getattr(self.frame, "ids", None)
        if ids is not None:
            return dict(zip(ids, self.frame.values))
        by_key = self.device.by_key()  # a Snapshot (the newest frame, over TCP)
        return {by_key[k].id: v for k, v in self.frame.raw.items() if k in by_key}


class _StatsPlan(object):
    """Where each entry of ``stats`` comes from in a frame, worked out once per
    channel inventory with the rules and order of the properties (cpu,
    memory, engine, fan, temperature, power, jetson_clocks, nvpmodel), so
    that ``stats`` reads a sample's values by channel id without decoding it
    into views: a client reading ``stats`` once a second pays for little
    more than the frame. Channels are ids here, -1 for one the board lacks."""

    def __init__(self, device: Any) -> None:
        self.device = device
        by_key = device.by_key()
        names = _names_by_kind(device)  # edgemon.Snapshot's names, in its order
        scales = {-1: None}  # type: Dict[int, Optional[float]]  # SI factor (None: 1) by id

        def ch(kind: str, name: str, field: str) -> int:
            c = by_key.get("%s/%s/%s" % (kind, name, field))
            if c is None:
                return -1
            scales[c.id] = c.scale if c.scale != 1 else None
            return c.id

        cores = sorted((n for n in names.get("cpu", []) if _cpu_index(n) >= 0), key=_cpu_index)
        # CPUn: (label, load, online, freq_min, freq_max)
        self.cpus = [("CPU%d" % (i + 1), ch("cpu", n, "load"), ch("cpu", n, "online"),
                      ch("cpu", n, "freq_min"), ch("cpu", n, "freq_max"))
                     for i, n in enumerate(cores)]
        mem = names.get("memory", [])
        ram = ("ram" if "ram" in mem else mem[0]) if mem else None
        self.memory = []  # type: List[Tuple[str, int, int]]  # (key, total, used)
        if ram is not None:
            self.memory.append(("RAM", ch("memory", ram, "total"), ch("memory", ram, "used")))
        if "swap" in names.get("swap", []):
            self.memory.append(("SWAP", ch("swap", "swap", "total"), ch("swap", "swap", "used")))
        emc = names.get("emc", [])
        self.emc = ch("emc", emc[0], "load") if emc else -1
        gpus = names.get("gpu", [])
        self.gpus = [("GPU" if len(gpus) == 1 else "GPU " + n, ch("gpu", n, "load"))
                     for n in gpus]
        self.gpu_range = (ch("gpu", gpus[0], "freq_min"), ch("gpu", gpus[0], "freq_max")) \
            if gpus else None
        groups = {}  # type: Dict[str, List[Tuple[str, int, int]]]  # as jtop.engine groups them
        for n in names.get("engine", []):
            groups.setdefault(_engine_group(n), []).append(
                (n, ch("engine", n, "state"), ch("engine", n, "freq")))
        self.engines = [e for group in groups.values() for e in group]
        self.fans = [("Fan %s0" % n, ch("fan", n, "duty")) for n in names.get("fan", [])]
        temps = {}  # type: Dict[str, int]  # by short name: the last zone of that name
        for n in names.get("thermal", []):
            temps[_short(n)] = ch("thermal", n, "temp")
        self.temps = [("Temp " + short, c) for short, c in temps.items()]
        rails = names.get("rail", [])
        info = {c.name: c for c in device.channels if c.kind == "rail"}
        first = {n: by_key.get("rail/%s/power" % n, info[n]) for n in rails}
        self.rails = [("Power " + n, ch("rail", n, "power")) for n in rails]  # mW as sent
        inputs = [n for n in rails if first[n].input]
        self.tot_input = len(inputs) == 1
        # The input rail, else the top-level rails added (sub-rails never counted twice).
        self.tot = [ch("rail", inputs[0], "power")] if self.tot_input else \
            [ch("rail", n, "power") for n in rails
             if not first[n].parent or first[n].parent not in first]
        self.nvpmodel = ch("board", "nvpmodel", "mode")
        self.scales = list(scales.items())

    def stats(self, jetson: "jtop", values: Dict[int, int], boottime_ns: int) -> Dict[str, Any]:
        get = values.get
        # Every value used, in SI units, as edgemon.Snapshot.get gives it (None when absent).
        si = {i: v if v is None or scale is None else v * scale
              for i, scale in self.scales for v in (get(i),)}
        out = {"time": datetime.datetime.now(),
               "uptime": datetime.timedelta(seconds=boottime_ns / 1e9)}  # type: Dict[str, Any]
        pinned = []
        for label, load_id, online_id, min_id, max_id in self.cpus:
            load, on = si[load_id], si[online_id]
            online = bool(on) if on is not None else load is not None
            out[label] = int(round(load * 100)) if (online and load is not None) else "OFF"
            lo, hi = si[min_id], si[max_id]
            if (on is None or bool(on)) and lo is not None and hi is not None:
                pinned.append(lo == hi)  # jetson_clocks: the cores not known offline
        for key, total_id, used_id in self.memory:
            total, used = si[total_id], si[used_id]
            if total and used is not None:
                out[key] = used / total
        load = si[self.emc]
        if load is not None:
            out["EMC"] = int(round(load * 100))
        for label, load_id in self.gpus:
            load = si[load_id]
            if load is not None:
                out[label] = load * 100.0
        for name, state_id, freq_id in self.engines:
            on, freq = si[state_id], si[freq_id]
            if on is None and freq is None:
                continue  # a load without a clock: not in jtop's engine dict
            online = bool(on) if on is not None else freq is not None
            cur = _khz(freq)
            out[name] = cur if online and cur is not None else "OFF"
        for label, duty_id in self.fans:
            duty = si[duty_id]
            if duty is not None:
                out[label] = duty * 100.0
        for label, temp_id in self.temps:
            t = si[temp_id]
            if t is not None:
                out[label] = t
        for label, power_id in self.rails:
            p = get(power_id)
            if p is not None:
                out[label] = _i(p)
        tot = [_i(get(i)) for i in self.tot if get(i) is not None]
        if tot:
            out["Power TOT"] = tot[0] if self.tot_input else sum(tot)
        if self.gpu_range is not None:
            lo, hi = si[self.gpu_range[0]], si[self.gpu_range[1]]
            if lo is not None and hi is not None:
                pinned.append(lo == hi)
        if pinned:
            out["jetson_clocks"] = "ON" if all(pinned) else "OFF"
        nvp = jetson._nvpmodel_name(jetson._mode(si[self.nvpmodel]))
        if nvp is not None:
            out["nvp model"] = nvp
        return out


class jtop(threading.Thread):  # noqa: N801 - jetson-stats' name
    """jetson-stats' ``jtop`` over edgemond.

    ``interval`` is this client's own period in seconds, 0.01 to 3600 (other
    clients keep theirs). Use as a context manager, or ``start()`` ...
    ``close()``; ``ok()`` waits for the next sample and is False once closed
    or once sampling stopped (after raising the JtopException that stopped it).

    Over the daemon's unix socket the samples come from its local feed (the
    Watch stream without gRPC, PATH.feed beside the socket; from a Watch
    stream where the daemon has no feed or this user may not connect to
    it) at this interval: the k-th sample
    is the first frame sampled k intervals or more after start(), read when
    it is due (the thread sleeps until then, not woken by the stream). While
    sampling from the feed no gRPC channel stays open: one is opened for the
    calls that need it (processes, a new channel inventory) and closed again
    once idle. Over TCP (another machine's clock) each sample is the
    daemon's newest frame, asked for at its time."""

    def __init__(self, interval: float = 1.0, address: Optional[str] = None) -> None:
        super().__init__(name="jtop-edgemon", daemon=True)
        try:
            self._interval = _check.real("interval", interval, MIN_INTERVAL_S, MAX_INTERVAL_S,
                                         "seconds")
        except edgemon.InvalidArgument as e:
            raise InvalidArgument(e.message) from None
        self._address = address
        self._target = ""
        # The gRPC client; over the feed None between calls (see _rpc).
        self._client = None  # type: Any
        self._rpc_lock = threading.Lock()
        self._rpc_at = 0.0  # monotonic time of the last call through _rpc
        self._rpc_closed = False  # close() was called: no new connection
        self._on_feed = False
        self._device = None  # type: Any
        self._sample_now = None  # type: Optional[_Sample]  # the latest sample
        self._sample_first = None  # type: Optional[_Sample]  # the first, for power averages
        self._watch = None  # type: Any  # the frames' source: a feed or a Watch stream
        self._observers = []  # type: List[Callable[[Any], None]]
        self._cond = threading.Condition()
        self._count = 0
        self._seen = 0
        self._stop_event = threading.Event()
        # Held until close(): the sampling thread sleeps in one acquire of it
        # (Event.wait is a dozen Python calls more per wake).
        self._running = threading.Lock()
        self._running.acquire()
        self._error = None  # type: Optional[BaseException]
        self._error_raised = False  # ok() raised _error once; it is False from then on
        self._jtop_started = False
        self._processes = None  # type: Optional[Tuple[int, List[List[Any]]]]
        self._plan = None  # type: Optional[_StatsPlan]  # stats' layout of the device's frames
        # Changes through edgemon-control ($EDGEMON_CONTROL or its socket): leases
        # by kind, held while this jtop is open and restored by close().
        self._control = None  # type: Any
        self._leases = {}  # type: Dict[str, Any]

    # -- life cycle -----------------------------------------------------------------
    def attach(self, observer: Callable[[Any], None]) -> None:
        """Calls ``observer(jetson)`` after every new sample."""
        self._observers.append(observer)

    def detach(self, observer: Callable[[Any], None]) -> None:
        self._observers.remove(observer)

    def start(self) -> None:
        """Connects to edgemond and starts sampling; JtopException when it cannot."""
        if self._jtop_started:
            return
        try:
            client = self._client = edgemon.connect(self._address)
            self._target = client.target
            self._device = client.device()
            sample = None
            if self._target.startswith("unix") and boottime_ns() is not None:
                try:
                    self._watch = open_feed(self._target, self._interval,
                                            timeout=client.timeout)
                except edgemon.PermissionDenied:
                    self._watch = None  # the feed's mode shuts out a caller the socket admits
                self._on_feed = self._watch is not None
                if self._watch is None:  # a daemon without the feed
                    self._watch = client.watch(self._interval)
                frame = self._next_frame()  # the newest frame, sent at once
                if self._stamps_agree(frame):
                    sample = _Sample(frame, self._device)
                else:
                    self._watch.close()
                    self._watch = None
                    self._on_feed = False
            if sample is None:
                snap = client.latest()
                sample = _Sample(snap, self._device, snap)
            self._sample_now = self._sample_first = sample
        except edgemon.Error as e:
            if self._watch is not None:
                self._watch.close()
            raise JtopException("jtop (edgemon): %s" % e.message) from None
        if self._on_feed:
            with self._rpc_lock:  # sampling needs no channel: gRPC's threads end with it
                self._client = None
            client.close()
        self._jtop_started = True
        with self._cond:
            self._count = 1
        super().start()

    def run(self) -> None:
        """The sampling thread: whatever ends it (the daemon gone, an observer
        raising) is kept for ok() to raise, never lost with the thread."""
        try:
            self._sample()
        except edgemon.Error as e:
            self._stopped(JtopException("jtop (edgemon): %s" % e.message))
        except BaseException as e:  # noqa: BLE001 - reported by ok(), as jtop does
            err = JtopException("jtop (edgemon): sampling stopped: %s: %s"
                                % (type(e).__name__, e))
            err.__cause__ = e
            self._stopped(err)

    def _stopped(self, err: JtopException) -> None:
        with self._cond:
            self._error = err
            self._cond.notify_all()

    def _sample(self) -> None:
        try:
            if self._watch is not None:
                self._sample_stream()
            else:
                self._sample_latest()
        finally:
            if self._watch is not None:
                self._watch.close()

    def _next_frame(self) -> Any:
        """The stream's next frame; None once close() ended it."""
        try:
            return self._watch.frame()
        except StopIteration:
            if self._stop_event.is_set():
                return None
            raise edgemon.Unavailable("edgemon: watch at %s: the daemon ended the stream"
                                      % self._target) from None

    def _stamps_agree(self, frame: Any) -> bool:
        """Whether the daemon's CLOCK_BOOTTIME is this process's: its newest
        frame was stamped a frame period ago or less (a second of slack)."""
        age_ns = boottime_ns() - frame.boottime_ns
        return 0 <= age_ns <= self._device.interval_s * 1e9 + 1e9

    def _sample_latest(self) -> None:
        """Over TCP: the newest frame, asked for at each sample's time."""
        due = time.monotonic() + self._interval
        while not self._sleep(due - time.monotonic()):
            due += self._interval
            if due < time.monotonic():
                due = time.monotonic() + self._interval
            snap = self._rpc(lambda c: c.latest())
            self._publish(snap, snap)

    def _sample_stream(self) -> None:
        """Over the unix socket: sample k is the first frame of the feed (or
        the Watch stream) stamped at or after start + k intervals (the
        daemon's CLOCK_BOOTTIME stamp is this process's clock: a frame
        stamped after a time arrived after it). The thread sleeps until the
        stamp the frame it waits for should carry (the last frame's plus the
        stream's spacing), so the stream is read once per sample; frames that
        queued meanwhile (a slow observer) are older than the sample's time
        and skipped."""
        interval_ns = int(self._interval * 1e9)
        published = time.monotonic()  # the previous sample's time
        due = published + self._interval
        last = self._sample_now.frame.boottime_ns
        spacing_ns = interval_ns
        while True:
            offset = boottime_ns() - int(time.monotonic() * 1e9)  # CLOCK_BOOTTIME - monotonic
            due_bt = int(due * 1e9) + offset
            steps = max(1, -(-(due_bt - last) // spacing_ns))
            # A little after that stamp: the frame is there (it comes under
            # a millisecond after its stamp), read without waiting for it.
            wake_bt = last + steps * spacing_ns + min(_READ_AFTER_NS, spacing_ns // 10)
            if self._sleep((wake_bt - offset) / 1e9 - time.monotonic()):
                return
            frame = self._next_frame()
            if frame is None:
                return
            if frame.boottime_ns > last:
                spacing_ns = max(1000000, frame.boottime_ns - last)
            last = frame.boottime_ns
            if frame.boottime_ns < due_bt:
                continue  # sampled before the sample's time
            self._publish(frame)
            if self._client is not None and self._on_feed:
                self._close_idle_channel(published)
            now = published = time.monotonic()  # after the observers, however long they took
            due += self._interval
            if due < now:
                due = now + self._interval

    def _rpc(self, call: Callable[[Any], Any]) -> Any:
        """``call(client)`` on this jtop's edgemon client, connected again when
        sampling from the feed closed it (edgemon.Error as the call raises it)."""
        with self._rpc_lock:
            client = self._client
            if client is None:
                if self._rpc_closed:
                    raise JtopException("jtop (edgemon): closed")
                client = self._client = edgemon.connect(self._address)
            self._rpc_at = time.monotonic()
            return call(client)

    def _close_idle_channel(self, since: float) -> None:
        """Closes the gRPC client when no call used it since ``since`` (the
        previous sample) and for _CHANNEL_IDLE_S: a client reading stats
        keeps no channel open, one asking for processes each sample keeps its."""
        with self._rpc_lock:
            client = self._client
            if client is None or self._rpc_at >= since or \
                    time.monotonic() - self._rpc_at < _CHANNEL_IDLE_S:
                return
            self._client = None
        client.close()

    def _sleep(self, seconds: float) -> bool:
        """Sleeps up to ``seconds``; True (at once) once close() was called."""
        if self._running.acquire(timeout=max(0.0, seconds)):
            self._running.release()
            return True
        return False

    def _publish(self, frame: Any, snap: Any = None) -> None:
        """A new sample: the daemon's frame (with ``snap``, the Snapshot it was
        decoded into already)."""
        if frame.generation != self._device.generation:
            self._device = self._rpc(lambda c: c.device())
        sample = _Sample(frame, self._device, snap)
        with self._cond:
            self._sample_now = sample
            self._processes = None
            self._count += 1
            self._cond.notify_all()
        for ob in list(self._observers):
            ob(self)

    def ok(self, spin: bool = False) -> bool:
        """Waits for the next sample (``spin``: do not wait); False once closed.
        When sampling stopped (the daemon went away, an observer raised), raises
        that JtopException once, and is False from then on."""
        if not self._jtop_started:
            self.start()
        with self._cond:
            # A daemon that stops sending without closing the stream is an
            # error after this long without a sample, never an endless wait.
            give_up = time.monotonic() + max(_STALL_S, self._interval * 4 + 1)
            while not spin and self._seen >= self._count and self._error is None \
                    and not self._stop_event.is_set() and self.is_alive():
                left = give_up - time.monotonic()
                if left <= 0:
                    self._error = JtopException(
                        "jtop (edgemon): no sample from edgemond in %.0f s"
                        % max(_STALL_S, self._interval * 4 + 1))
                    break
                self._cond.wait(min(left, self._interval * 4 + 1))
            self._seen = self._count
            error, raised = self._error, self._error_raised
            self._error_raised = error is not None
        if error is not None and not raised:
            raise error
        return error is None and self.is_alive() and not self._stop_event.is_set()

    def loop_for_ever(self) -> None:
        """Starts (if needed) and runs the attached observers until close() or Ctrl-C."""
        try:
            while self.ok():
                pass
        except KeyboardInterrupt:
            pass
        finally:
            self.close()

    def close(self) -> None:
        """Stops sampling and closes the connection."""
        with self._cond:
            if not self._stop_event.is_set():
                self._stop_event.set()
                self._running.release()
            self._cond.notify_all()
        if self._watch is not None:
            self._watch.close()  # a sampling thread reading the stream stops at once
        if self._jtop_started and self.is_alive() and threading.current_thread() is not self:
            self.join(self._interval + 5)
        for kind in list(self._leases):
            self._leases.pop(kind).end()
        self._rpc_closed = True
        first = self._client
        if first is not None:
            first.close()  # a call in flight ends with it
        with self._rpc_lock:  # and one connected meanwhile
            client, self._client = self._client, None
        if client is not None and client is not first:
            client.close()

    def __enter__(self) -> "jtop":
        self.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def restore(self, max_counter: int = 10) -> None:
        raise _no_control("restore the board's settings", "`sudo jetson_clocks --restore`")

    def _change(self, kind: str, what: str, make: Optional[Callable[[Any], Any]]) -> None:
        """Replaces this jtop's lease of ``kind`` with ``make(control)`` (None: only
        ends it, or releases the kind when this jtop holds none)."""
        try:
            if self._control is None:
                self._control = edgemon.control()
            old = self._leases.pop(kind, None)
            if old is not None:
                old.end()
            elif make is None:
                self._control.release(kind)
            if make is not None:
                self._leases[kind] = make(self._control)
        except edgemon.NotFound:
            pass  # nothing to end
        except edgemon.Error as e:
            raise JtopException("jtop (edgemon): cannot %s: %s" % (what, e.message)) from None

    def _set_fan(self, speed: float) -> None:
        self._change("fan", "set the fan speed to %s%%" % speed,
                     lambda c: c.set_fan(speed))

    @property
    def _snap(self) -> Any:
        """The latest sample, read as an edgemon.Snapshot (None before start())."""
        sample = self._sample_now
        return sample.views() if sample is not None else None

    @property
    def _first(self) -> Any:
        sample = self._sample_first
        return sample.views() if sample is not None else None

    def _need(self) -> Any:
        snap = self._snap
        if snap is None:
            raise JtopException("jtop is not started: use `with jtop() as jetson:` or start()")
        return snap

    # -- properties --------------------------------------------------------------------
    @property
    def interval(self) -> float:
        """This client's sampling period in seconds."""
        return self._interval

    @property
    def uptime(self) -> datetime.timedelta:
        return datetime.timedelta(seconds=self._need().boottime_ns / 1e9)

    @property
    def board(self) -> Dict[str, Dict[str, str]]:
        b = self._device.board if self._device else None
        if b is None:
            self._need()
        dist = ""
        try:
            with open("/etc/os-release") as f:
                for line in f:
                    if line.startswith("PRETTY_NAME="):
                        dist = line.split("=", 1)[1].strip().strip('"')
        except OSError:
            pass
        return {
            "platform": {"Machine": platform.machine(), "System": platform.system(),
                         "Distribution": dist, "Release": platform.release(),
                         "Python": platform.python_version()},
            "hardware": {"Model": b.model, "699-level Part Number": "", "P-Number": "",
                         "Module": b.model, "SoC": b.soc, "CUDA Arch BIN": "",
                         "Serial Number": "", "L4T": b.l4t, "Jetpack": b.jetpack},
            "libraries": {"CUDA": "", "OpenCV": "", "OpenCV-Cuda": False, "cuDNN": "",
                          "TensorRT": "", "VPI": "", "Vulkan": ""},
        }

    def _channel(self, key: str) -> Any:
        return self._device.by_key().get(key)

    @property
    def cpu(self) -> Dict[str, Any]:
        s = self._need()
        cores = []
        for c in s.cpus:
            freq_ch = self._channel("cpu/%s/freq" % c.name)
            info = {"min": _khz(freq_ch.min) if freq_ch else None,
                    "max": _khz(freq_ch.max) if freq_ch else None,
                    "cur": _khz(c.freq_hz)}
            online = c.online if c.online is not None else c.load is not None
            load = _pct(c.load)
            cores.append({
                "online": online,
                "governor": freq_ch.attrs.get("governor", "") if freq_ch else "",
                "freq": {"min": _khz(c.freq_min_hz), "max": _khz(c.freq_max_hz),
                         "cur": _khz(c.freq_hz)},
                "info_freq": info,
                "idle_state": {},
                "model": self._device.board.cpu_model,
                "user": load if online else None, "nice": None, "system": None,
                "idle": (100.0 - load) if (online and load is not None) else None,
            })
        total = s.cpu.load if s.cpu is not None else None
        return {"total": {"user": _pct(total), "nice": None, "system": None,
                          "idle": None if total is None else 100.0 - total * 100.0},
                "cpu": cores}

    @property
    def memory(self) -> Dict[str, Any]:
        s = self._need()
        out = {}  # type: Dict[str, Any]
        m = s.memory
        if m is not None:
            def kib(v: Optional[float]) -> Optional[int]:
                return None if v is None else int(v // 1024)
            out["RAM"] = {"tot": kib(m.total_bytes), "used": kib(m.used_bytes),
                          "free": kib(m.free_bytes), "buffers": kib(m.buffers_bytes),
                          "cached": kib(m.cached_bytes), "shared": kib(m.shared_bytes),
                          "lfb": _i(s.get("memory/ram/lfb_blocks"))}
        sw = s.swap.get("swap")
        if sw is not None:
            out["SWAP"] = {"tot": _i(sw.total_bytes / 1024) if sw.total_bytes is not None
                           else None,
                           "used": _i(sw.used_bytes / 1024) if sw.used_bytes is not None
                           else None,
                           "cached": _i(sw.cached_bytes / 1024) if sw.cached_bytes is not None
                           else None,
                           "table": {}}
        e = s.emc
        if e is not None:
            ch = self._channel("emc/%s/freq" % e.name)
            out["EMC"] = {"online": e.freq_hz is not None or e.load is not None,
                          "val": _i(_pct(e.load)), "cur": _khz(e.freq_hz),
                          "max": _khz(ch.max) if ch is not None and ch.max is not None
                          else _khz(e.freq_max_hz),
                          "min": _khz(ch.min) if ch is not None and ch.min is not None
                          else _khz(e.freq_min_hz)}
        return out

    @property
    def gpu(self) -> Dict[str, Any]:
        s = self._need()
        out = {}
        for name, g in s.gpus.items():
            ch = self._channel("gpu/%s/freq" % name)
            out[name] = {
                "type": "discrete" if name.startswith("nvml")
                else "integrated",
                "status": {"railgate": None, "tpc_pg_mask": None, "3d_scaling": None,
                           "load": _pct(g.load)},
                "freq": {"governor": ch.attrs.get("governor", "") if ch else "",
                         "cur": _khz(g.freq_hz), "max": _khz(g.freq_max_hz),
                         "min": _khz(g.freq_min_hz), "GPC": []},
                "power_control": "",
            }
        return out

    @property
    def engine(self) -> Dict[str, Dict[str, Dict[str, Any]]]:
        s = self._need()
        out = {}  # type: Dict[str, Dict[str, Dict[str, Any]]]
        for name, e in s.engines.items():
            if e.on is None and e.freq_hz is None:
                if e.load is None:
                    continue
                # A load without a clock (NVML's codecs on Thor): busy when loaded.
                d = {"online": e.load > 0, "cur": None, "load": _pct(e.load)}  # type: Dict[str, Any]
                out.setdefault(_engine_group(name), {})[name] = d
                continue
            d = {"online": bool(e.on) if e.on is not None else e.freq_hz is not None,
                 "cur": _khz(e.freq_hz), "load": _pct(e.load)}
            ch = self._channel("engine/%s/freq" % name)
            if ch is not None and ch.min is not None:
                d["min"] = _khz(ch.min)
            if ch is not None and ch.max is not None:
                d["max"] = _khz(ch.max)
            out.setdefault(_engine_group(name), {})[name] = d
        return out

    @property
    def fan(self) -> Fan:
        s = self._need()
        out = Fan()
        out._set_speed = self._set_fan
        for name, f in s.fans.items():
            out[name] = {"speed": [_pct(f.duty)] if f.duty is not None else [],
                         "rpm": [_i(f.speed_rpm)] if f.speed_rpm is not None else [],
                         "profile": "", "governor": "", "control": ""}
        return out

    @property
    def temperature(self) -> Dict[str, Dict[str, Any]]:
        s = self._need()
        out = {}
        for name, t in dict(s.temperatures).items():
            out[_short(name)] = {"online": t is not None, "temp": t}
        return out

    def _rail_avg(self, name: str) -> Optional[float]:
        """mW averaged over the time since this client started (energy counters
        when the rail has one)."""
        first, snap = self._first, self._snap
        key = "rail/%s/energy" % name
        e0, e1 = first.get_raw(key), snap.get_raw(key)
        dt = (snap.realtime_ns - first.realtime_ns) / 1e9
        if e0 is not None and e1 is not None and dt > 0 and e1 >= e0:
            return (e1 - e0) / dt
        return snap.get_raw("rail/%s/power" % name)

    @property
    def power(self) -> Dict[str, Any]:
        s = self._need()
        rails = {}
        for name, r in s.rails.items():
            d = {"online": r.power_w is not None, "type": "", "status": "ok",
                 "volt": _i(s.get_raw("rail/%s/voltage" % name)),
                 "curr": _i(s.get_raw("rail/%s/current" % name)),
                 "power": _i(s.get_raw("rail/%s/power" % name)),
                 "avg": _i(self._rail_avg(name))}  # type: Dict[str, Any]
            ch = self._channel("rail/%s/power" % name)
            if ch is not None:
                d["type"] = ch.device.split(" ")[0].upper() if ch.device else ""
            cur = self._channel("rail/%s/current" % name)
            if cur is not None and cur.max is not None:
                d["warn"] = cur.raw_limit("max")
            if cur is not None and cur.crit is not None:
                d["crit"] = cur.raw_limit("crit")
            if r.power_w is None:
                d["status"] = "offline"
            rails[name] = d
        inp = s.input_rail
        if inp is not None:
            t = dict(rails[inp.name])
            t["name"] = inp.name
        else:
            # No input rail: the top-level rails added (sub-rails never counted twice).
            top = [n for n, r in s.rails.items() if not r.parent or r.parent not in s.rails]
            def total(k: str) -> Optional[int]:
                vals = [rails[n][k] for n in top if rails[n][k] is not None]
                return sum(vals) if vals else None
            t = {"online": bool(top), "power": total("power"), "avg": total("avg"),
                 "name": "+".join(top) if top else ""}
        return {"rail": rails, "tot": t}

    @property
    def processes(self) -> List[List[Any]]:
        """GPU processes: [pid, user, gpu, type, priority, state, cpu %, memory kB,
        GPU memory kB, name]; cpu % and memory are None where not measured."""
        self._need()
        cached = self._processes
        if cached is not None and cached[0] == self._count:
            return cached[1]
        try:
            procs = self._rpc(lambda c: c.processes(sort="mem", limit=0))
        except edgemon.Error as e:
            raise JtopException("jtop (edgemon): %s" % e.message) from None
        out = [[p.pid, p.user, "I", "Graphic", None, None,
                (p.cpu_permille / 10.0 if p.HasField("cpu_permille") else None),
                (p.rss_kib if p.HasField("rss_kib") else None),
                p.gpu_mem_kib, p.name] for p in procs if p.has_gpu_mem]
        self._processes = (self._count, out)
        return out

    @property
    def nvpmodel(self) -> Optional[NVPModel]:
        b = self._device.board if self._device else None
        if b is None or not b.nvpmodel:
            return None
        mode = self._mode(self._snap.get("board/nvpmodel/mode") if self._snap is not None
                          else None)
        return NVPModel(self._nvpmodel_name(mode), mode, b.nvpmodel_modes)

    def _mode(self, value: Optional[float]) -> Optional[int]:
        """The power mode: the sample's, else the one the board reported."""
        if value is not None:
            return int(value)
        return self._device.board.nvpmodel_id if self._device else None

    def _nvpmodel_name(self, mode: Optional[int]) -> Optional[str]:
        """The name of power mode ``mode`` (None: the board's; None without nvpmodel)."""
        b = self._device.board if self._device else None
        if b is None or not b.nvpmodel:
            return None
        return b.nvpmodel_modes.get(mode, b.nvpmodel) if mode is not None else b.nvpmodel

    @nvpmodel.setter
    def nvpmodel(self, value: Any) -> None:
        """Power mode by id or name, through edgemon-control; held until close()."""
        def make(c: Any) -> Any:
            mode = value.id if isinstance(value, NVPModel) else value
            if isinstance(mode, str):
                ids = [m["id"] for m in c.modes() if m["name"] == mode]
                if not ids:
                    raise edgemon.InvalidArgument("no power mode named %r" % mode)
                mode = ids[0]
            return c.set_mode(mode)
        # As jtop does, jetson_clocks is switched off around the mode change.
        relock = "clocks" in self._leases
        if relock:
            self._change("clocks", "switch jetson_clocks off", None)
        self._change("mode", "set nvpmodel %s" % (value,), make)
        if relock:
            self.jetson_clocks = True

    @property
    def jetson_clocks(self) -> Optional[JetsonClocks]:
        s = self._need()
        cpus = [c for c in s.cpus if c.online is not False]
        pinned = [c.freq_min_hz == c.freq_max_hz for c in cpus
                  if c.freq_min_hz is not None and c.freq_max_hz is not None]
        g = s.gpu
        if g is not None and g.freq_min_hz is not None and g.freq_max_hz is not None:
            pinned.append(g.freq_min_hz == g.freq_max_hz)
        if not pinned:
            return None
        return JetsonClocks(all(pinned))

    @jetson_clocks.setter
    def jetson_clocks(self, value: Any) -> None:
        """True locks the clocks through edgemon-control (held until close() or
        False); False restores them."""
        self._change("clocks", "switch jetson_clocks %s" % ("on" if value else "off"),
                     (lambda c: c.lock_clocks()) if value else None)

    @property
    def disk(self) -> Dict[str, Any]:
        """The root file system of this host, in GB."""
        st = os.statvfs("/")
        g = 1024.0 ** 3
        return {"total": st.f_blocks * st.f_frsize / g,
                "used": (st.f_blocks - st.f_bfree) * st.f_frsize / g,
                "available": st.f_bfree * st.f_frsize / g,
                "available_no_root": st.f_bavail * st.f_frsize / g,
                "unit": "G"}

    @property
    def local_interfaces(self) -> Dict[str, Any]:
        host = self._device.board.hostname if self._device else ""
        return {"hostname": host or socket.gethostname(), "interfaces": _interfaces()}

    @property
    def stats(self) -> Dict[str, Any]:
        """The flat dictionary of the jtop logger: time, uptime, CPUn (%, or
        'OFF'), RAM, SWAP (fractions), EMC, GPU (%), engines (kHz or 'OFF'),
        'Fan <name><i>' (%), 'Temp <zone>' (C), 'Power <rail>' and 'Power TOT'
        (mW), jetson_clocks, 'nvp model'."""
        sample = self._sample_now
        if sample is None:
            self._need()  # raises
        plan = self._plan
        if plan is None or plan.device is not sample.device:
            plan = self._plan = _StatsPlan(sample.device)
        return plan.stats(self, sample.values(), sample.frame.boottime_ns)

    def json(self, stats: bool = False) -> str:
        """The properties (or ``stats``) as JSON text."""
        import json as _json
        if stats:
            return _json.dumps(self.stats, default=str)
        d = {k: getattr(self, k) for k in ("board", "cpu", "memory", "gpu", "engine", "fan",
                                           "temperature", "power", "disk",
                                           "local_interfaces")}
        d["uptime"] = self.uptime.total_seconds()
        d["interval"] = self.interval
        return _json.dumps(d, default=str)
