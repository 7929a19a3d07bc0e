"""Time expressions (localmem.timegrammar): every rule with examples, windows in UTC or the
expression's offset, and expressions that are not understood said out loud in every interface
(issue 13, item 1)."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest

from localmem import MemoryStore, ValidationError
from localmem.timegrammar import PERIOD_RULES, read_time_expression

REPO = Path(__file__).resolve().parents[1]
UTC = timezone.utc
NOW = datetime(2026, 12, 2, 15, 30, tzinfo=UTC)  # a Wednesday
MIN = datetime.min.replace(tzinfo=UTC)


def utc(*args: int) -> datetime:
    return datetime(*args, tzinfo=UTC)


def last_of(*args: int) -> datetime:
    """The last microsecond before midnight UTC of the day after ``args``' date (an inclusive end)."""
    return utc(*args) + timedelta(days=1) - timedelta(microseconds=1)


# (expression, start, end, the period rules it uses)
EXAMPLES = [
    # AutoMem's own expressions: AutoMem's windows, ending on the boundary itself.
    ("today", utc(2026, 12, 2), utc(2026, 12, 3), ["today"]),
    ("this day", utc(2026, 12, 2), utc(2026, 12, 3), ["today"]),
    ("yesterday", utc(2026, 12, 1), utc(2026, 12, 2), ["yesterday"]),
    ("this week", utc(2026, 11, 30), utc(2026, 12, 7), ["this week/month/year"]),
    ("this month", utc(2026, 12, 1), utc(2027, 1, 1), ["this week/month/year"]),
    ("this year", utc(2026, 1, 1), utc(2027, 1, 1), ["this week/month/year"]),
    ("last week", utc(2026, 11, 23), utc(2026, 11, 30), ["last week/month/year"]),
    ("past month", utc(2026, 11, 1), utc(2026, 12, 1), ["last week/month/year"]),
    ("last year", utc(2025, 1, 1), utc(2026, 1, 1), ["last week/month/year"]),
    ("last 24 hours", utc(2026, 12, 1, 15, 30), NOW, ["last N units"]),
    ("last 7 days", utc(2026, 11, 25, 15, 30), NOW, ["last N units"]),
    # Rolling windows beyond AutoMem's list.
    ("past 7 days", utc(2026, 11, 25, 15, 30), NOW, ["last N units"]),
    ("last 2 weeks", utc(2026, 11, 18, 15, 30), NOW, ["last N units"]),
    ("in the last two weeks", utc(2026, 11, 18, 15, 30), NOW, ["last N units"]),
    ("last 3 months", utc(2026, 9, 2, 15, 30), NOW, ["last N units"]),
    ("past twenty-one days", utc(2026, 11, 11, 15, 30), NOW, ["last N units"]),
    ("last 90 minutes", utc(2026, 12, 2, 14, 0), NOW, ["last N units"]),
    ("last 2 years", utc(2024, 12, 2, 15, 30), NOW, ["last N units"]),
    ("last 7d", utc(2026, 11, 25, 15, 30), NOW, ["last N units"]),
    ("last 99999999999 days", MIN, NOW, ["last N units"]),  # past any calendar: all time
    ("the past fortnight", utc(2026, 11, 18, 15, 30), NOW, ["last hour/day/fortnight"]),
    ("past hour", utc(2026, 12, 2, 14, 30), NOW, ["last hour/day/fortnight"]),
    # N units ago: the calendar unit holding that moment.
    ("3 days ago", utc(2026, 11, 29), last_of(2026, 11, 29), ["N units ago"]),
    ("a week ago", utc(2026, 11, 23), last_of(2026, 11, 29), ["N units ago"]),
    ("a couple of months ago", utc(2026, 10, 1), last_of(2026, 10, 31), ["N units ago"]),
    ("2 hours ago", utc(2026, 12, 2, 13), utc(2026, 12, 2, 14) - timedelta(microseconds=1),
     ["N units ago"]),
    ("one year ago", utc(2025, 1, 1), last_of(2025, 12, 31), ["N units ago"]),
    ("earlier today", utc(2026, 12, 2), NOW, ["earlier today"]),
    ("earlier this week", utc(2026, 11, 30), NOW, ["earlier this week/month/year"]),
    ("earlier this month", utc(2026, 12, 1), NOW, ["earlier this week/month/year"]),
    # Weekdays and weekends.
    ("friday", utc(2026, 11, 27), last_of(2026, 11, 27), ["weekday"]),
    ("on wednesday", utc(2026, 12, 2), last_of(2026, 12, 2), ["weekday"]),
    ("last wednesday", utc(2026, 11, 25), last_of(2026, 11, 25), ["last weekday"]),
    ("last fri", utc(2026, 11, 27), last_of(2026, 11, 27), ["last weekday"]),
    ("this friday", utc(2026, 12, 4), last_of(2026, 12, 4), ["this weekday"]),
    ("this weekend", utc(2026, 12, 5), last_of(2026, 12, 6), ["this/last weekend"]),
    ("last weekend", utc(2026, 11, 28), last_of(2026, 11, 29), ["this/last weekend"]),
    ("over the weekend", utc(2026, 11, 28), last_of(2026, 11, 29), ["weekend"]),
    # Months, years, dates.
    ("november", utc(2026, 11, 1), last_of(2026, 11, 30), ["month"]),
    ("in december", utc(2026, 12, 1), last_of(2026, 12, 31), ["month"]),
    ("march", utc(2026, 3, 1), last_of(2026, 3, 31), ["month"]),
    ("last december", utc(2025, 12, 1), last_of(2025, 12, 31), ["last month name"]),
    ("march 2025", utc(2025, 3, 1), last_of(2025, 3, 31), ["month year"]),
    ("in 2025", utc(2025, 1, 1), last_of(2025, 12, 31), ["year"]),
    ("november 27", utc(2026, 11, 27), last_of(2026, 11, 27), ["month day"]),
    ("27th of november", utc(2026, 11, 27), last_of(2026, 11, 27), ["day month"]),
    ("december 25", utc(2025, 12, 25), last_of(2025, 12, 25), ["month day"]),  # latest one so far
    ("feb 29", utc(2024, 2, 29), last_of(2024, 2, 29), ["month day"]),
    ("nov 27, 2025", utc(2025, 11, 27), last_of(2025, 11, 27), ["month day year"]),
    ("27 november 2025", utc(2025, 11, 27), last_of(2025, 11, 27), ["day month year"]),
    ("2026-11-27", utc(2026, 11, 27), last_of(2026, 11, 27), ["ISO date"]),
    ("on 2026-11-27", utc(2026, 11, 27), last_of(2026, 11, 27), ["ISO date"]),
    ("2026-11-27T10:00", utc(2026, 11, 27, 10), utc(2026, 11, 27, 10, 1) - timedelta(microseconds=1),
     ["ISO date"]),
    ("2026-11-27T10:00:00.5+02:00", utc(2026, 11, 27, 8, 0, 0, 500000), utc(2026, 11, 27, 8, 0, 0, 500000),
     ["ISO date"]),
    ("2026-11", utc(2026, 11, 1), last_of(2026, 11, 30), ["ISO month"]),
    # Composition: since / after / before / until / between / from-to / ranges.
    ("since monday", utc(2026, 11, 30), NOW, ["weekday"]),
    ("since last monday", utc(2026, 11, 30), NOW, ["last weekday"]),
    ("since 3 days ago", utc(2026, 11, 29), NOW, ["N units ago"]),
    ("after 2026-11-27", utc(2026, 11, 28), None, ["ISO date"]),
    ("before 2026-11-27", None, last_of(2026, 11, 26), ["ISO date"]),
    ("before last week", None, utc(2026, 11, 23) - timedelta(microseconds=1), ["last week/month/year"]),
    ("until friday", None, last_of(2026, 11, 27), ["weekday"]),
    ("between 2026-11-01 and 2026-11-27", utc(2026, 11, 1), last_of(2026, 11, 27),
     ["ISO date", "ISO date"]),
    ("from monday to wednesday", utc(2026, 11, 30), last_of(2026, 12, 2), ["weekday", "weekday"]),
    ("2026-11-01..2026-11-27", utc(2026, 11, 1), last_of(2026, 11, 27), ["ISO date", "ISO date"]),
    ("2026-11-01/2026-11-27", utc(2026, 11, 1), last_of(2026, 11, 27), ["ISO date", "ISO date"]),
    ("march 2025 - may 2025", utc(2025, 3, 1), last_of(2025, 5, 31), ["month year", "month year"]),
    ("between november and today", utc(2026, 11, 1), utc(2026, 12, 3), ["month", "today"]),
    # Issue 35's phrases.
    ("the week before last", utc(2026, 11, 16), last_of(2026, 11, 22), ["unit before last"]),
    ("the month before last", utc(2026, 10, 1), last_of(2026, 10, 31), ["unit before last"]),
    ("the day before yesterday", utc(2026, 11, 30), last_of(2026, 11, 30), ["day before yesterday"]),
    ("this past week", utc(2026, 11, 25, 15, 30), NOW, ["this past unit"]),
    ("this past weekend", utc(2026, 11, 28), last_of(2026, 11, 29), ["this past weekend"]),
    ("last few days", utc(2026, 11, 29, 15, 30), NOW, ["last N units"]),
    ("this morning", utc(2026, 12, 2), utc(2026, 12, 2, 12) - timedelta(microseconds=1), ["part of a day"]),
    ("yesterday morning", utc(2026, 12, 1), utc(2026, 12, 1, 12) - timedelta(microseconds=1),
     ["part of a day"]),
    ("yesterday evening", utc(2026, 12, 1, 18), last_of(2026, 12, 1), ["part of a day"]),
    ("tonight", utc(2026, 12, 2, 18), last_of(2026, 12, 2), ["part of a day"]),
    ("last night", utc(2026, 12, 1, 18), utc(2026, 12, 2, 6) - timedelta(microseconds=1), ["last night"]),
    ("3 weeks back", utc(2026, 11, 9), last_of(2026, 11, 15), ["N units ago"]),
    ("mid-November", utc(2026, 11, 11), last_of(2026, 11, 20), ["part of a month"]),
    ("late february 2024", utc(2024, 2, 21), last_of(2024, 2, 29), ["part of a month"]),
    ("Q3", utc(2026, 7, 1), last_of(2026, 9, 30), ["quarter"]),
    ("q1 2025", utc(2025, 1, 1), last_of(2025, 3, 31), ["quarter year"]),
    ("2025 Q2", utc(2025, 4, 1), last_of(2025, 6, 30), ["year quarter"]),
    ("27/11/2026", utc(2026, 11, 27), last_of(2026, 11, 27), ["numeric date"]),
    ("11/27/2026", utc(2026, 11, 27), last_of(2026, 11, 27), ["numeric date"]),
    ("27.11.2026", utc(2026, 11, 27), last_of(2026, 11, 27), ["numeric date"]),
    ("01/11/2026 to 27/11/2026", utc(2026, 11, 1), last_of(2026, 11, 27), ["numeric date", "numeric date"]),
]


