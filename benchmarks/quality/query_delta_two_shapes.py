"""The query delta trained on both shapes of conversation, validated held out.

The packaged query delta (embedders/query_delta.py) was trained on LoCoMo alone
(benchmarks/quality/train_learned_rank.py), so LoCoMo's held-out rows of
train_rank_two_shapes.py have it in-sample. Here the delta is trained
(``train_learned_rank.fit_query_delta``, the same settings) on LoCoMo and
LongMemEval dev together: each LongMemEval instance is its own scope (its
question's MaxSim over its own store), as each LoCoMo conversation is.

Reported, each pool recorded with the delta named (train_rank_two_shapes.py's
recording and folds, trees trained per LightGBM seed):

- the packaged delta, trees held out by fold (the shipped protocol);
- leave one dataset out: the delta and the trees trained on LongMemEval only,
  scored on LoCoMo, and on LoCoMo only (the packaged delta), scored on LongMemEval;
- nested folds (``--folds 0,1,2,3,4`` or some of them): for each fold, a delta
  trained without it, every pool recorded with that delta, trees trained on the
  other folds' pools, the fold scored; beside it the same folds with the packaged
  delta (in-sample on LoCoMo) and with a delta trained on LoCoMo alone without the fold (the
  fair comparison). Two delta trainings per fold: the slow part (``--deltas FILE`` keeps them).

``--write`` trains a delta on everything, records every pool with it, trains the
trees on all of them and saves the packaged model (ship it only when the nested
rows say so).

    pip install -e ".[embeddings,train]"
    python benchmarks/quality/query_delta_two_shapes.py --pools DIR [--seeds 0,1,2] [--folds 0,1,2,3,4] [--no-lodo] [--deltas FILE] [--write]
"""

from __future__ import annotations

import argparse
import json
import os
import pickle
import sys
import time
from pathlib import Path
from typing import Any, Callable

import numpy as np

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from benchmarks.quality import locomo, longmemeval  # noqa: E402
from benchmarks.quality import train_learned_rank as trl  # noqa: E402
from benchmarks.quality import train_rank_two_shapes as two_shapes  # noqa: E402
from localmem import Config  # noqa: E402
from localmem.storage import token_codes  # noqa: E402


def lme_scope_tag(instance: dict) -> str:
    return f"lme:{instance['question_id']}"


class TwoShapeData:
    """What fit_query_delta reads (``centre``, ``questions``, ``torch_scope``) for LoCoMo's
    conversations and each LongMemEval instance: LoCoMo's sign codes are held decoded
    (train_learned_rank.AdapterData); a LongMemEval store's codes are kept packed and decoded
    when its question is trained on, so memory stays at the packed size."""

    def __init__(self, locomo_data: trl.AdapterData, instances: list[dict], embedder, config: Config,
                 log: Callable[[str], None]) -> None:
        self.locomo = locomo_data
        self.centre = locomo_data.centre
        self.questions = list(locomo_data.questions)
        self.packed: dict[str, tuple[list[str], list[tuple[int, bytes]], int]] = {}
        for number, instance in enumerate(instances):
            if instance["question_id"].endswith("_abs"):
                continue
            store, _, _ = longmemeval.build_store(instance, embedder, config)
            with store:
                centre = store._backend.token_centre(record=False)
                if centre is None or not np.allclose(centre, self.centre):
                    raise ValueError("a LongMemEval store's token centre differs from LoCoMo's: "
                                     "one centre per delta training would be wrong")
                rows = list(store.conn.execute(
                    "SELECT json_extract(m.metadata, '$.turn'), t.tokens, t.codes "
                    "FROM memories AS m JOIN token_codes AS t ON t.pk = m.pk ORDER BY m.pk"))
                dims = store._backend.dimensions
            tag = lme_scope_tag(instance)
            self.packed[tag] = ([r[0] for r in rows], [(r[1], r[2]) for r in rows], dims)
            turns, _ = longmemeval.evidence_of(instance)
            self.questions.append(({"question": instance["question"], "conv_tag": tag, "evidence": turns}, None))
            log(f"delta data: lme {number + 1}/{len(instances)}")

    def torch_scope(self, tag: str) -> tuple:
        import torch

        if tag not in self.packed:
            return self.locomo.torch_scope(tag)
        keys, codes, dims = self.packed[tag]
        signs = [token_codes.decode(tokens, blob, dims) for tokens, blob in codes]
        owner = np.repeat(np.arange(len(signs)), [len(s) for s in signs])
        return keys, torch.from_numpy(np.concatenate(signs)), torch.from_numpy(owner)


