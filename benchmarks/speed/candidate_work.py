"""How many candidates each stage of a warm text recall touches, and what it costs per candidate.

recall_stages.py's workload (small_store.py's store, every Nth LoCoMo question as a ``text``
recall scoped to its conversation, limit 20, learned ranking on, the real query encoder).
Each stage's function is wrapped (benchmarks/common/stage_spans.py) and its candidates are
counted from what it is given or gives back: the channels' finds, the pool each evidence
step fills, the candidates scored one call at a time, the pool the learned stage reads and
the rows its trees score, the answer's results. The table gives per recall: calls,
candidates, the stage's time on the recall thread's CPU clock (``--clock``), its share of
the recall and its microseconds per candidate. On a loaded machine read the shares and the
counts; the microseconds are for scale.

``--pools S1,S2,...`` then asks the same questions again with other pool sizes, each a
store of its own on the same file, taking turns question by question: ``O`` is
``vector_overfetch`` (the vector channel asks for limit × O, the keyword channel for at
least that and ``keyword_fetch``), ``O/K`` with ``keyword_fetch`` K too, ``keyword:N`` the
keyword channel's page N alone, ``first:N`` only the N best channel finds by fused ranks
going on (recall/candidate_pool.py's constants, set before each recall: that module is in
branch warm13's commit 80f611e only, measured and reverted). It reports the
candidate pool's median size and each setting's recall time (the same clock) as the median
over questions of its time ÷ the first setting's: what a smaller pool saves, before asking
what it costs in answers (benchmarks/quality/pool_cut.py).

    python benchmarks/speed/candidate_work.py --store FILE [--every 2] [--clock cpu|wall|process]
        [--pools 4,2,keyword:50,first:90]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[1]))

from benchmarks.common.stage_spans import Spans  # noqa: E402
from benchmarks.speed import small_store  # noqa: E402
from localmem import Config, MemoryStore, store as store_module  # noqa: E402
from localmem.recall import learned_rank, pipeline, state  # noqa: E402

try:  # the pool levers' constants: branch warm13's commit 80f611e, reverted (measured, not shipped)
    from localmem.recall import candidate_pool  # type: ignore[attr-defined]
except ImportError:
    candidate_pool = None
# Where the code of the keyword:N and first:N settings is.
LEVERS_COMMIT = "80f611e"

from localmem.recall.keywords import KeywordScorer  # noqa: E402
from localmem.recall.relevance import Evidence  # noqa: E402


def _given(position: int) -> Callable[[tuple, dict, Any], int]:
    return lambda args, kwargs, result: len(args[position])


def _returned(args: tuple, kwargs: dict, result: Any) -> int:
    return len(result)


def _one(args: tuple, kwargs: dict, result: Any) -> int:
    return 1


def _rows(args: tuple, kwargs: dict, result: Any) -> int:
    return len(args[1])


# (owner, attribute, label, how its candidates are counted), in the pipeline's order.
STAGES = [
    (store_module, "run_recall", "recall pipeline", None),
    (pipeline, "vector_candidates", "vector channel (finds)", _returned),
    (pipeline.Recall, "dated_candidates", "named-date channel (finds)", _returned),
    (pipeline, "keyword_candidates", "keyword channel (hits, found ones as ids)", _returned),
    (pipeline.Recall, "prepare", "evidence for every candidate", _given(1)),
    (pipeline.Recall, "fill_tokens", "token evidence (codes read)", _given(1)),
    (pipeline.Recall, "fill_similarity", "cosines for keyword finds", _given(1)),
    (pipeline.Recall, "fill_centred", "centred cosines", _given(1)),
    (pipeline.Recall, "fill_keyword", "keyword scores", _given(1)),
    (KeywordScorer, "scores", "keyword scores' BM25 with thread context", _given(1)),
    (state.SupersessionHeads, "__call__", "supersession heads", _given(1)),
    (pipeline.Recall, "score", "per-candidate scoring", _one),
    (pipeline.Recall, "add_learned", "learned ranking (pool)", _given(1)),
    (learned_rank, "pool_features", "learned features (pool)", _given(0)),
    (learned_rank.TreeModel, "raw_scores", "tree evaluation (rows scored)", _rows),
    (Evidence, "add", "evidence kept for confidence", _given(1)),
    (pipeline, "dedupe", "dedupe", _given(0)),
    (pipeline, "sort_results", "sort", _given(0)),
    (pipeline, "apply_state_filter", "current-state filter", _given(1)),
    (pipeline, "attach_relevance", "relevance (results)", _given(0)),
    (pipeline, "recall_response", "response (results)", _given(1)),
    (pipeline, "recall_confidence", "confidence", None),
]


class Counts:
    """Candidates per stage, counted by wrappers over ``Spans``' (so its times include them:
    a len() per call)."""

    def __init__(self) -> None:
        self.seen: dict[str, int] = {}
        self._patched: list[tuple[Any, str, Any]] = []

    def wrap(self, owner: Any, name: str, label: str, count: Callable[[tuple, dict, Any], int]) -> None:
        original = owner.__dict__[name] if isinstance(owner, type) else getattr(owner, name)
        function = original.__func__ if isinstance(original, staticmethod) else original
        seen = self.seen

        def counted(*args: Any, **kwargs: Any) -> Any:
            result = function(*args, **kwargs)
            seen[label] = seen.get(label, 0) + count(args, kwargs, result)
            return result

        setattr(owner, name, staticmethod(counted) if isinstance(original, staticmethod) else counted)
        self._patched.append((owner, name, original))

    def restore(self) -> None:
        for owner, name, original in reversed(self._patched):
            setattr(owner, name, original)


def stage_table(store: MemoryStore, work: list[tuple[str, dict]], clock: Callable[[], float]) -> list[str]:
    spans, counts = Spans(clock), Counts()
    for owner, name, label, count in STAGES:
        spans.wrap(owner, name, label)
        if count is not None:
            counts.wrap(owner, name, label, count)
    whole = []
    for query, kwargs in work:
        started = clock()
        store.recall(query, **kwargs)
        whole.append(clock() - started)
    counts.restore()
    spans.restore()
    n, total = len(work), sum(whole)
    rows = ["| stage | calls per recall | candidates per recall | ms per recall | share of the recall | "
            "µs per candidate |", "|---|---:|---:|---:|---:|---:|"]
    for _, _, label, _ in STAGES:
        if label not in spans.total:
            continue
        seconds = spans.total[label]
        touched = counts.seen.get(label)
        per = f"{seconds * 1e6 / touched:.1f}" if touched else ""
        rows.append(f"| {label} | {spans.calls[label] / n:.1f} | "
                    + (f"{touched / n:.1f}" if touched is not None else "") + f" | {seconds * 1000 / n:.2f} | "
                    f"{seconds / total:.1%} | {per} |")
    rows.append(f"| (the recall, store.recall) | 1.0 | | {total * 1000 / n:.2f} | 100% | |")
    return rows


@dataclass(frozen=True)
class PoolSetting:
    """A candidate pool's size: ``O`` (vector_overfetch), ``O/K`` (and keyword_fetch K),
    ``keyword:N`` (the keyword channel's page N, recall/candidate_pool.py's KEYWORD_PAGE) or
    ``first:N`` (the N best channel finds by fused ranks go on, its FIRST_CUT)."""

    name: str
    config: tuple[tuple[str, int], ...] = ()
    constants: tuple[tuple[str, int], ...] = ()

    def apply(self) -> None:
        """Set recall/candidate_pool.py's constants as this setting has them (the others to None)."""
        if candidate_pool is None:
            if self.constants:
                raise SystemExit(f"{self.name}: this tree's recall has no candidate_pool.py (the lever's code is "
                                 f"branch warm13's commit {LEVERS_COMMIT}: run from a worktree of it)")
            return
        for constant in ("KEYWORD_PAGE", "FIRST_CUT"):
            setattr(candidate_pool, constant, dict(self.constants).get(constant))


