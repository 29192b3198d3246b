"""The one syntax for durations and points in time, as edgemond's
configuration, the ``edgemon`` command and edgetop read it
(include/edgemon/timespec.h and common/timespec.cc, line for line; the cases
of tests/data/timespec_cases.json hold both to the same answers).

Durations (:func:`parse_duration_ns`): "500ms" "10s" "7d" "1h30m" "1m 30s"
"1.5s" "20us" "7ns" "5min" "2w"; units ns, us, ms, s (sec), m (min), h, d, w,
several in a row add up, a space may sit between a number and its unit; a
bare number ("90") counts in ``bare_unit_ns`` (seconds by default). Never
negative.

Points in time (:func:`parse_time_ns`), Unix-epoch nanoseconds: "now"; "-10m",
"10m ago" (a duration before now), "+30s" (after now); "1700000000",
"1700000000.25" (Unix seconds); "@1700000000.250000000"; ISO 8601
"2023-11-14T22:13:05Z", "2023-11-14 22:13:05", "2023-11-15T00:13:05+02:00",
"2023-11-14" (midnight); "22:13:05" (that time today). A time without a zone
is UTC. Times are int64 ns: 1677-09-21T00:12:44Z to 2262-04-11T23:47:16Z.
"5m" alone is a duration, not a time: write "-5m" for five minutes ago.

Anything else raises :class:`edgemon.InvalidArgument` with the C++ parser's
one-line reason naming the input. Pure functions: no time zone database, no
locale. The parse works on the text's UTF-8 bytes, as the C++ one does.
"""
from typing import Optional, Tuple

from ._errors import InvalidArgument

NS_PER_SECOND = 1000000000
NS_PER_MILLISECOND = 1000000
INT64_MIN, INT64_MAX = -(1 << 63), (1 << 63) - 1
_NS_PER_DAY = 86400 * NS_PER_SECOND

DURATION_SYNTAX = "a duration such as 500ms, 10s, 5m, 1h30m, 7d"
TIME_SYNTAX = ("a time such as -10m, now, 2023-11-14T22:13:05Z, 2023-11-14 22:13:05 (no zone: "
               "UTC), 2023-11-14T22:13:05+02:00, Unix seconds or @UNIX.NANOS")
TIME_RANGE = ("times run from 1677-09-21T00:12:44Z to 2262-04-11T23:47:16Z (int64 nanoseconds "
              "since 1970)")

# Longest match first where one name starts another ("min" before "m").
_UNITS = (("ns", 1), ("us", 1000), ("ms", NS_PER_MILLISECOND), ("min", 60 * NS_PER_SECOND),
          ("sec", NS_PER_SECOND), ("s", NS_PER_SECOND), ("m", 60 * NS_PER_SECOND),
          ("h", 3600 * NS_PER_SECOND), ("d", _NS_PER_DAY), ("w", 7 * _NS_PER_DAY))
_UNIT_NAMES = "(ns, us, ms, s, m, h, d, w)"
_SPACES = " \t\n\r\0"


class _Bad(Exception):
    """A refusal inside the parse; becomes InvalidArgument at the surface."""


def _bytes(text: str) -> str:
    """``text``'s UTF-8 bytes, one character each (latin-1), as C++ sees them."""
    return text.encode("utf-8", "surrogatepass").decode("latin-1")


def _fail(what: str, text: str, why: str) -> _Bad:
    return _Bad('bad %s "%s": %s' % (what, text, why))


def _refusal(e: _Bad) -> InvalidArgument:
    return InvalidArgument(str(e).encode("latin-1").decode("utf-8", "replace"))


def _digit(c: str) -> bool:
    return "0" <= c <= "9"


def _trim(s: str) -> str:
    return s.strip(_SPACES)


def _take_decimal(s: str) -> Optional[Tuple[int, int, int, str]]:
    """A decimal number "12", "1.5", ".25" at the front of ``s``: (whole,
    fraction numerator, fraction denominator, the rest), or None."""
    i, whole, num, den, any_digit = 0, 0, 0, 1, False
    while i < len(s) and _digit(s[i]):
        # Past INT64_MAX it stays just past it: too large for any result.
        whole = min(whole * 10 + ord(s[i]) - 48, INT64_MAX + 1)
        i += 1
        any_digit = True
    if i < len(s) and s[i] == ".":
        i += 1
        while i < len(s) and _digit(s[i]):
            if den < 10 ** 18:  # past 1e-18: nothing
                num, den = num * 10 + ord(s[i]) - 48, den * 10
            i += 1
            any_digit = True
    if not any_digit:
        return None
    return whole, num, den, s[i:]


