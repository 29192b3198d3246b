"""Times and durations: the Python package reads a string exactly as edgemond,
the edgemon command and edgetop do. The cases are the C++ parser's own
(tests/data/timespec_cases.json, also read by tests/client/cli/timespec_test.cc):
one case added there is checked in both languages."""
import datetime
import json
import os
import time

import pytest

import edgemon
from edgemon._client import as_ns

CASES_FILE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "tests",
                          "data", "timespec_cases.json")
with open(CASES_FILE, encoding="utf-8") as _f:
    _DOC = json.load(_f)
DEFAULT_NOW = _DOC["now_ns"]
CASES = _DOC["cases"]
TIME_CASES = [c for c in CASES if "time" in c]
S = 1000000000


def case_id(c):
    kind = [k for k in ("duration_ms", "duration", "time") if k in c][0]
    return "%03d-%s:%s" % (CASES.index(c), kind, c[kind].encode("unicode_escape").decode("ascii"))


@pytest.fixture(autouse=True)
def local_zone_is_not_utc(monkeypatch):
    """A time without a zone is UTC whatever TZ says."""
    monkeypatch.setenv("TZ", "Europe/Paris")
    time.tzset()
    yield
    monkeypatch.undo()
    time.tzset()


def check(case, what, value_key, parse):
    """``parse(text)`` gives the case's value, or the case's refusal naming the text."""
    text = case[what]
    if "error" in case:
        with pytest.raises(edgemon.InvalidArgument) as e:
            got = parse(text)
            pytest.fail("%r parsed as %r" % (text, got))
        msg = str(e.value)
        kind = "time" if what == "time" else "duration"
        assert 'bad %s "%s"' % (kind, text) in msg, msg
        assert case["error"] in msg, msg
        assert "\n" not in msg
    else:
        assert parse(text) == case[value_key]


@pytest.mark.parametrize("case", CASES, ids=[case_id(c) for c in CASES])
def test_the_parsers_give_every_shared_case(case):
    from edgemon import _timespec
    bare = case.get("bare_unit_ns", _timespec.NS_PER_SECOND)
    now = case.get("now_ns", DEFAULT_NOW)
    if "duration" in case:
        check(case, "duration", "ns", lambda t: _timespec.parse_duration_ns(t, bare))
    elif "duration_ms" in case:
        check(case, "duration_ms", "ms", lambda t: _timespec.parse_duration_ms(t, bare))
    else:
        check(case, "time", "ns", lambda t: _timespec.parse_time_ns(t, now))


@pytest.mark.parametrize("case", TIME_CASES, ids=[case_id(c) for c in TIME_CASES])
def test_every_string_time_the_api_takes_is_the_shared_syntax(case):
    """as_ns (since/until of query, windows, summarize): "5m" is refused as the
    edgemon command refuses it, "-5m" is five minutes before now, and a
    refusal names the argument."""
    now = case.get("now_ns", DEFAULT_NOW)
    check(case, "time", "ns", lambda t: as_ns(t, now, "since"))
    if "error" in case:
        with pytest.raises(edgemon.InvalidArgument) as e:
            as_ns(case["time"], now, "since")
        assert str(e.value).startswith('edgemon: since: bad time "'), str(e.value)
        assert e.value.code is None


def test_the_shared_file_has_the_cases_this_package_once_got_wrong():
    times = {c["time"]: c for c in TIME_CASES}
    assert "a duration, not a time" in times["5m"]["error"]
    assert times["-5m"]["ns"] == times["-5m"]["now_ns"] - 300 * S
    assert "ns" in times["2023-11-14"] and "ns" in times["@1700000000.25"]


def test_python_typed_times_keep_their_meaning():
    now = 1700000000 * S
    assert as_ns(None, now) == now
    assert as_ns(datetime.timedelta(minutes=5), now) == now - 300 * S
    assert as_ns(-300, now) == now - 300 * S
    assert as_ns(0, now) == now
    assert as_ns(1700000000.5, now) == now + S // 2
    assert as_ns(datetime.datetime(2023, 11, 14, 22, 13, 20), now) == now
    paris = datetime.timezone(datetime.timedelta(hours=1))
    assert as_ns(datetime.datetime(2023, 11, 14, 23, 13, 20, tzinfo=paris), now) == now
    with pytest.raises(edgemon.InvalidArgument, match="edgemon: until: bad time b'-5m'"):
        as_ns(b"-5m", now, "until")


def test_the_client_refuses_a_string_outside_the_syntax_before_sending(nano):
    c = edgemon.connect(nano.target)
    for call, name, why in (
            (lambda: c.query("5m"), "since", "a duration, not a time: write -5m"),
            (lambda: c.query("-1m", until="1m"), "until", "a duration, not a time"),
            (lambda: c.windows(since="-99999999999999999999d"), "since", "too long"),
            (lambda: c.summarize(until="soon"), "until", "expected a time such as")):
        with pytest.raises(edgemon.InvalidArgument) as e:
            call()
        assert e.value.code is None, "refused by the daemon, not before sending: %s" % e.value
        assert str(e.value).startswith('edgemon: %s: bad time "' % name), str(e.value)
        assert why in str(e.value), str(e.value)
    assert c.query("-2s") and c.query("2 s ago", until="now")
