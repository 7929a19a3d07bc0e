"""The near-duplicate threshold of dedup on write, measured on LoCoMo dev.

``store_checked`` reports a stored memory's near-duplicates: current memories of
its context whose cosine to it is at or above ``SIMILAR_THRESHOLD``
(localmem/recall/duplicates.py). This measures, with the real model
(all-MiniLM-L6-v2, or ``--embedder``), where that bar should sit:

* **distinct turns** -- each dialog turn of the five conversations, stored as
  ``benchmarks/quality/locomo.py`` stores it ("Speaker: text"), and its nearest other turn
  of the same conversation (exact duplicates after dedup's normalisation left out:
  those are deduped, not reported). Every such pair is a different turn, so a
  flag is a false alarm -- or two turns that do say the same thing ("Thanks!").
* **near-duplicate edits** -- each turn against a light rewrite of itself: the
  speaker prefix dropped, a word dropped, two sentences swapped, punctuation
  removed, "Note: " prepended. These are what a second store of the same fact
  by an assistant looks like; a report should catch them.
* **restated facts** -- each LoCoMo observation ("Caroline attended an LGBTQ
  support group...") against the turn it cites as evidence: the same fact in other
  words, shown for scale (a cosine bar cannot separate these from distinct turns).

It prints the distributions and, per threshold, the share of each set at or above
it, then the lowest threshold on a 0.01 grid that flags at most ``--budget`` of
distinct turns.

    python benchmarks/quality/dedup_threshold.py [--embedder all-MiniLM-L6-v2] [--budget 0.01]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[1]))

from benchmarks.quality.locomo import memory_item, turns_of  # noqa: E402

from localmem.embedders import resolve_embedder  # noqa: E402
from localmem.storage.dedup_keys import normalise_content  # noqa: E402

DATA = Path(os.environ.get("LOCALMEM_LOCOMO", "/work/shared/data/locomo-dev.json"))
GRID = [round(0.80 + 0.01 * i, 2) for i in range(20)]


def edits(text: str) -> dict[str, str]:
    """Light rewrites of ``text`` (the turn's own words), by kind; empty when it is too short."""
    words = text.split()
    out: dict[str, str] = {}
    if len(words) < 5:
        return out
    out["drop_word"] = " ".join(words[: len(words) // 2] + words[len(words) // 2 + 1:])
    out["no_punctuation"] = re.sub(r"[^\w\s]", "", text)
    out["note_prefix"] = "Note: " + text
    sentences = re.split(r"(?<=[.!?])\s+", text)
    if len(sentences) >= 2:
        out["swap_sentences"] = " ".join([sentences[1], sentences[0], *sentences[2:]])
    return out


def unit(matrix: np.ndarray) -> np.ndarray:
    return matrix / np.maximum(np.linalg.norm(matrix, axis=1, keepdims=True), 1e-12)


def embed(embedder, texts: list[str]) -> np.ndarray:
    vectors = []
    for start in range(0, len(texts), 256):
        vectors.extend(np.frombuffer(v, np.float32) if isinstance(v, bytes) else np.asarray(v, np.float32)
                       for v in embedder.embed(texts[start:start + 256]))
    return unit(np.vstack(vectors))


def describe(name: str, values: np.ndarray) -> str:
    q = np.percentile(values, [50, 90, 95, 99, 99.5])
    return (f"| {name} | {len(values)} | {q[0]:.3f} | {q[1]:.3f} | {q[2]:.3f} | {q[3]:.3f} | "
            f"{q[4]:.3f} | {values.max():.3f} |")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--embedder", default="all-MiniLM-L6-v2")
    parser.add_argument("--budget", type=float, default=0.01,
                        help="share of distinct turns a threshold may flag (default 0.01)")
    args = parser.parse_args(argv)
    embedder = resolve_embedder(args.embedder)
    data = json.loads(DATA.read_text("utf-8"))
    started = time.perf_counter()

    nearest: list[float] = []
    nearest_plain: list[float] = []
    restated: list[float] = []
    edited: dict[str, list[float]] = {}
    for conv_index, sample in enumerate(data):
        turns = turns_of(sample)
        contents = [memory_item(t, conv_index)["content"] for t in turns]
        plain = [t["text"] for t in turns]
        vectors = embed(embedder, contents)
        plain_vectors = embed(embedder, plain)
        keys = [normalise_content(c) for c in contents]
        for found, matrix in ((nearest, vectors), (nearest_plain, plain_vectors)):
            cosines = matrix @ matrix.T
            same = np.array([[a == b for b in keys] for a in keys])  # exact dups (and itself)
            cosines[same] = -1.0
            found.extend(cosines.max(axis=1).tolist())
        # Edits: each turn's rewrite against the turn itself.
        pairs = [(i, kind, text) for i, c in enumerate(contents) for kind, text in edits(c).items()]
        for i, c in enumerate(contents):  # the speaker prefix dropped
            pairs.append((i, "no_speaker", plain[i]))
        edit_vectors = embed(embedder, [text for _, _, text in pairs])
        for (i, kind, _), vector in zip(pairs, edit_vectors):
            edited.setdefault(kind, []).append(float(vector @ vectors[i]))
        # Observations against their evidence turns.
        index_of = {t["dia_id"]: i for i, t in enumerate(turns)}
        facts = []
        for session in sample.get("observation", {}).values():
            for entries in session.values():
                for entry in entries:
                    if len(entry) >= 2 and isinstance(entry[1], str) and entry[1] in index_of:
                        facts.append((entry[0], index_of[entry[1]]))
        fact_vectors = embed(embedder, [text for text, _ in facts])
        restated.extend(float(v @ vectors[i]) for (_, i), v in zip(facts, fact_vectors))
        print(f"conversation {conv_index}: {len(turns)} turns, {len(pairs)} edits, {len(facts)} facts "
              f"({time.perf_counter() - started:.0f} s)", file=sys.stderr, flush=True)

    sets = {"distinct turns, nearest other turn": np.array(nearest),
            "distinct turns, text only (no speaker)": np.array(nearest_plain),
            **{f"edit: {kind}": np.array(v) for kind, v in sorted(edited.items())},
            "restated fact (observation vs its turn)": np.array(restated)}
    print(f"embedder {embedder.name}; {len(nearest)} turns of {len(data)} conversations; "
          f"{time.perf_counter() - started:.0f} s\n")
    print("| set | n | p50 | p90 | p95 | p99 | p99.5 | max |\n|---|---|---|---|---|---|---|---|")
    for name, values in sets.items():
        print(describe(name, values))
    print("\nShare at or above each threshold:\n")
    print("| threshold | " + " | ".join(sets) + " |\n|---|" + "---|" * len(sets))
    for t in GRID:
        print(f"| {t:.2f} | " + " | ".join(f"{np.mean(v >= t):.3f}" for v in sets.values()) + " |")
    distinct = sets["distinct turns, nearest other turn"]
    chosen = next((t for t in GRID if np.mean(distinct >= t) <= args.budget), None)
    print(f"\nlowest threshold flagging <= {args.budget:.1%} of distinct turns: {chosen}")
    if chosen is not None:
        edits_all = np.concatenate([np.array(v) for v in edited.values()])
        print(f"at {chosen}: distinct turns flagged {np.mean(distinct >= chosen):.3%}, "
              f"edits caught {np.mean(edits_all >= chosen):.1%}, "
              f"restated facts {np.mean(np.array(restated) >= chosen):.1%}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
