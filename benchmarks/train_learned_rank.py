"""Train the learned-rank model (localmem/recall/learned_rank.py) on the LoCoMo dev conversations.

Every dev question is asked through ``MemoryStore.recall`` exactly as
``benchmarks/locomo.py`` asks it, with the learned component at weight 0, and
the candidate pool's features (``learned_rank.pool_features``) are recorded
with a label per candidate: is it one of the question's evidence turns. A
LightGBM lambdarank model is then

1. trained on four conversations and scored on the fifth, for each of the
   five (leave one conversation out): the estimate of what the model does on
   conversations it has not seen, printed and, with ``--results``, written to
   RESULTS.md;
2. with ``--write``, trained on all five and saved as
   ``localmem/models/learned_rank.json`` (the model recall ships with), or
   with ``--output PATH`` elsewhere, for ``LOCALMEM_LEARNED_RANK_MODEL=PATH``
   (another embedder: ``--embedder NAME``; its own labelled data: ``--data``
   in LoCoMo's format).

    pip install -e ".[train]"      # lightgbm
    python benchmarks/train_learned_rank.py [--write] [--results]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

import numpy as np

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import locomo  # noqa: E402
from localmem import Config  # noqa: E402
from localmem.kagura import learned as kagura_learned  # noqa: E402
from localmem.recall import learned_rank, pipeline  # noqa: E402
from results_file import write_section  # noqa: E402

MODEL_PATH = Path(__file__).resolve().parent.parent / "localmem" / "models" / learned_rank.MODEL_RESOURCE
PARAMS = dict(objective="lambdarank", num_leaves=7, min_child_samples=50,
              subsample=0.8, subsample_freq=1, colsample_bytree=0.8, reg_lambda=1.0, verbose=-1)


def record_pools(store, questions: list[dict], *, scoped: bool = True, v1: bool = False) -> list[dict]:
    """Each question's candidate pool: turn keys (``conv:N/D1:3``), weighted scores,
    features, labels. ``scoped=False`` asks over the whole store, not the question's
    conversation (dialog ids repeat across conversations, hence the keys); ``v1``
    asks ``recall_v1`` (hybrid), whose pool is scored by its hybrid mix."""
    pools: list[dict] = []
    key_of = {memory_id: f"{json.loads(tags)[0]}/{dia}" for memory_id, tags, dia in store.conn.execute(
        "SELECT id, tags, json_extract(metadata, '$.dia_id') FROM memories")}

    def recording(model, candidates, query):
        pools[-1]["keys"] = [key_of[c["memory"]["id"]] for c in candidates]
        pools[-1]["final"] = np.array([c["final_score"] for c in candidates])
        pools[-1]["rows"] = learned_rank.pool_features(candidates, query)
        return {}

    stage = kagura_learned if v1 else pipeline  # the module whose learned_components is recorded
    real = stage.learned_components
    stage.learned_components = recording
    try:
        for q in questions:
            pools.append({"question": q, "evidence": {f"{q['conv_tag']}/{d}" for d in q["evidence"]},
                          "keys": [], "final": np.zeros(0), "rows": np.zeros((0, len(learned_rank.FEATURES)))})
            tags = [q["conv_tag"]] if scoped else None
            if v1:
                store.recall_v1(q["question"], k=20, filters={"tags": tags} if tags else None,
                                include_superseded=False)
            else:
                store.recall(q["question"], tags=tags, limit=20, adaptive_floor=False)
    finally:
        stage.learned_components = real
    for pool in pools:
        pool["labels"] = np.array([1.0 if k in pool["evidence"] else 0.0 for k in pool["keys"]])
    return pools


def placeholder_model(embedder: str) -> learned_rank.TreeModel:
    """A one-leaf model, so recall computes the features while recording (its score is unused)."""
    one = np.zeros((1, 1))
    return learned_rank.TreeModel(feature=np.full((1, 1), -1), threshold=one, left=one.astype(int),
                                  right=one.astype(int), value=one, depth=0, embedders=(embedder,),
                                  features=learned_rank.FEATURES)


def fit(pools: list[dict], rounds: int, seed: int, learning_rate: float):
    import lightgbm

    ranker = lightgbm.LGBMRanker(n_estimators=rounds, random_state=seed, learning_rate=learning_rate, **PARAMS)
    ranker.fit(np.concatenate([p["rows"] for p in pools]), np.concatenate([p["labels"] for p in pools]),
               group=[len(p["labels"]) for p in pools])
    return ranker


def ranked_metrics(pool: dict, scores: np.ndarray) -> dict[str, float]:
    """locomo.py's metrics (R@k, MRR, nDCG@10) of the pool ordered by ``scores``."""
    order = np.argsort(-scores, kind="stable")
    return locomo.metrics([pool["keys"][i] for i in order], pool["evidence"])


