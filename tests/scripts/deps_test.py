#!/usr/bin/python3
"""What scripts/quickstart.sh and scripts/test.sh install and build, and that
scripts/install-deps.sh starts and enables no service.

  deps_test.py --source-dir REPO

No package is installed and nothing is built: apt-get, dpkg-query, cmake,
ctest and sudo are stand-ins on PATH that record their arguments, the scripts
run from a scratch copy of scripts/, and EDGEMON_DEPS_ROOT points install-deps.sh
at a scratch root whose /etc/systemd, /etc/rc?.d and /usr/sbin/policy-rc.d
stand for the machine's. The stand-in apt-get does what a service's package
does on install: asks policy-rc.d whether it may start the service, and
creates its boot links (systemd's .wants links, SysV S and K links).
  - quickstart.sh installs exactly `install-deps.sh --list --build`, with
    --no-install-recommends, builds the programs alone, configures a new
    build/ as Release without the tests and benchmarks, and keeps the build
    type of an existing one;
  - test.sh installs the whole list, configures with every test required,
    builds everything and runs ctest as the README says;
  - the build list holds no test tool, and (where dpkg knows them) none of
    its packages ships a service, socket, timer or init script;
  - during the install policy-rc.d refuses starts; afterwards the links the
    install created are undone (systemd links removed, SysV S links turned
    into K links), the links that were there before, masks and K links are
    kept, and the machine's own policy-rc.d is back as it was; also when
    apt-get fails half-way, and after a run that was killed.
"""
import argparse
import os
import shutil
import subprocess
import sys
import tempfile

FAILURES = []


def expect(cond, what):
    if not cond:
        FAILURES.append(what)
        print("FAIL: " + what)


STUBS = {
    # Nothing is installed (everything, with STUB_ALL_INSTALLED=1).
    # With STUB_PROVIDES, the listing of every package's Provides prints it.
    "dpkg-query": "#!/bin/sh\ncase \"$*\" in *Provides*) [ -z \"$STUB_PROVIDES\" ] || "
                  "{ printf '%s' \"$STUB_PROVIDES\"; exit 0; }; exit 1;; esac\n"
                  "[ -z \"$STUB_ALL_INSTALLED\" ] || { printf 'install ok installed'; "
                  "exit 0; }\nexit 1\n",
    "sudo": "#!/bin/sh\necho \"sudo $*\" >>\"$STUB_LOG\"\nexit 99\n",
    "cmake": "#!/bin/sh\necho \"cmake $*\" >>\"$STUB_LOG\"\n",
    "ctest": "#!/bin/sh\necho \"ctest $*\" >>\"$STUB_LOG\"\n",
    "apt-get": r"""#!/bin/sh
echo "apt-get $*" >>"$STUB_LOG"
[ "$1" = install ] || exit 0
"$EDGEMON_DEPS_ROOT/usr/sbin/policy-rc.d" prometheus.service start
echo "policy-rc.d start: $?" >>"$STUB_LOG"
[ -z "$STUB_POSTINST" ] || sh -e "$STUB_POSTINST"
exit "${STUB_APT_EXIT:-0}"
""",
}

# What the packages of prometheus and podman do on install (Debian 12).
POSTINST = r"""
r=$EDGEMON_DEPS_ROOT/etc
mkdir -p $r/systemd/system/multi-user.target.wants $r/systemd/system/sockets.target.wants \
  $r/systemd/system/timers.target.wants $r/systemd/user/sockets.target.wants
ln -s /lib/systemd/system/prometheus.service $r/systemd/system/multi-user.target.wants/
ln -s /lib/systemd/system/podman.socket $r/systemd/system/sockets.target.wants/
ln -s /lib/systemd/system/podman-auto-update.timer $r/systemd/system/timers.target.wants/
ln -s /usr/lib/systemd/user/podman.socket $r/systemd/user/sockets.target.wants/
ln -s /dev/null $r/systemd/system/prometheus-old.service
for l in 2 3 4 5; do mkdir -p $r/rc$l.d; ln -s ../init.d/prometheus $r/rc$l.d/S01prometheus; done
for l in 0 1 6; do mkdir -p $r/rc$l.d; ln -s ../init.d/prometheus $r/rc$l.d/K01prometheus; done
"""

