"""Channels, device information and snapshots in SI units.

The daemon sends integers in each channel's fixed unit (mW, mC, kHz,
permille, KiB, ...). Here every value is converted to SI: W, V, A, J, Hz,
degrees Celsius, bytes, and fractions (0..1) for loads and duties. The unit is
part of the attribute name (``power_w``, ``freq_hz``). A value the daemon could
not read is ``None``, never 0.
"""
import datetime
from typing import Any, Dict, List, Mapping, NamedTuple, Optional, Tuple

# unit -> (SI unit, factor from the channel's unit to SI)
SI = {
    "permille": ("fraction", 1e-3),
    "kHz": ("Hz", 1e3),
    "mC": ("C", 1e-3),
    "mW": ("W", 1e-3),
    "mV": ("V", 1e-3),
    "mA": ("A", 1e-3),
    "mJ": ("J", 1e-3),
    "rpm": ("rpm", 1),
    "KiB": ("bytes", 1024),
    "count": ("count", 1),
    "bool": ("bool", 1),
    "id": ("id", 1),
    "ms": ("s", 1e-3),
    "": ("", 1),
}


class Channel(NamedTuple):
    """One reading the daemon serves: ``key`` is "kind/name/field"."""
    id: int
    key: str
    kind: str
    name: str
    field: str
    unit: str       # the daemon's unit (mW, kHz, ...)
    si_unit: str    # the unit of the values this package returns (W, Hz, ...)
    scale: float    # daemon value x scale = SI value
    device: str
    parent: str
    flags: Tuple[str, ...]
    min: Optional[float]   # limits in SI units, None when unknown
    max: Optional[float]
    crit: Optional[float]
    attrs: Dict[str, str]

    @property
    def constant(self) -> bool:
        return "constant" in self.flags

    @property
    def input(self) -> bool:
        """The board's input rail (the total; its sub-rails are part of it)."""
        return "input" in self.flags

    def raw_limit(self, which: str) -> Optional[int]:
        """A limit in the daemon's unit ("min", "max", "crit")."""
        v = getattr(self, which)
        return None if v is None else int(round(v / self.scale))


def channel_from_proto(c: Any) -> Channel:
    si_unit, scale = SI.get(c.unit, (c.unit, 1))
    key = c.key or "%s/%s/%s" % (c.kind, c.name, c.field)
    return Channel(
        id=c.id, key=key, kind=c.kind, name=c.name, field=c.field, unit=c.unit,
        si_unit=si_unit, scale=scale, device=c.device, parent=c.parent,
        flags=tuple(c.flags),
        min=c.min * scale if c.has_min else None,
        max=c.max * scale if c.has_max else None,
        crit=c.crit * scale if c.has_crit else None,
        attrs=dict(c.attrs))


class Board(NamedTuple):
    model: str
    soc: str
    l4t: str
    jetpack: str
    nvpmodel: str
    nvpmodel_id: Optional[int]
    nvpmodel_modes: Dict[int, str]
    kernel: str
    cpu_model: str
    hostname: str


class DeviceInfo(NamedTuple):
    """The board, the daemon's settings and its channel inventory."""
    board: Board
    channels: List[Channel]
    generation: int
    daemon_version: str
    interval_s: float
    energy_rate_hz: int
    api_version: int

    def by_key(self) -> Dict[str, Channel]:
        """The channels by key (built once per DeviceInfo)."""
        return _memo(_BY_KEY, self, lambda d: {c.key: c for c in d.channels})


# Lookups built from the latest DeviceInfo seen (an inventory changes rarely);
# DeviceInfo is an immutable tuple, so they are kept beside it by identity.
_BY_KEY = {}  # type: Dict[int, Any]
_BY_ID = {}  # type: Dict[int, Any]
_NAMES = {}  # type: Dict[int, Any]


def _memo(cache: Dict[int, Any], device: Any, build: Any) -> Any:
    """build(device), computed once for the latest device seen."""
    hit = cache.get(id(device))
    if hit is None or hit[0] is not device:
        hit = (device, build(device))
        cache.clear()
        cache[id(device)] = hit
    return hit[1]


def _names_by_kind(device: Any) -> Dict[str, List[str]]:
    by_kind = {}  # type: Dict[str, List[str]]
    for c in device.channels:
        names = by_kind.setdefault(c.kind, [])
        if c.name not in names:
            names.append(c.name)
    return by_kind