def _times(d: Tuple[int, int, int, str], unit: int) -> int:
    return d[0] * unit + d[1] * unit // d[2]


def _take_unit(s: str) -> Optional[Tuple[int, str]]:
    for name, ns in _UNITS:
        if s.startswith(name):
            return ns, s[len(name):]
    return None


def _take_field(s: str, max_digits: int) -> Tuple[Optional[int], str]:
    """Up to ``max_digits`` digits at the front of ``s``."""
    n = 0
    while n < len(s) and n < max_digits and _digit(s[n]):
        n += 1
    return (int(s[:n]) if n else None), s[n:]


def _days_from_civil(y: int, m: int, d: int) -> int:
    """Days since 1970-01-01 of a proleptic Gregorian date."""
    y -= m <= 2
    era = (y if y >= 0 else y - 399) // 400
    yoe = y - era * 400
    doy = (153 * (m - 3 if m > 2 else m + 9) + 2) // 5 + d - 1
    doe = yoe * 365 + yoe // 4 - yoe // 100 + doy
    return era * 146097 + doe - 719468


def _days_in_month(y: int, m: int) -> int:
    leap = (y % 4 == 0 and y % 100 != 0) or y % 400 == 0
    return 29 if m == 2 and leap else (31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31)[m - 1]


def _take_clock(s: str, text: str) -> Tuple[int, str]:
    """"H:M[:S[.fff]]" (one or two digits each) as ns since midnight."""
    h, s = _take_field(s, 2)
    if h is None or not s.startswith(":"):
        raise _fail("time", text, "expected HH:MM after the date")
    m, s = _take_field(s[1:], 2)
    if m is None:
        raise _fail("time", text, "expected minutes after HH:")
    sec, frac_ns = 0, 0
    if s.startswith(":"):
        sv, s = _take_field(s[1:], 2)
        if sv is None:
            raise _fail("time", text, "expected seconds after HH:MM:")
        sec = sv
        if s.startswith("."):
            frac = _take_decimal(s)  # ".fff": whole part 0
            if frac is None:
                raise _fail("time", text, "expected digits after the decimal point")
            frac_ns, s = _times(frac, NS_PER_SECOND), frac[3]
    if h > 23 or m > 59 or sec > 60:
        raise _fail("time", text, "%02d:%02d:%02d is not a time of day" % (h, m, sec))
    return (h * 3600 + m * 60 + sec) * NS_PER_SECOND + frac_ns, s


def _checked(v: int, text: str) -> int:
    if not INT64_MIN <= v <= INT64_MAX:
        raise _fail("time", text, "out of range: " + TIME_RANGE)
    return v


def _duration_total(text: str, bare_unit_ns: int, limit_ns: int) -> int:
    s = _trim(text)
    if not s:
        raise _fail("duration", text, "empty; expected " + DURATION_SYNTAX)
    if s[0] == "-":
        raise _fail("duration", text, "a duration is never negative")
    total, first = 0, True
    while s:
        number = _take_decimal(s)
        if number is None:
            raise _fail("duration", text,
                        'expected a number at "%s"; %s' % (s, DURATION_SYNTAX))
        s = number[3].lstrip(_SPACES)
        if not s and first:
            unit = bare_unit_ns
        else:
            u = _take_unit(s)
            if u is None:
                raise _fail("duration", text,
                            "a unit is missing at the end " + _UNIT_NAMES if not s else
                            'unknown unit at "%s" %s' % (s, _UNIT_NAMES))
            unit, s = u
        total += _times(number, unit)
        if total > limit_ns:
            raise _fail("duration", text, "too long")
        s = s.lstrip(_SPACES)
        first = False
    return total