BEFORE = {  # links the machine had before (its owner's)
    "etc/systemd/system/multi-user.target.wants/postgresql.service":
        "/lib/systemd/system/postgresql.service",
    "etc/systemd/system/timers.target.wants/apt-daily.timer": "/lib/systemd/system/apt-daily.timer",
    "etc/rc2.d/S01postgresql": "../init.d/postgresql",
    "etc/rc0.d/K01postgresql": "../init.d/postgresql",
}


class Scratch:
    def __init__(self, source_dir, own_policy):
        self.tmp = tempfile.TemporaryDirectory(prefix="edgemon-deps-")
        self.dir = self.tmp.name
        self.root = os.path.join(self.dir, "root")
        self.bin = os.path.join(self.dir, "bin")
        self.log = os.path.join(self.dir, "log")
        self.source_dir = source_dir
        os.makedirs(os.path.join(self.root, "usr/sbin"))
        os.makedirs(self.bin)
        for name, text in STUBS.items():
            path = os.path.join(self.bin, name)
            with open(path, "w") as f:
                f.write(text)
            os.chmod(path, 0o755)
        self.postinst = os.path.join(self.dir, "postinst")
        with open(self.postinst, "w") as f:
            f.write(POSTINST)
        for rel, target in BEFORE.items():
            path = os.path.join(self.root, rel)
            os.makedirs(os.path.dirname(path), exist_ok=True)
            os.symlink(target, path)
        self.policy = os.path.join(self.root, "usr/sbin/policy-rc.d")
        self.own_policy = own_policy
        if own_policy is not None:
            with open(self.policy, "w") as f:
                f.write(own_policy)
            os.chmod(self.policy, 0o755)

    def run(self, argv, postinst=True, apt_exit=0, cwd=None, all_installed=False, provides=""):
        env = {
            "PATH": self.bin + ":/usr/bin:/bin",
            "HOME": self.dir,
            "EDGEMON_DEPS_ROOT": self.root,
            "STUB_LOG": self.log,
            "STUB_POSTINST": self.postinst if postinst else "",
            "STUB_APT_EXIT": str(apt_exit),
            "STUB_ALL_INSTALLED": "1" if all_installed else "",
            "STUB_PROVIDES": provides,
        }
        open(self.log, "w").close()
        if not os.path.exists(argv[0]):
            expect(False, f"{argv[0]} does not exist")
            return subprocess.CompletedProcess(argv, 127, "", ""), []
        p = subprocess.run(argv, cwd=cwd or self.source_dir, env=env, stdin=subprocess.DEVNULL,
                           capture_output=True, text=True, timeout=60)
        with open(self.log) as f:
            calls = f.read().splitlines()
        return p, calls

    def links(self):
        out = {}
        for d, _, files in os.walk(os.path.join(self.root, "etc")):
            for name in files:
                path = os.path.join(d, name)
                if os.path.islink(path):
                    out[os.path.relpath(path, self.root)] = os.readlink(path)
        return out


def listed(source_dir, *args):
    p, calls = Scratch(source_dir, own_policy=None).run(
        [os.path.join(source_dir, "scripts/install-deps.sh"), "--list", *args])
    expect(p.returncode == 0 and not calls, f"install-deps.sh --list {' '.join(args)}: exit "
                                            f"{p.returncode}, ran {calls}")
    return p.stdout.split()


def installed(calls):
    """The packages of the one `apt-get install` call (None if none or several)."""
    installs = [c.split()[2:] for c in calls if c.startswith("apt-get install ")]
    if len(installs) != 1:
        return None
    return installs[0]


