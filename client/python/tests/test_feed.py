"""The local frame feed (PATH.feed beside edgemond's socket) and the jtop
shim sampling through it: no gRPC channel, hence none of gRPC's threads,
open while it samples; the Watch stream where the daemon has no feed; the
daemon's errors as the package's exceptions."""
import os
import socket
import subprocess
import sys
import threading

import pytest

import edgemon
from edgemon import _check, _client, _feed
from edgemon.v1 import edgemon_pb2 as pb
from conftest import Board
from harness import stop_process
from jtop import JtopException, jtop

# The threads gRPC starts with a channel and ends once the last one is closed.
GRPC_THREADS = ("grpc_global_tim", "timer_manager", "event_engine", "default-executo",
                "resolver-execut")

JTOP_CHILD = r"""
import glob, sys, time
from jtop import jtop

def threads():
    names = []
    for p in glob.glob("/proc/self/task/*/comm"):
        try:
            with open(p) as f:
                names.append(f.read().strip())
        except OSError:
            pass  # a thread that ended meanwhile
    return names

grpc_threads = tuple(sys.argv[1].split(","))
with jtop(interval=0.1) as jetson:
    for _ in range(5):
        assert jetson.ok()
        stats = jetson.stats
    assert "CPU1" in stats, stats
    # gRPC ends its threads a moment after its last channel is closed.
    left = [n for n in threads() if n.startswith(grpc_threads)]
    for _ in range(100):
        if not left:
            break
        jetson.ok()
        left = [n for n in threads() if n.startswith(grpc_threads)]
    print(type(jetson._watch).__name__, ",".join(sorted(left)) or "-")
"""


def test_jtop_samples_through_the_feed_with_no_grpc_thread_left(nano):
    """A jtop reading stats over the unix socket holds the feed and no gRPC
    channel: none of gRPC's threads is left in its process (a fresh one:
    this one has channels of other tests)."""
    env = dict(nano.env(), PYTHONPATH=os.environ.get("PYTHONPATH", ""))
    r = subprocess.run([sys.executable, "-c", JTOP_CHILD, ",".join(GRPC_THREADS)],
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True,
                       env=env, timeout=120)
    assert r.returncode == 0, r.stderr
    assert r.stdout.split() == ["Feed", "-"], r.stdout


def test_calls_reconnect_and_an_idle_channel_is_closed_again(nano, monkeypatch):
    """Over the feed, processes connects a gRPC client for the call; once no
    call used it for a whole sample, the sampling thread closes it again."""
    monkeypatch.setenv("EDGEMON_CONNECT", nano.target)
    monkeypatch.setattr(sys.modules["jtop.jtop"], "_CHANNEL_IDLE_S", 0.0)
    connects = []
    real_connect = edgemon.connect
    monkeypatch.setattr(edgemon, "connect", lambda *a, **k: connects.append(1) or
                        real_connect(*a, **k))
    with jtop(interval=0.1) as jetson:
        assert jetson.ok()
        assert isinstance(jetson._watch, _feed.Feed) and jetson._client is None
        assert len(connects) == 1  # start()'s, closed once it had the first frame
        assert isinstance(jetson.processes, list)
        assert len(connects) == 2
        for _ in range(50):
            if jetson._client is None:
                break
            assert jetson.ok()
        assert jetson._client is None
        assert jetson.ok()
        assert isinstance(jetson.processes, list)  # and again
        assert len(connects) == 3


@pytest.mark.parametrize("absent", ["missing", "refused"])
def test_without_a_feed_socket_jtop_samples_from_the_watch_stream(nano, monkeypatch, absent):
    """A daemon older than the feed has no PATH.feed (connect: ENOENT), or a
    stale file nobody listens on (ECONNREFUSED): jtop reads the Watch stream."""
    monkeypatch.setenv("EDGEMON_CONNECT", nano.target)
    suffix = ".feed-%s-%d" % (absent, os.getpid())
    monkeypatch.setattr(_feed, "FEED_SUFFIX", suffix)
    stale = None
    if absent == "refused":
        stale = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        stale.bind(nano.sock + suffix)
        stale.close()  # bound, never listening
    try:
        assert _feed.open_feed(nano.target, 0.1) is None
        taken = []
        with jtop(interval=0.1) as jetson:
            jetson.attach(lambda j: taken.append(j.stats))
            while len(taken) < 3:
                assert jetson.ok()
            assert isinstance(jetson._watch, _client._Watch)
            assert jetson._client is not None  # the stream's channel
        assert all("CPU1" in s for s in taken)
    finally:
        if stale is not None:
            os.unlink(nano.sock + suffix)