def fold_scopes(instances: list[dict], fold: int) -> set[str]:
    """The scopes of held-out fold ``fold``: LoCoMo conversation ``fold`` and every fifth
    LongMemEval instance (train_rank_two_shapes.py's folds, by instance order)."""
    lme = {lme_scope_tag(i) for n, i in enumerate(instances) if n % two_shapes.FOLDS == fold}
    return {f"conv:{fold}"} | lme


def held_out(pools: list[dict], seed: int, args: argparse.Namespace, train_on: Callable[[dict], bool],
             scored_on: Callable[[dict], bool]) -> list[tuple[dict, dict]]:
    """(pool, metrics) for each pool ``scored_on`` picks, under trees trained with ``seed`` on the
    pools ``train_on`` picks."""
    settings = argparse.Namespace(lme_weight=1, rounds=args.rounds, seed=seed, learning_rate=args.learning_rate)
    trees = two_shapes.fit([p for p in pools if train_on(p)], settings)
    weight = Config().weight_learned
    return [(p, two_shapes.scored(p, two_shapes.learned_scores(trees, p, weight))) for p in pools if scored_on(p)]


def summary(rows: list[tuple[dict, dict]]) -> dict[str, list[float]]:
    out = {}
    for shape in ("locomo", "lme"):
        chosen = [m for p, m in rows if p["shape"] == shape]
        if chosen:
            out[shape] = two_shapes.means(chosen, two_shapes.KEYS)
    return out