def check_lists(source_dir):
    build = listed(source_dir, "--build")
    full = listed(source_dir)
    expect(len(build) > 10 and len(full) > len(build), f"lists: build {build}, full {full}")
    expect(set(build) <= set(full), f"build list not within the whole list: {set(build) - set(full)}")
    tools = {"prometheus", "prometheus-node-exporter", "podman", "runc", "binfmt-support",
             "qemu-user-static", "debootstrap", "systemd", "libgtest-dev", "libbenchmark-dev",
             "clang", "tmux", "faketime", "python3-pytest", "man-db", "chromium"}
    expect(not set(build) & tools, f"test tools in the build list: {set(build) & tools}")
    expect(tools <= set(full), f"test tools missing from the whole list: {tools - set(full)}")
    # Where dpkg knows a build package, it must ship no service of any kind.
    for pkg in build:
        p = subprocess.run(["dpkg-query", "-L", pkg], capture_output=True, text=True)
        if p.returncode != 0:
            continue
        services = [f for f in p.stdout.split("\n")
                    if f.startswith("/etc/init.d/") or
                    ("/systemd/system/" in f and f.endswith((".service", ".socket", ".timer")))]
        expect(not services, f"build package {pkg} ships services: {services}")
    return build, full


def scripts_copy(source_dir, into, cache):
    """A checkout of the scripts alone, with build/CMakeCache.txt if `cache`."""
    os.makedirs(os.path.join(into, "scripts"))
    for name in ("install-deps.sh", "quickstart.sh", "test.sh"):
        src = os.path.join(source_dir, "scripts", name)
        if os.path.exists(src):
            shutil.copy2(src, os.path.join(into, "scripts", name))
    if cache:
        os.makedirs(os.path.join(into, "build"))
        open(os.path.join(into, "build/CMakeCache.txt"), "w").close()
    return into


def check_quickstart(source_dir, build, cache):
    s = Scratch(source_dir, own_policy=None)
    src = scripts_copy(source_dir, os.path.join(s.dir, "src"), cache)
    what = "(build/ there)" if cache else "(no build/)"
    p, calls = s.run([os.path.join(src, "scripts/quickstart.sh")], postinst=False, cwd=src)
    got = installed(calls)
    expect(got is not None, f"quickstart.sh: not one apt-get install {what}: {calls}")
    if got is not None:
        expect("--no-install-recommends" in got, f"quickstart.sh installs recommends: {got}")
        pkgs = [a for a in got if not a.startswith("-")]
        expect(sorted(pkgs) == sorted(build),
               f"quickstart.sh installs {sorted(pkgs)}, not the build list {sorted(build)}")
    expect(not any(c.startswith("sudo") for c in calls), f"sudo was called: {calls}")
    configure = [c.split() for c in calls if c.startswith("cmake -S")]
    expect(len(configure) == 1, f"quickstart.sh configures {len(configure)} times {what}")
    if len(configure) == 1:
        args = configure[0]
        expect(not any(a.startswith(("-DEDGEMON_REQUIRE_ALL_TESTS", "-DEDGEMON_BUILD_TESTS=ON",
                                     "-DEDGEMON_BUILD_BENCH=ON")) for a in args),
               f"quickstart.sh configures the tests: {args}")
        fresh = ["-DCMAKE_BUILD_TYPE=Release", "-DEDGEMON_BUILD_TESTS=OFF",
                 "-DEDGEMON_BUILD_BENCH=OFF"]
        if cache:
            expect(not any(a.startswith("-DCMAKE_BUILD_TYPE") for a in args),
                   f"quickstart.sh changes the build type of an existing build/: {args}")
        else:
            expect(all(a in args for a in fresh),
                   f"quickstart.sh configures a new build/ with {args}, not {fresh}")
    builds = [c.split() for c in calls if c.startswith("cmake --build")]
    expect(len(builds) == 1, f"quickstart.sh builds {len(builds)} times {what}: {calls}")
    if len(builds) == 1:
        targets = builds[0][builds[0].index("--target") + 1:] if "--target" in builds[0] else []
        expect(sorted(targets) == sorted(["edgemond", "edgemon", "edgetop", "edgemon-sim",
                                          "edgemon-probe", "edgemon_python"]),
               f"quickstart.sh builds {targets or 'everything'}, not the programs alone")
    expect(not any(c.startswith("ctest") for c in calls), f"quickstart.sh runs tests: {calls}")


