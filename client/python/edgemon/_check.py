"""The checks of every argument given to the public API, made before anything
is converted or sent: a number is a finite real (never a bool, never nan or
inf) inside the range the daemon, the control helper or the wire type
accepts; a text is a str (never bytes, None or a number) without NUL; a
list of channel keys is a list or tuple of such texts (a bare string is
refused: it would be read as its letters); a flag is a bool. A refusal is
:class:`edgemon.InvalidArgument` naming the argument, what it must be and
the value given (never a bare TypeError or ValueError from deep inside);
nothing is clamped or rounded into range behind the caller's back.

Ranges (edgemond, daemon/service/service.cc and edgemon.proto):

- Watch interval: 0 (every frame) to 3600 s (``interval_ms``, kMaxIntervalMs)
- Boost: rate 1 to 1000 Hz, duration 0.001 to 3600 s
- window lease: 0.001 to 86400 s (1 ms to 1 day)
- Query step: 0.001 s or more (0/None: raw frames); times and ns fields: int64 ns
- limits and ids: their uint32/int64 wire types (ListProcesses: at most 10000)
"""
import collections.abc
import math
import numbers
from typing import Any, List, Optional

from ._errors import InvalidArgument

INT32_MIN, INT32_MAX = -(1 << 31), (1 << 31) - 1
UINT32_MAX = (1 << 32) - 1
INT64_MIN, INT64_MAX = -(1 << 63), (1 << 63) - 1

# edgemond's ranges (daemon/service/service.cc).
MAX_INTERVAL_MS = 3600000      # Watch interval_ms and Boost duration_ms (kMaxIntervalMs)
MIN_LIVE_INTERVAL_MS = 10      # the fastest live rate a Watch gets (100 Hz)
MAX_BOOST_HZ = 1000            # kMaxBoostHz
MAX_LEASE_MS = 86400000        # BeginWindow lease_ms: 1 ms to 1 day (kMaxLeaseMs)
MIN_STEP_NS = 1000000          # Query step_ns: 0 (raw frames) or at least 1 ms
MAX_PROCESSES = 10000          # ListProcesses limit
MAX_TIMEOUT_S = 86400.0        # a call's own deadline here (a day; None: none)
# edgemon-control's (daemon/control/control_service.cc, control.proto).
MAX_CONTROL_LEASE_S = 30 * 86400.0


def _show(v: float) -> str:
    """A bound as people write it: 3600, 0.001, 9.22337e+09."""
    return "%d" % v if float(v).is_integer() and abs(v) < 1e15 else "%.6g" % v


def _refuse(name: str, expected: str, value: Any) -> InvalidArgument:
    return InvalidArgument("edgemon: %s: must be %s, got %r" % (name, expected, value))


def _finite(name: str, value: Any, expected: str) -> float:
    """value as a finite float; InvalidArgument for a bool, a non-number, nan or inf."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise _refuse(name, expected, value)
    try:
        f = float(value)
    except (OverflowError, ValueError, TypeError):  # a huge int or Fraction
        raise _refuse(name, expected, value) from None
    if not math.isfinite(f):
        raise _refuse(name, expected, value)
    return f


def is_zero(value: Any) -> bool:
    """True for a number equal to 0 (0, 0.0; not False): where 0 means "none"."""
    return isinstance(value, numbers.Real) and not isinstance(value, bool) and value == 0


def real(name: str, value: Any, low: float, high: Optional[float], unit: str = "",
         low_open: bool = False) -> float:
    """``value`` as a float in [low, high] ((low, high] with ``low_open``; no
    upper bound but finiteness when ``high`` is None)."""
    u = " " + unit if unit else ""
    if high is None:
        expected = "a number %s %s%s" % (">" if low_open else ">=", _show(low), u)
    else:
        expected = "a number from %s%s to %s%s" % (_show(low), " (excluded)" if low_open else "",
                                                   _show(high), u)
    f = _finite(name, value, expected)
    if f < low or (low_open and f == low) or (high is not None and f > high):
        raise _refuse(name, expected, value)
    return f


def integer(name: str, value: Any, low: int, high: int) -> int:
    """``value`` as an int in [low, high]: an integral number (5 or 5.0, not 5.5)."""
    expected = "an integer from %d to %d" % (low, high)
    if isinstance(value, numbers.Integral) and not isinstance(value, bool):
        i = int(value)
    else:
        f = _finite(name, value, expected)
        if not f.is_integer():
            raise _refuse(name, expected, value)
        i = int(f)
    if not low <= i <= high:
        raise _refuse(name, expected, value)
    return i


def scaled(name: str, value: Any, scale: float, low: int, high: int, unit: str,
           note: str = "") -> int:
    """``round(value * scale)`` as an int in [low, high] (the wire's unit, e.g.
    ms for seconds with scale 1000); the message gives the range in ``unit``,
    the caller's (``note`` adds to it, e.g. what 0 means)."""
    expected = "a number of %s from %s to %s%s" % (unit, _show(low / scale), _show(high / scale),
                                                   note)
    f = _finite(name, value, expected)
    x = f * scale
    if not math.isfinite(x) or not low - 0.5 <= x <= high + 0.5:
        raise _refuse(name, expected, value)
    i = int(round(x))
    if not low <= i <= high:
        raise _refuse(name, expected, value)
    return i


# Labels, names, addresses and paths: at most this many characters (the
# daemon refuses longer labels; a path is never longer than PATH_MAX).
MAX_TEXT = 4096


def text(name: str, value: Any, nonempty: bool = False) -> str:
    """``value`` as a str: not bytes, None or a number; no NUL; at most MAX_TEXT."""
    expected = "a %sstring of at most %d characters without NUL" % (
        "non-empty " if nonempty else "", MAX_TEXT)
    if not isinstance(value, str) or "\0" in value or len(value) > MAX_TEXT or \
            (nonempty and not value):
        raise _refuse(name, expected, value)
    return value


def optional_text(name: str, value: Any, nonempty: bool = False) -> Optional[str]:
    """None, or ``value`` as for :func:`text`."""
    return None if value is None else text(name, value, nonempty)


def keys(name: str, value: Any) -> List[str]:
    """A list or tuple (or other non-string iterable) of channel keys, as a list."""
    expected = "a list of channel keys (strings)"
    if isinstance(value, (str, bytes)) or not isinstance(value, collections.abc.Iterable):
        raise _refuse(name, expected, value)
    out = list(value)
    if any(not isinstance(k, str) or "\0" in k or len(k) > MAX_TEXT for k in out):
        raise _refuse(name, expected, value)
    return out


def flag(name: str, value: Any) -> bool:
    """``value`` when it is a bool (True or False; not 1, "yes" or None)."""
    if not isinstance(value, bool):
        raise _refuse(name, "True or False", value)
    return value


def optional_flag(name: str, value: Any) -> Optional[bool]:
    """None, or ``value`` as for :func:`flag`."""
    return None if value is None else flag(name, value)


def watch_interval_ms(interval: Any) -> int:
    """A Watch (or feed) ``interval`` in seconds as the request's interval_ms."""
    return scaled("interval", interval, 1000, 0, MAX_INTERVAL_MS, "seconds", " (0: every frame)")


def time_ns(name: str, ns: int, given: Any) -> int:
    """``ns`` (Unix ns computed from ``given``) when the int64 of the wire carries it."""
    if not INT64_MIN <= ns <= INT64_MAX:
        raise _refuse(name, "a time the API carries (int64 ns: 1677-09-21 to 2262-04-11)", given)
    return ns
