"""The edgemon client: a thin, typed layer over the edgemon.v1 gRPC API."""
import datetime
import errno
import fnmatch
import numbers
import os
import re
import stat
import threading
import time
from typing import Any, Callable, Dict, Iterator, List, Optional, Sequence, Union

from . import _check, _errors, _timespec
from ._lazy import grpc, pb, pb_grpc  # imported on first use
from ._model import (MAX_RAIL_SAMPLES, BucketRow, DeviceInfo, RailSamples, Row, Rows, Run,
                     Snapshot, decode_frame_values, device_from_proto, run_from_proto)

# The packaged daemon's socket; $EDGEMON_CONNECT overrides it (as for the edgemon command).
DEFAULT_TARGET = "unix:/run/edgemon/edgemond.sock"

TimeLike = Union[None, int, float, str, datetime.datetime, datetime.timedelta]

# A mark's label: "<window id>:<name>" (a phase of a run, not a run).
_MARK_LABEL = re.compile(r"^[0-9]+:")


def now_ns() -> int:
    """Wall time in ns (time.time_ns where the Python has it)."""
    f = getattr(time, "time_ns", None)
    return f() if f is not None else int(time.time() * 1e9)


def normalize_target(target: str) -> str:
    """"unix:/path" for "/path"; host:port checked; "" when malformed (as the C++ client)."""
    if not target:
        return ""
    if target.startswith("/"):
        return "unix:" + target
    if target.startswith("unix:"):
        return target if len(target) > 5 else ""
    for prefix in ("unix-abstract:", "dns:", "ipv4:", "ipv6:"):
        if target.startswith(prefix):
            return target
    colon = target.rfind(":")
    if colon <= 0 or colon + 1 == len(target):
        return ""
    port = target[colon + 1:]
    if not port.isdigit() or len(port) > 5 or int(port) > 65535:
        return ""
    return target


def unix_socket_path(target: str) -> Optional[str]:
    """The socket file of a unix target ("unix:PATH", or gRPC's
    "unix://ABSOLUTE_PATH"); None for any other target (TCP, an abstract
    socket)."""
    if not target.startswith("unix:"):
        return None
    path = target[len("unix://"):] if target.startswith("unix://") else target[len("unix:"):]
    return path or None


MAX_SECRET_BYTES = 64 << 10  # as ReadSecretFile (include/edgemon/secret_file.h)
_MAX_LINKS = 40