def check_test_sh(source_dir, full):
    s = Scratch(source_dir, own_policy=None)
    src = scripts_copy(source_dir, os.path.join(s.dir, "src"), cache=True)
    p, calls = s.run([os.path.join(src, "scripts/test.sh")], postinst=False, cwd=src)
    expect(p.returncode == 0, f"test.sh exit {p.returncode}: {p.stderr}")
    got = installed(calls)
    pkgs = [a for a in got or [] if not a.startswith("-")]
    expect(sorted(pkgs) == sorted(full),
           f"test.sh installs {sorted(pkgs)}, not the whole list {sorted(full)}")
    configure = [c.split() for c in calls if c.startswith("cmake -S")]
    want = ["-DCMAKE_BUILD_TYPE=RelWithDebInfo", "-DEDGEMON_BUILD_TESTS=ON",
            "-DEDGEMON_BUILD_BENCH=ON", "-DEDGEMON_REQUIRE_ALL_TESTS=ON"]
    expect(len(configure) == 1 and all(a in configure[0] for a in want),
           f"test.sh configures with {configure}, not {want}")
    builds = [c.split() for c in calls if c.startswith("cmake --build")]
    expect(len(builds) == 1 and "--target" not in builds[0], f"test.sh builds {builds}")
    ctest = [c.split() for c in calls if c.startswith("ctest")]
    want = ["--test-dir", "build", "--output-on-failure", "-j2", "--repeat", "until-pass:2"]
    expect(len(ctest) == 1 and ctest[0][1:] == want, f"test.sh runs {ctest}, not ctest {want}")


def check_no_install(source_dir):
    """--no-install: the scripts build (and test) without the install step, so
    an ordinary user runs them where the packages are there; no sudo, no apt-get."""
    for script, extra in (("quickstart.sh", ["--sim", "orin-nano"]), ("test.sh", [])):
        s = Scratch(source_dir, own_policy=None)
        src = scripts_copy(source_dir, os.path.join(s.dir, "src"), cache=True)
        os.makedirs(os.path.join(src, "tests/fixtures/orin-nano"))
        for args in (["--no-install"] + extra, extra + ["--no-install"]):
            if script == "test.sh" and args[0] != "--no-install":
                continue  # test.sh takes it first; the rest goes to ctest
            p, calls = s.run([os.path.join(src, "scripts", script)] + args, postinst=False,
                             cwd=src)
            expect(not any(c.startswith(("apt-get", "sudo")) for c in calls),
                   f"{script} {' '.join(args)} installs: {calls}")
            expect(any(c.startswith("cmake --build") for c in calls),
                   f"{script} {' '.join(args)} builds nothing: {calls} {p.stderr[-300:]}")


def check_services(source_dir, own_policy, apt_exit, killed_before=False):
    what = (f"(own policy-rc.d: {own_policy is not None}, apt-get exit {apt_exit}, "
            f"a run killed before: {killed_before})")
    s = Scratch(source_dir, own_policy)
    if killed_before:  # its policy in place, the machine's own aside
        os.rename(s.policy, s.policy + ".edgemon-saved")
        with open(s.policy, "w") as f:
            f.write("#!/bin/sh\n# scripts/install-deps.sh of edgemon, while apt-get installs\n"
                    "exit 101\n")
    p, calls = s.run([os.path.join(source_dir, "scripts/install-deps.sh")], apt_exit=apt_exit)
    expect((p.returncode == 0) == (apt_exit == 0), f"install-deps exit {p.returncode} {what}")
    expect("policy-rc.d start: 101" in calls,
           f"policy-rc.d did not refuse the start during the install {what}: {calls}")
    links = s.links()
    for rel, target in BEFORE.items():
        expect(links.get(rel) == target, f"{rel} (there before) changed: {links.get(rel)} {what}")
    for rel in ("etc/systemd/system/multi-user.target.wants/prometheus.service",
                "etc/systemd/system/sockets.target.wants/podman.socket",
                "etc/systemd/system/timers.target.wants/podman-auto-update.timer",
                "etc/systemd/user/sockets.target.wants/podman.socket"):
        expect(rel not in links, f"{rel} is still enabled {what}")
    for level in "2345":
        expect(f"etc/rc{level}.d/S01prometheus" not in links,
               f"rc{level}.d/S01prometheus still starts it {what}")
        expect(links.get(f"etc/rc{level}.d/K01prometheus") == "../init.d/prometheus",
               f"rc{level}.d/K01prometheus missing: update-rc.d defaults would enable it again {what}")
    for level in "016":
        expect(f"etc/rc{level}.d/K01prometheus" in links, f"rc{level}.d/K01prometheus removed {what}")
    expect(links.get("etc/systemd/system/prometheus-old.service") == "/dev/null",
           f"a package's mask was undone {what}")
    enabled = [rel for rel in links if rel not in BEFORE and
               (".wants/" in rel or os.path.basename(rel).startswith("S"))]
    expect(not enabled, f"enabled after the install: {enabled} {what}")
    for name in ("prometheus.service", "podman.socket", "podman-auto-update.timer", "prometheus"):
        expect(name in p.stdout, f"install-deps does not say it left {name} disabled {what}: "
                                 f"{p.stdout}")
    if own_policy is None:
        expect(not os.path.lexists(s.policy), f"policy-rc.d left behind {what}")
    else:
        with open(s.policy) as f:
            expect(f.read() == own_policy, f"the machine's policy-rc.d was not put back {what}")
    expect(not os.path.lexists(s.policy + ".edgemon-saved"), f"saved policy-rc.d left {what}")


