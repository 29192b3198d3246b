#!/usr/bin/python3
"""The release bundle's install.sh / uninstall.sh against a root holding other
software's files (see installer.cmake).

  installer_attack.py --source-dir REPO

Each check makes a scratch root with mktemp (never /) holding files of others
(a C library, pip's site-packages, /usr/local/bin and /usr/local/share files,
docs, man pages, a terminfo entry, groups), assembles a bundle with the layout
scripts/build-release.sh gives (stand-in programs), runs the scripts with
--root and asserts: others' files byte for byte, what was installed (both
units, sysusers.d and tmpfiles.d entries, groups, edgemon-control not
enabled), and that uninstall (--purge) leaves the root as it was.
"""
import argparse
import gzip
import hashlib
import os
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "e2e"))
from harness import Checks, expect  # noqa: E402

ARGS = None
PROGRAMS = ["edgemond", "edgemon-control", "edgemon", "edgetop", "edgemon-probe", "edgemon-sim"]
GROUPS = ["edgemon", "edgemon-control"]
# Files of others in every scratch root (path inside the root: content).
OTHERS = {
    "usr/lib/x86_64-linux-gnu/libc.so.6": b"\x7fELF fake C library\n",
    "usr/lib/python3/dist-packages/other.py": b"# another package\n",
    "usr/share/doc/other/copyright": b"other's copyright\n",
    "usr/share/man/man1/ls.1.gz": b"not really gzip\n",
    "usr/share/terminfo/x/xterm": b"the system's xterm entry\n",
    "usr/share/locale/C.UTF-8/LC_CTYPE": b"the system's locale\n",
    "usr/bin/ls": b"#!/bin/sh\necho ls\n",
    "usr/local/lib/python3.11/dist-packages/foo.py": b"# pip's package\n",
    "usr/local/bin/otherprog": b"#!/bin/sh\necho other\n",
    "usr/local/share/x": b"someone's data\n",
    "usr/local/share/man/man1/other.1": b".TH OTHER 1\n",
    "opt/other/file": b"another /opt program\n",
    "etc/systemd/system/other.service": b"[Service]\nExecStart=/usr/bin/ls\n",
    "etc/tmpfiles.d/other.conf": b"d /run/other 0755 root root -\n",
    "var/lib/other/db": b"someone's database\n",
    "etc/passwd": b"root:x:0:0:root:/root:/bin/sh\nalice:x:1000:1000::/home/alice:/bin/sh\n",
    "etc/group": b"root:x:0:\nusers:x:100:alice\nalice:x:1000:\n",
    "etc/gshadow": b"root:*::\nusers:*::alice\nalice:!::\n",
}
EMPTY_DIRS = ["run", "tmp", "etc/sysusers.d"]
# Backups the group tools (systemd-sysusers, groupadd) keep beside what they change.
TOOL_BACKUPS = {"etc/group-", "etc/gshadow-", "etc/passwd-", "etc/shadow-", "etc/.pwd.lock"}


def sha(path):
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


def snapshot(root):
    """Every entry of the tree: kind, mode and content (or link target)."""
    out = {}
    for dirpath, dirs, files in os.walk(root):
        for name in dirs + files:
            p = os.path.join(dirpath, name)
            rel = os.path.relpath(p, root)
            st = os.lstat(p)
            if os.path.islink(p):
                out[rel] = ("l", os.readlink(p))
            elif os.path.isdir(p):
                out[rel] = ("d", oct(st.st_mode), st.st_uid, st.st_gid)
            else:
                out[rel] = ("f", oct(st.st_mode), st.st_uid, st.st_gid, sha(p))
    return out


def make_root():
    root = tempfile.mkdtemp(prefix="edgemon-installer-root-")
    expect(root != "/" and root.startswith(tempfile.gettempdir()), f"scratch root {root}")
    for rel, data in OTHERS.items():
        p = os.path.join(root, rel)
        os.makedirs(os.path.dirname(p), exist_ok=True)
        with open(p, "wb") as f:
            f.write(data)
        os.chmod(p, 0o755 if data.startswith(b"#!") else 0o644)
    os.chmod(os.path.join(root, "etc/gshadow"), 0o640)
    for d in EMPTY_DIRS:
        os.makedirs(os.path.join(root, d), exist_ok=True)
    return root


