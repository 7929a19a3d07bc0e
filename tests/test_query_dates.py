"""Calendar dates named in a query: found in free text (timegrammar/mentions.py), read by
the learned-rank model as each candidate's distance from the date, and reported — a hint
for ranking, never a filter (issue 16)."""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from datetime import datetime, timezone

import pytest

from localmem import Config
from localmem.errors import ConfigError
from localmem.recall.learned_rank import FEATURES, TreeModel, pool_features
from localmem.timegrammar.mentions import MAX_ANCHORS, find_calendar_mention

from store_helpers import new_store
from test_learned_rank import candidate, column, model_dict, tree

NOW = datetime(2026, 12, 2, 12, 0, tzinfo=timezone.utc)
DISTANCE = FEATURES.index("date_distance")


def day(text: str) -> datetime:
    return datetime.fromisoformat(text).replace(tzinfo=timezone.utc)


# -- finding the date ------------------------------------------------------------------------------


@pytest.mark.parametrize("query, expression, start, end, has_year", [
    ("What did Gina find for her store on 1 February, 2023?", "1 February, 2023",
     "2023-02-01T00:00:00", "2023-02-01T23:59:59.999999", True),
    ("the week before August 3, 2023", "August 3, 2023", "2023-08-03T00:00:00", "2023-08-03T23:59:59.999999", True),
    ("notes from the 1st of May 2024 release", "1st of May 2024",
     "2024-05-01T00:00:00", "2024-05-01T23:59:59.999999", True),
    ("what broke in May 2023", "May 2023", "2023-05-01T00:00:00", "2023-05-31T23:59:59.999999", True),
    ("what broke in may 2023", "may 2023", "2023-05-01T00:00:00", "2023-05-31T23:59:59.999999", True),
    ("deploys on 2024-06-03 and later", "2024-06-03", "2024-06-03T00:00:00", "2024-06-03T23:59:59.999999", True),
    ("beach trips in 2023?", "2023", "2023-01-01T00:00:00", "2023-12-31T23:59:59.999999", True),
    ("When did we go camping in June?", "June", "2026-06-01T00:00:00", "2026-06-30T23:59:59.999999", False),
    ("what happened on June 5", "June 5", "2026-06-05T00:00:00", "2026-06-05T23:59:59.999999", False),
])
def test_the_longest_calendar_date_in_a_query_is_found(query, expression, start, end, has_year):
    mention = find_calendar_mention(query, NOW)
    assert mention is not None
    assert (mention.expression, mention.has_year) == (expression, has_year)
    assert (mention.start, mention.end) == (day(start), day(end))


@pytest.mark.parametrize("query", [
    "May I ask what the plan was?",       # the verb, opening the text
    "what may happen to the cache",        # lower case: a word, not the month
    "it may on 3 occasions fail",
    "I march on regardless",
    "what runs on port 8080",              # a number outside 1900-2100 is no year
    "the 12 steps and 3 days of work",     # counts are not dates
    "rooms 1 2 3 4 5 6 7 8 9 10 11 12",
    "anything from last week",             # relative phrases only with relative=True (below)
    "3 days ago",
    "before May 2023",                     # a composed window: the date inside it is found
])
def test_words_and_numbers_that_are_not_a_calendar_date_are_left_alone(query):
    mention = find_calendar_mention(query, NOW)
    if query == "before May 2023":
        assert mention is not None and mention.expression == "May 2023"
    else:
        assert mention is None


@pytest.mark.parametrize("query, expression, start, end", [
    ("What is the artist I started to listen to last Friday?", "last Friday",
     "2026-11-27T00:00:00", "2026-11-27T23:59:59.999999"),
    ("what did I buy two weeks ago", "two weeks ago", "2026-11-16T00:00:00", "2026-11-22T23:59:59.999999"),
    ("the three trips I took in the past three months", "past three months",
     "2026-09-02T12:00:00", "2026-12-02T12:00:00"),
    ("what did we fix yesterday", "yesterday", "2026-12-01T00:00:00", "2026-12-02T00:00:00"),
    ("notes from last month", "last month", "2026-11-01T00:00:00", "2026-12-01T00:00:00"),
    ("what did I do last Friday on 3 March 2025", "3 March 2025",  # a calendar date first
     "2025-03-03T00:00:00", "2025-03-03T23:59:59.999999"),
])
def test_a_relative_date_is_read_against_now_when_asked(query, expression, start, end):
    assert find_calendar_mention(query, NOW) is None or expression == "3 March 2025"
    mention = find_calendar_mention(query, NOW, relative=True)
    assert mention is not None
    assert (mention.expression, mention.has_year) == (expression, True)
    assert (mention.start, mention.end) == (day(start), day(end))