@pytest.mark.parametrize(("expr", "day", "noted"), [
    ("04/05/2026", utc(2026, 5, 4), True),  # both readings possible: day/month taken, and said
    ("04.05.2026", utc(2026, 5, 4), False),  # dots: day.month by convention
    ("05/05/2026", utc(2026, 5, 5), False),
    ("27/11/2026", utc(2026, 11, 27), False),
])
def test_numeric_dates_say_which_reading_was_taken(expr, day, noted):
    reading = read_time_expression(expr, NOW)
    assert reading.start == day
    assert bool(reading.notes) == noted
    if noted:
        assert "read as day/month (04 May 2026)" in reading.notes[0] and "2026-04-05" in reading.notes[0]


@pytest.mark.parametrize("expr", ["q5", "31/02/2026", "13/13/2026", "a few days ago"])
def test_new_phrases_refuse_what_they_cannot_mean(expr):
    assert read_time_expression(expr, NOW).error is not None


@pytest.mark.parametrize(("expr", "start", "end", "rules"), EXAMPLES, ids=[e[0] for e in EXAMPLES])
def test_every_rule_gives_its_window(expr, start, end, rules):
    reading = read_time_expression(expr, NOW)
    assert reading.error is None, reading.error
    assert (reading.start, reading.end) == (start, end)
    assert list(reading.rules) == rules
    assert reading.timezone == "UTC"