def make_bundle(version="0.1.0", drop=(), extra=()):
    """A bundle directory as scripts/build-release.sh lays it out."""
    src = ARGS.source_dir
    top = tempfile.mkdtemp(prefix="edgemon-installer-bundle-")
    b = os.path.join(top, f"edgemon-{version}-linux-x86_64")

    def put(rel, data, mode=0o644):
        if rel in drop:
            return
        p = os.path.join(b, rel)
        os.makedirs(os.path.dirname(p), exist_ok=True)
        with open(p, "wb") as f:
            f.write(data)
        os.chmod(p, mode)

    def read(rel):
        with open(os.path.join(src, rel), "rb") as f:
            return f.read()

    for p in PROGRAMS:
        put(f"bin/{p}", f"#!/bin/sh\necho '{p} {version}'\n".encode(), 0o755)
    put("VERSION", f"{version}\n".encode())
    put("etc/edgemond.toml", read("packaging/edgemond.toml"))
    for unit, prog in (("edgemond.service", "edgemond"), ("edgemon-control.service", "edgemon-control")):
        text = read(f"packaging/systemd/{unit}").replace(f"ExecStart=/usr/bin/{prog} ".encode(),
                                                         f"ExecStart=/opt/edgemon/bin/{prog} ".encode())
        put(f"lib/systemd/system/{unit}", text)
    for kind in ("sysusers.d", "tmpfiles.d"):
        for g in GROUPS:
            put(f"lib/{kind}/{g}.conf", read(f"packaging/{kind}/{g}.conf"))
    put("lib/python3/dist-packages/edgemon/__init__.py", b"VERSION = '%s'\n" % version.encode())
    put("lib/python3/dist-packages/jtop/__init__.py", b"from edgemon import VERSION\n")
    for page in ("edgemond.8", "edgemon.1", "edgetop.1", "edgemon-probe.1"):
        put(f"share/man/man{page[-1]}/{page}.gz", gzip.compress(read(f"packaging/man/{page}"), mtime=0))
    put("share/doc/edgemon/examples/edgemond-nvml.conf", read("packaging/systemd/edgemond-nvml.conf"))
    put("share/edgemon/fixtures/agx-orin/sys/class/thermal/thermal_zone0/temp", b"42000\n")
    put("share/edgemon/fixtures/agx-orin/sys/old-in-0.1.0", b"dropped by the next version\n")
    put("share/edgemon/board_tools/nvpmodel", b"#!/bin/sh\n", 0o755)
    put("share/terminfo/x/xterm", b"the bundle's xterm entry\n")
    put("share/locale/C.UTF-8/LC_CTYPE", b"the bundle's locale\n")
    for rel in extra:
        put(rel, b"new in " + version.encode() + b"\n")
    for script in ("install.sh", "uninstall.sh"):
        put(script, read(f"packaging/release/{script}"), 0o755)
    put("install-common.sh", read("packaging/release/install-common.sh"))
    return b


def sh(*cmd):
    r = subprocess.run(list(cmd), capture_output=True, text=True, timeout=120,
                       env={"PATH": "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
                            "LANG": "C.UTF-8"})
    return r


def run_ok(*cmd):
    r = sh(*cmd)
    expect(r.returncode == 0, f"{' '.join(cmd)}: exit {r.returncode}\n{r.stdout}{r.stderr}")
    return r


def in_root(root, path, hops=20):
    """The host path a path inside the root leads to, following links inside the root."""
    parts = [p for p in path.split("/") if p]
    cur = root
    while parts:
        part = parts.pop(0)
        nxt = os.path.join(cur, part)
        if os.path.islink(nxt):
            expect(hops > 0, f"link loop at {path}")
            hops -= 1
            target = os.readlink(nxt)
            base = root if target.startswith("/") else cur
            parts = [p for p in target.split("/") if p] + parts
            cur = base
            continue
        if part == "..":
            cur = os.path.dirname(cur) if cur != root else root
            continue
        cur = nxt
    return cur