def leave_one_out(pools: list[dict], rounds: int, seed: int, learning_rate: float,
                  weight: float, tested: list[dict] | None = None) -> list[dict]:
    """Per question: metrics of the weighted score and of weighted + learned, the model
    trained on ``pools`` without the question's conversation. ``tested`` (the same
    questions over other memories) is scored instead of ``pools`` when given."""
    rows = []
    for conv in sorted({p["question"]["conv_tag"] for p in pools}, key=lambda t: int(t.split(":")[1])):
        train = [p for p in pools if p["question"]["conv_tag"] != conv]
        model = fit(train, rounds, seed, learning_rate)
        for pool in (p for p in (tested or pools) if p["question"]["conv_tag"] == conv):
            # As recall does: the model scores the top LEARNED_TOP by weighted score.
            top = np.argsort(-pool["final"], kind="stable")[:learned_rank.LEARNED_TOP]
            learned = np.zeros(len(pool["final"]))
            learned[top] = 1.0 / (1.0 + np.exp(-model.predict(pool["rows"][top], raw_score=True)))
            rows.append({"question": pool["question"], "base": ranked_metrics(pool, pool["final"]),
                         "learned": ranked_metrics(pool, pool["final"] + weight * learned)})
    return rows


def export(ranker, embedders: list[str], settings: dict) -> dict:
    """The booster's trees as flat arrays (the format TreeModel.from_dict reads)."""
    dumped = ranker.booster_.dump_model()
    trees, depth = [], 0
    for info in dumped["tree_info"]:
        arrays = {"feature": [], "threshold": [], "left": [], "right": [], "value": []}

        def add(node: dict, level: int) -> int:
            nonlocal depth
            index = len(arrays["feature"])
            for key in arrays:
                arrays[key].append(0)
            if "leaf_value" in node or "split_feature" not in node:
                depth = max(depth, level)
                arrays["feature"][index] = -1
                arrays["value"][index] = float(node.get("leaf_value", 0.0))
                return index
            if node.get("decision_type", "<=") != "<=":
                raise ValueError(f"unsupported split {node.get('decision_type')!r}")
            arrays["feature"][index] = int(node["split_feature"])
            arrays["threshold"][index] = float(node["threshold"])
            arrays["left"][index] = add(node["left_child"], level + 1)
            arrays["right"][index] = add(node["right_child"], level + 1)
            return index

        add(info["tree_structure"], 0)
        trees.append(arrays)
    return {"format": 1, "features": list(learned_rank.FEATURES), "embedders": embedders, "depth": depth,
            "trained_on": "LoCoMo dev conversations 0-4 (benchmarks/train_learned_rank.py)",
            "params": {**PARAMS, **settings}, "trees": trees}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", default=str(locomo.DEFAULT_DATA))
    parser.add_argument("--embedder", default="auto")
    parser.add_argument("--rounds", type=int, default=100)
    parser.add_argument("--learning-rate", type=float, default=0.15)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--write", action="store_true", help="train on all five and save the model")
    parser.add_argument("--output", default=str(MODEL_PATH),
                        help="where --write saves it (default: the packaged model; another path is "
                             "used with LOCALMEM_LEARNED_RANK_MODEL)")
    parser.add_argument("--results", action="store_true", help="write the estimate to RESULTS.md")
    args = parser.parse_args(argv)
    started = time.perf_counter()
    data = json.load(open(args.data, encoding="utf-8"))
    config = Config.from_env({**os.environ, "LOCALMEM_TRACK_ACCESS": "0", "SEARCH_WEIGHT_LEARNED": "0"})
    pools, unscoped, flat, hybrid = [], [], [], []
    for threads, recorded in ((True, pools), (False, flat)):
        store, questions = locomo.build_store(data, locomo.cached_embedder(args.embedder), ":memory:", config,
                                              threads=threads)
        embedder = store._backend.meta("embedder")
        store.learned_model = placeholder_model(embedder)
        recorded.extend(record_pools(store, questions))
        if threads:
            unscoped.extend(record_pools(store, questions, scoped=False))
            hybrid.extend(record_pools(store, questions, v1=True))
        store.close()
    weight = Config().weight_learned
    rows = leave_one_out(pools, args.rounds, args.seed, args.learning_rate, weight)
    lines = report(rows)
    # Trained on the threaded turns as shipped; tested on the same turns with no
    # thread (no session in tags or metadata): memories a model never saw so bare.
    flat_rows = leave_one_out(pools, args.rounds, args.seed, args.learning_rate, weight, tested=flat)
    lines += ["", "The same questions over the same turns stored without threads (no session in tags or",
              "metadata), each conversation ranked by the model trained on the other four's threaded turns:", "",
              *report(flat_rows)[3:7]]
    lines += per_conversation(flat_rows, "no threads")
    # Trained on recalls scoped to the conversation as shipped; tested asking the
    # whole store of five conversations, whose other turns crowd the pool.
    wide_rows = leave_one_out(pools, args.rounds, args.seed, args.learning_rate, weight, tested=unscoped)
    lines += ["", "The same questions asked over the whole store (all five conversations, no tag scope), each",
              "conversation ranked by the model trained on the other four's scoped recalls:", "",
              *report(wide_rows)[3:7]]
    lines += per_conversation(wide_rows, "unscoped")
    # The same model on recall_v1's hybrid pools (kagura/learned.py maps their evidence
    # to the features); the hybrid mix stands for the weighted score.
    hybrid_rows = leave_one_out(pools, args.rounds, args.seed, args.learning_rate, weight, tested=hybrid)
    lines += ["", "`recall_v1` (hybrid), scoped to the conversation, each conversation ranked by the model",
              "trained on the other four's recall pools (without: the hybrid mix alone):", "",
              *report(hybrid_rows, "hybrid mix (LOCALMEM_LEARNED_RANK=0)")[3:7]]
    lines += per_conversation(hybrid_rows, "recall_v1")
    print("\n".join(lines))
    if args.write:
        settings = {"n_estimators": args.rounds, "learning_rate": args.learning_rate, "random_state": args.seed}
        # The hub's full name of the model is the same model (a store records what it was given).
        names = [embedder] + ([f"sentence-transformers/{embedder}"] if "/" not in embedder else [])
        model = export(fit(pools, args.rounds, args.seed, args.learning_rate), names, settings)
        output = Path(args.output)
        output.parent.mkdir(parents=True, exist_ok=True)
        output.write_text(json.dumps(model, separators=(",", ":")) + "\n", encoding="utf-8")
        print(f"wrote {output} ({output.stat().st_size:,} bytes, {len(model['trees'])} trees)")
    if args.results:
        elapsed = time.perf_counter() - started
        write_section("learned-rank", "\n".join([
            "## Learned re-ranking: leave one conversation out", "",
            f"Command: `python benchmarks/train_learned_rank.py --results` (embedder `{args.embedder}`, "
            f"{args.rounds} rounds, learning rate {args.learning_rate}, seed {args.seed}), "
            f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, "
            f"{len(pools)} questions, {elapsed:.0f} s.", "", *lines]))
    return 0


