"""Before/after check for recall_v1 on real text: every answer on the LoCoMo dev conversations.

    python benchmarks/quality/locomo_v1_answers.py dump answers.json
    python benchmarks/quality/locomo_v1_answers.py compare before.json after.json

``dump`` builds locomo.py's store (one memory per turn, the default embedder
behind the embedding cache of benchmarks/.cache/) and asks every question
twice with recall_v1, k=20: scoped to its conversation's tag (as locomo.py's
recall_v1 row asks) and unscoped, and writes each whole response without its
``query_time_ms``, every memory id replaced by ``pk:<its key>`` (ids are drawn
afresh in each build; keys follow the order of storing). ``compare`` is scale_answers.py's (the same results in the
same order with the same values; the largest numeric difference). Run ``dump``
from each tree with that tree's ``localmem`` (PYTHONPATH).
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[1]))

from benchmarks.quality import locomo  # noqa: E402
import localmem  # noqa: E402
from localmem import Config  # noqa: E402

UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")


def dump(path: str, data: str) -> None:
    with open(data) as source:
        samples = json.load(source)
    store, questions = locomo.build_store(samples, locomo.cached_embedder("auto"), ":memory:", Config())
    answers = []
    with store:
        key_of = {memory_id: f"pk:{pk}" for pk, memory_id in store.conn.execute("SELECT pk, id FROM memories")}
        for q in questions:
            for filters in ({"tags": [q["conv_tag"]]}, None):
                response = store.recall_v1(q["question"], k=20, filters=filters)
                response.pop("query_time_ms", None)
                text = UUID.sub(lambda m: key_of.get(m.group(0), m.group(0)), json.dumps(response))
                answers.append({"question": q["question"], "filters": filters, "response": json.loads(text)})
    with open(path, "w") as out:
        json.dump(answers, out)
    print(f"{len(answers)} recall_v1 answers from {localmem.__file__} -> {path}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    one = sub.add_parser("dump")
    one.add_argument("path")
    one.add_argument("--data", default=str(locomo.DEFAULT_DATA))
    two = sub.add_parser("compare")
    two.add_argument("before")
    two.add_argument("after")
    args = parser.parse_args(argv)
    if args.command == "dump":
        dump(args.path, args.data)
        return 0
    from benchmarks.speed import scale_answers
    return scale_answers.compare(args.before, args.after)


if __name__ == "__main__":
    sys.exit(main())