def test_every_rule_has_an_example():
    used = {rule for *_, rules in EXAMPLES for rule in rules}
    assert used == {name for name, _, _ in PERIOD_RULES}


@pytest.mark.parametrize(("expr", "start", "end", "zone"), [
    ("today utc+2", utc(2026, 12, 1, 22), utc(2026, 12, 2, 22), "+02:00"),
    ("yesterday +05:30", utc(2026, 11, 30, 18, 30), utc(2026, 12, 1, 18, 30), "+05:30"),
    ("last week gmt-3", utc(2026, 11, 23, 3), utc(2026, 11, 30, 3), "-03:00"),
    ("2026-11-27 UTC+2", utc(2026, 11, 26, 22), utc(2026, 11, 27, 22) - timedelta(microseconds=1), "+02:00"),
    ("last 3 days utc+2", utc(2026, 11, 29, 15, 30), NOW, "+02:00"),  # rolling: no boundary moves
])
def test_an_offset_moves_the_day_boundaries(expr, start, end, zone):
    reading = read_time_expression(expr, NOW)
    assert (reading.start, reading.end, reading.timezone) == (start, end, zone)


def test_the_day_starts_in_the_offset_even_when_utc_is_another_day():
    late = utc(2026, 12, 2, 23, 30)  # already Thursday the 3rd in +02:00
    assert read_time_expression("today +02:00", late).start == utc(2026, 12, 2, 22)