def per_conversation(rows: list[dict], label: str) -> list[str]:
    lines = ["", f"| conversation, {label} | R@10 without | R@10 with |", "|---|---:|---:|"]
    for conv in sorted({r["question"]["conv_tag"] for r in rows}, key=lambda t: int(t.split(":")[1])):
        selected = [r for r in rows if r["question"]["conv_tag"] == conv]
        lines.append(f"| {conv} | {np.mean([r['base']['R@10'] for r in selected]):.3f} | "
                     f"{np.mean([r['learned']['R@10'] for r in selected]):.3f} |")
    return lines


def report(rows: list[dict], base_label: str = "weighted score (LOCALMEM_LEARNED_RANK=0)") -> list[str]:
    def mean(selected: list[dict], which: str, key: str) -> float:
        return float(np.mean([r[which][key] for r in selected]))

    keys = ["R@1", "R@5", "R@10", "R@20", "MRR"]
    lines = ["Each question ranked by a model trained without its conversation (the pool ordered by the",
             "weighted score, then by weighted score + learned component):", "",
             "| ranking | " + " | ".join(keys) + " |", "|---|" + "---:|" * len(keys)]
    for which, label in (("base", base_label),
                         ("learned", "+ learned component, held out")):
        lines.append(f"| {label} | " + " | ".join(f"{mean(rows, which, k):.3f}" for k in keys) + " |")
    lines += ["", "| conversation | n | R@10 without | R@10 with | change |", "|---|---:|---:|---:|---:|"]
    groups: dict[str, list[dict]] = {}
    for row in rows:
        groups.setdefault(row["question"]["conv_tag"], []).append(row)
    for name, selected in groups.items():
        base, learned = mean(selected, "base", "R@10"), mean(selected, "learned", "R@10")
        lines.append(f"| {name} | {len(selected)} | {base:.3f} | {learned:.3f} | {learned - base:+.3f} |")
    lines += ["", "| category | n | R@10 without | R@10 with |", "|---|---:|---:|---:|"]
    for number, name in locomo.CATEGORIES.items():
        selected = [r for r in rows if r["question"]["category"] == number]
        if selected:
            lines.append(f"| {name} | {len(selected)} | {mean(selected, 'base', 'R@10'):.3f} | "
                         f"{mean(selected, 'learned', 'R@10'):.3f} |")
    return lines


if __name__ == "__main__":
    raise SystemExit(main())
