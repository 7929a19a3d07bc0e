"""benchmarks/hooks/gate_silent.py: a question asked of its own store and of another is compared pair by pair, an
"unrelated" prompt whose store holds an evidence turn of its question is named, and the signals read recall's answer
as saved."""

from __future__ import annotations

import numpy as np

from benchmarks.hooks import gate_levers, gate_silent

N = len(gate_silent.SIGNALS)


def _row(prompt: str, kind: str, source: str, group: str, value: float, contents=(), evidence=()) -> tuple:
    memories = {f"m{i}": {"content": text} for i, text in enumerate(contents)}
    p = {"set": "lme", "prompt": prompt, "kind": kind, "source": source, "fold": 0, "memories": memories,
         "evidence": {f"m{i}" for i in evidence}}
    return p, group, [value] * N


def test_each_question_is_compared_with_itself_asked_of_another_store():
    rows = [_row("q1", "related", "question", "served", 0.9), _row("q1", "unrelated", "other", "other", 0.5),
            _row("q2", "related", "question", gate_silent.SILENT, 0.6),
            _row("q2", "unrelated", "other", "other, given notes", 0.8),
            _row("q3", "related", "question", gate_silent.SILENT, 0.7), _row("q3", "unrelated", "other", "other", 0.7),
            _row("q4", "related", "question", "served", 0.9),  # never asked of another store: no pair
            _row("q1", "unrelated", "offtopic", "offtopic", 0.99)]  # an off-topic prompt is no one's question
    every, silent, pairs, silent_pairs = gate_silent.pair_shares(rows)
    assert (pairs, silent_pairs) == (3, 2)
    assert np.allclose(every, (1 + 0 + 0.5) / 3) and np.allclose(silent, (0 + 0.5) / 2)


def test_an_unrelated_prompt_whose_store_holds_its_questions_evidence_turn_is_named():
    rows = [_row("q1", "related", "question", "served", 0.9, contents=["the backpack came", "other"], evidence=[0]),
            _row("q1", "unrelated", "other", "other, given notes", 0.8, contents=["a mouse", "the backpack came"]),
            _row("q2", "related", "question", "served", 0.9, contents=["a"], evidence=[0]),
            _row("q2", "unrelated", "other", "other", 0.5, contents=["b", "other"])]  # a non-evidence text shared
    found = gate_silent.evidence_elsewhere(rows)
    assert [(p["prompt"], group, n) for p, group, n in found] == [("q1", "other, given notes", 1)]


def test_the_signals_read_the_gate_value_and_the_support_from_recalls_answer():
    ids = [f"m{i}" for i in range(4)]
    prompt = {"kind": "related", "set": "s", "evidence": {"m0"}, "scores": dict.fromkeys(ids, 1.0),
              "candidates": [(m, None, {"r": r, "learned": learned, "keyword": 0.4}, i + 1)
                             for i, (m, r, learned) in enumerate(zip(ids, [0.8, 0.5, 0.49, 0.9], [0.6, 0.2, 0, 0]))],
              "memories": {m: {"content": m, "timestamp": t} for m, t in zip(ids, ["a", "a", "b", "c"])}}
    grid = gate_levers.GateGrid([prompt], lambda inputs: inputs["r"])
    values = dict(zip(gate_silent.SIGNALS, gate_silent.signals_of(grid, 0, prompt, 0.5)))
    assert np.isclose(values["gate value"], 0.5 * 0.9 + 0.5 * 0.6)  # best relevance, learned of recall's first
    assert values["support"] == 3 and np.isclose(values["learned, first less second"], 0.4)
    assert values["first three at the first's time"] == 1 and values["distinct times in the first ten"] == 3
    assert np.isclose(values["median relevance of the rest"], 0.5)  # of 0.8, 0.5, 0.49 once the best is out