@pytest.mark.parametrize("query", [
    "When was the last time I went hiking?",
    "I came back a while ago",
    "How many days ago did I order the gift?",  # a question about a span, not a period
    "the past is past",
    "what is this about",
    "what is on this weekend",                  # under way or to come, not past
    "the plan for next Friday",
])
def test_words_that_name_no_past_period_are_left_alone_when_relative(query):
    assert find_calendar_mention(query, NOW, relative=True) is None


@pytest.mark.parametrize("text", ["\x00 May 2023", "May 2023 \ud800", "x" * 1_000_000, "1 " * 500_000])
def test_hostile_text_is_read_without_error(text):
    for relative in (False, True):
        mention = find_calendar_mention(text, NOW, relative=relative)
        assert mention is None or mention.expression == "May 2023"
    assert find_calendar_mention("ago " * 100_000, NOW, relative=True) is None  # anchors stay bounded


def test_only_the_first_anchors_of_a_long_text_are_tried():
    filler = " ".join(["may"] * MAX_ANCHORS)  # each could begin a date; none is one
    assert find_calendar_mention(f"{filler} on 3 March 2025", NOW) is None
    assert find_calendar_mention(f"on 3 March 2025 {filler}", NOW).expression == "3 March 2025"


def test_distance_is_zero_inside_the_period_and_days_outside_it():
    mention = find_calendar_mention("on 1 February, 2023", NOW)
    assert mention.days_from(day("2023-02-01T18:00:00")) == 0.0
    assert mention.days_from(day("2023-02-04T00:00:00")) == pytest.approx(2.0, abs=1e-6)
    assert mention.days_from(day("2023-01-30T00:00:00")) == pytest.approx(2.0)
    assert mention.days_from(day("2024-02-01T12:00:00")) == pytest.approx(364.5, abs=1e-3)  # a year gives no slack


def test_a_date_without_a_year_is_taken_in_the_year_nearest_each_memory():
    june = find_calendar_mention("camping in June?", NOW)
    assert june.days_from(day("2019-06-20T10:00:00")) == 0.0
    assert june.days_from(day("2023-07-02T00:00:00")) == pytest.approx(1.0, abs=1e-6)
    new_year = find_calendar_mention("what did we do on December 31", NOW)
    assert new_year.days_from(day("2024-01-01T12:00:00")) == pytest.approx(0.5, abs=1e-6)  # the December before
    leap = find_calendar_mention("on February 29", datetime(2024, 3, 1, tzinfo=timezone.utc))
    assert leap.days_from(day("2024-02-29T08:00:00")) == 0.0
    assert math.isfinite(leap.days_from(day("2023-03-01T00:00:00")))  # 2023 has no 29 February


# -- as features -----------------------------------------------------------------------------------


def test_pool_features_give_each_candidate_its_distance_from_the_date():
    pool = [candidate(1, 0.9, 0.8, 0.2, timestamp="2023-02-01T10:00:00+00:00"),
            candidate(2, 0.5, 0.3, 0.7, timestamp="2023-02-11T00:00:00+00:00"),
            candidate(3, 0.7, 0.5, 0.5, timestamp="not a time")]
    mention = find_calendar_mention("on 1 February, 2023", NOW)
    rows = pool_features(pool, "what did she find on 1 February, 2023", mention)
    assert column(rows, "names_date") == [1.0, 1.0, 1.0]
    assert column(rows, "date_distance") == [0.0, round(math.log1p(9.0), 6), -1.0]
    plain = pool_features(pool, "what did she find")
    assert column(plain, "names_date") == [0.0] * 3
    assert column(plain, "date_distance") == [-1.0] * 3


# -- in recall and recall_v1 -----------------------------------------------------------------------


def dated_store():
    store = new_store()
    ids = {when: store.store(f"Went to the farmers market and bought {what}", timestamp=when)
           for when, what in (("2023-02-01T09:00:00Z", "apples"), ("2023-05-20T09:00:00Z", "pears"),
                              ("2023-08-14T09:00:00Z", "plums"))}
    # Prefers memories within a day of the date the query names (log1p(1) ≈ 0.69).
    store.learned_model = TreeModel.from_dict(model_dict([tree(DISTANCE, 0.7, 6.0, -6.0)]))
    return store, ids


def test_a_memory_from_the_named_date_is_ranked_first_and_the_answer_names_the_date():
    store, ids = dated_store()
    plain = store.recall("what did I buy at the farmers market")
    assert plain["learned_rank"] == {"applied": True, "candidates": 3}  # no date: no date block
    for query, when in (("what did I buy at the farmers market on 20 May 2023", "2023-05-20T09:00:00Z"),
                        ("farmers market in August 2023", "2023-08-14T09:00:00Z")):
        response = store.recall(query)
        assert response["results"][0]["id"] == ids[when]
        (date,) = response["learned_rank"]["dates_in_query"]
        assert date["has_year"] is True and date["start"].startswith(when[:4])
        assert len(response["results"]) == 3  # a hint, not a filter