def others_intact(root, before, when):
    now = snapshot(root)
    bad = [f"{rel}: {'gone' if rel not in now else 'changed'}" for rel, v in before.items()
           if now.get(rel) != v and rel not in ("etc/group", "etc/gshadow")]
    expect(not bad, f"{when}: files of others touched: {bad[:12]}")
    # Group files: every line of others still there, unchanged.
    for f in ("etc/group", "etc/gshadow"):
        with open(os.path.join(root, f)) as fh:
            lines = fh.read().splitlines()
        for line in OTHERS[f].decode().splitlines():
            expect(line in lines, f"{when}: {f} lost {line!r}")
    return now


def left_behind(root, before):
    now = snapshot(root)
    extra = sorted(rel for rel in now if rel not in before and rel not in TOOL_BACKUPS)
    changed = sorted(rel for rel in before if rel in now and now[rel] != before[rel])
    return extra, changed


def groups_in(root):
    out = {}
    for f in ("etc/group", "etc/gshadow"):
        with open(os.path.join(root, f)) as fh:
            out[f] = {line.split(":")[0] for line in fh if line.strip()}
    return out


def check_installed(root, prog_dir, version="0.1.0"):
    """Programs, both units (ExecStart at an installed program), sysusers.d,
    tmpfiles.d, groups; edgemon-control not enabled."""
    for p in PROGRAMS:
        path = in_root(root, f"{prog_dir}/{p}")
        expect(os.path.isfile(path) and os.access(path, os.X_OK), f"{prog_dir}/{p} not installed")
        with open(path) as f:
            expect(f"{p} {version}" in f.read(), f"{prog_dir}/{p} is not version {version}")
    for unit, prog in (("edgemond.service", "edgemond"), ("edgemon-control.service", "edgemon-control")):
        u = os.path.join(root, "etc/systemd/system", unit)
        expect(os.path.isfile(u), f"no /etc/systemd/system/{unit}")
        with open(u) as f:
            execs = [line.split("=", 1)[1].split()[0] for line in f if line.startswith("ExecStart=")]
        expect(len(execs) == 1 and execs[0].endswith("/" + prog), f"{unit}: ExecStart {execs}")
        target = in_root(root, execs[0])
        expect(os.path.isfile(target) and os.access(target, os.X_OK), f"{unit}: {execs[0]} not installed")
        with open(target) as f:
            expect(f"{prog} {version}" in f.read(), f"{unit}: {execs[0]} is not the installed {prog}")
    for kind in ("sysusers.d", "tmpfiles.d"):
        for g in GROUPS:
            p = os.path.join(root, "etc", kind, f"{g}.conf")
            expect(os.path.isfile(p), f"no /etc/{kind}/{g}.conf")
            expect(sha(p) == sha(os.path.join(ARGS.source_dir, "packaging", kind, f"{g}.conf")),
                   f"/etc/{kind}/{g}.conf differs from the packaged one")
    g = groups_in(root)
    for name in GROUPS:
        expect(name in g["etc/group"], f"group {name} not in the root's /etc/group")
    for dirpath, _, files in os.walk(os.path.join(root, "etc/systemd")):
        expect("edgemon-control.service" not in files or dirpath.endswith("etc/systemd/system"),
               f"edgemon-control enabled ({dirpath}): it is opt-in")
    man = in_root(root, f"{os.path.dirname(prog_dir)}/share/man/man1/edgemon.1.gz")
    expect(os.path.isfile(man), "man page edgemon.1.gz not reachable beside the programs")


def check_removed(root, before, purge, when):
    extra, changed = left_behind(root, before)
    changed = [c for c in changed if c not in ("etc/group", "etc/gshadow")]
    expect(not changed, f"{when}: changed files of others: {changed}")
    g = groups_in(root)
    if purge:
        expect(not extra, f"{when}: left behind: {extra[:20]}")
        for f in ("etc/group", "etc/gshadow"):
            for name in GROUPS:
                expect(name not in g[f], f"{when}: group {name} still in the root's /{f}")
            with open(os.path.join(root, f), "rb") as fh:
                expect(fh.read() == OTHERS[f], f"{when}: /{f} is not as it was")
    else:
        kept = [e for e in extra if not (e.startswith("var/lib/edgemon") or e.startswith("etc/edgemon")
                                         or e in ("var/lib", "etc"))]
        expect(not kept, f"{when}: uninstall left more than the history and the configuration: {kept[:20]}")
        expect(os.path.isdir(os.path.join(root, "var/lib/edgemon")), f"{when}: uninstall removed the history")
        expect(os.path.isfile(os.path.join(root, "etc/edgemon/edgemond.toml")),
               f"{when}: uninstall removed the configuration")
        for name in GROUPS:
            expect(name in g["etc/group"], f"{when}: uninstall (no --purge) removed group {name}")


