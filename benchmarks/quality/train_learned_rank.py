"""Train the learned-rank model (localmem/recall/learned_rank.py) on the LoCoMo dev conversations.

The model file holds two learned parts, trained in turn:

1. a query delta (``embedders/query_delta.py``, torch): low-rank changes to the
   attention's query and value layers of the embedding model (a LoRA), used
   only when it encodes a query's tokens, trained so that MaxSim over each
   question's whole conversation ranks its evidence first;
2. a LightGBM lambdarank model over pool features: every dev question is asked
   through ``MemoryStore.recall`` exactly as ``benchmarks/quality/locomo.py`` asks it,
   with the delta on and the learned component at weight 0, and the
   candidate pool's features (``learned_rank.pool_features``) are recorded
   with a label per candidate: is it one of the question's evidence turns.

The estimate of what the model does on conversations it has not seen is
nested leave-one-conversation-out: for each of the five, the delta and then
the trees are trained on the other four, and the fifth is scored; printed and,
with ``--results``, written to docs/results/history.md. With ``--write`` both are trained
on all five and saved as ``localmem/models/learned_rank.json`` (the model
recall ships with), or with ``--output PATH`` elsewhere, for
``LOCALMEM_LEARNED_RANK_MODEL=PATH`` (another embedder: ``--embedder NAME``;
its own labelled data: ``--data`` in LoCoMo's format). About 40 minutes on 2
cores: the ablations train the previous default's query adapter
(``late_interaction.QueryAdapter``) and plain trees the same way, and trees
without each group of features (``FEATURE_GROUPS``) on the same held-out pools.

    pip install -e ".[embeddings,train]"   # torch (for the delta), MiniLM, lightgbm
    python benchmarks/quality/train_learned_rank.py [--write] [--results]

The deltas do not depend on the trees' features, so a run that changes only the trees can
take them from a pickle (``--deltas``, e.g. the ``deltas.pkl`` that
``experiments/levers9/record.py`` keeps; most of the 40 minutes are the deltas), and
``--skip-adapter`` leaves out the previous default's query adapter from the ablations.
"""

from __future__ import annotations

import argparse
import json
import os
import pickle
import sys
import time
from collections.abc import Collection
from pathlib import Path

import numpy as np

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from benchmarks.quality import locomo  # noqa: E402
from localmem import Config  # noqa: E402
from localmem.embedders.query_delta import QueryDelta  # noqa: E402
from localmem.kagura import learned as kagura_learned  # noqa: E402
from localmem.recall import late_interaction, learned_rank, pipeline  # noqa: E402
from localmem.storage import token_codes  # noqa: E402
from benchmarks.common.results_file import write_section  # noqa: E402

MODEL_PATH = Path(__file__).resolve().parents[2] / "localmem" / "models" / learned_rank.MODEL_RESOURCE
PARAMS = dict(objective="lambdarank", num_leaves=7, min_child_samples=50,
              subsample=0.8, subsample_freq=1, colsample_bytree=0.8, reg_lambda=1.0, verbose=-1)


def record_pools(store, questions: list[dict], *, scoped: bool = True, v1: bool = False) -> list[dict]:
    """Each question's candidate pool: turn keys (``conv:N/D1:3``), weighted scores,
    features, labels, and each candidate's best match per query token (``per_token``,
    None without codes). ``scoped=False`` asks over the whole store, not the question's
    conversation (dialog ids repeat across conversations, hence the keys); ``v1``
    asks ``recall_v1`` (hybrid), whose pool is scored by its hybrid mix."""
    pools: list[dict] = []
    key_of = {memory_id: f"{json.loads(tags)[0]}/{dia}" for memory_id, tags, dia in store.conn.execute(
        "SELECT id, tags, json_extract(metadata, '$.dia_id') FROM memories")}

    def recording(model, candidates, query, mention=None):
        pools[-1]["keys"] = [key_of[c["memory"]["id"]] for c in candidates]
        pools[-1]["final"] = np.array([c["final_score"] for c in candidates])
        pools[-1]["rows"] = learned_rank.pool_features(candidates, query, mention)
        pools[-1]["per_token"] = [c["_token_match"].per_token if c.get("_token_match") else None
                                  for c in candidates]
        return {}

    stage = kagura_learned if v1 else pipeline  # the module whose learned_components is recorded
    real = stage.learned_components
    stage.learned_components = recording
    try:
        for q in questions:
            pools.append({"question": q, "evidence": {f"{q['conv_tag']}/{d}" for d in q["evidence"]},
                          "keys": [], "per_token": [], "final": np.zeros(0),
                          "rows": np.zeros((0, len(learned_rank.FEATURES)))})
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


