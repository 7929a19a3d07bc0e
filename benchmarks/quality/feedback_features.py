"""Pool-level feedback features for the learned ranking's trees, judged held out (issue 40, branch rank14).

Pseudo-relevance feedback read as columns beside ``learned_rank.FEATURES``: what the pool's leaders (the
LEADERS best *other* candidates by recall's weighted score) share, and how much of it each candidate has:

- ``prf_cosine``: the cosine of the candidate's stored embedding to the mean of its leaders' embeddings;
- ``prf_rank``: 1 / (1 + its rank in the pool by ``prf_cosine``);
- ``prf_terms``: the leaders' shared terms (localmem's keywords less function words, in at least SHARED of
  the leaders, not the query's), each weighted by its idf in the pool, and the weighted share of them the
  candidate's text holds (0 when the leaders share none).

And novelty against the leaders (branch novelty14, NOVEL_LEADERS of them): what a candidate says that the
first results do not, the opposite reading of the same pool:

- ``nov_max``: the candidate's largest cosine to any of its leaders' embeddings;
- ``nov_margin``: its cosine to the query (the pool's ``cosine`` column) minus ``nov_max`` (maximal marginal
  relevance, equal weights);
- ``nov_rank``: 1 / (1 + its rank in the pool by ``nov_margin``).

The columns are computed offline from the pools train_rank_two_shapes.py records (``--pools``): each
candidate's key gives its stored text (LoCoMo: the turn as locomo.py stores it; LongMemEval: the turn's part,
matched by token count, ties by the part whose cosine to the question is nearest the recorded ``cosine``), and
the text its embedding from the benchmark cache (read only: nothing is written there).

Each VARIANTS entry adds its columns to FEATURES and trains the packaged trees' recipe (``nosample``) per
seed; judged held out by fold and across (trees on one set only), in recall's order, against ``base``:
LoCoMo R@1 / R@10 / MRR, LongMemEval turn R@1 / R@10 / MRR and session any@5, and the **top-3 evidence
share**: questions with an evidence key among recall's first three results (the prompt hook's reach;
LongMemEval's first three results as recall returns them, parts included), over every question and over
the hook's related prompts (hook_injection.py: each LoCoMo conversation's first 40, every LongMemEval one).

    python benchmarks/quality/feedback_features.py --pools DIR [--variants base,prf-vec,prf-all] [--seeds 0,1,2]
    python benchmarks/quality/feedback_features.py --pools DIR --variants base,nov-max,nov-margin,nov-rank
"""

from __future__ import annotations

import argparse
import json
import math
import sqlite3
import sys
import time
from array import array
from pathlib import Path
from typing import Any, Callable

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from benchmarks.common import embedding_cache, training_recipes  # noqa: E402
from benchmarks.common.number_options import whole_numbers  # noqa: E402
from benchmarks.quality import locomo, longmemeval  # noqa: E402
from benchmarks.quality import train_learned_rank as trl  # noqa: E402
from benchmarks.quality import train_rank_two_shapes as two_shapes  # noqa: E402
from localmem import Config  # noqa: E402
from localmem.hooks.capture import clean_text, split_parts  # noqa: E402
from localmem.recall import learned_rank  # noqa: E402
from localmem.recall.keywords import FUNCTION_WORDS, query_terms  # noqa: E402
from localmem.text import extract_keywords  # noqa: E402

LEADERS = 5  # the best other candidates by weighted score a candidate is compared with
SHARED = 2  # a leaders' term is shared when this many of them hold it
NOVEL_LEADERS = 3  # novelty is read against this many best others: what the prompt hook injects
FEEDBACK = ("prf_cosine", "prf_rank", "prf_terms")
NOVELTY = ("nov_max", "nov_margin", "nov_rank")
COLUMNS = FEEDBACK + NOVELTY
VARIANTS: dict[str, tuple[str, ...]] = {"base": (), "prf-vec": FEEDBACK[:2], "prf-all": FEEDBACK,
                                        "nov-max": ("nov_max",), "nov-margin": ("nov_margin",),
                                        "nov-rank": ("nov_rank",)}
