"""Where a warm recall's time goes, stage by stage: wall-clock spans, no profiler.

small_store.py's store (the five LoCoMo dev conversations, one memory per turn) and
its ``text`` requests (the question text alone, scoped to its conversation, limit 20:
query encoding, token evidence and the learned ranking all inside the recall), with
access tracking on as a user has it (``--no-track-access``: off, as small_store.py
runs). Each stage's function is wrapped with a timer (benchmarks/common/stage_spans.py);
nested stages are indented under their caller and count in it too. The JSON
encoding of the answer, which the warm process, ``serve`` and the CLI all do, is
timed after each recall. ``--model-alone`` also times the query encoder by itself on
the same questions (every text new to it, as a user's prompts are). The model encodes the
query on its own thread while recall reads the keyword statistics (recall/scoped_keywords.py's
``read_ahead``): with ``--clock process`` that thread's time lands in whichever stage runs
beside it; "the wait for it" is what is left of the encoding once the read-ahead is done.
Likewise a pool's token codes are matched on a thread of their own while recall reads the
cosines, the supersession heads and the keyword scores: "token evidence" is the codes' read
(the wait for the match, after the keyword scores, is in no stage of its own: the table
after the stages gives it as what "evidence for every candidate" holds outside its nested
stages, and likewise the pipeline's own code and store.recall's outside the pipeline).

    python benchmarks/speed/recall_stages.py --store FILE [--every 4] [--rounds 1]
        [--embedder auto] [--no-track-access] [--model-alone] [--clock wall|cpu|process]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[1]))

from benchmarks.common.stage_spans import Spans  # noqa: E402
from benchmarks.speed import small_store  # noqa: E402
from localmem import Config, store as store_module  # noqa: E402
from localmem.recall import late_interaction, learned_rank, pipeline, query_vectors, state  # noqa: E402
from localmem.storage import backend as backend_module  # noqa: E402

# (owner, attribute, label), outermost first: the report keeps this order.
STAGES = [
    (store_module, "run_recall", "recall pipeline"),
    (backend_module.Backend, "embed_query_soon", "query encoding started on its thread"),
    (pipeline, "read_ahead", "keyword read-ahead (while it encodes)"),
    (query_vectors.QueryVectors, "encoding", "query encoding (the wait for it)"),
    (pipeline, "vector_candidates", "vector channel"),
    (pipeline.Recall, "dated_candidates", "named-date channel"),
    (pipeline, "keyword_candidates", "keyword channel"),
    (pipeline, "metadata_candidates", "metadata channel"),
    (pipeline.Recall, "prepare", "evidence for every candidate"),
    (pipeline.Recall, "fill_similarity", "cosines for keyword finds"),
    (pipeline.Recall, "fill_centred", "centred cosines"),
    (pipeline.Recall, "fill_tokens", "token evidence"),
    (late_interaction, "similarities", "token product (on its own thread)"),
    (pipeline.Recall, "fill_keyword", "keyword scores"),
    (state.SupersessionHeads, "__call__", "supersession heads"),
    (pipeline.Recall, "score", "per-candidate scoring"),
    (pipeline.Recall, "add_learned", "learned ranking"),
    (learned_rank, "pool_features", "learned features"),
    (learned_rank.TreeModel, "raw_scores", "tree evaluation"),
    (pipeline, "dedupe", "dedupe"),
    (pipeline, "sort_results", "sort"),
    (pipeline, "expand_relations", "relation expansion"),
    (pipeline, "hydrate_relations", "relation hydration"),
    (pipeline, "attach_relevance", "relevance"),
    (pipeline, "recall_response", "response"),
    (pipeline, "recall_confidence", "confidence"),
    (backend_module.Backend, "touch", "last_accessed write"),
    (store_module, "strip_non_finite", "non-finite guard"),
]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    small_store.add_warm_text_arguments(parser, every=4)
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument("--no-track-access", action="store_true")
    parser.add_argument("--clock", choices=("wall", "cpu", "process"), default="wall",
                        help="cpu: the recall thread's CPU time; process: every thread's (the "
                             "encoder's pool included); both steadier than wall on a loaded machine")
    parser.add_argument("--model-alone", action="store_true",
                        help="also time the query encoder alone on the same questions")
    args = parser.parse_args(argv)

    env = dict(os.environ)
    if args.no_track_access:
        env["LOCALMEM_TRACK_ACCESS"] = "0"
    config = Config.from_env(env)
    store, work, scratch = small_store.warm_text_requests(args.data, args.embedder, args.store, config,
                                                          args.every)

    clock = {"cpu": time.thread_time, "process": time.process_time}.get(args.clock, time.perf_counter)
    spans = Spans(clock)
    for owner, name, label in STAGES:
        spans.wrap(owner, name, label)
    whole, encoded = [], []
    for _ in range(args.rounds):
        for query, kwargs in work:
            started = clock()
            response = store.recall(query, **kwargs)
            middle = clock()
            json.dumps(response)
            whole.append((middle - started) * 1000)
            encoded.append((clock() - middle) * 1000)
    spans.restore()
    recalls = len(whole)
    print(f"{store.health()['memory_count']} memories, {recalls} text recalls (every {args.every}th question, "
          f"{args.rounds} round(s)), {args.clock} clock, access tracking {'off' if args.no_track_access else 'on'}; "
          f"load average {os.getloadavg()[0]:.1f}")
    print(f"recall (store.recall, wrappers on): p50 {statistics.median(whole):.2f} ms, "
          f"mean {statistics.fmean(whole):.2f} ms; JSON of the answer: mean {statistics.fmean(encoded):.2f} ms\n")
    print("\n".join(spans.table(recalls, [label for _, _, label in STAGES])))
    print("\n".join(outside_stages(spans, recalls, sum(whole))))

    if args.model_alone:
        backend = store._backend
        model = learned_rank.TreeModel.packaged()
        times = []
        for query, _ in work:
            backend._query_cache.clear()
            started = clock()
            backend.embed_query(query + " ?", model.query_delta)  # a text the recall never saw
            times.append((clock() - started) * 1000)
        print(f"\nquery encoder alone ({type(store.embedder).__name__}, plain and tuned rows in one run): "
              f"p50 {statistics.median(times):.2f} ms, p95 {sorted(times)[int(0.95 * (len(times) - 1))]:.2f} ms")
    store.close()
    scratch.cleanup()
    return 0


def outside_stages(spans: Spans, recalls: int, whole_ms: float) -> list[str]:
    """What no stage's own rows show, ms per recall: the part of each stage outside the stages
    nested in it (for "evidence for every candidate" most of it is the wait for the token
    product on its own thread), and ``store.recall`` outside the pipeline (the read
    snapshot's BEGIN and COMMIT, the queued last_accessed write, the non-finite guard). The
    last_accessed stage counts with the latter: inside the pipeline it is only queued."""
    rows = ["", "| outside the stages nested in it | ms per recall |", "|---|---:|"]
    for label in ("recall pipeline", "evidence for every candidate", "learned ranking"):
        if label in spans.total:
            nested = sum(total for child, total in spans.total.items()
                         if spans.parent.get(child) == label and child != "last_accessed write")
            rows.append(f"| {label} | {(spans.total[label] - nested) * 1000 / recalls:.2f} |")
    if "recall pipeline" in spans.total:
        rows.append(f"| store.recall outside the pipeline | "
                    f"{(whole_ms - spans.total['recall pipeline'] * 1000) / recalls:.2f} |")
    return rows


if __name__ == "__main__":
    raise SystemExit(main())
