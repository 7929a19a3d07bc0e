"""The prompt-level variants measured by benchmarks/hooks/hook_injection.py (issue 40, branch gate5): the
unseen-terms share that ignores capitalised words, counted on a real store's full-text index, and the cap
that lets a second note in only when recall scores it close to its first."""

from __future__ import annotations

from benchmarks.common import injection_folds, prompt_terms
from localmem import MemoryStore


def test_unseen_share_counts_lowercase_keywords_only_when_asked(tmp_path):
    store = MemoryStore(str(tmp_path / "m.db"))
    try:
        store.store_many([{"content": "we chose postgres for the orders service"},
                          {"content": "the billing job runs nightly"}])
        stats = prompt_terms.term_stats(store.conn, "Did Melanie move orders to mysql?", None)
    finally:
        store.close()
    by_term = {term: (lower, hits) for term, lower, hits in stats}
    assert by_term["melanie"] == (False, 0)  # a capitalised word: held by nothing, but not lowercase
    assert by_term["orders"] == (True, 1)
    assert by_term["mysql"] == (True, 0)
    everything = prompt_terms.unseen(stats, 2)
    lower = prompt_terms.unseen(stats, 2, lowercase_only=True)
    assert 0 < lower < everything < 1  # the name no longer counts as unseen evidence
    assert prompt_terms.unseen([("melanie", False, 0)], 2, lowercase_only=True) == 0.0  # no lowercase keyword


def test_variants_are_attached_to_every_candidate():
    prompt = {"terms": [("mysql", True, 0), ("orders", True, 3)], "rows": 10,
              "candidates": [("a", 0.9, {"cosine": 0.6, "cosine_over_kth": 0.2, "keyword": 0.4}, 1),
                             ("b", 0.5, {"cosine": 0.3, "cosine_over_kth": 0.0, "keyword": 0.7}, 2)]}
    prompt_terms.attach_variants(prompt)
    first, second = prompt["candidates"][0][2], prompt["candidates"][1][2]
    assert first["unseen_lower"] == second["unseen_lower"] > 0.5  # mysql is the rarer, unseen term
    assert first["unseen_lower_any"] == 1.0 and first["unseen_lower_clip"] == prompt_terms.CLIP
    assert abs(first["kth_cosine"] - 0.4) < 1e-9 and second["best_keyword"] == 0.7
    assert first["cosine_x_unseen_lower"] == 2 * second["cosine_x_unseen_lower"]


def _prompt(second_score: float) -> dict:
    candidates = [(f"m{i}", None, {"score": 0.95}, i + 1) for i in range(3)]
    return {"kind": "related", "candidates": candidates, "evidence": {"m1"}, "set": "s", "fold": 0,
            "scores": {"m0": 1.0, "m1": second_score, "m2": 0.1}}


def test_a_second_note_goes_in_only_when_recall_scores_it_close_to_the_first():
    close, far, unscored = _prompt(0.9), _prompt(0.5), {**_prompt(0.5), "scores": {}}
    grid = injection_folds.RecallOrderGrid([close, far, unscored], lambda inputs: inputs["score"])
    chosen = grid.chosen_margin(0.9, 0.9, 2, 0.8)
    assert chosen.sum(axis=1).tolist() == [2, 1, 2]  # no saved scores: the margin cannot apply
    assert grid.measure_margin(0.9, 0.9, 2, 0.8)["hit"] == 2 / 3
    assert grid.chosen_margin(0.9, 0.9, 2, 0.0).sum() == grid.chosen(0.9, 0.9, 2).sum()



def test_the_share_guard_keeps_each_sets_share_not_only_the_pooled_one():
    def prompt(name: str, relevances: list[float], evidence: set[str]) -> dict:
        return {"kind": "related", "set": name, "fold": 0, "evidence": evidence, "scores": {"m0": 1.0, "m1": 0.9},
                "candidates": [(f"m{i}", None, {"score": r}, i + 1) for i, r in enumerate(relevances)]}
    # set a: recall's first is weak, its next two are evidence; set b: only its third of three is evidence
    prompts = [prompt("a", [0.5, 0.95, 0.95], {"m1", "m2"}) for _ in range(3)]
    prompts.append(prompt("b", [0.93, 0.93, 0.93], {"m2"}))
    grid = injection_folds.RecallOrderGrid(prompts, lambda inputs: inputs["score"])
    served_b = grid.measure_margin(0.9, 0.9, 3, 0.0)  # b served with its three notes: its share 1/3
    assert served_b["precision"] == 7 / 9 and served_b["hit"] == 1.0
    assert grid.measure_margin(0.9, 0.9, 3, 0.0, share_guard=True)["precision"] == 1 / 3
    pooled = grid.choose_margin()
    assert grid.measure_margin(*pooled)["hit"] == 1.0  # the pooled share allows serving b
    guarded = grid.choose_margin(share_guard=True)
    assert guarded[0] > 0.93  # the guard keeps b quiet instead: a set given no notes has no share to break
    assert grid.measure_margin(*guarded, share_guard=True) == {"quiet": 1.0, "hit": 0.75, "notes": 1.5,
                                                                "precision": 1.0}


def test_the_benchmark_replays_the_margin_on_the_saved_recall_scores():
    from benchmarks.hooks import hook_injection

    memories = {m: {"id": m, "content": f"note {m}", "metadata": {}} for m in ("m0", "m1", "m2")}
    saved = {"floor": 0.9, "memories": memories, "scores": {"m0": 1.0, "m1": 0.5, "m2": 0.4},
             "candidates": [("m0", 0.95, {}, 1), ("m1", 0.2, {}, 2), ("m2", 0.93, {}, 3)]}
    assert hook_injection.replay(saved, 0.0, 1.0, cap=2, order="recall", note_floor=0.0, margin=0.7)[0] == ["m0"]
    assert hook_injection.replay(saved, 0.0, 1.0, cap=2, order="recall", note_floor=0.0, margin=0.0)[0] == ["m0", "m1"]
    # the note floor at the floor: recall's second is under it, its third goes in
    assert hook_injection.replay(saved, 0.0, 1.0, cap=2, order="recall", note_floor=None, margin=0.0)[0] == ["m0", "m2"]