HOOK_LOCOMO = 40  # hook_injection.py's --per-conversation: the LoCoMo questions the hook asks
LOCOMO_KEYS = ("R@1", "R@10", "MRR", "top3", "top3 hook")
LME_KEYS = ("R@1", "R@10", "MRR", "any@5", "top3", "top3 hook")


def terms_of(text: str) -> set[str]:
    """The text's keywords less function words (recall.keywords.query_terms's words, uncapped)."""
    return {k for k in extract_keywords(text.lower()) if k not in FUNCTION_WORDS}


def leaders_of(final: np.ndarray, count: int = LEADERS) -> list[list[int]]:
    """Each candidate's leaders: the ``count`` best other candidates by ``final`` (ties by pool order)."""
    order = np.argsort(-final, kind="stable").tolist()
    best = order[:count + 1]
    common = best[:count]
    return [[j for j in best if j != i][:count] if i in common else common for i in range(len(final))]


def reciprocal_rank(values: np.ndarray) -> np.ndarray:
    ranks = np.empty(len(values))
    ranks[np.argsort(-values, kind="stable")] = np.arange(len(values))
    return 1.0 / (1.0 + ranks)


def feedback_columns(vectors: np.ndarray, terms: list[set[str]], query: set[str], final: np.ndarray) -> np.ndarray:
    """FEEDBACK for one pool: ``vectors`` its candidates' embeddings (rows), ``terms`` their terms_of,
    ``query`` the query's terms, ``final`` their weighted scores."""
    n = len(final)
    out = np.zeros((n, len(FEEDBACK)))
    if n < 2:
        return out
    units = vectors / np.maximum(np.linalg.norm(vectors, axis=1, keepdims=True), 1e-12)
    leaders = leaders_of(final)
    frequency: dict[str, int] = {}
    for held in terms:
        for term in held:
            frequency[term] = frequency.get(term, 0) + 1
    shared_of: dict[tuple[int, ...], dict[str, float]] = {}
    for i, chosen in enumerate(leaders):
        centre = units[chosen].mean(axis=0)
        out[i, 0] = float(units[i] @ centre) / max(float(np.linalg.norm(centre)), 1e-12)
        key = tuple(sorted(chosen))
        if key not in shared_of:
            counts: dict[str, int] = {}
            for j in chosen:
                for term in terms[j]:
                    counts[term] = counts.get(term, 0) + 1
            shared_of[key] = {t: math.log(n / frequency[t]) for t, c in counts.items()
                              if c >= SHARED and t not in query}
        shared = shared_of[key]
        total = sum(shared.values())
        if total > 0:
            out[i, 2] = sum(w for t, w in shared.items() if t in terms[i]) / total
    out[:, 1] = reciprocal_rank(out[:, 0])
    return out


def novelty_columns(vectors: np.ndarray, cosine: np.ndarray, final: np.ndarray) -> np.ndarray:
    """NOVELTY for one pool: ``vectors`` its candidates' embeddings (rows), ``cosine`` their cosines to
    the query, ``final`` their weighted scores."""
    n = len(final)
    out = np.zeros((n, len(NOVELTY)))
    if n < 2:
        return out
    units = vectors / np.maximum(np.linalg.norm(vectors, axis=1, keepdims=True), 1e-12)
    for i, chosen in enumerate(leaders_of(final, NOVEL_LEADERS)):
        out[i, 0] = float((units[chosen] @ units[i]).max())
    out[:, 1] = cosine - out[:, 0]
    out[:, 2] = reciprocal_rank(out[:, 1])
    return out