@pytest.mark.parametrize(("expr", "reason"), [
    ("the day before the launch", "'launch' is not a time word"),
    ("recently", "'recently' is not a time word"),
    ("a few days ago", "'few' is not a time word"),
    ("next week", "'next' is not a time word"),
    ("last 7 whole days", "'whole' is not a time word"),
    ("last -3 days", "is not a time expression"),
    ("lastweek", "'lastweek' is not a time word"),
    ("february 30", "'february 30' is not a date"),
    ("2026-02-30", "is not a valid ISO date"),
    ("between monday", "'between' needs"),
    ("2026-11-27 to 2026-11-01", "ends before it starts"),
    ("utc+2 utc+3", "more than one time-zone offset"),
    ("9999999 years ago", "outside the calendar"),
    ("the", "names no time"),
])
def test_what_is_not_understood_says_why(expr, reason):
    reading = read_time_expression(expr, NOW)
    assert (reading.start, reading.end) == (None, None)
    assert reading.error is not None and reason in reading.error


def test_thousands_of_digits_mean_all_time_without_int_conversion():
    reading = read_time_expression("last " + "9" * 5000 + " days", NOW)
    assert (reading.start, reading.end) == (MIN, NOW)
    assert read_time_expression("last " + "0" * 5000 + "1 days", NOW).start == NOW - timedelta(days=1)


@pytest.mark.parametrize("now", [utc(1, 1, 1, 1), utc(9999, 12, 31, 23)])
@pytest.mark.parametrize("expr", ["friday", "last weekend", "this weekend", "3 days ago", "december 31",
                                  "since monday", "next week", "after 9999-12-31", "before 0001-01-01",
                                  "today utc+2", "2 weeks ago -05:00", "this friday",
                                  # parts of a month not yet begun in year 1: mid-November raised
                                  "early november", "mid-November", "late november", "mid-December",
                                  "q4", "last november"])
def test_the_ends_of_the_calendar_never_raise(now, expr):
    reading = read_time_expression(expr, now)  # a window or a reason, never an exception
    assert reading.error is not None or reading.start is None or reading.end is None \
        or reading.start <= reading.end


# -- the table in docs/time-expressions.md is what the grammar does ------------------------------


def documented_rows() -> tuple[datetime, list[tuple[str, str, str]]]:
    text = (REPO / "docs" / "time-expressions.md").read_text(encoding="utf-8")
    section = text.split("<!-- time-grammar-table -->")[1]
    now = re.search(r"now = `([^`]+)`", section).group(1)
    rows = re.findall(r"^\| `([^`]+)` \| (.+?) \| (.+?) \|$", section, re.MULTILINE)
    return datetime.fromisoformat(now), rows


def test_documented_table_matches_the_grammar():
    now, rows = documented_rows()
    assert len(rows) >= 30

    def shown(value: datetime | None) -> str:
        return "open" if value is None else value.isoformat().replace("+00:00", "Z")

    for expr, start, end in rows:
        reading = read_time_expression(expr, now)
        if start == "not understood":
            assert reading.error is not None, expr
            continue
        assert (shown(reading.start), shown(reading.end)) == (start.strip("`"), end.strip("`")), expr


# -- through every interface ---------------------------------------------------------------------


