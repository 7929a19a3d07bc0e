"""benchmarks/speed/answers_identical.py: two trees' answers compared whole, floats to the bit."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.speed.answers_identical import answer_text, differing, main  # noqa: E402
from localmem import MemoryStore  # noqa: E402


def test_an_answer_is_compared_whole_but_for_its_own_timing() -> None:
    response = {"results": [{"id": "a", "final_score": 0.1 + 0.2, "memory": {"tags": ["x"]}}],
                "query_time_ms": 3.2}
    text = answer_text(response)
    assert "query_time_ms" not in text
    assert answer_text({**response, "query_time_ms": 9.9}) == text
    # the last bit of a float, a nested field and the order of results all count
    assert answer_text({**response, "results": [{**response["results"][0], "final_score": 0.3}]}) != text
    assert answer_text({**response, "results": [{**response["results"][0], "memory": {"tags": ["y"]}}]}) != text
    two = {"results": [{"id": "a"}, {"id": "b"}]}
    assert answer_text(two) != answer_text({"results": [{"id": "b"}, {"id": "a"}]})


def test_differing_counts_answers_and_refuses_dumps_that_do_not_match() -> None:
    before = {"set": ["a", "b", "c"]}
    assert differing(before, {"set": ["a", "x", "c"]}) == {"set": (3, 1)}
    assert differing(before, before) == {"set": (3, 0)}
    with pytest.raises(ValueError, match="different sets"):
        differing(before, {"other": ["a", "b", "c"]})
    with pytest.raises(ValueError, match="3 answers before, 2 after"):
        differing(before, {"set": ["a", "b"]})


def test_compare_exits_1_when_an_answer_differs(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    store = MemoryStore(tmp_path / "m.db", embedder="hash")
    store.store("Postgres was chosen for the billing service", tags=["conv:0"])
    store.store("The team meets on Tuesdays", tags=["conv:0"])
    answer = answer_text(store.recall("which database", tags=["conv:0"], limit=5))
    store.close()
    first, second = tmp_path / "a.json", tmp_path / "b.json"
    first.write_text(json.dumps({"text": [answer]}))
    second.write_text(json.dumps({"text": [answer]}))
    assert main(["compare", str(first), str(second)]) == 0
    changed = json.loads(answer)
    changed["results"][0]["final_score"] += 2 ** -40  # a difference far below any rounding shown
    second.write_text(json.dumps({"text": [answer_text(changed)]}))
    assert main(["compare", str(first), str(second)]) == 1
    assert "text: 1 answers, 1 differ" in capsys.readouterr().out
