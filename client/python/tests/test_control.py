"""The edgemon package's control calls and jtop's setters against a real
edgemon-control on a simulated AGX Orin (needs root for the group checks)."""
import glob
import os
import subprocess
import sys
import time

import pytest

import edgemon
from conftest import Board, _boards, tool
from jtop import JtopException, jtop

HERE = os.path.dirname(os.path.abspath(__file__))
EXAMPLES = os.path.join(HERE, "..", "examples")
GROUP = "edgemon-ctl-test"


def touched(root):
    out = {}
    for p in ("sys/devices/system/cpu/cpufreq/policy*/scaling_min_freq",
              "sys/devices/system/cpu/cpufreq/policy*/scaling_max_freq",
              "sys/devices/platform/*/devfreq/*/min_freq",
              "sys/devices/platform/*/hwmon/hwmon*/pwm*", "var/lib/nvpmodel/status"):
        for f in glob.glob(os.path.join(root, p)):
            with open(f) as fh:
                out[f] = fh.read()
    return out


@pytest.fixture(scope="module")
def orin(tmpdir_session):
    if "agx-orin" not in _boards:
        _boards["agx-orin"] = Board("agx-orin", tmpdir_session)
    b = _boards["agx-orin"]
    if os.geteuid() == 0 and subprocess.run(["getent", "group", GROUP],
                                            capture_output=True).returncode != 0:
        subprocess.run(["groupadd", "--system", GROUP], check=True)
    os.chmod(tmpdir_session, 0o755)
    sock = os.path.join(b.tmp, "control.sock")
    cfg = os.path.join(b.tmp, "control.toml")
    with open(cfg, "w") as f:
        f.write('[control]\nenable = true\ngroup = "%s"\n' % GROUP)
    log = open(os.path.join(b.tmp, "control.log"), "w")
    helper = subprocess.Popen([tool("control"), "--config", cfg, "--root", b.root,
                               "--listen", "unix:" + sock], stdout=subprocess.DEVNULL, stderr=log)
    deadline = time.time() + 15
    while not os.path.exists(sock):
        assert helper.poll() is None and time.time() < deadline, "edgemon-control does not listen"
        time.sleep(0.02)
    b.control_target = "unix:" + sock
    yield b
    helper.terminate()
    helper.wait(20)


def test_control_calls_lease_and_restore(orin):
    ctl = edgemon.control(orin.control_target)
    modes = ctl.modes()
    assert [m["name"] for m in modes][:2] == ["MAXN", "MODE_15W"]
    before = touched(orin.root)
    with ctl.lock_clocks() as lease:
        assert lease.kind == "clocks"
        assert ctl.state()["clocks_locked"] is True
        with pytest.raises(edgemon.InvalidArgument, match="held by lease " + lease.id):
            ctl.lock_clocks()
    assert touched(orin.root) == before
    with pytest.raises(edgemon.InvalidArgument, match="unknown power mode 42"):
        ctl.set_mode(42)
    lease = ctl.set_fan(100, duration_s=60)
    assert lease.detached and ctl.state()["fans"]["pwmfan"] == 255
    assert "restored" in ctl.release("fan")
    assert touched(orin.root) == before


def test_no_helper_is_a_clean_error(tmp_path):
    ctl = edgemon.control("unix:" + str(tmp_path / "none.sock"))
    with pytest.raises(edgemon.Unavailable, match="enable = true"):
        ctl.state()


def test_jtop_setters_through_the_helper(orin, monkeypatch):
    monkeypatch.setenv("EDGEMON_CONNECT", orin.target)
    monkeypatch.setenv("EDGEMON_CONTROL", orin.control_target)
    before = touched(orin.root)
    with jtop(interval=0.2) as jetson:
        jetson.jetson_clocks = True
        jetson.fan.speed = 100
        assert edgemon.control(orin.control_target).state()["clocks_locked"] is True
        jetson.jetson_clocks = False
        with pytest.raises(JtopException, match="unknown power mode 42"):
            jetson.nvpmodel = 42
    assert touched(orin.root) == before


def run_as_nobody(orin, groups):
    if os.geteuid() != 0:
        pytest.skip("needs root to run the example as another user")
    # The daemon's own socket is not what is tested here: open it to the caller.
    os.chmod(orin.sock, 0o666)
    env = dict(os.environ, EDGEMON_CONNECT=orin.target, EDGEMON_CONTROL=orin.control_target,
               PYTHONPATH=os.environ.get("PYTHONPATH", ""))
    return subprocess.run(["setpriv", "--reuid=nobody", "--regid=nogroup", *groups,
                           sys.executable, os.path.join(EXAMPLES, "jtop_control.py"), "0"],
                          capture_output=True, text=True, env=env, timeout=60)


def test_jtop_control_example_in_the_group(orin):
    import grp
    before = touched(orin.root)
    r = run_as_nobody(orin, ["--groups=%d" % grp.getgrnam(GROUP).gr_gid])
    assert r.returncode == 0, r.stdout + r.stderr
    assert "nvpmodel set" in r.stdout and "fan speed set" in r.stdout and "restored" in r.stdout
    assert touched(orin.root) == before


def test_jtop_control_example_outside_the_group(orin):
    before = touched(orin.root)
    r = run_as_nobody(orin, ["--clear-groups"])
    assert r.returncode == 1, r.stdout + r.stderr
    assert "control refused" in r.stdout and "members of group %s" % GROUP in r.stdout, r.stdout
    assert "Traceback" not in r.stderr, r.stderr
    assert touched(orin.root) == before