def read_secret_file(path: str) -> bytes:
    """A secret file's bytes, read under the rule of edgemon's C++ programs
    (docs/security.md, "Secret files"): every directory from / down belongs
    to root or this process's uid and is writable by neither group nor others
    unless sticky; a link on the way is followed only when it belongs to
    root or this uid (the target's directories checked the same way); the
    file itself is no link (O_NOFOLLOW), a regular file (O_NONBLOCK: a FIFO
    is refused at once) of root or this uid with no group or other
    permission bits, at most 64 KiB. InvalidArgument naming the file and
    the rule it broke otherwise."""
    user = os.geteuid()

    def refuse(rule: str) -> Exception:
        return _errors.InvalidArgument("edgemon: secret file %s: %s" % (path, rule))

    def trusted(uid: int) -> bool:
        return uid == 0 or uid == user

    owners = "root" if user == 0 else "root or uid %d" % user
    full = path if path.startswith("/") else os.path.join(os.getcwd(), path)
    todo = [p for p in full.split("/") if p]
    fds = []  # type: List[int]

    def check_dir(fd: int, shown: str) -> None:
        st = os.fstat(fd)
        if not trusted(st.st_uid):
            raise refuse("directory %s belongs to uid %d (every directory above a secret file "
                         "must belong to %s)" % (shown, st.st_uid, owners))
        if st.st_mode & (stat.S_IWGRP | stat.S_IWOTH) and not st.st_mode & stat.S_ISVTX:
            raise refuse("directory %s is writable by group or others (mode %04o): someone else "
                         "could swap the file" % (shown, stat.S_IMODE(st.st_mode)))

    try:
        root = os.open("/", os.O_PATH | os.O_DIRECTORY | os.O_CLOEXEC)
        fds.append(root)
        check_dir(root, "/")
        dirs, names, links, name = [root], [], 0, ""
        while todo:
            name = todo.pop(0)
            if name in (".", ".."):
                if name == ".." and len(dirs) > 1:
                    dirs.pop()
                    names.pop()
                if not todo:
                    raise refuse("is not a regular file")
                continue
            if not todo:
                break  # the file itself
            names.append(name)
            shown = "/" + "/".join(names)
            try:
                fd = os.open(name, os.O_PATH | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=dirs[-1])
            except FileNotFoundError:
                raise refuse("%s does not exist" % shown) from None
            fds.append(fd)
            st = os.fstat(fd)
            if stat.S_ISLNK(st.st_mode):
                if not trusted(st.st_uid):
                    raise refuse("link %s belongs to uid %d (a link on the way to a secret file "
                                 "must belong to %s)" % (shown, st.st_uid, owners))
                links += 1
                if links > _MAX_LINKS:
                    raise refuse("more than %d links on the way" % _MAX_LINKS)
                target = os.readlink(name, dir_fd=dirs[-1])
                names.pop()
                if target.startswith("/"):
                    dirs, names = [root], []
                todo = [p for p in target.split("/") if p] + todo
                continue
            if not stat.S_ISDIR(st.st_mode):
                raise refuse("%s is not a directory" % shown)
            check_dir(fd, shown)
            dirs.append(fd)
        try:
            fd = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC,
                         dir_fd=dirs[-1])
        except OSError as e:
            if e.errno == errno.ELOOP:
                raise refuse("is a symbolic link (secret files are never read through a "
                             "link)") from None
            if e.errno == errno.ENOENT:
                raise refuse("does not exist") from None
            raise refuse("cannot open: %s" % e.strerror) from None
        fds.append(fd)
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise refuse("is not a regular file")
        if not trusted(st.st_uid):
            raise refuse("belongs to uid %d (a secret file must belong to %s)"
                         % (st.st_uid, owners))
        if st.st_mode & 0o077:
            raise refuse("is open to group or others (mode %04o; chmod 600)"
                         % stat.S_IMODE(st.st_mode))
        data = os.read(fd, MAX_SECRET_BYTES + 1)
        if st.st_size > MAX_SECRET_BYTES or len(data) > MAX_SECRET_BYTES:
            raise refuse("is larger than %d bytes" % MAX_SECRET_BYTES)
        return data
    except OSError as e:
        raise refuse("cannot be read: %s" % e.strerror) from None
    finally:
        for fd in fds:
            os.close(fd)


def read_token_file(path: str) -> str:
    """The first line of a token file (:func:`read_secret_file`), trimmed;
    InvalidArgument when it cannot be read under that rule, or is empty."""
    text = read_secret_file(path).decode("utf-8", "replace")
    token = text.splitlines()[0].strip() if text else ""
    if not token:
        raise _errors.InvalidArgument("edgemon: token file %s is empty" % path)
    return token


def as_ns(t: TimeLike, now: Optional[int] = None, name: str = "time") -> int:
    """A point in time as Unix ns. A string is read as the ``edgemon`` command
    reads one (the one syntax of :mod:`edgemon._timespec`: "now", "-10m",
    "10m ago", "+30s", Unix seconds, "@UNIX.NANOS", ISO 8601 without a zone
    as UTC; "5m" alone is refused: "-5m" is five minutes ago). Besides: None
    (now), a datetime (naive = UTC), a timedelta or a number <= 0 of seconds
    (that long ago), a positive number (Unix seconds). InvalidArgument naming
    ``name`` for a string outside the syntax, nan, inf, a bool or a time
    outside int64 ns."""
    return _check.time_ns(name, _as_ns(t, now, name), t)


