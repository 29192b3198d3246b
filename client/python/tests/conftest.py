"""pytest fixtures: edgemon-sim + edgemond on a unix socket per simulated board.

Run by ctest (python.cmake) with EDGEMON_TEST_EDGEMOND, EDGEMON_TEST_SIM,
EDGEMON_TEST_CLI, EDGEMON_TEST_FIXTURES set and PYTHONPATH=build/python."""
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "..", "tests", "e2e"))
from harness import analytic_energy_mj, start_sim, stop_process  # noqa: E402 (shared by the e2e scripts)

INTERVAL_MS = 100     # edgemond frame period
ENERGY_RATE_HZ = 50   # edgemond rail integration rate
SIM_RATE_HZ = 200     # simulator value updates
# Boards with a board input rail and sub-rails, separate rails, a 4-rail Nano, a PC.
BOARDS = ["orin-nano", "agx-orin", "jetson-nano", "x86-laptop"]


def tool(name):
    path = os.environ.get("EDGEMON_TEST_" + name.upper())
    if not path:
        pytest.skip("EDGEMON_TEST_%s is not set (run through ctest)" % name.upper())
    return path


class Board(object):
    """edgemon-sim + edgemond for one fixture board."""

    def __init__(self, name, tmp):
        self.name = name
        self.tmp = os.path.join(tmp, name)
        os.makedirs(self.tmp)
        self.root = os.path.join(self.tmp, "root")
        self.sock = os.path.join(self.tmp, "edgemond.sock")
        self.target = "unix:" + self.sock
        self.sim_log = open(os.path.join(self.tmp, "sim.log"), "w")
        self.sim, self.sidecar = start_sim(tool("sim"), name, self.root, tool("fixtures"),
                                           self.sim_log, ["--rate-hz", str(SIM_RATE_HZ)])
        self.log = open(os.path.join(self.tmp, "edgemond.log"), "w")
        env = dict(os.environ)
        env.pop("NOTIFY_SOCKET", None)
        self.started_ns = time.time_ns()  # before edgemond's first frame
        self.daemon = subprocess.Popen(
            [tool("edgemond"), "--root", self.root, "--db", os.path.join(self.tmp, "store.db"),
             "--listen", self.target, "--interval-ms", str(INTERVAL_MS),
             "--energy-rate-hz", str(ENERGY_RATE_HZ)],
            stdout=subprocess.DEVNULL, stderr=self.log, env=env)
        deadline = time.time() + 15
        while not os.path.exists(self.sock):
            if self.daemon.poll() is not None or time.time() > deadline:
                raise RuntimeError("edgemond does not listen on " + self.sock)
            time.sleep(0.02)
        time.sleep(0.5)  # a few frames before anything is measured

    def stop(self):
        for p in (self.daemon, self.sim):
            stop_process(p)
        self.log.close()
        self.sim_log.close()

    def cli(self, *args):
        r = subprocess.run([tool("cli"), "--connect", self.target] + list(args),
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                           universal_newlines=True, timeout=60)
        assert r.returncode == 0, r.stderr
        return r.stdout

    def now_json(self):
        return json.loads(self.cli("now", "--json"))

    def energy_mj(self, rail, from_ns, to_ns):
        """The simulator's analytic energy (mJ)."""
        return analytic_energy_mj(self.sidecar, rail, from_ns, to_ns)

    def env(self):
        e = dict(os.environ)
        e["EDGEMON_CONNECT"] = self.target
        return e


@pytest.fixture(scope="session")
def tmpdir_session():
    d = tempfile.mkdtemp(prefix="edgemon-python-")
    yield d
    shutil.rmtree(d, ignore_errors=True)


_boards = {}


@pytest.fixture(scope="session", params=BOARDS)
def board(request, tmpdir_session):
    name = request.param
    if name not in _boards:
        _boards[name] = Board(name, tmpdir_session)
    yield _boards[name]


@pytest.fixture(scope="session")
def nano(tmpdir_session):
    """orin-nano: VDD_IN (the input rail) with sub-rails."""
    if "orin-nano" not in _boards:
        _boards["orin-nano"] = Board("orin-nano", tmpdir_session)
    return _boards["orin-nano"]


def pytest_sessionfinish(session, exitstatus):
    for b in _boards.values():
        b.stop()