def installed_script(root, before, name):
    """The installed copy of NAME (wherever the layout puts it)."""
    hits = [rel for rel in snapshot(root) if os.path.basename(rel) == name and rel not in before]
    expect(len(hits) == 1, f"installed {name}: {hits}")
    return os.path.join(root, hits[0])


def scenario_usr():
    """--prefix /usr: install, upgrade (a file dropped, one added), uninstall, --purge."""
    root, b1 = make_root(), make_bundle()
    b2 = make_bundle("0.1.1", drop=("share/edgemon/fixtures/agx-orin/sys/old-in-0.1.0",),
                     extra=("share/edgemon/new-in-0.1.1",))
    try:
        before = snapshot(root)
        run_ok(f"{b1}/install.sh", "--root", root, "--prefix", "/usr")
        others_intact(root, before, "install --prefix /usr")
        check_installed(root, "/usr/bin")
        run_ok(f"{b2}/install.sh", "--root", root, "--prefix", "/usr")
        now = others_intact(root, before, "upgrade --prefix /usr")
        check_installed(root, "/usr/bin", "0.1.1")
        names = {os.path.basename(rel) for rel in now}
        expect("old-in-0.1.0" not in names, "the upgrade kept a file the new version dropped")
        expect("new-in-0.1.1" in names, "the upgrade did not install the new version's new file")
        run_ok(f"{b2}/uninstall.sh", "--root", root, "--prefix", "/usr")
        check_removed(root, before, False, "uninstall --prefix /usr")
        run_ok(f"{b2}/uninstall.sh", "--root", root, "--prefix", "/usr")  # again: nothing more
        check_removed(root, before, False, "uninstall --prefix /usr, twice")
        run_ok(f"{b2}/uninstall.sh", "--root", root, "--prefix", "/usr", "--purge")
        check_removed(root, before, True, "uninstall --prefix /usr --purge")
    finally:
        for d in (root, os.path.dirname(b1), os.path.dirname(b2)):
            shutil.rmtree(d, ignore_errors=True)


def scenario_usr_local():
    """--prefix /usr/local: install, then the installed uninstall.sh --purge."""
    root, b = make_root(), make_bundle()
    try:
        before = snapshot(root)
        run_ok(f"{b}/install.sh", "--root", root, "--prefix", "/usr/local")
        others_intact(root, before, "install --prefix /usr/local")
        check_installed(root, "/usr/local/bin")
        run_ok(f"{b}/install.sh", "--root", root, "--prefix", "/usr/local")
        others_intact(root, before, "reinstall --prefix /usr/local")
        run_ok(installed_script(root, before, "uninstall.sh"), "--root", root, "--purge")
        check_removed(root, before, True, "installed uninstall.sh --purge (/usr/local)")
    finally:
        shutil.rmtree(root, ignore_errors=True)
        shutil.rmtree(os.path.dirname(b), ignore_errors=True)


def scenario_default():
    """Default /opt/edgemon, twice; a file of the user's inside it survives --purge."""
    root, b = make_root(), make_bundle()
    try:
        before = snapshot(root)
        for attempt in (1, 2):
            run_ok(f"{b}/install.sh", "--root", root)
            others_intact(root, before, f"install (default prefix), run {attempt}")
            check_installed(root, "/usr/local/bin")
            check_installed(root, "/opt/edgemon/bin")
        mine = os.path.join(root, "opt/edgemon/share/mine.txt")
        with open(mine, "wb") as f:
            f.write(b"the user's notes\n")
        run_ok(installed_script(root, before, "uninstall.sh"), "--root", root)
        users = ("opt/edgemon", "opt/edgemon/share", "opt/edgemon/share/mine.txt")
        check_removed(root, dict(before, **{rel: v for rel, v in snapshot(root).items() if rel in users}),
                      False, "uninstall (default prefix)")
        run_ok(f"{b}/uninstall.sh", "--root", root, "--purge")
        expect(os.path.isfile(mine), "uninstall removed a file it did not install (opt/edgemon/share/mine.txt)")
        os.remove(mine)
        os.rmdir(os.path.dirname(mine))
        os.rmdir(os.path.dirname(os.path.dirname(mine)))
        check_removed(root, before, True, "uninstall --purge (default prefix)")
    finally:
        shutil.rmtree(root, ignore_errors=True)
        shutil.rmtree(os.path.dirname(b), ignore_errors=True)