def _as_ns(t: TimeLike, now: Optional[int], name: str) -> int:
    now = now_ns() if now is None else now
    if t is None:
        return now
    if isinstance(t, str):
        try:
            return _timespec.parse_time_ns(t, now)
        except _errors.InvalidArgument as e:
            raise _errors.InvalidArgument("edgemon: %s: %s" % (name, e.message)) from None
    if isinstance(t, datetime.timedelta):
        return now - int(t.total_seconds() * 1e9)
    if isinstance(t, datetime.datetime):
        if t.tzinfo is None:
            t = t.replace(tzinfo=datetime.timezone.utc)
        return int(round(t.timestamp() * 1e6)) * 1000
    if isinstance(t, numbers.Real):  # a bool is refused there
        ns = _check.scaled(name, t, 1e9, _check.INT64_MIN, _check.INT64_MAX, "seconds",
                           " (<= 0: that long ago)")
        return now + ns if t <= 0 else ns
    raise _errors.InvalidArgument("edgemon: %s: bad time %r" % (name, t))


class Client(object):
    """A connection to edgemond. Thread-safe; cheap to create (no I/O until
    the first call). Use :func:`edgemon.connect` to make one."""

    def __init__(self, address: Optional[str] = None, token_file: Optional[str] = None,
                 tls: Union[bool, str] = False, tls_server_name: Optional[str] = None,
                 timeout: float = 10.0) -> None:
        address = _check.optional_text("address", address)
        token_file = _check.optional_text("token_file", token_file, nonempty=True)
        tls_server_name = _check.optional_text("tls_server_name", tls_server_name, nonempty=True)
        if not isinstance(tls, bool):
            tls = _check.text("tls", tls, nonempty=True)  # a CA file's path
        if address is None:
            address = os.environ.get("EDGEMON_CONNECT") or DEFAULT_TARGET
        target = normalize_target(address)
        if not target:
            raise _errors.InvalidArgument(
                "edgemon: bad address '%s': expected unix:/path, /path or host:port" % address)
        self.target = target
        self.timeout = None if timeout is None else _check.real(
            "timeout", timeout, 0.0, _check.MAX_TIMEOUT_S, "seconds", low_open=True)
        if token_file is None:
            token_file = os.environ.get("EDGEMON_TOKEN_FILE") or None
        self._metadata = None  # type: Optional[List[Any]]
        if token_file:
            self._metadata = [("authorization", "Bearer " + read_token_file(token_file))]
        # Reconnect within a second of a restarted daemon. The "minimum
        # backoff" is how long gRPC gives one connection attempt to finish
        # its handshake: at 100 ms a daemon on a busy board read as
        # unreachable, so it keeps gRPC's 20 s (bounded by each call's
        # deadline; a daemon that is not there fails at once).
        options = [("grpc.initial_reconnect_backoff_ms", 100),
                   ("grpc.min_reconnect_backoff_ms", 20000),
                   ("grpc.max_reconnect_backoff_ms", 1000),
                   ("grpc.max_receive_message_length", 64 << 20),
                   # A stream (watch, query) is read by the thread that iterates
                   # it, with no channel thread waking every 100 ms beside it
                   # (grpc.experimental.ChannelOptions.SingleThreadedUnaryStream).
                   ("SingleThreadedUnaryStream", 1)]
        if tls:
            if target.startswith("unix"):
                raise _errors.InvalidArgument("edgemon: TLS is for TCP targets, not " + target)
            roots = None
            if isinstance(tls, str):
                try:
                    with open(tls, "rb") as f:
                        roots = f.read()
                except OSError as e:
                    raise _errors.InvalidArgument("edgemon: cannot read CA file %s: %s" %
                                                  (tls, e.strerror)) from None
            if tls_server_name:
                options.append(("grpc.ssl_target_name_override", tls_server_name))
            self._channel = grpc.secure_channel(target, grpc.ssl_channel_credentials(roots),
                                                options)
        else:
            if target.startswith("unix"):
                # No bandwidth-delay probes on a local socket (whose window is
                # never the limit): each received message would start a ping
                # and a timer, which wakes gRPC's timer threads per message.
                options.append(("grpc.http2.bdp_probe", 0))
            self._channel = grpc.insecure_channel(target, options)
        self._stub = pb_grpc.TelemetryStub(self._channel)
        self._device = None  # type: Optional[DeviceInfo]
        self._lock = threading.Lock()
        self._local = threading.local()
        self._leases = None  # type: Any  # the leases measure() renews (made on first use)

    # -- plumbing ---------------------------------------------------------------
    def _call(self, what: str, method: Callable[..., Any], request: Any,
              timeout: Optional[float] = None) -> Any:
        try:
            return method(request, timeout=self.timeout if timeout is None else timeout,
                          metadata=self._metadata)
        except grpc.RpcError as e:
            raise _errors.from_rpc_error(what, self.target, e) from None

    def close(self) -> None:
        """Closes the channel (also done by ``with``) and ends the renewals of
        the client's measurements."""
        leases = self._leases
        thread = leases.stop() if leases is not None else None
        self._channel.close()  # a renewal in flight ends with it
        if thread is not None and thread is not threading.current_thread():
            thread.join(5.0)

    def __enter__(self) -> "Client":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def __repr__(self) -> str:
        return "<edgemon.Client %s>" % self.target

    # -- calls -----------------------------------------------------------------------
    def device(self, refresh: bool = True) -> DeviceInfo:
        """Board identity, the daemon's settings and the channel inventory."""
        _check.flag("refresh", refresh)
        if refresh or self._device is None:
            d = device_from_proto(self._call("device info", self._stub.GetDeviceInfo,
                                             pb.GetDeviceInfoRequest()))
            with self._lock:
                self._device = d
        assert self._device is not None
        return self._device

    def _device_for(self, generation: int) -> DeviceInfo:
        d = self._device
        if d is None or (generation and d.generation != generation):
            d = self.device()
        return d

    def channels(self) -> List[Any]:
        """Every channel (``edgemon.Channel``) with its key, unit and limits."""
        return list(self.device(refresh=self._device is None).channels)

    def latest(self, channels: Sequence[str] = ()) -> Snapshot:
        """The newest frame as a :class:`Snapshot` (optionally only some channel keys)."""
        f = self._call("latest", self._stub.GetLatest,
                       pb.GetLatestRequest(channels=_check.keys("channels", channels)))
        return Snapshot(f, self._device_for(f.generation))

    def watch(self, interval: float = 0.1, channels: Sequence[str] = ()) -> Iterator[Snapshot]:
        """Live snapshots at most one per ``interval`` seconds (the client's own
        rate; a slow reader gets fresh frames, never a queue). Stop by leaving
        the loop; ``close()`` on the iterator ends the stream at once."""
        req = pb.WatchRequest(interval_ms=_check.watch_interval_ms(interval),
                              channels=_check.keys("channels", channels))
        self._device_for(0)
        try:
            stream = self._stub.Watch(req, metadata=self._metadata)
        except grpc.RpcError as e:
            raise _errors.from_rpc_error("watch", self.target, e) from None
        return _Watch(self, stream)

    def query(self, since: TimeLike, until: TimeLike = None, channels: Sequence[str] = (),
              step: Union[None, float, datetime.timedelta] = None, limit: int = 0) -> Rows:
        """Stored history from ``since`` to ``until`` (default now): raw frames
        as :class:`Row` or, with ``step`` (seconds), min/avg/max per step and
        channel as :class:`BucketRow`. ``.to_pandas()`` on the result."""
        channels = _check.keys("channels", channels)
        now = self.daemon_now_ns()
        from_ns, to_ns_ = as_ns(since, now, "since"), as_ns(until, now, "until")
        if isinstance(step, datetime.timedelta):
            step = step.total_seconds()
        step_ns = 0
        if step is not None and not _check.is_zero(step):
            step_ns = _check.scaled("step", step, 1e9, _check.MIN_STEP_NS, _check.INT64_MAX,
                                    "seconds", " (0 or None: raw frames)")
        req = pb.QueryRequest(from_ns=from_ns, to_ns=to_ns_, channels=channels,
                              step_ns=step_ns,
                              limit=_check.integer("limit", limit, 0, _check.UINT32_MAX))
        device = self._device_for(0)
        by_id = {c.id: c for c in device.channels}
        out = Rows()
        try:
            for chunk in self._stub.Query(req, timeout=self.timeout, metadata=self._metadata):
                for f in chunk.frames:
                    if f.generation and f.generation != device.generation:
                        device = self.device()
                        by_id = {c.id: c for c in device.channels}
                    out.append(Row(f.realtime_ns, f.seq, decode_frame_values(f, by_id)))
                for s in chunk.series:
                    c = by_id.get(s.id)
                    if c is None:
                        continue
                    for b in s.buckets:
                        out.append(BucketRow(b.t_ns, c.key, b.min * c.scale, b.avg * c.scale,
                                             b.max * c.scale, b.count))
        except grpc.RpcError as e:
            raise _errors.from_rpc_error("query", self.target, e) from None
        return out

    def _stored_since(self, t_ns: int, channels: List[str]) -> bool:
        """Whether the store holds a frame at or after ``t_ns``: one Query for
        one raw frame of one channel (the daemon reads the frames still
        queued for its batched writer too)."""
        req = pb.QueryRequest(from_ns=t_ns, to_ns=_check.INT64_MAX, channels=channels, limit=1)
        try:
            chunks = self._stub.Query(req, timeout=self.timeout, metadata=self._metadata)
            return any(len(chunk.frames) > 0 for chunk in chunks)
        except grpc.RpcError as e:
            raise _errors.from_rpc_error("query", self.target, e) from None

    def _wait_stored(self, t_ns: int, deadline: float) -> bool:
        """Waits until the store holds a frame at or after ``t_ns`` (Unix ns)
        or ``deadline`` (``time.monotonic()``) passes; returns whether it does.

        One Query when the frame is stored already. Else a Watch of every
        stored frame (one channel): the daemon sends its newest frame first,
        then each frame it stores; frames stored before the stream began are
        no later than that first one, so the Query saw every one that counts.
        A streamed frame at or after ``t_ns`` is confirmed with one more
        Query: it may be a live frame (another watcher's faster rate), which
        carries the newest stored frame's seq but a later time of its own.
        Errors as any call's; the deadline passing is not one."""
        channels = [c.key for c in self.device(refresh=False).channels[:1]]
        if self._stored_since(t_ns, channels):
            return True
        left = deadline - time.monotonic()
        if left <= 0:
            return False
        stream = self._stub.Watch(pb.WatchRequest(interval_ms=0, channels=channels),
                                  timeout=left, metadata=self._metadata)
        try:
            for f in stream:
                if f.realtime_ns >= t_ns and self._stored_since(t_ns, channels):
                    return True
        except grpc.RpcError as e:
            if e.code() == grpc.StatusCode.DEADLINE_EXCEEDED:
                return False
            raise _errors.from_rpc_error("watch", self.target, e) from None
        finally:
            stream.cancel()
        return False

    def daemon_now_ns(self) -> int:
        """Now as the daemon counts it (``DeviceInfo.now_ns``): the wall clock
        its frames carry, kept monotonic across clock steps. Relative times
        ("-10m", a timedelta) are taken from it, so neither this host's clock
        nor a step of the board's shifts them. This host's clock with a daemon
        that does not say."""
        try:
            info = self._stub.GetDeviceInfo(pb.GetDeviceInfoRequest(), timeout=self.timeout,
                                            metadata=self._metadata)
        except grpc.RpcError as e:
            raise _errors.from_rpc_error("device info", self.target, e) from None
        return info.now_ns or now_ns()

    def processes(self, sort: str = "cpu", limit: int = 0) -> List[Any]:
        """A top-style process list (``edgemon.v1.Process`` messages)."""
        r = self._call("processes", self._stub.ListProcesses,
                       pb.ListProcessesRequest(sort=_check.text("sort", sort), limit=_check.integer(
                           "limit", limit, 0, _check.MAX_PROCESSES)))
        return list(r.processes)

    def boost(self, rate_hz: int, duration: float = 10.0) -> int:
        """Raises the rail sampling rate (1 to 1000 Hz) for ``duration`` s (0.001
        to 3600); returns the effective rate."""
        req = pb.BoostRequest(rate_hz=_check.integer("rate_hz", rate_hz, 1, _check.MAX_BOOST_HZ),
                              duration_ms=_check.scaled("duration", duration, 1000, 1,
                                                        _check.MAX_INTERVAL_MS, "seconds"))
        r = self._call("boost", self._stub.Boost, req)
        return r.rate_hz

    def rail_samples(self, window_id: Optional[int] = None, since: TimeLike = None,
                     until: TimeLike = None) -> RailSamples:
        """The rail power samples kept while a boost was held (the rate that
        held), of window ``window_id`` or of [since, until): a
        :class:`RailSamples`, every page, at most 2 000 000 samples."""
        if window_id is not None:
            req = pb.ReadRailSamplesRequest(window_id=_window_id(window_id))
        else:
            now = self.daemon_now_ns()
            req = pb.ReadRailSamplesRequest(
                from_ns=as_ns(since, now, "since") if since is not None else 0,
                to_ns=as_ns(until, now, "until") if until is not None else now)
        return self._rail_samples(req)

    def _rail_samples(self, req: Any) -> RailSamples:
        """Every page of ReadRailSamples for ``req``."""
        t_ns = []  # type: List[int]
        raw = {}  # type: Dict[str, List[Optional[int]]]
        complete = None  # type: Optional[int]
        truncated = False
        while True:  # every page
            req.limit = min(MAX_RAIL_SAMPLES - len(t_ns), 100000)
            page = self._call("rail samples", self._stub.ReadRailSamples, req)
            if complete is None:
                complete = page.complete_to_ns
            before, n = len(t_ns), len(page.t_ns)
            t_ns.extend(page.t_ns)
            for col in raw.values():  # a rail this page lacks: no reading
                col.extend([None] * n)
            for rc in page.rails:
                if len(rc.values) != n:
                    raise _errors.Error("edgemon: rail samples: column %s has %d values for %d "
                                        "times" % (rc.key, len(rc.values), n))
                col = raw.setdefault(rc.key, [None] * (before + n))
                col[before:] = list(rc.values)
                for a in rc.absent:
                    if a < n:
                        col[before + a] = None
            if not page.HasField("next_from_ns") or n == 0:
                break
            if len(t_ns) >= MAX_RAIL_SAMPLES:
                truncated = True
                break
            req.from_ns = page.next_from_ns
        return RailSamples(t_ns, raw, complete or 0, truncated)

    def begin_window(self, label: str, lease: Optional[float] = None,
                     boottime_ns: Optional[int] = None) -> Any:
        """Opens a window. With ``lease`` (seconds) the daemon closes it as
        abandoned unless ``renew_window`` is called within that time (0.001 to 86400 s).
        ``boottime_ns``: the start as this process read CLOCK_BOOTTIME at it
        (``time.clock_gettime_ns(time.CLOCK_BOOTTIME)``), so the call's own
        delays stay out of the window; at most 10 s old. Sent over a unix
        socket only: a daemon on another machine stamps the start on arrival."""
        req = pb.BeginWindowRequest(label=_check.text("label", label))
        if lease is not None:
            req.lease_ms = _check.scaled("lease", lease, 1000, 1, _check.MAX_LEASE_MS, "seconds")
        stamp = _caller_stamp(self.target, boottime_ns)
        if stamp is not None:
            req.caller_boottime_ns = stamp
        return self._call("begin window", self._stub.BeginWindow, req)

    def renew_window(self, window_id: int) -> Any:
        """Renews the lease of an open window (``begin_window(lease=...)``)."""
        return self._call("renew window", self._stub.BeginWindow,
                          pb.BeginWindowRequest(renew_id=_window_id(window_id)))

    def end_window(self, window_id: int, boottime_ns: Optional[int] = None,
                   start_boottime_ns: Optional[int] = None, items: Optional[float] = None,
                   exit_status: Optional[int] = None) -> Any:
        """Ends a window; ``boottime_ns`` as for ``begin_window`` (the end).
        ``start_boottime_ns``: the work's real start, read on CLOCK_BOOTTIME
        once ``begin_window`` had returned; the daemon moves the window's
        start there (at or after its recorded start, at or before its end),
        so the begin call's round trip stays out of the window. Unix socket only.
        ``items`` (>= 0) and ``exit_status`` (0 to 255) are stored with the
        window, for ``runs()``."""
        req = pb.EndWindowRequest(id=_window_id(window_id))
        if items is not None:
            req.items = _check.real("items", items, 0.0, None)
        if exit_status is not None:
            req.exit_status = _check.integer("exit_status", exit_status, 0, 255)
        stamp = _caller_stamp(self.target, boottime_ns)
        if stamp is not None:
            req.caller_boottime_ns = stamp
        start = _caller_stamp(self.target, start_boottime_ns)
        if start is not None:
            req.caller_start_boottime_ns = start
        return self._call("end window", self._stub.EndWindow, req)

    def windows(self, since: TimeLike = None, until: TimeLike = None) -> List[Any]:
        """Windows (``edgemon.v1.Window``) that overlap the range (all when none given)."""
        now = self.daemon_now_ns() if since is not None or until is not None else 0
        return self._windows(as_ns(since, now, "since") if since is not None else 0,
                             as_ns(until, now, "until") if until is not None else 0)

    def _windows(self, from_ns: int, to_ns: int) -> List[Any]:
        req = pb.ListWindowsRequest(from_ns=from_ns, to_ns=to_ns)
        out = []  # type: List[Any]
        while True:  # every page
            page = self._call("list windows", self._stub.ListWindows, req)
            out.extend(page.windows)
            if not page.next_page_token:
                return out
            req.page_token = page.next_page_token

    def runs(self, since: TimeLike = None, label: Optional[str] = None) -> List[Run]:
        """The recorded runs the daemon holds (``edgemon runs``): closed windows
        that are not marks nor abandoned, started at or after ``since``, whose
        label matches the shell pattern ``label``; by start time."""
        now = self.daemon_now_ns() if since is not None else 0
        from_ns = as_ns(since, now, "since") if since is not None else 0
        out = []  # type: List[Run]
        for w in self._windows(from_ns, 0):
            if not w.HasField("end_ns") or w.abandoned or w.start_ns < from_ns:
                continue
            if _MARK_LABEL.match(w.label):
                continue
            if label is not None and not fnmatch.fnmatchcase(w.label, label):
                continue
            out.append(run_from_proto(w))
        return out

    def summarize(self, window_id: Optional[int] = None, since: TimeLike = None,
                  until: TimeLike = None, from_ns: Optional[int] = None,
                  to_ns: Optional[int] = None) -> Any:
        """The daemon's ``Summary`` of a window or a time range (the raw message);
        ``from_ns``/``to_ns`` give the range in Unix ns instead of ``since``/``until``."""
        if window_id is not None:
            req = pb.SummarizeRequest(window_id=_window_id(window_id))
        else:
            now = self.daemon_now_ns() if from_ns is None or to_ns is None else 0
            i64 = _check.INT64_MIN, _check.INT64_MAX
            req = pb.SummarizeRequest(time=pb.TimeRange(
                from_ns=_check.integer("from_ns", from_ns, *i64) if from_ns is not None
                else as_ns(since, now, "since"),
                to_ns=_check.integer("to_ns", to_ns, *i64) if to_ns is not None
                else as_ns(until, now, "until")))
        return self._call("summarize", self._stub.Summarize, req)

    # -- windows -----------------------------------------------------------------------
    def measure(self, label: str, rate_hz: Optional[int] = None,
                items: Optional[float] = None, baseline: Any = None,
                items_phase: Optional[str] = None, nvtx: bool = False) -> "Any":
        """A context manager measuring its body as a daemon window:

            with client.measure("resnet50-fp16", rate_hz=200) as m:
                run()
            m.result.total_energy_j

        ``rate_hz`` raises the rail sampling rate while the body runs (a lease
        the daemon ends by itself). ``items`` sets the count for
        ``result.per_item()``, over the mark named ``items_phase`` when given.
        ``baseline`` ("10s" or seconds) takes each rail's idle power over that
        much stored history before the block (edgemon.Error, before the body
        runs, when the store does not hold it or a window overlaps it):
        ``result.baseline`` and ``result.energy_above_baseline_j``.
        ``nvtx=True``: ``result.nvtx`` gets the energy per NVTX range name this
        process pushed inside the block (edgemon's injection library must load
        before the process's first NVTX call: docs/profiling.md)."""
        from ._measure import Measurement, check_baseline, check_items, check_rate
        return Measurement(self, _check.text("label", label), check_rate(rate_hz),
                           check_items(items), check_baseline(baseline),
                           _check.optional_text("items_phase", items_phase, nonempty=True),
                           _check.flag("nvtx", nvtx))

    def mark(self, name: str) -> "Any":
        """A phase inside the current ``measure`` (a window of its own, shown
        under ``result.phases`` and in the bundle as ``edgemon mark`` phases)."""
        from ._measure import Mark
        return Mark(self, _check.text("name", name))

    def _renewals(self) -> Any:
        """The renewals of this client's leases (``_measure.Renewals``)."""
        with self._lock:
            if self._leases is None:
                from ._measure import Renewals
                self._leases = Renewals(self)
            return self._leases

    def _stack(self) -> List[Any]:
        s = getattr(self._local, "stack", None)
        if s is None:
            s = self._local.stack = []
        return s