def _time(text: str, now_ns: int) -> int:
    s = _trim(text)
    if not s:
        raise _fail("time", text, "empty; expected " + TIME_SYNTAX)
    if s == "now":
        return now_ns

    # Relative: "-10m", "+30s", "10m ago".
    ago = len(s) > 4 and s.endswith(" ago")
    if s[0] in "-+" or ago:
        sign = 1 if s[0] == "+" else -1
        try:
            v = _duration_total(s[:-4] if ago else s[1:], NS_PER_SECOND, INT64_MAX)
        except _Bad as e:
            raise _fail("time", text, str(e)) from None
        return _checked(now_ns + sign * v, text)

    # Unix seconds: "1700000000.25" or "@1700000000.250000000".
    at = s.startswith("@")
    d = _take_decimal(s[1:] if at else s)
    if d is not None and not d[3]:
        return _checked(_times(d, NS_PER_SECOND), text)
    if at:
        raise _fail("time", text, "expected Unix seconds after @ (@1700000000.5)")

    # "HH:MM[:SS]": that time today (UTC).
    if len(s) >= 3 and (s[1] == ":" or s[2] == ":"):
        clock, rest = _take_clock(s, text)
        if rest:
            raise _fail("time", text, 'unexpected "%s" after the time of day' % rest)
        return _checked(now_ns // _NS_PER_DAY * _NS_PER_DAY + clock, text)

    # ISO 8601: YYYY-MM-DD[(T| )H:M[:S[.fff]]][ ][Z|UTC|+hh[:mm]|-hh[:mm]]
    rest = s
    year = month = day = None
    if len(s) >= 5 and all(_digit(c) for c in s[:4]) and s[4] == "-":
        year, rest = _take_field(rest, 4)
        rest = rest[1:]
        month, rest = _take_field(rest, 2)
        if month is not None and rest.startswith("-"):
            day, rest = _take_field(rest[1:], 2)
    if year is None or month is None or day is None:
        why = "expected " + TIME_SYNTAX
        try:
            _duration_total(s, NS_PER_SECOND, INT64_MAX)
            why = "a duration, not a time: write -%s for that long ago" % s
        except _Bad:
            pass
        raise _fail("time", text, why)
    if not 1 <= month <= 12 or not 1 <= day <= _days_in_month(year, month):
        raise _fail("time", text, "%04d-%02d-%02d is not a date" % (year, month, day))
    ns = _days_from_civil(year, month, day) * _NS_PER_DAY
    if rest[:1] in ("T", "t", " ") and len(rest) > 1 and _digit(rest[1]):
        clock, rest = _take_clock(rest[1:], text)
        ns += clock
    rest = rest.lstrip(_SPACES)
    if rest in ("Z", "z", "UTC"):
        rest = ""
    elif rest[:1] in ("+", "-"):
        sign = -1 if rest[0] == "-" else 1
        rest = rest[1:]
        oh = None  # type: Optional[int]
        om = 0  # type: Optional[int] # 0 when only hours are written
        if len(rest) >= 2 and _digit(rest[0]) and _digit(rest[1]):
            oh, rest = _take_field(rest, 2)
        colon = rest.startswith(":")
        if colon:
            rest = rest[1:]
        if colon or (rest and _digit(rest[0])):
            om = None
            if len(rest) >= 2 and _digit(rest[0]) and _digit(rest[1]):
                om, rest = _take_field(rest, 2)
        if oh is None or om is None or oh > 23 or om > 59 or rest:
            raise _fail("time", text, "expected a zone offset such as +02:00, -0430 or Z")
        ns -= sign * (oh * 3600 + om * 60) * NS_PER_SECOND
    if rest:
        raise _fail("time", text, 'unexpected "%s" after the date and time' % rest)
    return _checked(ns, text)


def parse_duration_ns(text: str, bare_unit_ns: int = NS_PER_SECOND) -> int:
    """A duration in ns (``ParseDurationNs``); a bare number counts in ``bare_unit_ns``."""
    try:
        return _duration_total(_bytes(text), bare_unit_ns, INT64_MAX)
    except _Bad as e:
        raise _refusal(e) from None


def parse_duration_ms(text: str, bare_unit_ns: int = NS_PER_SECOND) -> int:
    """The same in whole milliseconds (``ParseDurationMs``); finer is refused."""
    b = _bytes(text)
    try:
        total = _duration_total(b, bare_unit_ns, INT64_MAX * NS_PER_MILLISECOND)
        if total % NS_PER_MILLISECOND:
            raise _fail("duration", b, "finer than a millisecond")
    except _Bad as e:
        raise _refusal(e) from None
    return total // NS_PER_MILLISECOND


def parse_time_ns(text: str, now_ns: int) -> int:
    """A point in time as Unix ns (``ParseTimeNs``); relative ones from ``now_ns``."""
    try:
        return _time(_bytes(text), now_ns)
    except _Bad as e:
        raise _refusal(e) from None
