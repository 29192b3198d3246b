"""The local frame feed: Watch's frames without gRPC, for a client on the
daemon's own board (docs/api.md, "The local feed").

Beside its unix socket PATH edgemond listens on PATH.feed (AF_UNIX,
SOCK_SEQPACKET). The client sends one packet, a WatchRequest; every packet
back is one edgemon.v1.FeedMessage: a frame (the newest at once, then one per
interval, latest-wins) or an error (a gRPC status code and message) just
before the daemon closes. A frame costs one recv into a buffer kept for the
feed's life and one protobuf parse, and no gRPC channel (whose timer threads
wake a few times a second) needs to stay open."""
import mmap
import socket
import threading
from typing import Any, Optional, Sequence

from . import _check, _errors
from ._client import unix_socket_path
from ._lazy import grpc, pb

FEED_SUFFIX = ".feed"
# Room for the largest packet the daemon sends (a frame is about 2 KB; a
# packet larger than this one is refused as an error, never read cut short).
_BUFFER_BYTES = 1 << 20


def feed_path(target: str) -> Optional[str]:
    """The feed socket of a daemon at ``target`` ("unix:PATH" -> PATH.feed);
    None for a target without one (TCP, an abstract socket)."""
    path = unix_socket_path(target)
    return path + FEED_SUFFIX if path else None


class Feed(object):
    """One feed connection. ``frame()`` from one thread; ``close()`` from any
    (it wakes a reader blocked in ``frame()``, which then raises StopIteration;
    the socket is closed by whichever of the two comes last, never under a
    reader's recv)."""

    def __init__(self, sock: socket.socket, target: str) -> None:
        self._sock = sock
        # Anonymous memory: only the pages a packet fills become resident (a
        # bytearray would zero, hence touch, all of it).
        self._buf = mmap.mmap(-1, _BUFFER_BYTES)
        self._view = memoryview(self._buf)
        self._recv_into = sock.recv_into
        self._parse = pb.FeedMessage.FromString
        self._lock = threading.Lock()
        self._closed = False
        self._reading = False
        self._timed = sock.gettimeout() is not None  # the first frame's wait is bounded
        self.target = target

    def frame(self) -> Any:
        """The next frame (``edgemon.v1.Frame``) as the daemon sent it.
        StopIteration once closed; the package's error for the daemon's
        FeedError (its status code mapped as a gRPC call's); Unavailable when
        the daemon ended the feed without one (gone)."""
        with self._lock:
            if self._closed:
                raise StopIteration
            self._reading = True
        try:
            n = self._recv_into(self._buf, _BUFFER_BYTES, socket.MSG_TRUNC)
        except OSError as e:
            n = -1
            failure = str(e.strerror or e)
        with self._lock:
            self._reading = False
            if self._closed:
                self._sock.close()
                raise StopIteration
        if n <= 0:
            self.close()
            raise _errors.Unavailable("edgemon: feed at %s: %s" % (
                self.target, "the daemon ended the feed" if n == 0 else failure), "UNAVAILABLE")
        if self._timed:
            self._timed = False
            self._sock.settimeout(None)  # then blocking reads, woken by close()
        if n > _BUFFER_BYTES:
            self.close()
            raise _errors.Error("edgemon: feed at %s: a packet of %d bytes, over the %d this "
                                "client reads" % (self.target, n, _BUFFER_BYTES))
        msg = self._parse(self._view[:n])
        if msg.WhichOneof("body") == "frame":
            return msg.frame
        self.close()
        if msg.HasField("error"):
            code = next((s for s in grpc.StatusCode if s.value[0] == msg.error.code),
                        grpc.StatusCode.UNKNOWN)
            raise _errors.from_status("feed", self.target, code, msg.error.message)
        raise _errors.Error("edgemon: feed at %s: a packet with neither a frame nor an error"
                            % self.target)

    def close(self) -> None:
        """Ends the feed; a thread blocked in ``frame()`` wakes at once."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            try:
                self._sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass  # not connected any more
            if not self._reading:
                self._sock.close()

    def __enter__(self) -> "Feed":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


def open_feed(target: str, interval: float, channels: Sequence[str] = (),
              timeout: Optional[float] = None) -> Optional[Feed]:
    """A feed of frames at most one per ``interval`` seconds (Watch's rules:
    0 is every frame) from the daemon at ``target``; None when it has no
    feed socket (TCP, or a daemon older than the feed), for the caller to use
    the Watch stream instead. ``timeout`` (seconds, None: none) bounds the
    connect, the send and the wait for the first frame."""
    request = pb.WatchRequest(interval_ms=_check.watch_interval_ms(interval),
                              channels=list(channels))
    path = feed_path(target)
    if path is None:
        return None
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    try:
        sock.settimeout(timeout)
        sock.connect(path)
        sock.send(request.SerializeToString())
    except (FileNotFoundError, ConnectionRefusedError):
        sock.close()
        return None  # no feed there
    except OSError as e:
        sock.close()
        err = _errors.PermissionDenied if isinstance(e, PermissionError) else _errors.Unavailable
        raise err("edgemon: feed at %s: %s" % (target, e.strerror or e),
                  "PERMISSION_DENIED" if err is _errors.PermissionDenied else "UNAVAILABLE") \
            from None
    return Feed(sock, target)
