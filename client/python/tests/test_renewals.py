"""The leases of measure() and mark() (their windows and boosts) are renewed
by one thread per client, started once and kept: measure() after the first
starts no thread (a thread started right after a gRPC call waited about
3 ms on grpcio's poller, in every call). The windows are still renewed on
schedule, a process that dies still leaves them abandoned, the thread never
keeps a process alive, stops at close() and with a client dropped unclosed,
and a child after fork() renews its own leases on its own thread."""
import gc
import subprocess
import sys
import threading
import time

import edgemon
from edgemon import _measure

# Renewed every 0.3 s; a window left unrenewed is abandoned after 1.2 s: a
# busy machine stalling the renewal thread or the daemon for a few hundred
# milliseconds loses no lease.
LEASE_S = 1.2


def renewal_threads():
    return {t for t in threading.enumerate() if t.name.startswith("edgemon-")}


def window(client, window_id):
    return [w for w in client.windows() if w.id == window_id][0]


def test_measure_calls_share_one_renewal_thread_that_renews_on_schedule(nano, monkeypatch):
    monkeypatch.setattr(_measure, "_WINDOW_LEASE_S", LEASE_S)
    # A client an earlier test dropped inside a reference cycle keeps its
    # renewal thread until the cycle is collected: not this client's.
    others = renewal_threads()
    c = edgemon.connect(nano.target)
    seen = set()  # every renewal thread alive inside a measured block
    for i in range(20):
        with c.measure("sequential-%d" % i, rate_hz=200 if i % 5 == 0 else None):
            seen |= renewal_threads() - others
    assert len(seen) == 1, sorted(t.name for t in seen)
    thread = seen.pop()
    assert thread.daemon and thread.is_alive()

    renewed = []
    renew_window = c.renew_window

    def counted(window_id):
        renewed.append(window_id)
        return renew_window(window_id)
    monkeypatch.setattr(c, "renew_window", counted)
    with c.measure("long") as m:
        with c.mark("inner") as mark:
            time.sleep(2.5)  # several leases: renewed by the same thread
        assert renewal_threads() - others == {thread}
    for w in (m.window_id, mark.window.id):
        assert renewed.count(w) >= 3, (w, renewed)
        assert not window(c, w).abandoned
    # Ended windows are renewed no more, and the thread sleeps on.
    n = len(renewed)
    time.sleep(4 * LEASE_S / 4)
    assert len(renewed) == n and thread.is_alive()

    c.close()
    assert not thread.is_alive()


CHILD = r"""
import sys, time
import edgemon
from edgemon import _measure
_measure._WINDOW_LEASE_S = %r
c = edgemon.connect(sys.argv[1])
with c.measure("%s") as m:
    print(m.window_id, flush=True)
    %s
"""


def test_a_killed_process_leaves_its_measurement_abandoned(nano):
    p = subprocess.Popen([sys.executable, "-c", CHILD % (LEASE_S, "killed", "time.sleep(60)"),
                          nano.target], stdout=subprocess.PIPE, universal_newlines=True)
    try:
        window_id = int(p.stdout.readline())
        c = edgemon.connect(nano.target)
        time.sleep(3 * LEASE_S)
        w = window(c, window_id)
        assert not w.abandoned and not w.HasField("end_ns")  # renewed while it lives
    finally:
        p.kill()
        p.wait()
    deadline = time.monotonic() + 15
    while not w.abandoned and time.monotonic() < deadline:
        time.sleep(0.05)
        w = window(c, window_id)
    assert w.abandoned


def test_the_renewal_thread_never_keeps_a_process_alive(nano):
    # The client neither closed nor dropped: the process exits all the same.
    r = subprocess.run([sys.executable, "-c", CHILD % (10.0, "exits", "pass"), nano.target],
                       stdout=subprocess.PIPE, universal_newlines=True, timeout=30)
    assert r.returncode == 0 and int(r.stdout) > 0


class FakeClient(object):
    pass


def test_a_client_dropped_unclosed_ends_its_renewal_thread():
    client = FakeClient()
    renewals = _measure.Renewals(client)
    renewals.start()
    thread = renewals._thread
    assert thread.is_alive()
    del client
    gc.collect()
    thread.join(10)
    assert not thread.is_alive()


FORK_CHILD = r"""
import os, signal, sys, threading
from edgemon import _measure

class FakeClient(object):
    pass

client = FakeClient()
renewals = _measure.Renewals(client)
in_parent = threading.Event()
renewals.add(0.01, lambda c: in_parent.set())
assert in_parent.wait(10)
# Forked while the lock is held, as the parent's renewal thread may hold it.
with renewals._cond:
    pid = os.fork()
    if pid == 0:
        signal.alarm(10)  # a deadlocked child fails instead of hanging
        ok = False
        try:
            inherited = set(renewals._leases)  # the parent's, renewed by the parent
            in_child = threading.Event()
            renewals.add(0.01, lambda c: in_child.set())
            ok = not inherited and in_child.wait(10)
        finally:
            os._exit(0 if ok else 1)
_, status = os.waitpid(pid, 0)
print(os.WEXITSTATUS(status) if os.WIFEXITED(status) else -1)
"""


def test_a_forked_child_renews_its_own_leases_on_its_own_thread():
    r = subprocess.run([sys.executable, "-c", FORK_CHILD], stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, universal_newlines=True, timeout=60)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "0", (r.stdout, r.stderr)