def scenario_legacy():
    """An installation by an install.sh that kept no manifest (the whole bundle
    in /opt/edgemon, links, unit, group): upgraded, then removed with --purge."""
    root, b = make_root(), make_bundle()
    try:
        before = snapshot(root)
        shutil.copytree(b, os.path.join(root, "opt/edgemon"), symlinks=True)
        for p in PROGRAMS:
            os.makedirs(os.path.join(root, "usr/local/bin"), exist_ok=True)
            os.symlink(f"/opt/edgemon/bin/{p}", os.path.join(root, "usr/local/bin", p))
        os.symlink("/opt/edgemon/share/man/man1/edgemon.1.gz", os.path.join(root, "usr/local/share/man/man1/edgemon.1.gz"))
        for rel, src in (("etc/systemd/system/edgemond.service", "lib/systemd/system/edgemond.service"),
                         ("etc/sysusers.d/edgemon.conf", "lib/sysusers.d/edgemon.conf"),
                         ("etc/tmpfiles.d/edgemon.conf", "lib/tmpfiles.d/edgemon.conf"),
                         ("etc/edgemon/edgemond.toml", "etc/edgemond.toml")):
            os.makedirs(os.path.dirname(os.path.join(root, rel)), exist_ok=True)
            shutil.copy(os.path.join(b, src), os.path.join(root, rel))
        os.makedirs(os.path.join(root, "var/lib/edgemon"))
        for f, line in (("etc/group", "edgemon:x:999:\n"), ("etc/gshadow", "edgemon:!::\n")):
            with open(os.path.join(root, f), "a") as fh:
                fh.write(line)
        run_ok(f"{b}/install.sh", "--root", root)
        others_intact(root, before, "upgrade of an installation without a manifest")
        check_installed(root, "/opt/edgemon/bin")
        run_ok(f"{b}/uninstall.sh", "--root", root, "--purge")
        check_removed(root, before, True, "uninstall --purge after upgrading an installation without a manifest")
    finally:
        shutil.rmtree(root, ignore_errors=True)
        shutil.rmtree(os.path.dirname(b), ignore_errors=True)


def scenario_refused():
    """System directories as the prefix, and a program name another package owns."""
    root, b = make_root(), make_bundle()
    try:
        before = snapshot(root)
        for prefix in ("/", "/etc", "/var", "/opt", "/usr/lib", "/usr/share", "/usr/local/lib", "/usr/local/bin",
                       "/usr/../usr/lib", "/var/lib/other", "relative"):
            r = sh(f"{b}/install.sh", "--root", root, "--prefix", prefix)
            expect(r.returncode != 0 and "install.sh:" in r.stderr,
                   f"install --prefix {prefix}: exit {r.returncode}, {r.stdout}{r.stderr}")
            extra, changed = left_behind(root, before)
            expect(not extra and not changed, f"install --prefix {prefix} (refused) changed {extra + changed}")
        theirs = os.path.join(root, "usr/local/bin/edgemon")
        with open(theirs, "wb") as f:
            f.write(b"#!/bin/sh\necho another edgemon\n")
        before = snapshot(root)
        for args in (("--prefix", "/usr/local"), ()):
            r = sh(f"{b}/install.sh", "--root", root, *args)
            expect(r.returncode != 0 and "usr/local/bin/edgemon" in r.stderr,
                   f"install {args} over another package's /usr/local/bin/edgemon: {r.returncode} {r.stderr}")
            extra, changed = left_behind(root, before)
            expect(not extra and not changed, f"install {args} (refused) changed {extra + changed}")
        # Uninstall where nothing is installed: nothing happens.
        for args in (("--prefix", "/usr"), ("--prefix", "/usr/local"), ("--purge",)):
            r = sh(f"{b}/uninstall.sh", "--root", root, *args)
            extra, changed = left_behind(root, before)
            expect(not extra and not changed, f"uninstall {args} with nothing installed changed {extra + changed}")
    finally:
        shutil.rmtree(root, ignore_errors=True)
        shutil.rmtree(os.path.dirname(b), ignore_errors=True)