def device_from_proto(d: Any) -> DeviceInfo:
    b = d.board
    board = Board(model=b.model, soc=b.soc, l4t=b.l4t, jetpack=b.jetpack, nvpmodel=b.nvpmodel,
                  nvpmodel_id=b.nvpmodel_id if b.nvpmodel_id >= 0 else None,
                  nvpmodel_modes=dict(b.nvpmodel_modes), kernel=b.kernel,
                  cpu_model=b.cpu_model, hostname=b.hostname)
    channels = sorted((channel_from_proto(c) for c in d.channels), key=lambda c: c.id)
    return DeviceInfo(board=board, channels=channels, generation=d.generation,
                      daemon_version=d.daemon_version, interval_s=d.interval_ms / 1000.0,
                      energy_rate_hz=d.energy_rate_hz, api_version=d.api_version)


class RailSamples(NamedTuple):
    """The rail power samples the daemon kept while a boost was held, at the
    rate that held. ``t_ns``: realtime of each sample, ascending; ``raw``:
    {channel key: [mW or None per sample]} (None: no reading, never 0);
    ``complete_to_ns``: every sample before it is stored; ``truncated``: the
    range held more than the 2 000 000 samples read."""
    t_ns: List[int]
    raw: Dict[str, List[Optional[int]]]
    complete_to_ns: int
    truncated: bool

    @property
    def power_w(self) -> Dict[str, List[Optional[float]]]:
        """{rail name: [W or None per sample]}."""
        return {"/".join(k.split("/")[1:-1]): [None if v is None else v / 1000.0 for v in vs]
                for k, vs in self.raw.items()}


# The most samples Client.rail_samples reads for one window or range.
MAX_RAIL_SAMPLES = 2000000


class Rail(NamedTuple):
    """A power rail. ``input``: the board's input rail (the board total)."""
    name: str
    power_w: Optional[float]
    voltage_v: Optional[float]
    current_a: Optional[float]
    energy_j: Optional[float]   # cumulative since the daemon found the rail
    parent: str
    input: bool


class Run(NamedTuple):
    """A recorded run (``Client.runs()``, ``edgemon runs``): a closed window with
    what was stored with it when it ended. ``None`` where unknown, never 0: no
    input rail (``energy_j``, ``avg_power_w``), no count sent (``items``), not
    ended by ``edgemon record`` (``exit_status``)."""
    id: int
    label: str
    start_ns: int
    end_ns: int
    duration_s: float
    input_rail: Optional[str]
    energy_j: Optional[float]
    avg_power_w: Optional[float]
    items: Optional[float]
    exit_status: Optional[int]


def run_from_proto(w: Any) -> Run:
    duration = (w.end_ns - w.start_ns) / 1e9
    energy = w.input_energy_mj / 1000.0 if w.HasField("input_energy_mj") else None
    return Run(id=w.id, label=w.label, start_ns=w.start_ns, end_ns=w.end_ns, duration_s=duration,
               input_rail=w.input_rail or None, energy_j=energy,
               avg_power_w=energy / duration if energy is not None and duration > 0 else None,
               items=w.items if w.HasField("items") else None,
               exit_status=w.exit_status if w.HasField("exit_status") else None)


class Cpu(NamedTuple):
    """One core ("cpu3") or the aggregate ("cpu"). ``load`` is 0..1."""
    name: str
    load: Optional[float]
    freq_hz: Optional[float]
    freq_min_hz: Optional[float]
    freq_max_hz: Optional[float]
    online: Optional[bool]


class Clocked(NamedTuple):
    """GPU, EMC or another devfreq device. ``load`` is 0..1."""
    name: str
    load: Optional[float]
    freq_hz: Optional[float]
    freq_min_hz: Optional[float]
    freq_max_hz: Optional[float]
    on: Optional[bool]


class Fan(NamedTuple):
    name: str
    duty: Optional[float]   # PWM duty, 0..1
    speed_rpm: Optional[float]


class Engine(NamedTuple):
    """A hardware engine (NVENC, NVDEC, VIC, DLA0, ...). ``load`` is 0..1,
    None where the board does not measure it (NVML measures the codecs on
    Thor and discrete GPUs; Jetson sysfs does not)."""
    name: str
    freq_hz: Optional[float]
    on: Optional[bool]
    load: Optional[float] = None