def placeholder_model(embedder: str, adapter: late_interaction.QueryAdapter | None = None,
                      delta: QueryDelta | None = None) -> learned_rank.TreeModel:
    """A one-leaf model, so recall computes the features while recording (its score is
    unused); ``adapter`` and ``delta`` shape the query tokens, as the model being trained will."""
    one = np.zeros((1, 1))
    return learned_rank.TreeModel(feature=np.full((1, 1), -1), threshold=one, left=one.astype(int),
                                  right=one.astype(int), value=one, depth=0, embedders=(embedder,),
                                  features=learned_rank.FEATURES, query_adapter=adapter, query_delta=delta)


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
        self._torch_scopes: dict[str, tuple] = {}
        self.questions = []
        for q in questions:
            _, tokens = backend.embed_texts_and_tokens([q["question"]])
            centred = token_codes.unit_rows(tokens[0]) - self.centre
            self.questions.append((q, centred.astype(np.float32)))

    def torch_scope(self, tag: str) -> tuple:
        """A scope's (keys, sign codes, owner of each code row) as torch tensors, made once."""
        import torch

        if tag not in self._torch_scopes:
            keys, signs, owner = self.scopes[tag]
            self._torch_scopes[tag] = (keys, torch.from_numpy(signs), torch.from_numpy(owner))
        return self._torch_scopes[tag]


def fit_adapter(data: AdapterData, exclude: Collection[str] = ()) -> late_interaction.QueryAdapter:
    """A low-rank query adapter (late_interaction.QueryAdapter) trained so that each
    question's MaxSim over its conversation ranks the evidence first (softmax over every
    memory of the conversation), on every conversation not in ``exclude``."""
    import torch

    settings = ADAPTER
    torch.manual_seed(settings["seed"])
    scopes = {tag: (dias, torch.from_numpy(signs), torch.from_numpy(owner))
              for tag, (dias, signs, owner) in data.scopes.items()}
    train = [(q, torch.from_numpy(t)) for q, t in data.questions if q["conv_tag"] not in exclude]
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
                scores = _conversation_scores(centred + (centred @ down) @ up.T, scopes[q["conv_tag"]]) * scale
                evidence = torch.tensor([d in q["evidence"] for d in scopes[q["conv_tag"]][0]])
                loss = loss + torch.logsumexp(scores, 0) - torch.logsumexp(scores[evidence], 0)
            loss = loss / settings["batch"] + settings["penalty"] * down.pow(2).sum() * up.pow(2).sum()
            optimiser.zero_grad()
            loss.backward()
            optimiser.step()
    return late_interaction.QueryAdapter(down=down.detach().numpy().copy(), up=up.detach().numpy().copy())


DELTA = dict(rank=8, epochs=3, batch=16, learning_rate=0.001, layers=("query", "value"), seed=0)


