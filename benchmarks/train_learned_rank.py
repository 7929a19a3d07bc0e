"""Train the learned-rank model (localmem/recall/learned_rank.py) on the LoCoMo dev conversations.

The model file holds two learned parts, trained in turn:

1. a query adapter (``late_interaction.QueryAdapter``, torch): a low-rank map
   of the query's token vectors, trained so that MaxSim over each question's
   whole conversation ranks its evidence first;
2. a LightGBM lambdarank model over pool features: every dev question is asked
   through ``MemoryStore.recall`` exactly as ``benchmarks/locomo.py`` asks it,
   with the adapter on and the learned component at weight 0, and the
   candidate pool's features (``learned_rank.pool_features``) are recorded
   with a label per candidate: is it one of the question's evidence turns.

The estimate of what the model does on conversations it has not seen is
nested leave-one-conversation-out: for each of the five, the adapter and then
the trees are trained on the other four, and the fifth is scored; printed and,
with ``--results``, written to RESULTS.md. With ``--write`` both are trained
on all five and saved as ``localmem/models/learned_rank.json`` (the model
recall ships with), or with ``--output PATH`` elsewhere, for
``LOCALMEM_LEARNED_RANK_MODEL=PATH`` (another embedder: ``--embedder NAME``;
its own labelled data: ``--data`` in LoCoMo's format). About ten minutes.

    pip install -e ".[embeddings,train]"   # torch (for the adapter), MiniLM, lightgbm
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
from localmem.recall import late_interaction, learned_rank, pipeline  # noqa: E402
from localmem.storage import token_codes  # noqa: E402
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


def placeholder_model(embedder: str, adapter: late_interaction.QueryAdapter | None = None
                      ) -> learned_rank.TreeModel:
    """A one-leaf model, so recall computes the features while recording (its score is
    unused); ``adapter`` moves the query tokens, as the model being trained will."""
    one = np.zeros((1, 1))
    return learned_rank.TreeModel(feature=np.full((1, 1), -1), threshold=one, left=one.astype(int),
                                  right=one.astype(int), value=one, depth=0, embedders=(embedder,),
                                  features=learned_rank.FEATURES, query_adapter=adapter)


ADAPTER = dict(rank=16, epochs=3, batch=16, learning_rate=0.003, penalty=0.01, seed=0)


class AdapterData:
    """What the query adapter trains on: each question's centred query tokens, and the
    sign codes of every memory in its conversation with the evidence marked."""

    def __init__(self, store, questions: list[dict]) -> None:
        backend = store._backend
        self.centre = backend.token_centre(record=False)
        dims = backend.dimensions
        scopes: dict[str, list[tuple[str, np.ndarray]]] = {}
        for tags, dia, tokens, codes in store.conn.execute(
                "SELECT m.tags, json_extract(m.metadata, '$.dia_id'), t.tokens, t.codes "
                "FROM memories AS m JOIN token_codes AS t ON t.pk = m.pk ORDER BY m.pk"):
            scopes.setdefault(json.loads(tags)[0], []).append((dia, token_codes.decode(tokens, codes, dims)))
        # Per conversation: all its tokens in one matrix, and which memory each belongs to.
        self.scopes = {tag: ([dia for dia, _ in rows], np.concatenate([signs for _, signs in rows]),
                             np.repeat(np.arange(len(rows)), [len(signs) for _, signs in rows]))
                       for tag, rows in scopes.items()}
        self.questions = []
        for q in questions:
            _, tokens = backend.embed_texts_and_tokens([q["question"]])
            centred = token_codes.unit_rows(tokens[0]) - self.centre
            self.questions.append((q, centred.astype(np.float32)))


def fit_adapter(data: AdapterData, exclude: str | None = None) -> late_interaction.QueryAdapter:
    """A low-rank query adapter (late_interaction.QueryAdapter) trained so that each
    question's MaxSim over its conversation ranks the evidence first (softmax over every
    memory of the conversation), on every conversation but ``exclude``."""
    import torch

    settings = ADAPTER
    torch.manual_seed(settings["seed"])
    scopes = {tag: (dias, torch.from_numpy(signs), torch.from_numpy(owner))
              for tag, (dias, signs, owner) in data.scopes.items()}
    train = [(q, torch.from_numpy(t)) for q, t in data.questions if q["conv_tag"] != exclude]
    dims, rank = len(data.centre), settings["rank"]
    down = (torch.randn(dims, rank) * 0.01).requires_grad_()
    up = torch.zeros(dims, rank, requires_grad=True)
    scale = torch.tensor(20.0, requires_grad=True)
    optimiser = torch.optim.Adam([down, up, scale], lr=settings["learning_rate"])
    for epoch in range(settings["epochs"]):
        order = np.random.RandomState(epoch).permutation(len(train))
        for start in range(0, len(order), settings["batch"]):
            loss = torch.zeros(())
            for index in order[start:start + settings["batch"]]:
                q, centred = train[index]
                dias, signs, owner = scopes[q["conv_tag"]]
                adapted = centred + (centred @ down) @ up.T
                adapted = adapted / adapted.abs().sum(1, keepdim=True)
                similarity = adapted @ signs.T  # query tokens x conversation tokens
                best = torch.full((len(adapted), len(dias)), -2.0).scatter_reduce(
                    1, owner.expand(len(adapted), -1), similarity, "amax")
                scores = best.mean(0) * scale
                evidence = torch.tensor([d in q["evidence"] for d in dias])
                loss = loss + torch.logsumexp(scores, 0) - torch.logsumexp(scores[evidence], 0)
            loss = loss / settings["batch"] + settings["penalty"] * down.pow(2).sum() * up.pow(2).sum()
            optimiser.zero_grad()
            loss.backward()
            optimiser.step()
    return late_interaction.QueryAdapter(down=down.detach().numpy().copy(), up=up.detach().numpy().copy())


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


def held_out_rows(model, pools: list[dict], weight: float) -> list[dict]:
    """Per question: metrics of the weighted score and of weighted + learned (``model``)."""
    rows = []
    for pool in pools:
        # As recall does: the model scores the top LEARNED_TOP by weighted score.
        top = np.argsort(-pool["final"], kind="stable")[:learned_rank.LEARNED_TOP]
        learned = np.zeros(len(pool["final"]))
        if len(top):
            learned[top] = 1.0 / (1.0 + np.exp(-model.predict(pool["rows"][top], raw_score=True)))
        rows.append({"question": pool["question"], "base": ranked_metrics(pool, pool["final"]),
                     "learned": ranked_metrics(pool, pool["final"] + weight * learned)})
    return rows


def conversations(questions: list[dict]) -> list[str]:
    return sorted({q["conv_tag"] for q in questions}, key=lambda t: int(t.split(":")[1]))


def export(ranker, embedders: list[str], settings: dict,
           adapter: late_interaction.QueryAdapter | None = None) -> dict:
    """The booster's trees as flat arrays, and the query adapter (the format
    TreeModel.from_dict reads)."""
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
            "params": {**PARAMS, **settings}, "trees": trees,
            **({"query_adapter": {"down": np.round(adapter.down.astype(np.float64), 6).tolist(),
                                  "up": np.round(adapter.up.astype(np.float64), 6).tolist(),
                                  "params": ADAPTER}} if adapter is not None else {})}


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
    store, questions = locomo.build_store(data, locomo.cached_embedder(args.embedder), ":memory:", config)
    flat_store, flat_questions = locomo.build_store(data, locomo.cached_embedder(args.embedder), ":memory:",
                                                    config, threads=False)
    embedder = store._backend.meta("embedder")
    adapter_data = AdapterData(store, questions)
    weight = Config().weight_learned
    convs = conversations(questions)
    adapted_base = "weighted score with the adapter's MaxSim (no trees)"

    def record(adapter: late_interaction.QueryAdapter | None, asked: list[dict], target=store,
               **kwargs) -> list[dict]:
        target.learned_model = placeholder_model(embedder, adapter)
        return record_pools(target, asked, **kwargs)

    # Nested: for each conversation, the adapter and the trees are both trained without
    # it (the trees on the other four's pools, recorded with that adapter).
    rows: dict[str, list[dict]] = {"scoped": [], "flat": [], "unscoped": [], "hybrid": []}
    for conv in convs:
        adapter = fit_adapter(adapter_data, exclude=conv)
        pools = record(adapter, questions)
        model = fit([p for p in pools if p["question"]["conv_tag"] != conv], args.rounds, args.seed,
                    args.learning_rate)
        tested = [q for q in questions if q["conv_tag"] == conv]
        rows["scoped"] += held_out_rows(model, [p for p in pools if p["question"]["conv_tag"] == conv], weight)
        # The same turns with no thread (no session in tags or metadata): memories a model
        # never saw so bare.
        rows["flat"] += held_out_rows(model, record(adapter, [q for q in flat_questions if q["conv_tag"] == conv],
                                                    flat_store), weight)
        # Asked over the whole store of five conversations, whose other turns crowd the pool.
        rows["unscoped"] += held_out_rows(model, record(adapter, tested, scoped=False), weight)
        # recall_v1's hybrid pools (kagura/learned.py maps their evidence to the features);
        # the hybrid mix stands for the weighted score.
        rows["hybrid"] += held_out_rows(model, record(adapter, tested, v1=True), weight)
        print(f"{conv}: held out", flush=True)
    lines = report(rows["scoped"], adapted_base)
    # The adapter's share: the same held-out trees, trained and applied on plain MaxSim.
    plain = record(None, questions)
    trees_only = []
    for conv in convs:
        model = fit([p for p in plain if p["question"]["conv_tag"] != conv], args.rounds, args.seed,
                    args.learning_rate)
        trees_only += held_out_rows(model, [p for p in plain if p["question"]["conv_tag"] == conv], weight)
    lines += ["", "Without the query adapter (plain MaxSim): overall, and R@10 per conversation:", "",
              "| ranking | R@1 | R@5 | R@10 | MRR | " + " | ".join(convs) + " |",
              "|---|" + "---:|" * (4 + len(convs))]
    for which, label in (("base", "weighted score, no trees (`LOCALMEM_LEARNED_RANK=0`)"),
                         ("learned", "+ trees trained on plain MaxSim, held out")):
        means = [np.mean([r[which][key] for r in trees_only]) for key in ("R@1", "R@5", "R@10", "MRR")]
        means += [np.mean([r[which]["R@10"] for r in trees_only if r["question"]["conv_tag"] == conv])
                  for conv in convs]
        lines.append(f"| {label} | " + " | ".join(f"{m:.3f}" for m in means) + " |")
    lines += ["", "The same questions over the same turns stored without threads (no session in tags or",
              "metadata), each conversation ranked by the adapter and model trained on the other four's "
              "threaded turns:", "", *report(rows["flat"], adapted_base)[3:7]]
    lines += per_conversation(rows["flat"], "no threads")
    lines += ["", "The same questions asked over the whole store (all five conversations, no tag scope), each",
              "conversation ranked by the adapter and model trained on the other four's scoped recalls:", "",
              *report(rows["unscoped"], adapted_base)[3:7]]
    lines += per_conversation(rows["unscoped"], "unscoped")
    lines += ["", "`recall_v1` (hybrid), scoped to the conversation, each conversation ranked by the adapter",
              "and model trained on the other four's recall pools (without: the hybrid mix alone, with the",
              "adapter's MaxSim):", "",
              *report(rows["hybrid"], "hybrid mix with the adapter's MaxSim (no trees)")[3:7]]
    lines += per_conversation(rows["hybrid"], "recall_v1")
    plain_hybrid = [ranked_metrics(p, p["final"]) for p in record(None, questions, v1=True)]
    lines += ["", "`recall_v1` without the learned model (`LOCALMEM_LEARNED_RANK=0`: the hybrid mix on plain "
              "MaxSim): " + ", ".join(f"{key} {np.mean([m[key] for m in plain_hybrid]):.3f}"
                                      for key in ("R@1", "R@5", "R@10", "R@20", "MRR")) + "."]
    print("\n".join(lines))
    if args.write:
        settings = {"n_estimators": args.rounds, "learning_rate": args.learning_rate, "random_state": args.seed}
        # The hub's full name of the model is the same model (a store records what it was given).
        names = [embedder] + ([f"sentence-transformers/{embedder}"] if "/" not in embedder else [])
        adapter = fit_adapter(adapter_data)
        model = export(fit(record(adapter, questions), args.rounds, args.seed, args.learning_rate), names,
                       settings, adapter)
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
            f"{len(questions)} questions, {elapsed:.0f} s.", "", *lines]))
    return 0


def per_conversation(rows: list[dict], label: str) -> list[str]:
    lines = ["", f"| conversation, {label} | R@10 without | R@10 with |", "|---|---:|---:|"]
    for conv in sorted({r["question"]["conv_tag"] for r in rows}, key=lambda t: int(t.split(":")[1])):
        selected = [r for r in rows if r["question"]["conv_tag"] == conv]
        lines.append(f"| {conv} | {np.mean([r['base']['R@10'] for r in selected]):.3f} | "
                     f"{np.mean([r['learned']['R@10'] for r in selected]):.3f} |")
    return lines


def report(rows: list[dict], base_label: str) -> list[str]:
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
