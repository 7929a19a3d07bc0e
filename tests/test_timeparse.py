from __future__ import annotations

import math
from datetime import date, datetime, timedelta, timezone

import pytest
from hypothesis import given
from hypothesis import strategies as st

from localmem.errors import ValidationError
from localmem.timeparse import (
    format_timestamp,
    parse_time_expression,
    parse_timestamp,
    query_has_temporal_intent,
    resolve_time_window,
)

UTC = timezone.utc
NOW = datetime(2025, 3, 12, 15, 30, tzinfo=UTC)  # a Wednesday
MIN_UTC = datetime.min.replace(tzinfo=UTC)
MAX_UTC = datetime.max.replace(tzinfo=UTC)


def utc(*args: int) -> datetime:
    return datetime(*args, tzinfo=UTC)


# --- parse_timestamp -------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("2025-01-15T10:30:00Z", utc(2025, 1, 15, 10, 30)),
        ("2025-01-15T10:30:00z", utc(2025, 1, 15, 10, 30)),
        ("2025-01-15T10:30:00", utc(2025, 1, 15, 10, 30)),  # naive → UTC
        ("2025-01-15 10:30:00", utc(2025, 1, 15, 10, 30)),
        ("2025-01-15", utc(2025, 1, 15)),
        ("  2025-01-15T10:30:00+00:00\n", utc(2025, 1, 15, 10, 30)),
        ("2025-01-15T10:30:00+05:30", utc(2025, 1, 15, 5, 0)),
        ("2025-01-15T10:30:00-08:00", utc(2025, 1, 15, 18, 30)),
        ("2025-01-15T10:30:00.123456Z", utc(2025, 1, 15, 10, 30, 0, 123456)),
        ("2025-01", utc(2025, 1, 1)),  # only dateutil's isoparse accepts this
        (0, utc(1970, 1, 1)),
        (1736937000, utc(2025, 1, 15, 10, 30)),
        (1736937000.5, utc(2025, 1, 15, 10, 30, 0, 500000)),
        (datetime(2025, 1, 15, 10, 30), utc(2025, 1, 15, 10, 30)),
        (
            datetime(2025, 1, 15, 10, 30, tzinfo=timezone(timedelta(hours=2))),
            utc(2025, 1, 15, 8, 30),
        ),
    ],
)
def test_parse_timestamp_accepts(value: object, expected: datetime) -> None:
    parsed = parse_timestamp(value)
    assert parsed == expected
    assert parsed.utcoffset() == timedelta(0)


@pytest.mark.parametrize(
    "value",
    [
        True,
        False,
        math.nan,
        math.inf,
        -math.inf,
        1e20,
        10**30,
        "",
        "   ",
        "not a date",
        "yesterday",
        "2025-13-01",
        "2025-02-30",
        "1736937000",  # epoch seconds are accepted as numbers, not as text
        "Jan 15 2025",  # no fuzzy parsing
        "9999-12-31T23:00:00-05:00",  # beyond datetime.max once in UTC
        None,
        [],
        {"ts": 1},
        date(2025, 1, 15),
    ],
)
def test_parse_timestamp_rejects(value: object) -> None:
    with pytest.raises(ValidationError) as excinfo:
        parse_timestamp(value)
    assert excinfo.value.message == "Invalid timestamp: Invalid ISO timestamp"
    assert excinfo.value.code == 400


def test_parse_timestamp_field_name_in_message() -> None:
    with pytest.raises(ValidationError, match=r"^Invalid t_valid: Invalid ISO timestamp$"):
        parse_timestamp("garbage", field="t_valid")


# --- format_timestamp ------------------------------------------------------


def test_format_timestamp_shapes() -> None:
    assert format_timestamp(utc(2025, 1, 15, 10, 30)) == "2025-01-15T10:30:00+00:00"
    assert (
        format_timestamp(utc(2025, 1, 15, 10, 30, 0, 123456))
        == "2025-01-15T10:30:00.123456+00:00"
    )
    assert format_timestamp(datetime(2025, 1, 15, 10, 30)) == "2025-01-15T10:30:00+00:00"
    est = timezone(timedelta(hours=-5))
    assert (
        format_timestamp(datetime(2025, 1, 15, 22, 0, tzinfo=est))
        == "2025-01-16T03:00:00+00:00"
    )


def test_format_then_parse_round_trips() -> None:
    value = utc(2024, 2, 29, 23, 59, 59, 999999)
    assert parse_timestamp(format_timestamp(value)) == value


@given(
    st.lists(
        st.datetimes(min_value=datetime(1000, 1, 1), max_value=datetime(9999, 12, 30)),
        min_size=2,
        max_size=20,
    )
)
def test_formatted_strings_sort_chronologically(values: list[datetime]) -> None:
    strings = [format_timestamp(v) for v in values]
    assert sorted(strings) == [format_timestamp(v) for v in sorted(values)]