class Memory(NamedTuple):
    """RAM or swap, in bytes."""
    name: str
    total_bytes: Optional[float]
    used_bytes: Optional[float]
    free_bytes: Optional[float]
    available_bytes: Optional[float]
    buffers_bytes: Optional[float]
    cached_bytes: Optional[float]
    shared_bytes: Optional[float]
    lfb_bytes: Optional[float]


class NameMap(dict):
    """A dict by the board's names that also finds "cpu" for "cpu-thermal"."""

    def __missing__(self, key: str) -> Any:
        for suffix in ("-thermal", "_thermal", "-therm"):
            if key + suffix in self:
                return self[key + suffix]
        raise KeyError(key)

    def __contains__(self, key: object) -> bool:
        if dict.__contains__(self, key):
            return True
        return isinstance(key, str) and any(
            dict.__contains__(self, key + s) for s in ("-thermal", "_thermal", "-therm"))

    def get(self, key: Any, default: Any = None) -> Any:
        try:
            return self[key]
        except KeyError:
            return default


def _by_id(device: DeviceInfo) -> Dict[int, Channel]:
    return _memo(_BY_ID, device, lambda d: {c.id: c for c in d.channels})


def _cpu_index(name: str) -> int:
    digits = name[3:] if name.startswith("cpu") else ""
    return int(digits) if digits.isdigit() else -1


class Snapshot(object):
    """One frame of the daemon, in SI units.

    ``snap.rails["VDD_IN"].power_w``, ``snap.temperatures["cpu"]`` (C),
    ``snap.cpus[3].load`` (0..1), ``snap.gpu.freq_hz``, ``snap.get("rail/VDD_IN/power")``.
    Missing values are None.
    """

    def __init__(self, frame: Any, device: DeviceInfo) -> None:
        self.seq = frame.seq               # type: int
        self.realtime_ns = frame.realtime_ns  # type: int
        self.boottime_ns = frame.boottime_ns  # type: int
        self.generation = frame.generation  # type: int
        self.device = device
        by_id = _by_id(device)
        raw = {}  # type: Dict[str, int]
        for i, v in zip(frame.ids, frame.values):
            c = by_id.get(i)
            if c is not None:
                raw[c.key] = v
        self.raw = raw
        self._by_key = device.by_key()

    @property
    def time(self) -> datetime.datetime:
        """The frame's wall time (UTC, aware)."""
        return datetime.datetime.fromtimestamp(self.realtime_ns / 1e9, datetime.timezone.utc)

    def get(self, key: str, default: Any = None) -> Optional[float]:
        """The value of channel ``key`` ("kind/name/field") in SI units, or ``default``."""
        c = self._by_key.get(key)
        v = self.raw.get(key)
        if c is None or v is None:
            return default
        return v * c.scale if c.scale != 1 else v

    def get_raw(self, key: str) -> Optional[int]:
        """The daemon's integer for ``key`` in the channel's own unit, or None."""
        return self.raw.get(key)

    @property
    def values(self) -> Dict[str, float]:
        """Every value present, by key, in SI units."""
        return {k: self.get(k) for k in self.raw}

    def _v(self, kind: str, name: str, field: str) -> Optional[float]:
        return self.get("%s/%s/%s" % (kind, name, field))

    def _names(self, kind: str) -> List[str]:
        return _memo(_NAMES, self.device, _names_by_kind).get(kind, [])

    @property
    def rails(self) -> Dict[str, Rail]:
        out = {}
        info = {c.name: c for c in self.device.channels if c.kind == "rail"}
        for n in self._names("rail"):
            c = self._by_key.get("rail/%s/power" % n, info[n])
            out[n] = Rail(n, self._v("rail", n, "power"), self._v("rail", n, "voltage"),
                          self._v("rail", n, "current"), self._v("rail", n, "energy"),
                          c.parent, c.input)
        return out

    @property
    def input_rail(self) -> Optional[Rail]:
        """The board's input rail, when the board has exactly one."""
        inputs = [r for r in self.rails.values() if r.input]
        return inputs[0] if len(inputs) == 1 else None

    @property
    def temperatures(self) -> Dict[str, Optional[float]]:
        """Degrees Celsius by thermal zone ("cpu-thermal", also found as "cpu")."""
        return NameMap((n, self._v("thermal", n, "temp")) for n in self._names("thermal"))

    def _cpu(self, n: str) -> Cpu:
        online = self._v("cpu", n, "online")
        return Cpu(n, self._v("cpu", n, "load"), self._v("cpu", n, "freq"),
                   self._v("cpu", n, "freq_min"), self._v("cpu", n, "freq_max"),
                   None if online is None else bool(online))

    @property
    def cpus(self) -> List[Cpu]:
        """The cores in order of their number (``cpus[3]`` is cpu3)."""
        names = sorted((n for n in self._names("cpu") if _cpu_index(n) >= 0), key=_cpu_index)
        return [self._cpu(n) for n in names]

    @property
    def cpu(self) -> Optional[Cpu]:
        """All cores together (load only)."""
        return self._cpu("cpu") if "cpu" in self._names("cpu") else None

    def _clocked(self, kind: str, n: str) -> Clocked:
        on = self._v(kind, n, "state")
        return Clocked(n, self._v(kind, n, "load"), self._v(kind, n, "freq"),
                       self._v(kind, n, "freq_min"), self._v(kind, n, "freq_max"),
                       None if on is None else bool(on))

    @property
    def gpus(self) -> Dict[str, Clocked]:
        return {n: self._clocked("gpu", n) for n in self._names("gpu")}

    @property
    def gpu(self) -> Optional[Clocked]:
        """The first GPU, or None."""
        names = self._names("gpu")
        return self._clocked("gpu", names[0]) if names else None

    @property
    def emc(self) -> Optional[Clocked]:
        names = self._names("emc")
        return self._clocked("emc", names[0]) if names else None

    @property
    def fans(self) -> Dict[str, Fan]:
        return {n: Fan(n, self._v("fan", n, "duty"), self._v("fan", n, "speed"))
                for n in self._names("fan")}

    @property
    def engines(self) -> Dict[str, Engine]:
        out = {}
        for n in self._names("engine"):
            on = self._v("engine", n, "state")
            out[n] = Engine(n, self._v("engine", n, "freq"), None if on is None else bool(on),
                            self._v("engine", n, "load"))
        return out

    def _memory(self, kind: str, n: str) -> Memory:
        return Memory(n, *(self._v(kind, n, f) for f in (
            "total", "used", "free", "available", "buffers", "cached", "shared", "lfb_size")))

    @property
    def memory(self) -> Optional[Memory]:
        names = self._names("memory")
        return self._memory("memory", "ram" if "ram" in names else names[0]) if names else None

    @property
    def swap(self) -> Dict[str, Memory]:
        return {n: self._memory("swap", n) for n in self._names("swap")}

    @property
    def nvpmodel_id(self) -> Optional[int]:
        v = self.get("board/nvpmodel/mode")
        return None if v is None else int(v)

    def to_dict(self) -> Dict[str, Any]:
        """{"realtime_ns", "seq", "values": {key: SI value or None for every channel}}."""
        return {"seq": self.seq, "realtime_ns": self.realtime_ns,
                "values": {c.key: self.get(c.key) for c in self.device.channels}}

    def __repr__(self) -> str:
        return "<edgemon.Snapshot seq=%d %d values>" % (self.seq, len(self.raw))


