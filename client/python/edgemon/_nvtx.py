"""measure(nvtx=True): energy per NVTX range of the calling process.

NVTX loads a tool once per process, at the process's first NVTX call, from
NVTX_INJECTION64_PATH. attach() sets that variable to edgemon's injection
library (libedgemon_nvtx.so, the one `edgemon record --nvtx` uses) and
EDGEMON_NVTX_OUT to a file of this process, and loads the library itself to
flush it. It works only if nothing in the process has called NVTX before
(import and set up edgemon before PyTorch, TensorRT or anything annotated
runs its first range); a measurement that saw no range says so in its
notes. The ranges are read after the block: each one ended inside the
measured window is summarized by the daemon, as record --nvtx does.
"""
import ctypes
import glob
import os
import tempfile
import threading
from typing import Any, Dict, List, Optional, Tuple

from . import _errors
from ._bundle import present

# Where the packages install the library (LIBDIR/edgemon).
_INSTALLED = ("/usr/lib/*/edgemon/libedgemon_nvtx.so", "/usr/lib/edgemon/libedgemon_nvtx.so",
              "/usr/local/lib/*/edgemon/libedgemon_nvtx.so",
              "/usr/local/lib/edgemon/libedgemon_nvtx.so")
# At most this many ranges are summarized per measurement (one daemon call each).
MAX_SUMMARIES = 5000

_lock = threading.Lock()
_state = None  # type: Optional[Tuple[Any, str]]  # (the loaded library, the ranges file)


def library() -> str:
    """$EDGEMON_NVTX_LIBRARY, else the installed libedgemon_nvtx.so."""
    env = os.environ.get("EDGEMON_NVTX_LIBRARY")
    if env:
        if not os.path.isfile(env):
            raise _errors.Error("edgemon: EDGEMON_NVTX_LIBRARY=%s is not a file" % env)
        return os.path.abspath(env)
    for pattern in _INSTALLED:
        found = sorted(glob.glob(pattern))
        if found:
            return found[0]
    raise _errors.Error("edgemon: nvtx=True needs edgemon's NVTX injection library "
                        "(libedgemon_nvtx.so), not installed here; set EDGEMON_NVTX_LIBRARY")


def attach() -> str:
    """Makes this process's NVTX calls reach the library (once); returns the
    ranges file."""
    global _state
    with _lock:
        if _state is None:
            lib = library()
            other = os.environ.get("NVTX_INJECTION64_PATH")
            if other and os.path.realpath(other) != os.path.realpath(lib):
                raise _errors.Error("edgemon: NVTX_INJECTION64_PATH is already %s: NVTX loads "
                                    "one tool per process" % other)
            out = os.environ.get("EDGEMON_NVTX_OUT")
            if not (other and out):
                fd, out = tempfile.mkstemp(prefix="edgemon-nvtx-%d-" % os.getpid(),
                                           suffix=".tsv")
                os.close(fd)
                os.environ["EDGEMON_NVTX_OUT"] = out
                os.environ["NVTX_INJECTION64_PATH"] = lib
            handle = ctypes.CDLL(lib)
            handle.edgemon_nvtx_flush.restype = None
            _state = (handle, out)
        return _state[1]


def flush() -> None:
    if _state is not None:
        _state[0].edgemon_nvtx_flush()


def _unescape(s: str) -> str:
    out, i = [], 0
    while i < len(s):
        c = s[i]
        if c == "\\" and i + 1 < len(s):
            i += 1
            c = {"t": "\t", "n": "\n"}.get(s[i], s[i])
        out.append(c)
        i += 1
    return "".join(out)


def read(path: str, offset: int) -> Tuple[List[Tuple[int, int, int, str, str]], int, int]:
    """The ended ranges written after `offset`: [(start_ns, end_ns, depth,
    domain, name)], and the counts of lines that did not parse and of ranges
    never ended."""
    with open(path, "rb") as f:
        f.seek(offset)
        text = f.read().decode("utf-8", "replace")
    ranges, bad, open_ = [], 0, 0
    for line in text.split("\n"):
        if not line or line.startswith("#"):
            continue
        f = line.split("\t", 7)
        try:
            if len(f) != 8 or f[0] not in ("P", "S"):
                raise ValueError(line)
            depth, start, end = int(f[3]), int(f[4]), int(f[5])
        except ValueError:
            bad += 1
            continue
        if end == -1:
            open_ += 1
        elif end < start or depth < 0:
            bad += 1
        else:
            ranges.append((start, end, depth, _unescape(f[6]), _unescape(f[7])))
    ranges.sort(key=lambda r: r[0])
    return ranges, bad, open_


def size(path: str) -> int:
    try:
        return os.path.getsize(path)
    except OSError:
        return 0


def stats(client: Any, ranges: List[Tuple[int, int, int, str, str]],
          notes: List[str]) -> List[Dict[str, Any]]:
    """summary.json's "nvtx" entries (record_nvtx.h, NvtxJson) of `ranges`."""
    out = []  # type: List[Dict[str, Any]]
    index = {}  # type: Dict[Tuple[str, str], Dict[str, Any]]
    failed = 0
    for i, (start, end, depth, domain, name) in enumerate(ranges):
        s = None
        if i < MAX_SUMMARIES:
            try:
                s = client.summarize(from_ns=start, to_ns=max(end, start + 1))
            except _errors.Error:
                failed += 1
        e = index.get((domain, name))
        if e is None:
            e = {"domain": domain or None, "name": name, "count": 0, "total_s": 0.0,
                 "max_depth": 0, "_rails": None, "_summarized": True}
            index[(domain, name)] = e
            out.append(e)
        e["count"] += 1
        e["total_s"] += (end - start) / 1e9
        e["max_depth"] = max(e["max_depth"], depth)
        if s is None:
            e["_summarized"] = False
            continue
        got = {r.name: (r.input, present(r, "energy_mj")) for r in s.rails}
        if e["_rails"] is None:
            e["_rails"] = [[n, inp, 0.0] for n, (inp, _) in got.items()]
        for rail in e["_rails"]:
            mj = got.get(rail[0], (False, None))[1]
            rail[2] = None if mj is None or rail[2] is None else rail[2] + mj
    if len(ranges) > MAX_SUMMARIES:
        notes.append("%d NVTX ranges: the first %d were measured; names with later "
                     "occurrences have no energy" % (len(ranges), MAX_SUMMARIES))
    if failed:
        notes.append("%d NVTX ranges not summarized: their names have no energy" % failed)
    for e in out:
        rails = e.pop("_rails") or []
        if not e.pop("_summarized"):
            rails = [[n, inp, None] for n, inp, _ in rails]
        inputs = [r for r in rails if r[1]]
        total = inputs[0][2] if len(inputs) == 1 else None
        t = e["total_s"]
        e["mean_s"] = t / e["count"]
        e["energy_j"] = None if total is None else total / 1000.0
        e["avg_w"] = None if total is None or t <= 0 else total / 1000.0 / t
        e["rails"] = [{"name": n, "input": inp,
                       "energy_j": None if mj is None else mj / 1000.0,
                       "avg_w": None if mj is None or t <= 0 else mj / 1000.0 / t}
                      for n, inp, mj in rails]
    return out