# --- parse_time_expression -------------------------------------------------


@pytest.mark.parametrize(
    ("expr", "start", "end"),
    [
        ("today", utc(2025, 3, 12), utc(2025, 3, 13)),
        ("this day", utc(2025, 3, 12), utc(2025, 3, 13)),
        ("yesterday", utc(2025, 3, 11), utc(2025, 3, 12)),
        ("last 24 hours", utc(2025, 3, 11, 15, 30), NOW),
        ("past 24 hours", utc(2025, 3, 11, 15, 30), NOW),
        ("last 48 hours", utc(2025, 3, 10, 15, 30), NOW),
        ("past 48 hours", utc(2025, 3, 10, 15, 30), NOW),
        ("this week", utc(2025, 3, 10), utc(2025, 3, 17)),
        ("last week", utc(2025, 3, 3), utc(2025, 3, 10)),
        ("past week", utc(2025, 3, 3), utc(2025, 3, 10)),
        ("this month", utc(2025, 3, 1), utc(2025, 4, 1)),
        ("last month", utc(2025, 2, 1), utc(2025, 3, 1)),
        ("past month", utc(2025, 2, 1), utc(2025, 3, 1)),
        ("last 7 days", utc(2025, 3, 5, 15, 30), NOW),
        ("last 30 days", utc(2025, 2, 10, 15, 30), NOW),
        ("last 1 days", utc(2025, 3, 11, 15, 30), NOW),
        ("last 0 days", NOW, NOW),
        ("last year", utc(2024, 1, 1), utc(2025, 1, 1)),
        ("past year", utc(2024, 1, 1), utc(2025, 1, 1)),
        ("this year", utc(2025, 1, 1), utc(2026, 1, 1)),
    ],
)
def test_time_expressions(expr: str, start: datetime, end: datetime) -> None:
    assert parse_time_expression(expr, NOW) == (start, end)


def test_time_expression_is_case_and_whitespace_insensitive() -> None:
    assert parse_time_expression("  Last Week \n", NOW) == (utc(2025, 3, 3), utc(2025, 3, 10))
    assert parse_time_expression("LAST 7 DAYS", NOW) == (utc(2025, 3, 5, 15, 30), NOW)


@pytest.mark.parametrize(
    "expr",
    [
        None,
        "",
        "   ",
        # AutoMem knows none of these either; "past 7 days", "last seven days",
        # "2 weeks ago" and ISO dates are understood (tests/test_time_grammar.py).
        "last 7.5 days",
        "last 7 whole days",
        "last  days",
        "lastweek",
        "next week",
        "tomorrow",
    ],
)
def test_unknown_time_expressions(expr: str | None) -> None:
    assert parse_time_expression(expr, NOW) == (None, None)


def test_last_n_days_negative_is_not_an_inverted_window() -> None:
    assert parse_time_expression("last -3 days", NOW) == (None, None)


@pytest.mark.parametrize("n", [800_000, 999_999_999, 10**12])
def test_last_n_days_huge_clamps_to_min(n: int) -> None:
    assert parse_time_expression(f"last {n} days", NOW) == (MIN_UTC, NOW)


def test_january_last_month_and_last_year() -> None:
    now = utc(2025, 1, 20, 9, 0)
    assert parse_time_expression("last month", now) == (utc(2024, 12, 1), utc(2025, 1, 1))
    assert parse_time_expression("last year", now) == (utc(2024, 1, 1), utc(2025, 1, 1))


def test_december_this_month_rolls_into_next_year() -> None:
    now = utc(2024, 12, 5, 9, 0)
    assert parse_time_expression("this month", now) == (utc(2024, 12, 1), utc(2025, 1, 1))
    assert parse_time_expression("last month", now) == (utc(2024, 11, 1), utc(2024, 12, 1))


def test_week_on_monday_and_sunday() -> None:
    monday = utc(2025, 3, 10, 0, 0)
    assert parse_time_expression("this week", monday) == (utc(2025, 3, 10), utc(2025, 3, 17))
    assert parse_time_expression("last week", monday) == (utc(2025, 3, 3), utc(2025, 3, 10))
    sunday = utc(2025, 3, 16, 23, 59)
    assert parse_time_expression("this week", sunday) == (utc(2025, 3, 10), utc(2025, 3, 17))


def test_week_across_year_boundary() -> None:
    # 2025-01-01 is a Wednesday; its ISO week starts on Monday 2024-12-30.
    now = utc(2025, 1, 1, 12, 0)
    assert parse_time_expression("this week", now) == (utc(2024, 12, 30), utc(2025, 1, 6))
    assert parse_time_expression("last week", now) == (utc(2024, 12, 23), utc(2024, 12, 30))