@pytest.fixture(scope="module")
def db(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("time") / "memory.db"
    with MemoryStore(path, embedder="hash") as store:
        store.store("Deployed the billing service", timestamp="2026-11-27T10:00:00Z")
        store.store("Planned the launch party", timestamp="2026-11-20T10:00:00Z")
        store.store("Old decision about caching", timestamp="2025-03-01T10:00:00Z")
    return path


def test_python_api_reports_the_window_and_warns(db):
    with MemoryStore(db, embedder="hash") as store:
        understood = store.recall(time_query="last 2 weeks", now=NOW, limit=10)
        assert understood["time_window"] == {"start": "2026-11-18T15:30:00+00:00",
                                             "end": "2026-12-02T15:30:00+00:00",
                                             "expression": "last 2 weeks", "timezone": "UTC"}
        assert understood["count"] == 2 and "warnings" not in understood
        month = store.recall(time_query="march 2025", now=NOW, limit=10)
        assert [r["memory"]["content"] for r in month["results"]] == ["Old decision about caching"]
        unknown = store.recall(time_query="the day before the launch", now=NOW, limit=10)
        assert unknown["count"] == 3  # no window applied ...
        assert unknown["time_window"]["start"] is None and unknown["time_window"]["end"] is None
        assert "not understood" in unknown["warnings"][0] and "launch" in unknown["warnings"][0]
        with pytest.raises(ValidationError, match="time_query.*not understood"):
            store.recall(time_query="the day before the launch", strict_time=True)
        assert "time_window" not in store.recall("billing")  # no time asked for: as before


def cli(db: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {"PYTHONPATH": str(REPO), "PATH": "/usr/bin:/bin", "PYTHONIOENCODING": "utf-8", "LOCALMEM_DAEMON": "0"}
    return subprocess.run([sys.executable, "-m", "localmem", "--db", str(db), "--embedder", "hash",
                           *args], capture_output=True, text=True, env=env, timeout=120, check=False)


def test_cli_warns_on_stderr_and_strict_time_exits_2(db):
    run = cli(db, "recall", "--time-query", "the day before the launch", "--json")
    assert run.returncode == 0, run.stderr
    assert "warning: time_query 'the day before the launch' was not understood" in run.stderr
    body = json.loads(run.stdout)
    assert body["count"] == 3 and body["warnings"]
    window = cli(db, "recall", "--time-query", "since 2026-11-25")
    assert window.returncode == 0 and "1 result" in window.stdout and window.stderr == ""
    strict = cli(db, "recall", "--time-query", "the day before the launch", "--strict-time")
    assert strict.returncode == 2 and "time_query" in strict.stderr and "Traceback" not in strict.stderr


def test_http_says_the_window_and_strict_time_is_a_400(db):
    pytest.importorskip("uvicorn")
    import httpx
    from test_http import running

    from localmem.http.app import create_app

    with MemoryStore(db, embedder="hash") as store, running(create_app(store, token="t")) as url, \
            httpx.Client(base_url=url, headers={"Authorization": "Bearer t"}) as http:
        ok = http.get("/recall", params={"time_query": "2026-11-27", "limit": 10})
        assert ok.status_code == 200 and ok.json()["count"] == 1
        assert ok.json()["time_window"]["end"] == "2026-11-27T23:59:59.999999+00:00"
        unknown = http.get("/recall", params={"time_query": "the day before the launch"})
        assert unknown.status_code == 200 and "not understood" in unknown.json()["warnings"][0]
        strict = http.get("/recall", params={"time_query": "the day before the launch",
                                             "strict_time": "true"})
        assert strict.status_code == 400 and "time_query" in strict.json()["message"]


def test_mcp_text_has_a_warning_line(db):
    pytest.importorskip("mcp")
    from test_mcp import StdioServer

    server = StdioServer(db)
    try:
        result = server.call("recall_memory", {"time_query": "the day before the launch"})
        assert not result.is_error
        assert result.content[0].text.startswith(
            "Warning: time_query 'the day before the launch' was not understood")
        assert result.structured_content["warnings"] and result.structured_content["time_window"]
        strict = server.call("recall_memory", {"time_query": "the day before the launch",
                                               "strict_time": True})
        assert strict.is_error and "time_query" in strict.content[0].text
    finally:
        server.close()
