"""benchmarks/hooks/small_stores.py: a LongMemEval instance cut to its first sessions holds only them, asks its
question as related only when every evidence turn is inside the cut (an ``_abs`` question always, as unrelated), and
the replay's variants read the blend the way they are named."""

from __future__ import annotations

import json

from benchmarks.hooks import small_stores
from benchmarks.quality import locomo
from localmem.embedders.resolve import resolve_embedder
from localmem.hooks.selection import DEFAULT_BLEND, DEFAULT_BLEND_DROP
from localmem.hooks.settings import HookSettings

DATE = "2023/05/20 (Sat) 02:21"


def _session(topic: str, answer: bool = False) -> list[dict]:
    return [{"role": "user", "content": f"Tell me about {topic}, please, in some detail today.",
             **({"has_answer": True} if answer else {})},
            {"role": "assistant", "content": f"Here is what I know about {topic} and why it matters."}]


def _instance(qid: str, question: str, sessions: list[list[dict]]) -> dict:
    return {"question_id": qid, "question": question, "answer": "x", "question_type": "t", "question_date": DATE,
            "haystack_sessions": sessions, "haystack_dates": [DATE] * len(sessions),
            "haystack_session_ids": [f"s{i}" for i in range(len(sessions))], "answer_session_ids": []}


def test_a_cut_instance_holds_its_first_sessions_and_asks_only_questions_it_can_answer(tmp_path, monkeypatch):
    monkeypatch.setattr(locomo, "cached_embedder", resolve_embedder)  # the hash embedder, no on-disk cache
    data = {"instances": [
        _instance("inside", "What did I say about sourdough baking?",
                  [_session("sourdough baking", answer=True), _session("bicycle gears")]),
        _instance("outside", "What did I say about tide pools?",
                  [_session("jazz chords"), _session("tide pools", answer=True)]),
        _instance("split", "What did I say about kites and ferns?",
                  [_session("kites", answer=True), _session("ferns", answer=True)]),
        _instance("nothing_abs", "What did I say about my submarine?", [_session("garden soil"), _session("tea")]),
    ]}
    path = tmp_path / "lme.json"
    path.write_text(json.dumps(data), "utf-8")
    prompts = small_stores.lme_cut_prompts(path, "hash", 1, tmp_path, HookSettings())
    asked = {p["prompt"]: p for p in prompts if p["source"] in ("question", "abstain")}
    assert set(asked) == {"What did I say about sourdough baking?", "What did I say about my submarine?"}
    related = asked["What did I say about sourdough baking?"]
    assert related["kind"] == "related"
    assert related["evidence"] and all("sourdough" in related["memories"][m]["content"] for m in related["evidence"])
    assert asked["What did I say about my submarine?"]["kind"] == "unrelated"
    # Only the first session of each store was kept: no candidate is from the second.
    seen = {memory["content"] for p in prompts for memory in p["memories"].values()}
    assert seen and not any(word in text for text in seen for word in ("bicycle", "tide pools", "ferns", "tea"))
    # Each instance still asks its neighbour's question and ten off-topic ones, as unrelated prompts.
    assert sum(p["source"] == "other" for p in prompts) == 4
    assert sum(p["source"] == "offtopic" for p in prompts) == 40
    assert all(p["kind"] == "unrelated" for p in prompts if p["source"] in ("other", "offtopic"))


def test_the_replays_variants_read_the_blend_they_name():
    full, short = {"scores": {f"m{i}": 1.0 for i in range(20)}}, {"scores": {f"m{i}": 1.0 for i in range(10)}}
    assert small_stores.blend_of("none", full) == (0.0, 0.0)
    assert small_stores.blend_of(None, short) == (DEFAULT_BLEND, DEFAULT_BLEND_DROP)
    assert small_stores.blend_of("min20", full) == (DEFAULT_BLEND, DEFAULT_BLEND_DROP)
    assert small_stores.blend_of("min20", short) == (0.0, 0.0)
    assert small_stores.blend_of("scaled", short) == (DEFAULT_BLEND / 2, DEFAULT_BLEND_DROP / 2)
