"""Candidate pools recorded for training and comparing the learned ranking's trees.

Each LoCoMo and LongMemEval dev question is asked through ``MemoryStore.recall`` as the two
runners ask it (benchmarks/quality/locomo.py, benchmarks/quality/longmemeval.py), with the
learned component at weight 0; the candidates' keys, weighted scores and features
(``learned_rank.pool_features``) are kept with a label per candidate: is it evidence.

Recording LongMemEval's pools takes about a minute per instance, so ``PoolCache`` keeps them
on disk keyed by what they depend on: recall's code, this module and the runners, the
configuration, the embedder and the data. The scripts that train on the pools
(train_rank_two_shapes.py and the comparisons built on it) are not in the key: changing how
trees are trained or compared does not record the pools again.
"""

from __future__ import annotations

import argparse
import dataclasses
import hashlib
import json
import os
import pickle
import sys
from pathlib import Path
from typing import Any, Callable

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from benchmarks.quality import locomo, longmemeval  # noqa: E402
from benchmarks.quality import train_learned_rank as trl  # noqa: E402
from localmem import Config  # noqa: E402
from localmem.embedders.resolve import resolve_embedder  # noqa: E402
from localmem.recall import learned_rank, pipeline, thread_spread  # noqa: E402

FOLDS = 5


def recorded_pool(store, ask: Callable[[], Any], key_of: Callable[[dict], str]) -> dict:
    """The candidate pool one recall (``ask``) scores: each candidate's key, weighted score
    and features; the learned component is left out (the store's model is a placeholder)."""
    pool: dict = {"keys": [], "final": np.zeros(0), "rows": np.zeros((0, len(learned_rank.FEATURES))),
                  "question": "", "threads": []}

    def recording(model, candidates, query, mention=None):
        pool["keys"] = [key_of(c) for c in candidates]
        pool["question"], pool["threads"] = query, thread_spread.candidate_threads(candidates)
        pool["final"] = np.array([c["final_score"] for c in candidates])
        pool["rows"] = learned_rank.pool_features(candidates, query, mention)
        return {}

    real, pipeline.learned_components = pipeline.learned_components, recording
    try:
        ask()
    finally:
        pipeline.learned_components = real
    return pool


class PoolCache:
    """Recorded pools on disk, so a second run (another training setting, more instances)
    asks recall only for what it has not recorded. Keyed by the code that asks (every file of
    the ``localmem`` package, the packaged model included, the two runners and this module, not
    the scripts that train on the pools), the
    configuration, the embedder and the item (the LoCoMo file's bytes, a LongMemEval
    instance's bytes): a change to any of them is a miss, never a stale pool."""

    def __init__(self, folder: str | None, embedder_name: str, config: Config) -> None:
        self.folder = Path(folder) if folder else None
        if self.folder is None:
            return
        self.folder.mkdir(parents=True, exist_ok=True)
        digest = hashlib.sha256(f"{embedder_name}\0{config!r}".encode())
        package = Path(learned_rank.__file__).resolve().parents[1]
        for path in sorted(package.rglob("*")):
            if path.is_file() and path.suffix in {".py", ".sql", ".json"}:
                digest.update(str(path.relative_to(package)).encode() + b"\0" + path.read_bytes())
        for source in (locomo.__file__, longmemeval.__file__, __file__):  # how the questions are asked
            digest.update(Path(source).read_bytes())
        self.code = digest.hexdigest()

    def path(self, item: bytes) -> Path | None:
        if self.folder is None:
            return None
        return self.folder / f"{hashlib.sha256(self.code.encode() + item).hexdigest()[:32]}.pkl"

    def get(self, item: bytes, record: Callable[[], Any]) -> Any:
        path = self.path(item)
        if path is not None and path.exists():
            return pickle.loads(path.read_bytes())
        value = record()
        if path is not None:
            path.write_bytes(pickle.dumps(value))
        return value


def locomo_pools(path: str, embedder, config: Config, model: learned_rank.TreeModel,
                 cache: PoolCache, asked_at: str = "today") -> list[dict]:
    item = Path(path).read_bytes() + (b"" if asked_at == "today" else f"\0asked at {asked_at}".encode())
    return cache.get(item, lambda: _record_locomo(path, embedder, config, model, asked_at))


def _record_locomo(path: str, embedder, config: Config, model: learned_rank.TreeModel,
                   asked_at: str) -> list[dict]:
    data = json.loads(Path(path).read_text())
    store, questions = locomo.build_store(data, embedder, ":memory:", config)
    store.learned_model = model
    locomo.build_bm25_baseline(store)
    dia_of = {memory_id: dia for memory_id, dia in store.conn.execute(
        "SELECT id, json_extract(metadata, '$.dia_id') FROM memories")}
    pools = []
    with store:
        for q in questions:
            pool = recorded_pool(store, lambda q=q: store.recall(q["question"], tags=[q["conv_tag"]], limit=20,
                                                                 adaptive_floor=False, **locomo.asking(q, asked_at)),
                                 lambda c: dia_of[c["memory"]["id"]])
            fold = int(q["conv_tag"].split(":")[1]) % FOLDS
            pool.update(shape="locomo", fold=fold, labels=np.array([k in q["evidence"] for k in pool["keys"]], float),
                        truth={"evidence": set(q["evidence"])}, kind=q["category"],
                        bm25=locomo.metrics(locomo.bm25_baseline(store, q["question"], q["conv_tag"], 20),
                                            q["evidence"]))
            pools.append(pool)
    return pools