def fit_query_delta(data: AdapterData, model_name: str, exclude: Collection[str] = ()) -> QueryDelta:
    """A query delta (embedders/query_delta.py: low-rank changes to the attention's query
    and value layers of every encoder layer, a LoRA) trained, like the adapter, so that
    each question's MaxSim over its conversation ranks the evidence first, on every
    conversation not in ``exclude``. Trains through sentence-transformers' torch model."""
    import torch

    from localmem.embedders.sentence_transformer import SentenceTransformerEmbedder

    settings = DELTA
    model = SentenceTransformerEmbedder(model_name).load()
    transformer, tokenizer = model[0].auto_model, model.tokenizer
    special = set(tokenizer.all_special_ids)
    torch.manual_seed(settings["seed"])
    names = [f"encoder.layer.{n}.attention.self.{part}"
             for n in range(len(transformer.encoder.layer)) for part in settings["layers"]]
    params: dict[str, tuple] = {}
    for name in names:
        layer = transformer.get_submodule(name)
        down = (torch.randn(settings["rank"], layer.in_features) * 0.01).requires_grad_()
        params[name] = (down, torch.zeros(layer.out_features, settings["rank"], requires_grad=True))
    hooks = [transformer.get_submodule(name).register_forward_hook(
        lambda module, inputs, output, pair=pair: output + (inputs[0] @ pair[0].T) @ pair[1].T)
        for name, pair in params.items()]
    centre = torch.from_numpy(data.centre.astype(np.float32))
    train = [q for q, _ in data.questions if q["conv_tag"] not in exclude]
    scale = torch.tensor(20.0, requires_grad=True)
    optimiser = torch.optim.Adam([t for pair in params.values() for t in pair] + [scale],
                                 lr=settings["learning_rate"])
    was_training = transformer.training
    transformer.eval()
    try:
        for epoch in range(settings["epochs"]):
            order = np.random.RandomState(epoch).permutation(len(train))
            for start in range(0, len(order), settings["batch"]):
                loss = torch.zeros(())
                for index in order[start:start + settings["batch"]]:
                    q = train[index]
                    encoded = tokenizer([q["question"]], return_tensors="pt", truncation=True,
                                        max_length=model.max_seq_length)
                    tokens = transformer(**encoded).last_hidden_state[0]
                    tokens = tokens[torch.tensor([i not in special for i in encoded["input_ids"][0].tolist()])]
                    scope = data.torch_scope(q["conv_tag"])
                    scores = _conversation_scores(tokens / tokens.norm(dim=1, keepdim=True) - centre, scope) * scale
                    evidence = torch.tensor([d in q["evidence"] for d in scope[0]])
                    loss = loss + torch.logsumexp(scores, 0) - torch.logsumexp(scores[evidence], 0)
                optimiser.zero_grad()
                (loss / settings["batch"]).backward()
                optimiser.step()
    finally:
        for hook in hooks:
            hook.remove()
        transformer.train(was_training)
    return QueryDelta({name: (down.detach().numpy().copy(), up.detach().numpy().copy())
                       for name, (down, up) in params.items()})


def _conversation_scores(centred, scope):
    """Each memory's MaxSim for centred query tokens (torch), over a conversation's sign codes."""
    import torch

    dias, signs, owner = scope
    normalised = centred / centred.abs().sum(1, keepdim=True)
    similarity = normalised @ signs.T  # query tokens x conversation tokens
    best = torch.full((len(normalised), len(dias)), -2.0).scatter_reduce(
        1, owner.expand(len(normalised), -1), similarity, "amax")
    return best.mean(0)


def fit(pools: list[dict], rounds: int, seed: int, learning_rate: float, params: dict | None = None):
    """A LightGBM ranker over the pools; ``params`` override PARAMS (a recipe of
    train_rank_two_shapes.RECIPES)."""
    import lightgbm

    # One thread: on pools this size OpenMP's threads cost more than they save, by far on a busy
    # machine (a test's 36 pools 0.07 s a fit against 3 s; every dev pool 4 s against 8); the trees
    # are the same.
    ranker = lightgbm.LGBMRanker(n_estimators=rounds, random_state=seed, learning_rate=learning_rate,
                                 n_jobs=1, **{**PARAMS, **(params or {})})
    ranker.fit(np.concatenate([p["rows"] for p in pools]), np.concatenate([p["labels"] for p in pools]),
               group=[len(p["labels"]) for p in pools])
    return ranker


def ranked_metrics(pool: dict, scores: np.ndarray) -> dict[str, float]:
    """locomo.py's metrics (R@k, MRR, nDCG@10) of the pool ordered by ``scores``."""
    order = np.argsort(-scores, kind="stable")
    return locomo.metrics([pool["keys"][i] for i in order], pool["evidence"])


def held_out_rows(model, pools: list[dict], weight: float, cut: int = learned_rank.LEARNED_TOP) -> list[dict]:
    """Per question: metrics of the weighted score and of weighted + learned (``model``), which
    scores the ``cut`` best by weighted score, as recall scores its LEARNED_TOP."""
    rows = []
    for pool in pools:
        top = np.argsort(-pool["final"], kind="stable")[:cut]
        learned = np.zeros(len(pool["final"]))
        if len(top):
            learned[top] = 1.0 / (1.0 + np.exp(-model.predict(pool["rows"][top], raw_score=True)))
        rows.append({"question": pool["question"], "base": ranked_metrics(pool, pool["final"]),
                     "learned": ranked_metrics(pool, pool["final"] + weight * learned)})
    return rows


