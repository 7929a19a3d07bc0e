"""How much of a long memory the model's window reaches, and where the evidence sits in it.

MiniLM reads at most ``max_seq_length`` word pieces (256, two of them [CLS] and [SEP]);
a memory's pooled vector and its token vectors are made from those only, so a word past
them is seen by BM25 alone. This script measures, on both dev sets stored as the runners
store them (LoCoMo one memory per turn; LongMemEval capture's parts of at most 2,000
characters):

- the share of memories longer than the window;
- for each LongMemEval evidence turn, the word-piece offset of the answer in the part that
  holds it: the question's answer string where it occurs verbatim, else the part's sentence
  closest to the question by the model's cosine (its first word piece);
- ``--misses FILE`` (the output of ``train_rank_two_shapes.py --misses``, or of several runs
  one after the other): the same for the evidence turns the held-out trees leave out of the
  top 10; with ``--pools DIR`` (the folder that run kept its pools in; pools the folder does
  not hold for this code are recorded again) each miss's rank in its pool by each signal, and with
  ``--sentences`` its rank among its instance's memories by the model's cosine to the whole
  memory and to the memory's best sentence (every memory of the instances with a miss).

    python benchmarks/quality/window_reach.py [--misses FILE [--pools DIR] [--sentences]]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
from pathlib import Path

import numpy as np

os.environ.setdefault("HF_HUB_OFFLINE", "1")
sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from benchmarks.quality import locomo, longmemeval, train_rank_two_shapes  # noqa: E402
from localmem.embedders.resolve import resolve_embedder  # noqa: E402
from localmem.embedders.st_pipeline import model_folder, read_pipeline  # noqa: E402
from localmem.recall import learned_rank  # noqa: E402

MODEL = "all-MiniLM-L6-v2"
_SENTENCE = re.compile(r"[^.!?\n]+[.!?]*")


def word_pieces(tokenizer, text: str) -> int:
    return len(tokenizer.encode(text, add_special_tokens=False).ids)


def answer_offset(tokenizer, embedder, parts: list[str], question: str, answer: str) -> tuple[int, str, int]:
    """(word-piece offset, how it was found, the part's length) of the answer in the turn's
    parts: where the answer string first occurs, else the start of the sentence closest to
    the question by the model's cosine."""
    for part in parts:
        at = part.lower().find(answer.strip().lower()) if len(answer.strip()) >= 3 else -1
        if at >= 0:
            return word_pieces(tokenizer, part[:at]), "answer string", word_pieces(tokenizer, part)
    sentences = [(part, m) for part in parts for m in sentence_matches(part)]
    if not sentences:
        return 0, "empty", 0
    vectors = np.array(embedder.embed([question] + [m.group() for _, m in sentences]))
    part, best = sentences[int(np.argmax(vectors[1:] @ vectors[0]))]
    return word_pieces(tokenizer, part[:best.start()]), "best sentence", word_pieces(tokenizer, part)


def sentence_matches(text: str) -> list[re.Match]:
    """The sentences of ``text`` (split at ., !, ? and line ends), blank ones left out."""
    return [m for m in _SENTENCE.finditer(text) if m.group().strip()]


def sentences_of(text: str) -> list[str]:
    return [m.group().strip() for m in sentence_matches(text)]


def rank_of(values: np.ndarray, index: int) -> int:
    """1 + how many values are strictly larger than ``values[index]``."""
    return int((values > values[index]).sum()) + 1


POOL_SIGNALS = ("final", "cosine", "max_sim", "keyword", "token_residual")


def pool_anatomy(pools: list[dict], misses: dict[str, list[str]]) -> list[str]:
    """Each missed turn's best part's rank in its recorded pool by each signal, and the signal's
    value against the pool's tenth best."""
    lines = ["| question | turn | pool size | " + " | ".join(f"{n} rank (value / 10th)" for n in POOL_SIGNALS)
             + " |", "|---|---|---:|" + "---:|" * len(POOL_SIGNALS)]
    for pool in (p for p in pools if p["shape"] == "lme" and p["id"] in misses):
        for turn in misses[pool["id"]]:
            at = [i for i, k in enumerate(pool["keys"]) if k == turn]
            if not at:
                lines.append(f"| {pool['id']} | {turn} | {len(pool['keys'])} | not in the pool |")
                continue
            cells = []
            for name in POOL_SIGNALS:
                values = pool["rows"][:, learned_rank.FEATURES.index(name)]
                best = max(at, key=lambda i: values[i])
                tenth = np.sort(values)[::-1][min(9, len(values) - 1)]
                cells.append(f"{rank_of(values, best)} ({values[best]:.2f} / {tenth:.2f})")
            lines.append(f"| {pool['id']} | {turn} | {len(pool['keys'])} | " + " | ".join(cells) + " |")
    return lines


def sentence_ranks(instances: list[dict], misses: dict[str, list[str]], embedder) -> list[str]:
    """Each missed turn's rank among its instance's memories by the cosine of the question to
    the whole memory, and to the memory's best sentence (the same for every memory)."""
    lines = ["| question | turn | rank by whole memory | rank by best sentence |", "|---|---|---:|---:|"]
    for instance in (i for i in instances if i["question_id"] in misses):
        items = list(longmemeval.memory_items(instance))
        question = np.array(embedder.embed([instance["question"]])[0])
        whole = np.array(embedder.embed([item["content"] for item in items])) @ question
        pieces = [sentences_of(item["content"]) or [item["content"]] for item in items]
        flat = np.array(embedder.embed([s for p in pieces for s in p])) @ question
        starts = np.cumsum([0] + [len(p) for p in pieces[:-1]])
        best = np.maximum.reduceat(flat, starts)
        for turn in misses[instance["question_id"]]:
            at = [i for i, item in enumerate(items) if item["metadata"]["turn"] == turn]
            whole_rank = min(rank_of(whole, i) for i in at)
            best_rank = min(rank_of(best, i) for i in at)
            lines.append(f"| {instance['question_id']} | {turn} | {whole_rank} of {len(items)} | {best_rank} |")
    return lines


def parse_misses_text(text: str) -> dict[str, list[str]]:
    """question id -> the missed evidence turns, from ``train_rank_two_shapes.py --misses`` output."""
    out: dict[str, list[str]] = {}
    current = None
    for line in text.splitlines():
        head = re.match(r"- (\S+) \(", line)
        turn = re.match(r"\s+- turn (\d+:\d+),", line)
        if head:
            current = head.group(1)
        elif turn and current and turn.group(1) not in out.get(current, []):  # several runs' output: once each
            out.setdefault(current, []).append(turn.group(1))
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--locomo", default=str(locomo.DEFAULT_DATA))
    parser.add_argument("--lme", default=str(longmemeval.DEFAULT_DATA))
    parser.add_argument("--misses", default=None, help="train_rank_two_shapes.py --misses output")
    parser.add_argument("--pools", default=None, help="the --pools folder of that run (with --misses)")
    parser.add_argument("--sentences", action="store_true",
                        help="with --misses: ranks by whole-memory and best-sentence cosine")
    parser.add_argument("--no-cache", action="store_true",
                        help="embed without the on-disk cache in benchmarks/.cache (tests)")
    args = parser.parse_args(argv)
    if (args.pools or args.sentences) and not args.misses:
        parser.error("--pools and --sentences read the misses: give --misses FILE")
    misses = parse_misses_text(Path(args.misses).read_text()) if args.misses else {}
    if args.misses and not misses:
        parser.error(f"--misses: {args.misses} lists no missed turn (train_rank_two_shapes.py --misses output)")
    from tokenizers import Tokenizer

    folder = model_folder(MODEL)
    window = read_pipeline(folder).max_seq_length - 2  # [CLS] and [SEP]
    tokenizer = Tokenizer.from_file(str(folder / "tokenizer.json"))
    tokenizer.no_truncation()  # the file pads and truncates to 128; lengths are measured whole
    tokenizer.no_padding()
    embedder = resolve_embedder(MODEL) if args.no_cache else locomo.cached_embedder(MODEL)

    conversations = json.loads(Path(args.locomo).read_text())
    locomo_lengths = [word_pieces(tokenizer, locomo.memory_item(t, i)["content"])
                      for i, c in enumerate(conversations) for t in locomo.turns_of(c)]
    instances = longmemeval.load_instances(args.lme)
    lme_lengths, lme_roles = [], []
    for instance in instances:
        for item in longmemeval.memory_items(instance):
            lme_lengths.append(word_pieces(tokenizer, item["content"]))
            lme_roles.append(item["metadata"]["role"])
    print(f"window: {window} word pieces of text ({MODEL})\n")
    print("| memories | n | median word pieces | longer than the window | share of word pieces past it |")
    print("|---|---:|---:|---:|---:|")
    for label, lengths in (("LoCoMo dev", locomo_lengths), ("LongMemEval dev, all", lme_lengths),
                           ("LongMemEval dev, user", [n for n, r in zip(lme_lengths, lme_roles) if r == "user"]),
                           ("LongMemEval dev, assistant",
                            [n for n, r in zip(lme_lengths, lme_roles) if r == "assistant"])):
        lengths = np.array(lengths)
        past = np.clip(lengths - window, 0, None).sum() / max(lengths.sum(), 1)
        print(f"| {label} | {len(lengths)} | {np.median(lengths):.0f} | {(lengths > window).mean():.3f} | "
              f"{past:.3f} |")

    rows = []
    for instance in instances:
        if instance["question_id"].endswith("_abs"):
            continue
        parts: dict[str, list[str]] = {}
        for item in longmemeval.memory_items(instance):
            parts.setdefault(item["metadata"]["turn"], []).append(item["content"])
        turns, _ = longmemeval.evidence_of(instance)
        for turn in sorted(turns):
            if turn not in parts:
                continue
            offset, how, length = answer_offset(tokenizer, embedder, parts[turn], instance["question"],
                                                str(instance["answer"]))
            session, index = map(int, turn.split(":"))
            rows.append({"id": instance["question_id"], "turn": turn, "offset": offset, "how": how,
                         "length": length, "missed": turn in misses.get(instance["question_id"], []),
                         "role": instance["haystack_sessions"][session][index]["role"]})
    print("\n| LongMemEval evidence turns | n | in a part longer than the window | answer past the window | "
          "by answer string | median offset | largest offset |\n|---|---:|---:|---:|---:|---:|---:|")
    for label, chosen in (("all", rows), ("user turns", [r for r in rows if r["role"] == "user"]),
                          ("assistant turns", [r for r in rows if r["role"] == "assistant"]),
                          ("held-out misses", [r for r in rows if r["missed"]])):
        if chosen:
            offsets = np.array([r["offset"] for r in chosen])
            print(f"| {label} | {len(chosen)} | {sum(r['length'] > window for r in chosen)} | "
                  f"{(offsets >= window).sum()} | {sum(r['how'] == 'answer string' for r in chosen)} | "
                  f"{np.median(offsets):.0f} | {offsets.max()} |")
    if misses:
        print("\nThe misses, one by one:\n")
        for r in (r for r in rows if r["missed"]):
            print(f"- {r['id']} turn {r['turn']}: answer at word piece {r['offset']} of {r['length']} "
                  f"({r['how']})")
        if args.pools:
            pool_args = argparse.Namespace(locomo=args.locomo, lme=args.lme, lme_instances=None, lme_ids=None,
                                           embedder="auto", no_cache=args.no_cache, pools=args.pools,
                                           locomo_asked_at="today")
            pools = train_rank_two_shapes.record_all(pool_args, lambda line: None)[0]
            print("\nEach miss in its recorded pool (the learned component off):\n")
            print("\n".join(pool_anatomy(pools, misses)))
        if args.sentences:
            print("\nEach miss among its instance's memories by the question's cosine:\n")
            print("\n".join(sentence_ranks(instances, misses, embedder)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