class CacheReader:
    """Embeddings and token counts from the benchmark cache, read only; a text it lacks is embedded
    (not stored)."""

    def __init__(self, embedder: Any) -> None:
        self.embedder = embedder
        self.name = embedder.name
        inner = getattr(embedder, "inner", embedder)
        self.inner = inner
        path = embedding_cache.CACHE_DIR / "embeddings.sqlite"
        self.db = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
        self.missed = 0

    def _blobs(self, kind: str, texts: list[str]) -> dict[str, bytes]:
        keys = {embedding_cache._key(self.name, kind, t): t for t in dict.fromkeys(texts)}
        found: dict[str, bytes] = {}
        listed = list(keys)
        for start in range(0, len(listed), 500):
            chunk = listed[start:start + 500]
            rows = self.db.execute(f"SELECT key, value FROM cache WHERE key IN ({','.join('?' * len(chunk))})", chunk)
            found.update((keys[k], v) for k, v in rows)
        return found

    def vectors(self, texts: list[str]) -> np.ndarray:
        found = {t: np.frombuffer(array("f", b).tobytes(), dtype=np.float32)
                 for t, b in self._blobs("embed", texts).items()}
        missing = [t for t in dict.fromkeys(texts) if t not in found]
        if missing:
            self.missed += len(missing)
            found.update((t, np.asarray(v, dtype=np.float32)) for t, v in zip(missing, self.inner.embed(missing)))
        return np.array([found[t] for t in texts])

    def token_counts(self, texts: list[str]) -> dict[str, int | None]:
        dims = self.inner.dimensions
        found = self._blobs("tokens-f16", texts)
        return {t: (len(found[t]) // (2 * dims) if t in found else None) for t in texts}


class PoolTexts:
    """Each pool's candidates' stored texts and their embeddings."""

    def __init__(self, cache: CacheReader, locomo_path: str, instances: list[dict]) -> None:
        self.cache = cache
        data = json.loads(Path(locomo_path).read_text())
        self.locomo = [{t["dia_id"]: locomo.memory_item(t, index)["content"] for t in locomo.turns_of(sample)}
                       for index, sample in enumerate(data)]
        self.instances = {i["question_id"]: i for i in instances}
        self.tie_broken = 0
        self.parted = 0

    def texts(self, pool: dict) -> list[str]:
        if pool["shape"] == "locomo":
            return [self.locomo[pool["fold"]][k] for k in pool["keys"]]
        instance = self.instances[pool["id"]]
        parts_of: dict[str, list[str]] = {}
        for key in dict.fromkeys(pool["keys"]):
            session, turn = map(int, key.split(":"))
            parts_of[key] = split_parts(clean_text(instance["haystack_sessions"][session][turn]["content"])[0].strip())
        texts: list[str | None] = [None] * len(pool["keys"])
        groups: dict[str, list[int]] = {}
        for index, key in enumerate(pool["keys"]):
            groups.setdefault(key, []).append(index)
        for key, members in groups.items():
            parts = parts_of[key]
            if len(parts) == 1:
                for index in members:
                    texts[index] = parts[0]
                continue
            self.parted += len(members)
            for index, part in zip(members, self._matched(pool, members, parts)):
                texts[index] = part
        return [t or "" for t in texts]

    def _matched(self, pool: dict, members: list[int], parts: list[str]) -> list[str]:
        """The part each member is: by token count (the pool's ``log_tokens``), ties by the part whose
        plain cosine to the question is nearest the member's recorded ``cosine``."""
        counts = self.cache.token_counts(parts)
        column = learned_rank.FEATURES.index
        question = self.cache.vectors([pool["question"]])[0]
        plain = {p: float(v @ question) for p, v in zip(parts, self.cache.vectors(parts))}
        free = list(parts)
        chosen: dict[int, str] = {}
        for index in sorted(members, key=lambda i: -pool["rows"][i, column("cosine")]):
            tokens = round(math.expm1(pool["rows"][index, column("log_tokens")]))
            same = [p for p in free if counts[p] == tokens]
            if len(same) != 1:
                self.tie_broken += 1
                same = same or free
            recorded = pool["rows"][index, column("cosine")]
            part = min(same, key=lambda p: abs(plain[p] - recorded))
            chosen[index] = part
            free.remove(part)
        return [chosen[i] for i in members]

    def columns(self, pool: dict) -> np.ndarray:
        texts = self.texts(pool)
        vectors = self.cache.vectors(texts)
        cosine = pool["rows"][:, learned_rank.FEATURES.index("cosine")]
        return np.column_stack([feedback_columns(vectors, [terms_of(t) for t in texts],
                                                 set(query_terms(pool["question"])), pool["final"]),
                                novelty_columns(vectors, cosine, pool["final"])])


def with_columns(pools: list[dict], extra: list[np.ndarray], names: tuple[str, ...]) -> list[dict]:
    """The pools with FEATURES' rows and the named COLUMNS beside them."""
    picked = [COLUMNS.index(n) for n in names]
    return [{**p, "rows": np.column_stack([p["rows"], e[:, picked]]) if picked else p["rows"]}
            for p, e in zip(pools, extra)]


def figures(pool: dict, predict: Callable[[np.ndarray], np.ndarray], weight: float) -> dict[str, float]:
    """The runner's metrics, R@1, and whether an evidence key is among recall's first three results."""
    ranked = two_shapes.ranked_keys(pool, two_shapes.learned_scores(predict, pool, weight))
    evidence = pool["truth"]["evidence"] if pool["shape"] == "locomo" else pool["truth"]["turns"]
    distinct = ranked if pool["shape"] == "locomo" else longmemeval.distinct(ranked)
    top3 = float(bool(evidence & set(ranked[:3])))
    return {**two_shapes.pool_metrics(pool, ranked), "R@1": len(evidence & set(distinct[:1])) / len(evidence),
            "top3": top3, **({"top3 hook": top3} if pool["hook"] else {})}


def fitted(pools: list[dict], seed: int, params: dict) -> Callable[[np.ndarray], np.ndarray]:
    ranker = trl.fit(two_shapes.weighted(pools, 1), training_recipes.DEFAULTS["rounds"], seed,
                     training_recipes.DEFAULTS["learning_rate"], dict(params))
    return lambda rows: ranker.predict(rows, raw_score=True)


def runs(pools: list[dict], seed: int, params: dict, weight: float) -> dict[str, list[dict]]:
    """Every pool's figures held out by fold and across (trees on the other set only)."""
    held = {f: fitted([p for p in pools if p["fold"] != f], seed, params) for f in range(two_shapes.FOLDS)}
    alone = {s: fitted([p for p in pools if p["shape"] == s], seed, params) for s in ("locomo", "lme")}
    return {"held out": [figures(p, held[p["fold"]], weight) for p in pools],
            "across": [figures(p, alone["lme" if p["shape"] == "locomo" else "locomo"], weight) for p in pools]}


def summary(pools: list[dict], rows: list[dict]) -> list[float]:
    loc = [r for r, p in zip(rows, pools) if p["shape"] == "locomo"]
    lme = [r for r, p in zip(rows, pools) if p["shape"] == "lme"]
    return two_shapes.means(loc, LOCOMO_KEYS) + two_shapes.means(lme, LME_KEYS)


def moved(pools: list[dict], base: list[dict], rows: list[dict]) -> str:
    """Questions brought into the top 3 / pushed out of it against ``base``, per set."""
    cells = []
    for shape in ("locomo", "lme"):
        pairs = [(b["top3"], r["top3"]) for p, b, r in zip(pools, base, rows) if p["shape"] == shape]
        cells.append(f"{sum(r > b for b, r in pairs)} / {sum(r < b for b, r in pairs)}")
    return " | ".join(cells)


def verdict(mean: dict[str, dict[str, list[float]]], name: str) -> list[str]:
    """The pre-registered rule for ``name`` against ``base`` (docs/results/history.md, branch rank14)."""
    held, across, base_held, base_across = (mean[name]["held out"], mean[name]["across"],
                                            mean["base"]["held out"], mean["base"]["across"])
    at = {k: i for i, k in enumerate([f"LoCoMo {k}" for k in LOCOMO_KEYS] + [f"LME {k}" for k in LME_KEYS])}
    checks = [
        ("held-out top-3 share higher, LoCoMo", held[at["LoCoMo top3"]] > base_held[at["LoCoMo top3"]]),
        ("held-out top-3 share higher, LongMemEval", held[at["LME top3"]] > base_held[at["LME top3"]]),
        ("any@5 >= 0.98", held[at["LME any@5"]] >= 0.98),
    ]
    for label, values, base in (("held out", held, base_held), ("across", across, base_across)):
        for key in ("LoCoMo R@10", "LoCoMo MRR", "LME R@10", "LME MRR"):
            checks.append((f"{label} {key} no lower at three decimals",
                           round(values[at[key]], 3) >= round(base[at[key]], 3)))
    failed = [label for label, ok in checks if not ok]
    return [f"- `{name}`: " + ("**passes**" if not failed else "fails: " + "; ".join(failed))]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    two_shapes.add_pool_arguments(parser)
    parser.add_argument("--variants", default="base,prf-vec,prf-all", help="comma-separated names of VARIANTS")
    parser.add_argument("--seeds", default="0,1,2", type=whole_numbers(0), help="comma-separated LightGBM seeds")
    parser.add_argument("--recipe", choices=sorted(training_recipes.RECIPES), default="nosample",
                        help="the trees' training recipe (default nosample, the packaged trees')")
    args = parser.parse_args(argv)
    names = args.variants.split(",")
    unknown = [n for n in names if n not in VARIANTS]
    if unknown or "base" not in names:
        parser.error(f"--variants: name base and known variants (unknown: {', '.join(unknown) or 'none'}; "
                     f"known: {', '.join(VARIANTS)})")
    seeds = args.seeds
    started = time.perf_counter()

    def log(line: str) -> None:
        print(f"[{time.perf_counter() - started:.0f} s] {line}", file=sys.stderr, flush=True)

    pools, instances, _, _ = two_shapes.record_all(args, lambda line: None)
    per_fold: dict[int, int] = {}
    for p in pools:
        if p["shape"] == "locomo":
            per_fold[p["fold"]] = per_fold.get(p["fold"], 0) + 1
        p["hook"] = p["shape"] == "lme" or per_fold[p["fold"]] <= HOOK_LOCOMO
    embedder = locomo.cached_embedder(args.embedder)
    texts = PoolTexts(CacheReader(embedder), args.locomo, instances)
    extra = [texts.columns(p) for p in pools]
    log(f"{len(pools)} pools; feedback columns computed ({texts.parted} LongMemEval candidates of turns in parts, "
        f"{texts.tie_broken} matched by the nearest cosine; {texts.cache.missed} texts not in the cache, embedded)")
    params = training_recipes.RECIPES[args.recipe].get("params", {})
    weight = Config().weight_learned
    results: dict[str, dict[int, dict[str, list[dict]]]] = {}
    for name in names:
        chosen = with_columns(pools, extra, VARIANTS[name])
        results[name] = {seed: runs(chosen, seed, params, weight) for seed in seeds}
        log(f"{name} done")
    header = ("| variant | seed | " + " | ".join(f"LoCoMo {k}" for k in LOCOMO_KEYS) + " | " +
              " | ".join(f"LME {k}" for k in LME_KEYS) + " | top-3 in / out LoCoMo | LME |")
    mean: dict[str, dict[str, list[float]]] = {}
    n_lme = sum(p["shape"] == "lme" for p in pools)
    lines = [f"{len(pools) - n_lme} LoCoMo questions ({sum(p['hook'] for p in pools) - n_lme} the hook's), "
             f"{n_lme} LongMemEval; recipe {args.recipe}; seeds {', '.join(map(str, seeds))}."]
    for evaluation in ("held out", "across"):
        rule = "|---|---|" + "---:|" * (len(LOCOMO_KEYS) + len(LME_KEYS)) + "---|---|"
        lines += ["", f"{evaluation}:", "", header, rule]
        for name in names:
            rows = []
            for seed in seeds:
                row = summary(pools, results[name][seed][evaluation])
                rows.append(row)
                lines.append(f"| {name} | {seed} | " + " | ".join(f"{v:.4f}" for v in row) + " | " +
                             moved(pools, results["base"][seed][evaluation], results[name][seed][evaluation]) + " |")
            mean.setdefault(name, {})[evaluation] = list(np.mean(rows, axis=0))
            lines.append(f"| **{name} mean** | | " + " | ".join(f"{v:.4f}" for v in mean[name][evaluation]) + " | |")
    lines += ["", "Against the pre-registered rule:", ""]
    for name in names[1:] if names[0] == "base" else [n for n in names if n != "base"]:
        lines += verdict(mean, name)
    lines += ["", f"{time.perf_counter() - started:.0f} s."]
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
