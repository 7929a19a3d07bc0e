"""benchmarks/common/hook_prompts.py: LongMemEval's haystacks share sessions, so a question asked of another
instance's store is labelled by what that store holds: related, with those turns as its evidence, when the store
holds one of the question's evidence turns; unrelated otherwise."""

from __future__ import annotations

from pathlib import Path

from benchmarks.common import hook_prompts
from localmem.hooks.settings import HookSettings

SHARED = "My laptop backpack from Osprey finally arrived on Tuesday, three days after I ordered it."


def _instance(qid: str, question: str, turns: list[tuple[str, bool]]) -> dict:
    session = [{"role": "user", "content": text, "has_answer": answer} for text, answer in turns]
    return {"question_id": qid, "question": question, "haystack_sessions": [session],
            "haystack_dates": ["2023/05/20 (Sat) 16:25"]}


def _other_prompt(tmp_path: Path, store_of: dict, chosen: list[dict]) -> dict:
    store, evidence = hook_prompts.lme_store(store_of, "hash")
    work = tmp_path / "lme"  # the folder of project:lme, as lme_prompts asks from
    work.mkdir(exist_ok=True)
    try:
        memories = hook_prompts.memories_of(store)
        prompts = hook_prompts.ask_instance(store, memories, work, chosen, 0, evidence, HookSettings(),
                                            ask_question=False)
    finally:
        store.close()
    [other] = [p for p in prompts if p["source"] == "other"]
    return other


def test_another_instances_question_is_related_where_the_store_holds_its_evidence_turn(tmp_path):
    question = "How many days did it take for my laptop backpack to arrive?"
    holder = _instance("a1", "What did I cook on Sunday?", [("I cooked a risotto on Sunday.", True), (SHARED, False),
                                                            ("The weather was grey all week.", False)])
    asked = _instance("b2", question, [(SHARED, True), ("I ordered the backpack on Saturday.", True)])
    other = _other_prompt(tmp_path, holder, [holder, asked])
    assert other["prompt"] == question and other["kind"] == "related"
    assert [other["memories"][m]["content"] for m in other["evidence"]] == [SHARED]


def test_another_instances_question_stays_unrelated_where_the_store_holds_none_of_its_evidence(tmp_path):
    holder = _instance("a1", "What did I cook on Sunday?", [("I cooked a risotto on Sunday.", True), (SHARED, False)])
    # The shared text is no evidence of this question, and its evidence is not in the holder's store.
    asked = _instance("b2", "Where did I buy my backpack?", [(SHARED, False), ("I bought it from Osprey.", True)])
    other = _other_prompt(tmp_path, holder, [holder, asked])
    assert other["kind"] == "unrelated" and other["evidence"] == set()
    # An abstention question is never related, whatever the store holds.
    abstain = _instance("b2_abs", "How long did my backpack take?", [(SHARED, True)])
    assert _other_prompt(tmp_path, holder, [holder, abstain])["kind"] == "unrelated"
