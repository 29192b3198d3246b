#!/usr/bin/python3
"""What `import edgemon` costs a short script: the wall time of fresh
interpreters (`python3 -c STATEMENT`, the packages from the build tree:
BUILD/python), side by side with a control that imports nothing
(`python3 -c pass`: the interpreter's own start) and with `import grpc`
alone, run interleaved (one of each per round) so that a change of load
reaches all of them alike. Prints the median and p90 of each, the median
above the control's, and whether `import edgemon` imported grpc or
protobuf. The load average is printed before and after: a busy machine
makes every start slower.

  bench/python_import.py [--build build] [--runs 20] [--python /usr/bin/python3]
"""
import argparse
import os
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))

CONTROL = "pass"
# The statements timed, each in a fresh interpreter, the control first.
STATEMENTS = [
    ("control: python3 -c pass", CONTROL),
    ("import edgemon", "import edgemon"),
    ("import jtop (the drop-in)", "import jtop"),
    ("import grpc alone", "import grpc"),
    ("import edgemon + connect()", "import edgemon; edgemon.connect('unix:/nonexistent')"),
]


def load():
    with open("/proc/loadavg") as f:
        return " ".join(f.read().split()[:3])


def package_env(build):
    env = dict(os.environ)
    env["PYTHONPATH"] = os.path.abspath(os.path.join(build, "python"))
    # Bytecode cached beside the sources, as an installed package has it (the
    # unmeasured first round writes it): compiling them is not an import's cost.
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    return env


def wall_ms(python, statement, env):
    """The wall time of one fresh interpreter running `statement`, in ms."""
    t = time.perf_counter()
    subprocess.run([python, "-c", statement], env=env, check=True)
    return (time.perf_counter() - t) * 1000


def import_times(python, env, statements, runs):
    """{statement: sorted wall times (ms)} over `runs` interleaved rounds,
    after one unmeasured round (the files in the page cache, their bytecode
    written)."""
    for s in statements:
        wall_ms(python, s, env)
    times = {s: [] for s in statements}
    for _ in range(runs):
        for s in statements:
            times[s].append(wall_ms(python, s, env))
    return {s: sorted(v) for s, v in times.items()}


def p90(values):
    return values[min(len(values) - 1, int(round(0.9 * (len(values) - 1))))]


def imported_by(python, env, statement):
    """Which of grpc and protobuf a fresh interpreter has imported after `statement`."""
    return subprocess.run(
        [python, "-c", statement + "\nimport sys\nprint(' '.join(m for m in ('grpc', "
         "'google.protobuf') if m in sys.modules))"],
        env=env, check=True, stdout=subprocess.PIPE, universal_newlines=True).stdout.split()


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--build", default="build")
    ap.add_argument("--runs", type=int, default=20)
    ap.add_argument("--python", default="/usr/bin/python3")
    args = ap.parse_args()
    env = package_env(args.build)
    print("load average (1, 5, 15 min) before: %s, %d CPUs" % (load(), os.cpu_count()))
    times = import_times(args.python, env, [s for _, s in STATEMENTS], args.runs)
    control = statistics.median(times[CONTROL])
    print("%-30s %10s %10s %16s" % ("wall per fresh interpreter", "median", "p90",
                                    "median - control"))
    for label, s in STATEMENTS:
        v = times[s]
        extra = "" if s == CONTROL else "%13.1f ms" % (statistics.median(v) - control)
        print("%-30s %7.1f ms %7.1f ms %16s" % (label, statistics.median(v), p90(v), extra))
    print("(%d interleaved rounds, %s)" % (args.runs, args.python))
    left = imported_by(args.python, env, "import edgemon, jtop")
    print("import edgemon, jtop imports: %s" % (", ".join(left) or "neither grpc nor protobuf"))
    print("load average after:  %s" % load())
    return 0


if __name__ == "__main__":
    sys.exit(main())