def check_provided(source_dir):
    """A name an installed package provides is not asked of apt-get: NodeSource's
    nodejs provides npm and conflicts with Debian's, so `apt-get install npm`
    fails there. A package removed but not purged ("rc") provides nothing."""
    s = Scratch(source_dir, own_policy=None)
    provides = ("ii |nodejs-dev, nodejs-doc, nodejs-legacy, npm\n"  # nodejs
                "rc |curl (= 1.0)\n"
                "ii |awk\n")
    p, calls = s.run([os.path.join(source_dir, "scripts/install-deps.sh"), "npm", "curl", "tmux"],
                     postinst=False, provides=provides)
    got = installed(calls)
    pkgs = sorted(a for a in got or [] if not a.startswith("-"))
    expect(p.returncode == 0 and pkgs == ["curl", "tmux"],
           f"with npm provided by nodejs: exit {p.returncode}, installs {pkgs}, not curl and tmux")
    p, calls = s.run([os.path.join(source_dir, "scripts/install-deps.sh"), "npm", "awk"],
                     postinst=False, provides=provides)
    expect(p.returncode == 0 and installed(calls) is None and "already installed" in p.stdout,
           f"everything provided, yet: exit {p.returncode}, {calls}, {p.stdout}")


def check_killed_run_with_nothing_to_install(source_dir):
    own = "#!/bin/sh\n# the owner's\nexit 0\n"
    s = Scratch(source_dir, own_policy=own)
    os.rename(s.policy, s.policy + ".edgemon-saved")
    with open(s.policy, "w") as f:
        f.write("#!/bin/sh\n# scripts/install-deps.sh of edgemon, while apt-get installs\nexit 101\n")
    p, calls = s.run([os.path.join(source_dir, "scripts/install-deps.sh")], all_installed=True)
    expect(p.returncode == 0 and not calls, f"nothing to install, yet: exit {p.returncode}, {calls}")
    with open(s.policy) as f:
        expect(f.read() == own, "a killed run's policy-rc.d stays when there is nothing to install")
    expect(not os.path.lexists(s.policy + ".edgemon-saved"), "saved policy-rc.d left")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--source-dir", required=True)
    a = ap.parse_args()
    build, full = check_lists(a.source_dir)
    check_quickstart(a.source_dir, build, cache=False)
    check_quickstart(a.source_dir, build, cache=True)
    check_test_sh(a.source_dir, full)
    check_no_install(a.source_dir)
    check_services(a.source_dir, own_policy=None, apt_exit=0)
    check_services(a.source_dir, own_policy="#!/bin/sh\n# the owner's\nexit 0\n", apt_exit=0)
    check_services(a.source_dir, own_policy=None, apt_exit=100)
    check_services(a.source_dir, own_policy="#!/bin/sh\nexit 0\n", apt_exit=0, killed_before=True)
    check_killed_run_with_nothing_to_install(a.source_dir)
    check_provided(a.source_dir)
    if FAILURES:
        print(f"deps_test: {len(FAILURES)} failures")
        return 1
    print("deps_test: ok")
    return 0


if __name__ == "__main__":
    sys.exit(main())