class Rows(list):
    """Query results: a list of ``Row`` (raw frames) or ``BucketRow`` (with step)."""

    def to_pandas(self) -> Any:
        """A pandas DataFrame (pandas must be importable; it is not a dependency)."""
        try:
            import pandas
        except ImportError:
            raise ImportError("Rows.to_pandas() needs pandas (apt install python3-pandas)") \
                from None
        recs = []
        for r in self:
            if isinstance(r, Row):
                d = {"time": pandas.Timestamp(r.realtime_ns, unit="ns", tz="UTC"), "seq": r.seq}
                d.update(r.values)
            else:
                d = dict(r._asdict())
                d["time"] = pandas.Timestamp(r.t_ns, unit="ns", tz="UTC")
            recs.append(d)
        df = pandas.DataFrame.from_records(recs)
        return df.set_index("time") if len(df) else df


class Row(NamedTuple):
    """One stored frame: values by key in SI units (absent keys: not read)."""
    realtime_ns: int
    seq: int
    values: Dict[str, float]


class BucketRow(NamedTuple):
    """One downsampled step of one channel, in SI units."""
    t_ns: int
    key: str
    min: float
    avg: float
    max: float
    count: int


def decode_frame_values(frame: Any, by_id: Mapping[int, Channel]) -> Dict[str, float]:
    out = {}
    for i, v in zip(frame.ids, frame.values):
        c = by_id.get(i)
        if c is not None:
            out[c.key] = v * c.scale if c.scale != 1 else v
    return out
