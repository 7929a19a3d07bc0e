"""When the LoCoMo runner asks its questions (benchmarks/quality/locomo.py --asked-at): today,
years after the conversations, or at each conversation's last session."""

from __future__ import annotations

import json

import pytest

from benchmarks.quality import locomo
from localmem import Config
from localmem.embedders.resolve import resolve_embedder
from tests.two_shape_data import LOCOMO

pytestmark = pytest.mark.skipif(not LOCOMO.exists(), reason="the shared LoCoMo dev file is not here")


def small_store(questions: int = 12):
    sample = json.loads(LOCOMO.read_text())[0]
    sample["qa"] = sample["qa"][:questions]
    store, questions = locomo.build_store([sample], resolve_embedder("hash"), ":memory:", Config.from_env({}))
    locomo.build_bm25_baseline(store)
    return store, questions


def test_each_question_knows_its_conversations_last_session_and_is_asked_then_on_request():
    store, questions = small_store()
    with store:
        last = max(t["timestamp"] for t in locomo.turns_of(json.loads(LOCOMO.read_text())[0]))
        assert questions and all(q["last_session"] == last for q in questions)
        assert locomo.asking(questions[0], "today") == {}
        assert locomo.asking(questions[0], "last-session") == {"now": last}
        with pytest.raises(ValueError, match="asked_at must be one of today, last-session"):
            locomo.asking(questions[0], "yesterday")
        # Asked at the last session, nothing stored is in the future: every question still finds
        # its conversation's turns, and the answers are the same memories ranked at that time.
        response = store.recall(questions[0]["question"], tags=[questions[0]["conv_tag"]], limit=20,
                                adaptive_floor=False, **locomo.asking(questions[0], "last-session"))
        assert response["results"] and not (response.get("state_filter") or {}).get("suppressed_count")
        rows = locomo.evaluate(store, questions, {}, "last-session")
        assert len(rows["localmem"]) == len(rows["recall_v1"]) == len(questions)


def test_the_runner_refuses_an_unknown_asking_time(capsys):
    with pytest.raises(SystemExit):
        locomo.main(["--asked-at", "tomorrow"])
    assert "--asked-at" in capsys.readouterr().err