def processes(*cmd):
    """Runs cmd in a new PID namespace: (its result, how many processes it started).
    PIDs there are handed out one by one from 1, so the last one taken counts them."""
    r = sh("unshare", "--pid", "--fork", "--mount-proc", "sh", "-c",
           '"$@" >/dev/null 2>&1; rc=$?; sh -c \'echo "$$"\'; exit $rc', "sh", *cmd)
    expect(r.stdout.strip().isdigit(), f"unshare {' '.join(cmd)}: {r.returncode} {r.stdout}{r.stderr}")
    return r, int(r.stdout.strip())


def scenario_scale():
    """The processes install, reinstall and uninstall start do not grow with the
    bundle's size (a real bundle holds over 3,000 fixture files and links; one
    process per file took over two minutes under qemu in an arm64 root)."""
    counts = {}
    for n in (20, 2000):
        root = make_root()
        b = make_bundle(extra=[f"share/edgemon/fixtures/many/d{i // 10}/f{i % 10}" for i in range(n)])
        try:
            for i in range(0, n, 7):  # links as the fixtures have them (cpufreq policies)
                os.symlink(f"d{i // 10}/f{i % 10}", os.path.join(b, "share/edgemon/fixtures/many", f"link{i}"))
            before = snapshot(root)
            for step, cmd in (("install", [f"{b}/install.sh", "--root", root]),
                              ("reinstall", [f"{b}/install.sh", "--root", root]),
                              ("uninstall --purge", [f"{b}/uninstall.sh", "--root", root, "--purge"])):
                r, count = processes(*cmd)
                expect(r.returncode == 0, f"{step} with {n} extra files: exit {r.returncode}")
                counts[(step, n)] = count
                if step == "install":
                    made = os.path.join(root, "opt/edgemon/share/edgemon/fixtures/many")
                    expect(os.path.islink(os.path.join(made, "link7")) and
                           open(os.path.join(made, f"d{(n - 1) // 10}/f{(n - 1) % 10}")).read().startswith("new in"),
                           f"install with {n} extra files: the files or links are not there")
            check_removed(root, before, True, f"uninstall --purge of a bundle with {n} extra files")
        finally:
            shutil.rmtree(root, ignore_errors=True)
            shutil.rmtree(os.path.dirname(b), ignore_errors=True)
    for step in ("install", "reinstall", "uninstall --purge"):
        small, big = counts[(step, 20)], counts[(step, 2000)]
        print(f"    {step}: {small} processes with 20 extra files, {big} with 2000")
        expect(big - small < 60, f"{step}: {big} processes for 2000 extra files against {small} for 20")


MANIFEST = "var/lib/edgemon-install/manifest"


