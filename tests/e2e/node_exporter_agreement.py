#!/usr/bin/env python3
"""Reads the same fixture trees with edgemon-probe and with Debian's
prometheus-node-exporter, and checks that both report the same temperatures,
voltages, fan speeds, CPU frequencies, RAPL energy and battery readings.

Every value node_exporter reports in these families must be found, equal
(after unit conversion), in edgemon's reading; each tree must yield checks.
"""
import argparse
import json
import os
import re
import subprocess
import sys
import time
import urllib.request
from harness import free_port  # noqa: E402 (shared by the e2e scripts)

TREES = [
    "node_exporter/node_exporter",
    "node_exporter/procfs",
    "x86-laptop",
    "agx-orin",
    "orin-nano",
    "xavier-nx",
    "agx-orin-r39",
    "agx-thor-r38",
]

LINE = re.compile(r'^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{(.*)\})?\s+(\S+)$')
LABEL = re.compile(r'(\w+)="((?:[^"\\]|\\.)*)"')


def scrape(node_exporter, root):
    port = free_port()
    cmd = [node_exporter, "--collector.disable-defaults", "--collector.hwmon",
           "--collector.thermal_zone", "--collector.cpufreq", "--collector.rapl",
           "--collector.powersupplyclass", f"--path.sysfs={root}/sys",
           f"--path.procfs={root}/proc", f"--path.rootfs={root}",
           f"--web.listen-address=127.0.0.1:{port}"]
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.time() + 15
        while True:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as r:
                    text = r.read().decode("utf-8", "replace")
                break
            except OSError:
                if time.time() > deadline or proc.poll() is not None:
                    raise RuntimeError(f"node_exporter did not serve on port {port}")
                time.sleep(0.1)
    finally:
        proc.terminate()
        proc.wait(timeout=10)
    samples = []
    for line in text.splitlines():
        if line.startswith("#"):
            continue
        m = LINE.match(line)
        if not m:
            continue
        labels = dict(LABEL.findall(m.group(3) or ""))
        samples.append((m.group(1), labels, float(m.group(4))))
    return samples


def probe(probe_bin, root):
    out = subprocess.run([probe_bin, "--root", root, "--json", "--warmup-ms", "0", "--nvml", "off"],
                         check=True, capture_output=True, text=True).stdout
    return json.loads(out)


class Checker:
    def __init__(self, tree):
        self.tree = tree
        self.checked = 0
        self.failures = []

    def equal(self, what, ours, theirs, tol):
        self.checked += 1
        if ours is None or abs(ours - theirs) > tol:
            self.failures.append(f"{self.tree}: {what}: edgemon {ours} vs node_exporter {theirs}")


def hwmon_groups(channels, kind, field, scale):
    """Our generic-hwmon and INA channels grouped by hwmon directory: {hwmonN: {sensor: value}}."""
    groups = {}
    for c in channels:
        a = c["attrs"]
        if c["kind"] != kind or c["field"] != field or "hwmon" not in a or "sensor" not in a:
            continue
        if c["value"] is not None:
            groups.setdefault(a["hwmon"], {})[a["sensor"]] = c["value"] * scale
    return groups