def _window_id(window_id: Any) -> int:
    return _check.integer("window_id", window_id, _check.INT64_MIN, _check.INT64_MAX)


def _caller_stamp(target: str, boottime_ns: Any) -> Optional[int]:
    """A window edge's CLOCK_BOOTTIME stamp to send: only over a unix socket
    (the daemon's machine; another has an unrelated boottime)."""
    if boottime_ns is None or not target.startswith("unix"):
        return None
    return _check.integer("boottime_ns", boottime_ns, _check.INT64_MIN, _check.INT64_MAX)


class _Watch(object):
    """The iterator of Client.watch()."""

    def __init__(self, client: Client, stream: Any) -> None:
        self._client = client
        self._stream = stream

    def __iter__(self) -> "_Watch":
        return self

    def __next__(self) -> Snapshot:
        f = self.frame()
        return Snapshot(f, self._client._device_for(f.generation))

    def frame(self) -> Any:
        """The next frame as the daemon sent it (``edgemon.v1.Frame``, not
        decoded); StopIteration once closed."""
        try:
            return next(self._stream)
        except grpc.RpcError as e:
            if e.code() == grpc.StatusCode.CANCELLED:
                raise StopIteration from None
            raise _errors.from_rpc_error("watch", self._client.target, e) from None

    def close(self) -> None:
        """Ends the stream."""
        self._stream.cancel()

    def __enter__(self) -> "_Watch":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def __del__(self) -> None:
        try:
            self._stream.cancel()
        except Exception:  # noqa: BLE001 - interpreter shutdown
            pass


def connect(address: Optional[str] = None, *, token_file: Optional[str] = None,
            tls: Union[bool, str] = False, tls_server_name: Optional[str] = None,
            timeout: float = 10.0) -> Client:
    """Connects to edgemond (no I/O yet: an unreachable daemon shows at the first call).

    ``address``: "unix:/path", "/path" or "host:port"; default ``$EDGEMON_CONNECT``,
    else unix:/run/edgemon/edgemond.sock (the rule of the ``edgemon`` command).
    ``token_file``: the bearer token (default ``$EDGEMON_TOKEN_FILE``).
    ``tls``: True for the system's roots, or the path of a CA PEM file.
    ``timeout``: seconds per call."""
    return Client(address, token_file=token_file, tls=tls, tls_server_name=tls_server_name,
                  timeout=timeout)