def add_cut_argument(parser: argparse.ArgumentParser) -> None:
    """--learned-top: how many candidates, the best by weighted score, the held-out trees score."""
    parser.add_argument("--learned-top", type=int, default=learned_rank.LEARNED_TOP,
                        help="the trees score this many candidates, the best by weighted score (recall's "
                             f"LEARNED_TOP, {learned_rank.LEARNED_TOP}, by default); training reads every candidate")


def check_cut(parser: argparse.ArgumentParser, args: argparse.Namespace) -> None:
    if args.learned_top < 1:
        parser.error(f"--learned-top: must be at least 1 (got {args.learned_top})")


# The model's levers, each ablated in the same held-out run by trees trained and scored
# with its features held at 0 (a constant column is one LightGBM never splits on).
FEATURE_GROUPS = {
    "token matches": ("max_sim", "best_token", "share_over_half", "share_over_07", "median_token",
                      "log_tokens", "max_sim_gap"),
    "thread features": ("prev_vector", "prev_keyword", "prev_final", "next_vector", "next_keyword",
                        "next_final", "thread_best", "thread_top20", "thread_gap"),
    "date features": ("names_date", "date_distance"),
    "token residual": ("token_residual",),
}


def without_features(pools: list[dict], names: Collection[str]) -> list[dict]:
    """The pools with the named feature columns set to 0."""
    columns = [learned_rank.FEATURES.index(name) for name in names]
    changed = []
    for pool in pools:
        rows = pool["rows"].copy()
        rows[:, columns] = 0.0
        changed.append({**pool, "rows": rows})
    return changed


def conversations(questions: list[dict]) -> list[str]:
    return sorted({q["conv_tag"] for q in questions}, key=lambda t: int(t.split(":")[1]))