def test_non_utc_now_is_converted_before_computing_boundaries() -> None:
    # 23:30 in New York on the 12th is already the 13th in UTC.
    now = datetime(2025, 3, 12, 23, 30, tzinfo=timezone(timedelta(hours=-5)))
    start, end = parse_time_expression("today", now)
    assert (start, end) == (utc(2025, 3, 13), utc(2025, 3, 14))
    assert start is not None and start.utcoffset() == timedelta(0)
    assert parse_time_expression("last 24 hours", now) == (
        utc(2025, 3, 12, 4, 30),
        utc(2025, 3, 13, 4, 30),
    )


def test_naive_now_is_taken_as_utc() -> None:
    naive = datetime(2025, 3, 12, 15, 30)
    assert parse_time_expression("today", naive) == (utc(2025, 3, 12), utc(2025, 3, 13))


def test_year_9999_and_year_1_do_not_crash() -> None:
    late = utc(9999, 12, 31, 12, 0)
    assert parse_time_expression("this year", late) == (utc(9999, 1, 1), late)
    assert parse_time_expression("this month", late) == (utc(9999, 12, 1), MAX_UTC)
    assert parse_time_expression("today", late) == (utc(9999, 12, 31), MAX_UTC)
    early = utc(1, 1, 1, 12, 0)
    assert parse_time_expression("yesterday", early) == (MIN_UTC, utc(1, 1, 1))
    assert parse_time_expression("last month", early) == (MIN_UTC, utc(1, 1, 1))
    assert parse_time_expression("last year", early) == (MIN_UTC, utc(1, 1, 1))
    assert parse_time_expression("last 48 hours", early) == (MIN_UTC, early)


# --- resolve_time_window ---------------------------------------------------


def test_resolve_without_overrides_uses_time_query() -> None:
    assert resolve_time_window("last week", None, None, NOW) == (
        utc(2025, 3, 3),
        utc(2025, 3, 10),
    )


def test_resolve_explicit_start_overrides_start_only() -> None:
    assert resolve_time_window("last week", "2025-03-05T00:00:00Z", None, NOW) == (
        utc(2025, 3, 5),
        utc(2025, 3, 10),
    )


def test_resolve_explicit_end_overrides_end_only() -> None:
    assert resolve_time_window("last week", None, "2025-03-04", NOW) == (
        utc(2025, 3, 3),
        utc(2025, 3, 4),
    )


def test_resolve_both_overrides_and_datetime_inputs() -> None:
    start = datetime(2025, 1, 1, 12, 0)  # naive → UTC
    end = utc(2025, 1, 31)
    assert resolve_time_window("this month", start, end, NOW) == (utc(2025, 1, 1, 12, 0), end)


def test_resolve_unknown_query_leaves_only_explicit_bounds() -> None:
    assert resolve_time_window("sometime", None, "2025-03-01", NOW) == (None, utc(2025, 3, 1))
    assert resolve_time_window(None, None, None, NOW) == (None, None)


def test_resolve_blank_bounds_are_absent() -> None:
    assert resolve_time_window("today", "", "  ", NOW) == (utc(2025, 3, 12), utc(2025, 3, 13))


def test_resolve_invalid_bounds_raise_with_field_names() -> None:
    with pytest.raises(ValidationError, match=r"^Invalid start time: Invalid ISO timestamp$"):
        resolve_time_window("today", "nope", None, NOW)
    with pytest.raises(ValidationError, match=r"^Invalid end time: Invalid ISO timestamp$"):
        resolve_time_window("today", None, "2025-99-99", NOW)


def test_resolve_defaults_now_to_current_time() -> None:
    before = datetime.now(UTC)
    start, end = resolve_time_window("last 24 hours", None, None)
    after = datetime.now(UTC)
    assert start is not None and end is not None
    assert before <= end <= after
    assert end - start == timedelta(hours=24)


# --- temporal intent -------------------------------------------------------


@pytest.mark.parametrize(
    "query",
    [
        "what is the latest version",
        "Most Recent deploy",
        "most  recent deploy",
        "which editor do I currently use",
        "current database",
        "what changed in auth",
        "who updated the config",
        "last time we migrated",
        "what do I use these days",
        "do I still use vim anymore",
        "Today's standup",
        "what is it now?",
    ],
)
def test_temporal_intent_detected(query: str) -> None:
    assert query_has_temporal_intent(query)


@pytest.mark.parametrize(
    "query",
    ["", "knowledge base", "snowboard trip", "update the docs", "recent", "last week", "timeline"],
)
def test_temporal_intent_absent(query: str) -> None:
    assert not query_has_temporal_intent(query)