def test_recall_v1_reads_the_named_date_too():
    store, ids = dated_store()
    response = store.recall_v1("farmers market 1 February 2023", k=3)
    assert response["results"][0]["memory_id"] == ids["2023-02-01T09:00:00Z"]
    assert response["learned_rank"]["dates_in_query"][0]["expression"] == "1 February 2023"
    assert len(response["results"]) == 3


def busy_store():
    """A memory of 20 May 2023 that shares nothing with the question, among 300 that do."""
    store = new_store()
    for n in range(300):
        store.store(f"What I did on day {n}: did the usual things I did", timestamp=f"2022-{n % 12 + 1:02d}-10T09:00:00Z")
    roses = store.store("Spent the afternoon pruning roses", timestamp="2023-05-20T15:00:00Z")
    store.learned_model = TreeModel.from_dict(model_dict([tree(DISTANCE, 0.7, 6.0, -6.0)]))
    return store, roses


def test_the_named_dates_memories_join_the_candidates_the_other_channels_missed():
    store, roses = busy_store()
    missed = store.recall("what did I do on day 20", limit=5)
    assert roses not in [r["id"] for r in missed["results"]]
    response = store.recall("what did I do on 20 May 2023", limit=5)
    assert response["results"][0]["id"] == roses
    (date,) = response["learned_rank"]["dates_in_query"]
    assert date["expression"] == "20 May 2023" and date["added_candidates"] == 1


def test_recall_reads_a_relative_date_against_the_requests_now_when_asked_to():
    store, roses = busy_store()  # roses: 20 May 2023, a Saturday
    off = store.recall("what did I do last Saturday", limit=5, now="2023-05-24T10:00:00Z")
    assert "dates_in_query" not in off["learned_rank"] and roses not in [r["id"] for r in off["results"]]
    store.config = Config.from_env({"LOCALMEM_QUERY_RELATIVE_DATES": "1"})
    response = store.recall("what did I do last Saturday", limit=5, now="2023-05-24T10:00:00Z")
    assert response["results"][0]["id"] == roses
    (date,) = response["learned_rank"]["dates_in_query"]
    assert date["expression"] == "last Saturday" and date["start"] == "2023-05-20T00:00:00+00:00"
    assert date["added_candidates"] == 1
    later = store.recall("what did I do last Saturday", limit=5, now="2023-06-07T10:00:00Z")
    assert later["learned_rank"]["dates_in_query"][0]["start"] == "2023-06-03T00:00:00+00:00"
    assert roses not in [r["id"] for r in later["results"]]


@pytest.mark.parametrize("query, window", [
    ("what did I do on 20 May 2023", {"end": "2022-12-31T23:59:59Z"}),  # the request's window excludes it
    ("what did I do on May 20", {}),                                       # no year: no day to search
])
def test_no_dated_candidates_without_a_day_inside_the_request(query, window):
    store, roses = busy_store()
    response = store.recall(query, limit=5, **window)
    assert len(response["results"]) == 5 and roses not in [r["id"] for r in response["results"]]
    (date,) = response["learned_rank"]["dates_in_query"]
    assert date["added_candidates"] == 0


def test_without_the_learned_model_no_date_is_read():
    store, roses = busy_store()
    store.learned_model = None
    response = store.recall("what did I do on 20 May 2023", limit=5)
    assert response["learned_rank"]["applied"] is False and "dates_in_query" not in response["learned_rank"]
    assert roses not in [r["id"] for r in response["results"]]


def test_query_dates_off_reads_no_date_and_adds_no_candidates():
    assert Config.from_env({}).query_dates is True
    config = Config.from_env({"LOCALMEM_QUERY_DATES": "0"})
    assert config.query_dates is False
    with pytest.raises(ConfigError, match="LOCALMEM_QUERY_DATES must be a boolean"):
        Config.from_env({"LOCALMEM_QUERY_DATES": "sometimes"})
    assert Config.from_env({}).query_relative_dates is False
    with pytest.raises(ConfigError, match="LOCALMEM_QUERY_RELATIVE_DATES must be a boolean"):
        Config.from_env({"LOCALMEM_QUERY_RELATIVE_DATES": "sometimes"})
    store, roses = busy_store()
    store.config = config
    response = store.recall("what did I do on 20 May 2023", limit=5)
    assert response["learned_rank"]["applied"] is True
    assert "dates_in_query" not in response["learned_rank"]
    assert roses not in [r["id"] for r in response["results"]]
    assert "dates_in_query" not in store.recall_v1("farmers market 1 February 2023", k=3)["learned_rank"]