def export(ranker, embedders: list[str], settings: dict,
           adapter: late_interaction.QueryAdapter | None = None, delta: QueryDelta | None = None) -> dict:
    """The booster's trees as flat arrays, and the query adapter or delta (the format
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
            "trained_on": "LoCoMo dev conversations 0-4 (benchmarks/quality/train_learned_rank.py)",
            "params": {**PARAMS, **settings}, "trees": trees,
            **({"query_adapter": {"down": np.round(adapter.down.astype(np.float64), 6).tolist(),
                                  "up": np.round(adapter.up.astype(np.float64), 6).tolist(),
                                  "params": ADAPTER}} if adapter is not None else {}),
            **({"query_delta": {"layers": {name: {"down": np.round(down.astype(np.float64), 6).tolist(),
                                                  "up": np.round(up.astype(np.float64), 6).tolist()}
                                           for name, (down, up) in delta.layers.items()},
                                "params": {**DELTA, "layers": list(DELTA["layers"])}}}
               if delta is not None else {})}


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
    parser.add_argument("--results", action="store_true", help="write the estimate to docs/results/history.md")
    parser.add_argument("--deltas", metavar="PICKLE",
                        help="reuse query deltas from a pickle of {frozenset(held-out conversations): "
                             "QueryDelta} (as experiments/levers9/record.py keeps them) instead of training "
                             "them again; held-out sets it lacks are trained")
    parser.add_argument("--skip-adapter", action="store_true",
                        help="leave out the ablation of the previous default's query adapter")
    add_cut_argument(parser)
    args = parser.parse_args(argv)
    check_cut(parser, args)
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
    tuned_base = "weighted score with the query delta's MaxSim (no trees)"

    def record(asked: list[dict], target=store, adapter: late_interaction.QueryAdapter | None = None,
               delta: QueryDelta | None = None, **kwargs) -> list[dict]:
        target.learned_model = placeholder_model(embedder, adapter, delta)
        return record_pools(target, asked, **kwargs)

    def cross_fitted_pools(query_model, held: set[str]) -> list[dict]:
        """Pools to train the trees that rank with ``query_model(held)``: each other
        conversation asked with a query model trained without it as well. On its own
        training questions a delta's MaxSim looks better than it will be in use, and
        trees trained there would trust it too much."""
        pools: list[dict] = []
        for conv in convs:
            if conv not in held:
                pools += record([q for q in questions if q["conv_tag"] == conv], **query_model(held | {conv}))
        return pools

    def nested(query_model, cross_fit: bool = False) -> list[dict]:
        """Held-out rows: for each conversation, the query model (``query_model(exclude)``
        gives record's keywords) and then the trees are trained without it, the trees on
        the other four's pools (cross-fitted, or recorded with that same query model)."""
        held: list[dict] = []
        for conv in convs:
            shaping = query_model({conv})
            if cross_fit:
                training = cross_fitted_pools(query_model, {conv})
                tested = record([q for q in questions if q["conv_tag"] == conv], **shaping)
            else:
                pools = record(questions, **shaping)
                training = [p for p in pools if p["question"]["conv_tag"] != conv]
                tested = [p for p in pools if p["question"]["conv_tag"] == conv]
            model = fit(training, args.rounds, args.seed, args.learning_rate)
            held += held_out_rows(model, tested, weight, args.learned_top)
            models[conv] = (model, shaping)
            if cross_fit:
                for group, names in FEATURE_GROUPS.items():
                    ablated = fit(without_features(training, names), args.rounds, args.seed, args.learning_rate)
                    without_group.setdefault(group, []).extend(
                        held_out_rows(ablated, without_features(tested, names), weight, args.learned_top))
        return held

    # A model the embedders can tune gets a delta (sentence-transformers and ONNX can);
    # the hash embedder gets trees on plain MaxSim.
    inner = getattr(store._backend.embedder, "inner", store._backend.embedder)
    tunable = callable(getattr(inner, "embed_query_tokens", None))
    deltas: dict[frozenset[str], dict] = {}
    if args.deltas and tunable:
        # The deltas do not depend on the trees' features: the same settings train the same ones.
        with open(args.deltas, "rb") as handle:
            deltas.update({frozenset(key): {"delta": delta} for key, delta in pickle.load(handle).items()})
        print(f"reusing {len(deltas)} query deltas from {args.deltas}", flush=True)
    elif args.deltas:
        print(f"--deltas {args.deltas} ignored: the embedder {args.embedder!r} takes no query delta",
              file=sys.stderr, flush=True)

    def tuned(held: set[str]) -> dict:
        key = frozenset(held)
        if key not in deltas:
            deltas[key] = {"delta": fit_query_delta(adapter_data, embedder, key)} if tunable else {}
        return deltas[key]

    models: dict[str, tuple] = {}
    without_group: dict[str, list[dict]] = {}
    rows: dict[str, list[dict]] = {"scoped": nested(tuned, cross_fit=True)}
    for conv in convs:
        model, shaping = models[conv]
        tested = [q for q in questions if q["conv_tag"] == conv]
        # The same turns with no thread (no session in tags or metadata): memories a model
        # never saw so bare.
        rows.setdefault("flat", []).extend(held_out_rows(
            model, record([q for q in flat_questions if q["conv_tag"] == conv], flat_store, **shaping), weight,
            args.learned_top))
        # Asked over the whole store of five conversations, whose other turns crowd the pool.
        rows.setdefault("unscoped", []).extend(held_out_rows(model, record(tested, scoped=False, **shaping),
                                                             weight, args.learned_top))
        # recall_v1's hybrid pools (kagura/learned.py maps their evidence to the features);
        # the hybrid mix stands for the weighted score.
        rows.setdefault("hybrid", []).extend(held_out_rows(model, record(tested, v1=True, **shaping), weight,
                                                           args.learned_top))
        print(f"{conv}: held out", flush=True)
    lines = report(rows["scoped"], tuned_base)
    lines += ["", "Held-out R@10 to four places: "
              f"{np.mean([r['learned']['R@10'] for r in rows['scoped']]):.4f}."]
    # The query delta's share: the same held-out trees on plain MaxSim, on the previous
    # default's query adapter (a linear map of the output tokens), and without cross-fitting.
    lines += ["", "Ablations: overall, and R@10 per conversation (each held out as above):", "",
              "| ranking | R@1 | R@5 | R@10 | MRR | " + " | ".join(convs) + " |",
              "|---|" + "---:|" * (4 + len(convs))]
    ablations = {**without_group, "plain": nested(lambda held: {}), "same delta": nested(tuned)}
    if not args.skip_adapter:
        ablations["adapter"] = nested(lambda held: {"adapter": fit_adapter(adapter_data, exclude=held)})
    for which, rows_of, label in (
            ("base", "plain", "weighted score, no trees (`LOCALMEM_LEARNED_RANK=0`)"),
            ("learned", "plain", "+ trees trained on plain MaxSim"),
            ("learned", "same delta", "query delta + trees trained on pools asked with that same delta "
                                      "(not cross-fitted)"),
            ("base", "adapter", "weighted score with the query adapter's MaxSim"),
            ("learned", "adapter", "+ trees (the query adapter, the previous default)"),
            *(("learned", group, f"query delta + trees without the {group}") for group in FEATURE_GROUPS)):
        if rows_of not in ablations:
            continue
        chosen = ablations[rows_of]
        means = [np.mean([r[which][key] for r in chosen]) for key in ("R@1", "R@5", "R@10", "MRR")]
        means += [np.mean([r[which]["R@10"] for r in chosen if r["question"]["conv_tag"] == conv])
                  for conv in convs]
        lines.append(f"| {label} | " + " | ".join(f"{m:.3f}" for m in means) + " |")
    lines += ["", "Without a group of features: trees trained and scored with its columns at 0 ("
              + "; ".join(f"{group}: {', '.join(names)}" for group, names in FEATURE_GROUPS.items()) + ")."]
    lines += ["", "The same questions over the same turns stored without threads (no session in tags or",
              "metadata), each conversation ranked by the delta and model trained on the other four's "
              "threaded turns:", "", *report(rows["flat"], tuned_base)[3:7]]
    lines += per_conversation(rows["flat"], "no threads")
    lines += ["", "The same questions asked over the whole store (all five conversations, no tag scope), each",
              "conversation ranked by the delta and model trained on the other four's scoped recalls:", "",
              *report(rows["unscoped"], tuned_base)[3:7]]
    lines += per_conversation(rows["unscoped"], "unscoped")
    lines += ["", "`recall_v1` (hybrid), scoped to the conversation, each conversation ranked by the delta",
              "and model trained on the other four's recall pools (without: the hybrid mix alone, with the",
              "delta's MaxSim):", "",
              *report(rows["hybrid"], "hybrid mix with the query delta's MaxSim (no trees)")[3:7]]
    lines += per_conversation(rows["hybrid"], "recall_v1")
    plain_hybrid = [ranked_metrics(p, p["final"]) for p in record(questions, v1=True)]
    lines += ["", "`recall_v1` without the learned model (`LOCALMEM_LEARNED_RANK=0`: the hybrid mix on plain "
              "MaxSim): " + ", ".join(f"{key} {np.mean([m[key] for m in plain_hybrid]):.3f}"
                                      for key in ("R@1", "R@5", "R@10", "R@20", "MRR")) + "."]
    print("\n".join(lines))
    if args.write:
        settings = {"n_estimators": args.rounds, "learning_rate": args.learning_rate, "random_state": args.seed}
        # The hub's full name of the model is the same model (a store records what it was given).
        names = [embedder] + ([f"sentence-transformers/{embedder}"] if "/" not in embedder else [])
        model = export(fit(cross_fitted_pools(tuned, set()), args.rounds, args.seed, args.learning_rate), names,
                       settings, **tuned(set()))
        output = Path(args.output)
        output.parent.mkdir(parents=True, exist_ok=True)
        output.write_text(json.dumps(model, separators=(",", ":")) + "\n", encoding="utf-8")
        print(f"wrote {output} ({output.stat().st_size:,} bytes, {len(model['trees'])} trees)")
    if args.results:
        elapsed = time.perf_counter() - started
        write_section("learned-rank", "\n".join([
            "## Learned re-ranking: leave one conversation out", "",
            "Command: `python benchmarks/quality/train_learned_rank.py --results"
            + (f" --deltas {args.deltas}" if args.deltas else "")
            + (" --skip-adapter" if args.skip_adapter else "")
            + f"` (embedder `{args.embedder}`, "
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