def read_setting(text: str) -> PoolSetting:
    kind, colon, count = text.partition(":")
    if colon:
        constant = {"keyword": "KEYWORD_PAGE", "first": "FIRST_CUT"}.get(kind)
        if constant is None or not count.isdigit() or int(count) < 1:
            raise argparse.ArgumentTypeError(f"keyword:N or first:N, N at least 1 (got {text!r})")
        return PoolSetting(text, constants=((constant, int(count)),))
    head, _, tail = text.partition("/")
    try:
        overfetch, keyword = int(head), (int(tail) if tail else None)
    except ValueError:
        raise argparse.ArgumentTypeError(f"a pool setting is O, O/K, keyword:N or first:N (got {text!r})") from None
    if overfetch < 1 or (keyword is not None and keyword < 1):
        raise argparse.ArgumentTypeError(f"O and K are at least 1 (got {text!r})")
    changes = (("vector_overfetch", overfetch),) + ((("keyword_fetch", keyword),) if keyword is not None else ())
    return PoolSetting(text, config=changes)


def setting_list(text: str) -> list[PoolSetting]:
    settings = [read_setting(part.strip()) for part in text.split(",") if part.strip()]
    if len(settings) < 2:
        raise argparse.ArgumentTypeError("at least two pool settings, the first the base")
    return settings