def line(label: str, per_seed: list[dict[str, list[float]]]) -> str:
    cells = []
    for shape in ("locomo", "lme"):
        if shape not in per_seed[0]:
            cells += ["-", "-", "-"]
            continue
        values = np.array([s[shape] for s in per_seed])
        mean = values.mean(0)
        seeds = ", ".join(f"{v:.3f}" for v in values[:, 1])
        cells += [f"{mean[0]:.3f}", f"{mean[1]:.3f} ({seeds})", f"{mean[2]:.3f}"]
    return f"| {label} | " + " | ".join(cells) + " |"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    two_shapes.add_pool_arguments(parser)
    two_shapes.add_seed_arguments(parser)
    parser.add_argument("--folds", default="",
                        help="comma-separated folds (0-4) for the nested rows: one delta training each")
    parser.add_argument("--no-lodo", action="store_true", help="leave out the leave-one-dataset-out rows")
    parser.add_argument("--deltas", default=None,
                        help="a pickle file keeping trained deltas by held-out scopes (read and extended)")
    parser.add_argument("--write", action="store_true",
                        help="train a delta and trees on everything and save the packaged model")
    args = parser.parse_args(argv)
    if not args.pools:
        parser.error("--pools: a folder is needed (every pool is recorded once per delta)")
    seeds = args.seeds
    started = time.perf_counter()

    def log(text: str) -> None:
        print(f"[{time.perf_counter() - started:.0f} s] {text}", file=sys.stderr, flush=True)

    base, instances, packaged, _ = two_shapes.record_all(args, log)
    embedder = locomo.cached_embedder(args.embedder)
    config = Config.from_env({**os.environ, "LOCALMEM_TRACK_ACCESS": "0", "SEARCH_WEIGHT_LEARNED": "0"})
    data_file = json.loads(Path(args.locomo).read_text())
    store, questions = locomo.build_store(data_file, embedder, ":memory:", config)
    data = TwoShapeData(trl.AdapterData(store, questions), instances, embedder, config, log)
    model_name = store._backend.meta("embedder")
    kept: dict[frozenset, Any] = {}
    if args.deltas and Path(args.deltas).exists():
        kept.update(pickle.loads(Path(args.deltas).read_bytes()))

    def delta_without(held: set[str]) -> Any:
        key = frozenset(held)
        if key not in kept:
            log(f"training a delta without {len(held)} scopes")
            kept[key] = trl.fit_query_delta(data, model_name, key)
            if args.deltas:
                Path(args.deltas).write_bytes(pickle.dumps(kept))
        return kept[key]

    def pools_with(delta: Any) -> list[dict]:
        return two_shapes.record_all(args, lambda text: None, delta)[0]

    all_lme = {lme_scope_tag(i) for i in instances}
    all_locomo = {f"conv:{n}" for n in range(len(data_file))}
    rows: list[str] = ["| delta, trees | LoCoMo R@5 | LoCoMo R@10 (seeds) | LoCoMo MRR | LME R@5 | "
                       "LME R@10 (seeds) | LME MRR |", "|---|" + "---:|" * 6]
    by_fold = [summary([r for fold in range(two_shapes.FOLDS) for r in held_out(
        base, seed, args, lambda p, f=fold: p["fold"] != f, lambda p, f=fold: p["fold"] == f)]) for seed in seeds]
    rows.append(line("packaged delta (LoCoMo, in-sample there); trees held out by fold", by_fold))
    if not args.no_lodo:
        on_lme = pools_with(delta_without(all_locomo))
        rows.append(line("delta and trees on LongMemEval only → LoCoMo", [summary(held_out(
            on_lme, s, args, lambda p: p["shape"] == "lme", lambda p: p["shape"] == "locomo")) for s in seeds]))
        # The packaged delta is the one trained on LoCoMo alone (train_learned_rank.py, these settings).
        rows.append(line("packaged delta and trees on LoCoMo only → LongMemEval", [summary(held_out(
            base, s, args, lambda p: p["shape"] == "locomo", lambda p: p["shape"] == "lme")) for s in seeds]))
        log("leave one dataset out done")
    print("\n".join(rows), flush=True)
    folds = [int(f) for f in args.folds.split(",") if f.strip()]
    if folds:
        nested: list[list] = [[] for _ in seeds]
        locomo_nested: list[list] = [[] for _ in seeds]
        packaged_rows: list[list] = [[] for _ in seeds]
        for fold in folds:
            held = fold_scopes(instances, fold)
            both = pools_with(delta_without(held))
            # LoCoMo's delta as the packaged one is trained, but without the fold: the fair comparison.
            locomo_only = pools_with(delta_without(held | all_lme))
            for n, seed in enumerate(seeds):
                for out, pools in ((nested, both), (locomo_nested, locomo_only), (packaged_rows, base)):
                    out[n] += held_out(pools, seed, args, lambda p: p["fold"] != fold, lambda p: p["fold"] == fold)
            log(f"fold {fold} done")
        named = ", ".join(map(str, folds))
        rows.append(line(f"folds {named} only: packaged delta (in-sample on LoCoMo); trees held out",
                         [summary(r) for r in packaged_rows]))
        rows.append(line(f"folds {named} only: delta on LoCoMo without the fold; trees held out (nested)",
                         [summary(r) for r in locomo_nested]))
        rows.append(line(f"folds {named} only: delta on both without the fold; trees held out (nested)",
                         [summary(r) for r in nested]))
        print("\n".join(rows[-3:]), flush=True)
    if args.write:
        delta = delta_without(set())
        pools = pools_with(delta)
        ranker = trl.fit(two_shapes.weighted(pools, 1), args.rounds, seeds[0], args.learning_rate)
        settings = {"n_estimators": args.rounds, "learning_rate": args.learning_rate, "random_state": seeds[0],
                    "lme_weight": 1}
        model = trl.export(ranker, list(packaged.embedders), settings, delta=delta)
        model["trained_on"] = (f"LoCoMo dev conversations 0-4 and {len(instances)} LongMemEval dev instances, "
                               "query delta and trees (benchmarks/quality/query_delta_two_shapes.py)")
        model["lme_ids"] = [i["question_id"] for i in instances]
        trl.MODEL_PATH.write_text(json.dumps(model, separators=(",", ":")) + "\n", encoding="utf-8")
        print(f"wrote {trl.MODEL_PATH}")
    print(f"\n{time.perf_counter() - started:.0f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