def scenario_edited_manifest():
    """A manifest edited after install to list files of others (each kind of
    entry, the file's true hash where it has one): uninstall --purge removes
    none of them and names each; a manifest others could write is not read."""
    root, b = make_root(), make_bundle()
    try:
        # Others' things the edits point at: the scratch root's own passwd
        # (never the host's), a directory of data, an empty directory, a link.
        os.makedirs(os.path.join(root, "var/lib/other/sub"), exist_ok=True)
        os.symlink("/usr/bin/ls", os.path.join(root, "usr/local/bin/ls-link"))
        before = snapshot(root)
        run_ok(f"{b}/install.sh", "--root", root)
        manifest = os.path.join(root, MANIFEST)
        edits = [("f", sha(os.path.join(root, "etc/passwd")), "/etc/passwd"),
                 ("f", sha(os.path.join(root, "usr/local/bin/otherprog")), "/usr/local/bin/otherprog"),
                 ("c", "-", "/etc/group"),
                 ("s", "-", "/var/lib/other"),
                 ("r", "-", "/usr/local/share"),
                 ("l", "/usr/bin/ls", "/usr/local/bin/ls-link"),
                 ("d", "-", "/tmp"),
                 ("d", "-", "/var/lib/other/sub"),
                 ("g", "-", "users")]
        with open(manifest, "a") as f:
            for e in edits:
                f.write("\t".join(e) + "\n")
        # Writable by others: refused before anything is removed.
        for target, mode in ((manifest, 0o666), (os.path.dirname(manifest), 0o777)):
            os.chmod(target, mode)
            r = sh(f"{b}/uninstall.sh", "--root", root, "--purge")
            expect(r.returncode != 0 and "only root may write the manifest" in r.stderr,
                   f"a manifest with mode {oct(mode)} on {target} was used: exit {r.returncode}\n"
                   f"{r.stdout}{r.stderr}")
            check_installed(root, "/opt/edgemon/bin")
            os.chmod(target, 0o644 if target == manifest else 0o755)
        r = run_ok(f"{b}/uninstall.sh", "--root", root, "--purge")
        for kind, _, path in edits:
            expect(f"left {path}: the manifest lists it as '{kind}'" in r.stderr,
                   f"the edited entry {kind} {path} was not reported:\n{r.stderr}")
        others_intact(root, before, "uninstall --purge with an edited manifest")
        for rel in ("tmp", "var/lib/other/sub", "usr/local/bin/ls-link"):
            expect(os.path.lexists(os.path.join(root, rel)), f"removed {rel}, which it did not install")
        expect("users" in groups_in(root)["etc/group"], "removed group users, which it did not create")
    finally:
        shutil.rmtree(root, ignore_errors=True)
        shutil.rmtree(os.path.dirname(b), ignore_errors=True)


def scenario_symlinked_directory():
    """After install, a directory of the installation replaced by a link to a
    copy of it elsewhere (the same files, the same hashes): uninstall --purge
    removes nothing through the link and names what it left."""
    root, b = make_root(), make_bundle()
    try:
        before = snapshot(root)
        run_ok(f"{b}/install.sh", "--root", root)
        share = os.path.join(root, "opt/edgemon/share")
        copy = os.path.join(root, "srv/copy")
        os.makedirs(os.path.dirname(copy), exist_ok=True)
        shutil.copytree(share, copy, symlinks=True)
        shutil.rmtree(share)
        os.symlink("../../srv/copy", share)
        copied = {rel: v for rel, v in snapshot(root).items() if rel.startswith("srv/")}
        expect(len(copied) > 5, f"the copy holds {len(copied)} entries")
        r = run_ok(f"{b}/uninstall.sh", "--root", root, "--purge")
        now = snapshot(root)
        gone = [rel for rel, v in copied.items() if now.get(rel) != v]
        expect(not gone, f"removed or changed through the link: {gone[:10]}")
        expect("/opt/edgemon/share/" in r.stderr and "is a link now (not followed)" in r.stderr,
               f"what was left behind the link was not reported:\n{r.stderr}")
        others_intact(root, before, "uninstall --purge through a linked directory")
    finally:
        shutil.rmtree(root, ignore_errors=True)
        shutil.rmtree(os.path.dirname(b), ignore_errors=True)


def main():
    global ARGS
    ap = argparse.ArgumentParser()
    ap.add_argument("--source-dir", required=True)
    ARGS = ap.parse_args()
    ARGS.source_dir = os.path.abspath(ARGS.source_dir)
    if os.geteuid() != 0:
        print("SKIP: install.sh runs as root only")
        return 77
    checks = Checks()
    checks.run("--prefix /usr: install, upgrade, uninstall, --purge", scenario_usr)
    checks.run("--prefix /usr/local: install twice, installed uninstall.sh --purge", scenario_usr_local)
    checks.run("default prefix: install twice, a user's file kept, --purge", scenario_default)
    checks.run("an installation without a manifest: upgraded, then --purge", scenario_legacy)
    checks.run("system directories and taken names refused; empty uninstall", scenario_refused)
    checks.run("processes do not grow with the bundle's size", scenario_scale)
    checks.run("an edited manifest removes nothing it did not install", scenario_edited_manifest)
    checks.run("nothing is removed through a directory replaced by a link", scenario_symlinked_directory)
    print(f"{checks.passed} passed, {len(checks.failed)} failed")
    return 1 if checks.failed else 0


if __name__ == "__main__":
    sys.exit(main())