def pool_sizes(store: MemoryStore, work: list[tuple[str, dict]]) -> list[int]:
    """Each question's candidate pool (what the learned stage reads)."""
    sizes: list[int] = []
    original = pipeline.Recall.add_learned

    def counted(self: Any, candidates: list, query: str) -> None:
        sizes.append(len(candidates))
        return original(self, candidates, query)

    pipeline.Recall.add_learned = counted  # type: ignore[method-assign]
    try:
        for query, kwargs in work:
            store.recall(query, **kwargs)
    finally:
        pipeline.Recall.add_learned = original  # type: ignore[method-assign]
    return sizes


def settings_table(path: str, embedder: Any, config: Config, work: list[tuple[str, dict]],
                   settings: list[PoolSetting], clock: Callable[[], float]) -> list[str]:
    stores = [MemoryStore(path, embedder=embedder, config=config.with_changes(**dict(setting.config)),
                          clock=lambda: small_store.NOW) for setting in settings]
    for setting, store in zip(settings, stores):  # warm each: statements, caches, the model
        setting.apply()
        for query, kwargs in work[:20]:
            store.recall(query, **kwargs)
    times: list[list[float]] = [[] for _ in stores]
    try:
        for index, (query, kwargs) in enumerate(work):
            order = list(range(len(stores)))
            if index % 2:
                order.reverse()
            for which in order:
                settings[which].apply()
                started = clock()
                stores[which].recall(query, **kwargs)
                times[which].append(clock() - started)
        sizes = []
        for setting, store in zip(settings, stores):
            setting.apply()
            sizes.append(pool_sizes(store, work))
    finally:
        PoolSetting("as it is").apply()
    rows = ["| pool setting | pool, median (min–max) | recall ÷ the first setting, median over questions |",
            "|---|---:|---:|"]
    for setting, pool, own in zip(settings, sizes, times):
        ratio = statistics.median(a / b for a, b in zip(own, times[0]))
        rows.append(f"| {setting.name} | {statistics.median(pool):.0f} ({min(pool)}–{max(pool)}) | {ratio:.3f} |")
    for store in stores:
        store.close()
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    small_store.add_warm_text_arguments(parser, every=2)
    parser.add_argument("--clock", choices=("wall", "cpu", "process"), default="cpu",
                        help="cpu: the recall thread's CPU time (default); process: every thread's")
    parser.add_argument("--pools", type=setting_list, default=None,
                        help="pool settings to compare (O, O/K, keyword:N, first:N), comma-separated, "
                             "the first the base")
    args = parser.parse_args(argv)
    config = Config.from_env({**os.environ, "LOCALMEM_TRACK_ACCESS": "0"})
    store, work, scratch = small_store.warm_text_requests(args.data, args.embedder, args.store, config,
                                                          args.every)
    clock = {"cpu": time.thread_time, "process": time.process_time}.get(args.clock, time.perf_counter)
    print(f"{store.health()['memory_count']} memories, {len(work)} text recalls (every {args.every}th question), "
          f"{args.clock} clock; load average {os.getloadavg()[0]:.1f}\n")
    print("\n".join(stage_table(store, work, clock)))
    if args.pools:
        if not args.store:
            parser.error("--pools needs --store (each setting opens the same file)")
        print()
        print("\n".join(settings_table(args.store, store.embedder, config, work, args.pools, clock)))
    store.close()
    scratch.cleanup()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