def test_feed_frames_keep_their_values_and_close_wakes_a_reader(nano):
    d = edgemon.connect(nano.target).device()
    keys = {c.id: c.key for c in d.channels}
    with _feed.open_feed(nano.target, 0) as feed:  # every frame
        first = feed.frame()  # the newest, at once
        wire = first.SerializeToString()
        assert first.ids and all(i in keys for i in first.ids)
        seq = first.seq
        for _ in range(3):
            f = feed.frame()  # read into the buffer the first one came in
            assert f.seq > seq and f.ids
            seq = f.seq
        assert first.SerializeToString() == wire  # a frame read keeps its values
    feed = _feed.open_feed(nano.target, 3600, channels=["rail/*/power"])
    assert feed is not None
    only = feed.frame()  # at once, then one an hour
    assert only.ids and all(keys[i].startswith("rail/") and keys[i].endswith("/power")
                            for i in only.ids)
    closer = threading.Timer(0.2, feed.close)
    closer.start()
    with pytest.raises(StopIteration):
        feed.frame()  # close() ends the wait for the next
    closer.join()
    with pytest.raises(StopIteration):
        feed.frame()


def test_a_refused_feed_request_is_invalid_argument(nano):
    """The daemon's FeedError for a request over Watch's limits maps as the
    Watch call's status does; the package refuses it before sending."""
    with pytest.raises(edgemon.InvalidArgument, match="interval"):
        _feed.open_feed(nano.target, _check.MAX_INTERVAL_MS / 1000.0 + 1)
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    sock.connect(nano.sock + _feed.FEED_SUFFIX)
    sock.send(pb.WatchRequest(interval_ms=_check.MAX_INTERVAL_MS + 1).SerializeToString())
    feed = _feed.Feed(sock, nano.target)
    with pytest.raises(edgemon.InvalidArgument) as e:
        feed.frame()
    assert e.value.code == "INVALID_ARGUMENT" and "feed at " + nano.target in e.value.message
    with pytest.raises(StopIteration):
        feed.frame()  # closed after the error


@pytest.mark.parametrize("end", ["stopped", "killed"])
def test_the_daemon_going_away_is_one_jtop_exception_from_ok(tmp_path, monkeypatch, end):
    """edgemond ending the feed as it stops (FeedError UNAVAILABLE, its own
    message), or killed (the connection closed without one), surfaces from
    ok() as a JtopException, once; ok() is False from then on."""
    board = Board("orin-nano", str(tmp_path))
    try:
        monkeypatch.setenv("EDGEMON_CONNECT", board.target)
        jetson = jtop(interval=0.1)
        jetson.start()
        try:
            assert isinstance(jetson._watch, _feed.Feed)
            assert jetson.ok()
            if end == "stopped":
                stop_process(board.daemon)
                # Not the daemon's own end: the socket is gone (UNAVAILABLE), and
                # the line says what to do next.
                want = "feed at (?!.*the daemon ended the feed).*UNAVAILABLE"
            else:
                board.daemon.kill()
                board.daemon.wait()
                want = "feed at .*: the daemon ended the feed"
            with pytest.raises(JtopException, match=want):
                for _ in range(200):
                    jetson.ok()
            assert not jetson.ok()
        finally:
            jetson.close()
    finally:
        board.stop()


def test_the_feed_socket_is_beside_a_unix_target_only():
    # One reading of a unix target for the feed and the control helper.
    assert _feed.feed_path("unix:/run/edgemon/edgemond.sock") == "/run/edgemon/edgemond.sock.feed"
    assert _feed.feed_path("unix:///run/edgemon/edgemond.sock") == "/run/edgemon/edgemond.sock.feed"
    assert _feed.feed_path("unix:e.sock") == "e.sock.feed"
    assert _client.unix_socket_path("unix:///run/x.sock") == "/run/x.sock"
    for target in ("unix:", "unix://", "localhost:50051", "unix-abstract:edgemon", "dns:host:1"):
        assert _feed.feed_path(target) is None
        assert _client.unix_socket_path(target) is None