def test_the_cli_summary_names_the_date_it_ranked_by(tmp_path, monkeypatch, capsys):
    from localmem import MemoryStore
    from localmem.cli import main

    path = tmp_path / "memory.db"
    with MemoryStore(str(path), embedder="hash") as store:
        store.store("Went to the farmers market and bought pears", timestamp="2023-05-20T09:00:00Z")
    model = tmp_path / "dates.json"
    model.write_text(json.dumps(model_dict([tree(DISTANCE, 0.7, 6.0, -6.0)])))
    monkeypatch.setenv("LOCALMEM_LEARNED_RANK_MODEL", str(model))
    assert main(["--db", str(path), "--embedder", "hash", "recall", "farmers market on 20 May 2023"]) == 0
    captured = capsys.readouterr()
    assert "date in the query ranked by: 20 May 2023 (a hint, not a filter)" in captured.out + captured.err


# -- a relative period that holds none of the store's memories ---------------------------------------


def scored(response: dict) -> list[tuple[str, float]]:
    return [(r["id"], round(r["final_score"], 9)) for r in response["results"]]


@pytest.mark.parametrize("now", [
    "2023-06-07T10:00:00Z",   # "last Saturday" is 3 June: after every memory
    "2031-01-15T10:00:00Z",   # years after the store, as a question asked long after a conversation
    "2021-03-03T10:00:00Z",   # before the first memory
])
def test_a_relative_period_no_memory_falls_in_changes_nothing_and_the_answer_says_so(now):
    store, roses = busy_store()
    off = store.recall("what did I do last Saturday", limit=10, now=now)
    store.config = Config.from_env({"LOCALMEM_QUERY_RELATIVE_DATES": "1"})
    on = store.recall("what did I do last Saturday", limit=10, now=now)
    # The model reads names_date and date_distance: had the period been read, every score would move.
    assert scored(on) == scored(off)
    (date,) = on["learned_rank"]["dates_in_query"]
    assert date["expression"] == "last Saturday" and date["relative"] is True
    assert date["ignored"] == "no memory in scope falls in this period" and date["added_candidates"] == 0


def test_a_relative_period_is_judged_within_the_requests_scope():
    store, roses = busy_store()  # roses: 20 May 2023, untagged
    store.config = Config.from_env({"LOCALMEM_QUERY_RELATIVE_DATES": "1"})
    mine = store.store("Fixed the garden gate", tags=["mine"], timestamp="2023-04-02T10:00:00Z")
    query, now = "what did I do last Saturday", "2023-05-24T10:00:00Z"
    scoped = store.recall(query, limit=5, now=now, tags=["mine"])
    assert [r["id"] for r in scoped["results"]] == [mine]
    assert scoped["learned_rank"]["dates_in_query"][0]["ignored"]  # roses is outside the scope
    unscoped = store.recall(query, limit=5, now=now)
    (date,) = unscoped["learned_rank"]["dates_in_query"]
    assert "ignored" not in date and date["added_candidates"] == 1 and unscoped["results"][0]["id"] == roses


def test_recall_v1_ignores_a_relative_period_none_of_its_candidates_falls_in():
    store, ids = dated_store()
    store.config = Config.from_env({"LOCALMEM_QUERY_RELATIVE_DATES": "1"})
    inside = store.recall_v1("farmers market last week", k=3, now="2023-05-24T10:00:00Z")
    (date,) = inside["learned_rank"]["dates_in_query"]
    assert "ignored" not in date and inside["results"][0]["memory_id"] == ids["2023-05-20T09:00:00Z"]
    far = store.recall_v1("farmers market last week", k=3, now="2030-05-24T10:00:00Z")
    assert far["learned_rank"]["dates_in_query"][0]["ignored"] == "no candidate falls in this period"
    store.config = Config.from_env({})
    plain = store.recall_v1("farmers market last week", k=3, now="2030-05-24T10:00:00Z")
    assert [(r["memory_id"], r["score"]) for r in far["results"]] == [
        (r["memory_id"], r["score"]) for r in plain["results"]]


def test_the_cli_summary_says_a_relative_period_was_not_used(tmp_path):
    path = tmp_path / "memory.db"
    model = tmp_path / "dates.json"
    model.write_text(json.dumps(model_dict([tree(DISTANCE, 0.7, 6.0, -6.0)])))
    env = dict(os.environ, LOCALMEM_LEARNED_RANK_MODEL=str(model), LOCALMEM_QUERY_RELATIVE_DATES="1")
    cli = [sys.executable, "-m", "localmem", "--db", str(path), "--embedder", "hash"]
    subprocess.run([*cli, "store", "Went to the farmers market and bought pears",
                    "--timestamp", "2023-05-20T09:00:00Z"], check=True, env=env, capture_output=True)
    out = subprocess.run([*cli, "recall", "farmers market last week"],  # asked today, years later
                         check=True, env=env, capture_output=True, text=True)
    assert ("date in the query not used: last week (no memory in scope falls in this period)"
            in out.stdout + out.stderr)