def check_tree(probe_bin, node_exporter, fixtures, tree):
    root = os.path.join(fixtures, tree)
    theirs = scrape(node_exporter, root)
    ours = probe(probe_bin, root)
    channels = ours["channels"]
    chk = Checker(tree)

    def ch(kind, name, field):
        for c in channels:
            if c["kind"] == kind and c["name"] == name and c["field"] == field:
                return c
        return None

    def val(kind, name, field):
        c = ch(kind, name, field)
        return None if c is None else c["value"]

    # Thermal zones: node_thermal_zone_temp{zone, type} in C.
    # A gated zone reads -256 C; node_exporter passes that on, edgemon
    # reports it as absent (missing is not a number).
    for name, lab, v in theirs:
        if name == "node_thermal_zone_temp":
            c = next((c for c in channels if c["kind"] == "thermal"
                      and c["device"] == "thermal_zone" + lab["zone"]), None)
            what = f"thermal_zone{lab['zone']} ({lab['type']})"
            if v == -256 and c is not None and c["value"] is None:
                chk.checked += 1
                continue
            chk.equal(what, None if c is None or c["value"] is None else c["value"] / 1000, v, 0.0005)

    # cpufreq: Hz vs kHz.
    fields = {"node_cpu_scaling_frequency_hertz": "freq",
              "node_cpu_scaling_frequency_min_hertz": "freq_min",
              "node_cpu_scaling_frequency_max_hertz": "freq_max"}
    for name, lab, v in theirs:
        if name in fields:
            ours_v = val("cpu", "cpu" + lab["cpu"], fields[name])
            chk.equal(f"cpu{lab['cpu']} {fields[name]}",
                      None if ours_v is None else ours_v * 1000, v, 0.5)

    # RAPL: node_rapl_<zone>_joules_total{path} vs our cumulative mJ (first read = energy_uj).
    for name, lab, v in theirs:
        m = re.match(r"node_rapl_(\w+)_joules_total$", name)
        if m:
            dev = "rapl " + os.path.basename(lab["path"])
            c = next((c for c in channels if c["device"] == dev and c["field"] == "energy"), None)
            chk.equal(f"RAPL {os.path.basename(lab['path'])}",
                      None if c is None or c["value"] is None else c["value"] / 1000, v, 0.0015)

    # power_supply: volts and watts vs mV and mW; online.
    for name, lab, v in theirs:
        ps = lab.get("power_supply")
        if name == "node_power_supply_voltage_volt":
            x = val("rail", ps, "voltage")
            chk.equal(f"{ps} voltage", None if x is None else x / 1000, v, 0.0015)
        elif name == "node_power_supply_power_watt":
            x = val("rail", ps, "power")
            chk.equal(f"{ps} power", None if x is None else x / 1000, v, 0.0015)
        elif name == "node_power_supply_online":
            chk.equal(f"{ps} online", val("rail", ps, "online"), v, 0)

    # hwmon: node_exporter labels chips by device path, edgemon by the chip's
    # name; match each node_exporter chip to the hwmon directory whose sensors
    # all read the same.
    families = {"node_hwmon_temp_celsius": ("thermal", "temp", 1e-3),
                "node_hwmon_in_volts": ("rail", "voltage", 1e-3),
                "node_hwmon_curr_amps": ("rail", "current", 1e-3),
                "node_hwmon_power_watt": ("rail", "power", 1e-3),
                "node_hwmon_fan_rpm": ("fan", "speed", 1)}
    for family, (kind, field, scale) in families.items():
        mine = hwmon_groups(channels, kind, field, scale)
        chips = {}
        for name, lab, v in theirs:
            if name == family:
                chips.setdefault(lab["chip"], {})[lab["sensor"]] = v
        # edgemon deliberately skips INA3221 channels labelled NC and its
        # shunt-voltage and shunt-sum channels (in4..in7, curr4): those are
        # compared only where edgemon declares them.
        for chip, sensors in chips.items():
            best = None
            for h, g in mine.items():
                common = [s for s in sensors if s in g]
                if common and all(abs(g[s] - sensors[s]) <= 0.0015 for s in common):
                    if best is None or len(common) > len(best[1]):
                        best = (h, common)
            if best is None:
                chk.checked += 1
                chk.failures.append(f"{tree}: {family} chip {chip} {sensors}: no edgemon hwmon "
                                    f"group reads the same (edgemon: {mine})")
            else:
                chk.checked += len(best[1])
    return chk


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--probe", required=True)
    ap.add_argument("--node-exporter", required=True)
    ap.add_argument("--fixtures", required=True)
    args = ap.parse_args()
    total, failures = 0, []
    for tree in TREES:
        if not os.path.isdir(os.path.join(args.fixtures, tree)):
            failures.append(f"missing fixture tree {tree}")
            continue
        chk = check_tree(args.probe, args.node_exporter, args.fixtures, tree)
        print(f"{tree}: {chk.checked} values compared, {len(chk.failures)} disagree")
        if chk.checked == 0:
            failures.append(f"{tree}: node_exporter reported nothing comparable")
        total += chk.checked
        failures += chk.failures
    for f in failures:
        print("MISMATCH", f)
    print(f"{total - len(failures)} passed, {len(failures)} failed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
