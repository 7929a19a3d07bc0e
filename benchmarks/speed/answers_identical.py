"""Whether two trees give identical recall answers, field for field, to the bit.

A speed change that claims to change no answer is checked here: each tree's
code (run with its own PYTHONPATH) dumps every answer whole, then ``compare``
reads both dumps. An answer is the recall response as JSON (every result's id,
order, scores, score components, relevance and memory record; every float
written by ``repr``, so equal text is equal bits) with only ``query_time_ms``
left out. The questions, all with query text (the query encoded in the recall,
learned ranking on, access tracking off, recall's clock fixed):

* LoCoMo: small_store.py's store (the five dev conversations, 2,760 memories,
  ``--store``, built when missing) and every ``--every``th question scoped to
  its conversation (recall_stages.py's workload), and the same questions with
  the cached embedding given (``conversation``, no encoder);
* LongMemEval: the first ``--lme`` dev instances in subset order, each its own
  store (``--lme-dir``, built from the embedding cache when missing), asked at
  the instance's own time as longmemeval.py asks.

    PYTHONPATH=TREE python TREE/benchmarks/speed/answers_identical.py dump --store FILE --lme-dir DIR --out A.json
    python benchmarks/speed/answers_identical.py compare A.json B.json
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[1]))

from benchmarks.quality import longmemeval  # noqa: E402
from benchmarks.quality.locomo import cached_embedder  # noqa: E402
from benchmarks.speed import small_store  # noqa: E402
from localmem import Config, MemoryStore  # noqa: E402
from localmem.embedders import resolve_embedder  # noqa: E402


def answer_text(response: dict[str, Any]) -> str:
    """The response as comparable JSON: everything but its own timing."""
    return json.dumps({k: v for k, v in response.items() if k != "query_time_ms"}, sort_keys=False)


def differing(before: dict[str, list[str]], after: dict[str, list[str]]) -> dict[str, tuple[int, int]]:
    """Per set: (answers, answers whose JSON differs); sets or lengths that do not match are refused."""
    if set(before) != set(after):
        raise ValueError(f"the dumps hold different sets: {sorted(before)} and {sorted(after)}")
    out = {}
    for name, answers in before.items():
        if len(answers) != len(after[name]):
            raise ValueError(f"{name}: {len(answers)} answers before, {len(after[name])} after")
        out[name] = (len(answers), sum(1 for x, y in zip(answers, after[name]) if x != y))
    return out


def dump(args: argparse.Namespace) -> dict[str, list[str]]:
    config = Config.from_env({**os.environ, "LOCALMEM_TRACK_ACCESS": "0"})
    data = json.loads(Path(args.data).read_text())
    store, questions, vectors = small_store.open_store(data, args.embedder, Path(args.store), config)
    modes = small_store.requests(questions, vectors, text=True)
    sets: dict[str, list[str]] = {}
    for mode in ("text", "conversation"):
        sets[f"locomo {mode}"] = [answer_text(store.recall(query, **kwargs))
                                  for query, kwargs in modes[mode][::args.every]]
    store.close()
    folder = Path(args.lme_dir)
    folder.mkdir(parents=True, exist_ok=True)
    answers = []
    for instance in longmemeval.load_instances(args.lme_data, args.lme):
        path = folder / f"{instance['question_id']}.db"
        if not path.exists():
            built, _, _ = longmemeval.build_store(instance, cached_embedder(args.embedder), config, str(path))
            built.close()
        with MemoryStore(path, embedder=resolve_embedder(args.embedder), config=config) as lme_store:
            answers.append(answer_text(lme_store.recall(
                instance["question"], limit=longmemeval.RANKED, adaptive_floor=False,
                now=longmemeval.asked_at(instance).isoformat())))
    sets["longmemeval text"] = answers
    return sets


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    commands = parser.add_subparsers(dest="command", required=True)
    dumping = commands.add_parser("dump")
    dumping.add_argument("--data", default=str(small_store.DEFAULT_DATA))
    dumping.add_argument("--store", required=True, help="the LoCoMo store file (built when missing)")
    dumping.add_argument("--every", type=int, default=2, help="ask every Nth LoCoMo question")
    dumping.add_argument("--lme-data", default=str(longmemeval.DEFAULT_DATA))
    dumping.add_argument("--lme", type=int, default=10, help="LongMemEval instances asked")
    dumping.add_argument("--lme-dir", required=True, help="a folder for their stores (built when missing)")
    dumping.add_argument("--embedder", default="auto")
    dumping.add_argument("--out", required=True)
    comparing = commands.add_parser("compare")
    comparing.add_argument("before")
    comparing.add_argument("after")
    args = parser.parse_args(argv)
    if args.command == "dump":
        if args.every < 1 or args.lme < 0:
            parser.error("--every must be at least 1 and --lme at least 0")
        Path(args.out).write_text(json.dumps(dump(args)))
        return 0
    counts = differing(json.loads(Path(args.before).read_text()), json.loads(Path(args.after).read_text()))
    for name, (answers, differ) in counts.items():
        print(f"{name}: {answers} answers, {differ} differ")
    return 1 if any(differ for _, differ in counts.values()) else 0


if __name__ == "__main__":
    raise SystemExit(main())