def lme_pools(instances: list[dict], embedder, config: Config, model: learned_rank.TreeModel,
              log: Callable[[str], None], cache: PoolCache) -> list[dict]:
    pools = []
    for number, instance in enumerate(instances):
        if instance["question_id"].endswith("_abs"):
            continue  # nothing to find: no label to learn from
        item = json.dumps(instance, sort_keys=True).encode()
        pool = cache.get(item, lambda instance=instance: _record_lme(instance, embedder, config, model))
        pools.append({**pool, "fold": number % FOLDS, "id": instance["question_id"]})
        log(f"lme {number + 1}/{len(instances)} {instance['question_id']}")
    return pools


def _record_lme(instance: dict, embedder, config: Config, model: learned_rank.TreeModel) -> dict:
    store, _, _ = longmemeval.build_store(instance, embedder, config)
    store.learned_model = model
    turns, sessions = longmemeval.evidence_of(instance)
    of = longmemeval.session_map(instance)
    with store:
        pool = recorded_pool(store, lambda: longmemeval.localmem_answer(store, instance),
                             lambda c: c["memory"]["metadata"].get("turn"))
        bm25 = longmemeval.metrics(longmemeval.bm25_turns(store, instance["question"]), of, turns, sessions)
    pool.update(bm25=bm25, shape="lme", labels=np.array([k in turns for k in pool["keys"]], float),
                truth={"session_of": of, "turns": turns, "sessions": sessions}, kind=instance["question_type"])
    return pool


def add_pool_arguments(parser: argparse.ArgumentParser) -> None:
    """The options that say which pools to record (shared with role_length_levers.py)."""
    parser.add_argument("--locomo", default=str(locomo.DEFAULT_DATA))
    parser.add_argument("--locomo-asked-at", choices=locomo.ASKED_AT, default="today",
                        help="when LoCoMo's questions are asked (benchmarks/quality/locomo.py --asked-at)")
    parser.add_argument("--lme", default=str(longmemeval.DEFAULT_DATA))
    parser.add_argument("--lme-instances", type=int, default=None,
                        help="the first N LongMemEval instances in the runner's subset order (default: all)")
    parser.add_argument("--lme-ids", default=None, help="comma-separated question ids: only these instances")
    parser.add_argument("--embedder", default="auto")
    parser.add_argument("--no-cache", action="store_true",
                        help="embed without the on-disk cache in benchmarks/.cache (tests)")
    parser.add_argument("--pools", default=None,
                        help="a folder to keep recorded pools in, reused while recall's code, the embedder "
                             "and the data are unchanged")


def record_all(args: argparse.Namespace, log: Callable[[str], None], delta: Any = None
               ) -> tuple[list[dict], list[dict], Any, Any]:
    """Every LoCoMo and LongMemEval pool the options name (recorded with the learned component
    at weight 0), the LongMemEval instances, the packaged model and the delta the pools used:
    ``delta`` (a QueryDelta), else the packaged model's."""
    packaged = learned_rank.TreeModel.packaged()
    embedder = resolve_embedder(args.embedder) if args.no_cache else locomo.cached_embedder(args.embedder)
    config = Config.from_env({**os.environ, "LOCALMEM_TRACK_ACCESS": "0", "SEARCH_WEIGHT_LEARNED": "0"})
    # The placeholder lets recall compute the features with the packaged delta's MaxSim (an
    # embedder that cannot apply a delta, e.g. the hash one in tests, gets plain MaxSim).
    inner = getattr(embedder, "inner", embedder)
    tunable = callable(getattr(inner, "embed_query_tokens", None))
    chosen = delta if delta is not None else packaged.query_delta
    delta = chosen if tunable else None
    placeholder = dataclasses.replace(trl.placeholder_model(embedder.name, delta=delta),
                                      embedders=(*packaged.embedders, embedder.name))
    # A delta changes every pool: the cache keys name it.
    cache = PoolCache(args.pools, embedder.name + (f"\0delta {delta.digest}" if delta is not None else ""), config)
    pools = locomo_pools(args.locomo, embedder, config, placeholder, cache, args.locomo_asked_at)
    log(f"locomo: {len(pools)} pools")
    instances = longmemeval.load_instances(args.lme, args.lme_instances, ids=args.lme_ids.split(",") if args.lme_ids else None)
    pools += lme_pools(instances, embedder, config, placeholder, log, cache)
    return pools, instances, packaged, delta
