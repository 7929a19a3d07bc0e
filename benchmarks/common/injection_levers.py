"""Levers on the prompt hook's choice past the margin rule (issue 40, branch inject7), on saved candidates.

The shipped rule (injection_folds.RecallOrderGrid.chosen_margin): a prompt gets notes when its best relevance
clears the floor; then recall's first ``cap`` over the note floor, a note after the first only when recall's
score of its second candidate is at least ``margin`` × its first's. ``LeverGrid`` scores that rule with one
lever added, each lever's parameter at its "off" value giving the shipped rule back exactly:

- ``third``: with cap 3, the third note only when recall's score of *that* note is at least ``third`` × the
  first's (0: off; the shipped rule lets a third in whenever the second is close);
- ``lean``: the prompt-level decision reads recall's own gap as well as relevance: a prompt gets notes when
  ``best relevance + lean × (1 − second/first)`` clears the floor (0: off): with a positive lean a prompt whose
  first result stands far above recall's second needs less relevance, with a negative one more (on LoCoMo, an
  unrelated prompt's first stands further above its second than a related prompt's, whose topic many turns share);
- ``swap``: when the first two notes are of one thread (``localmem.storage.threads.thread_key`` of the
  memory's metadata) and a candidate of another thread, among recall's places 3-5, scores at least ``swap``
  × the first, it takes the second note's place (above 1: off).

``breakdown`` sorts the related prompts left unserved by where their evidence was lost. Each rule is chosen
per fold on the other folds (relevance fitted there too), on injection_folds.objective with the share guarded
in each set (the lower set's share of notes that are evidence), exactly as the shipped rule was.
"""

from __future__ import annotations

import itertools
from typing import Callable, Iterable, Sequence

import numpy as np

from benchmarks.common import injection_folds as folds
from localmem.storage.threads import thread_key

K = folds.MAX_CANDIDATES
SWAP_FROM, SWAP_TO = 2, 5  # 0-based places a swapped-in note may come from: recall's third to fifth
THIRDS = (0.0, 0.7, 0.8, 0.85, 0.9, 0.95)
LEANS = (0.0, -0.05, -0.1, -0.2, -0.3, 0.05, 0.1, 0.2, 0.3)  # 0 first: of equals, the rule without it
SWAPS = (1.01, 0.95, 0.9, 0.85, 0.8, 0.7)
LEVERS = {"none": {}, "third": {"third": THIRDS}, "lean": {"lean": LEANS}, "swap": {"swap": SWAPS}}
OFF = {"third": 0.0, "lean": 0.0, "swap": 1.01}

LOST = ("served", "gate silent, evidence in recall's first two", "gate silent, evidence at places 3-5",
        "margin dropped an evidence second", "a note held by the note floor or the budget",
        "notes given, evidence at places 3-5", "evidence not in the first five")


def ratios(prompt: dict, ordered: list) -> list[float]:
    """Recall's score of each candidate (in recall's order) over its first's; 1 where a score is unknown
    (as injection_folds.second_over_first reads an unknown second)."""
    scores = prompt.get("scores", {})
    first = scores.get(ordered[0][0]) if ordered else None
    out = []
    for candidate in ordered:
        score = scores.get(candidate[0])
        out.append(1.0 if first is None or score is None or first <= 0 else float(score) / float(first))
    return out


def thread_of(memory: dict) -> str | None:
    """A memory's thread from its metadata, as the store reads it (None: none)."""
    metadata = memory.get("metadata") or {}
    return thread_key("default", metadata if isinstance(metadata, dict) else {}, ())


class LeverGrid(folds.RecallOrderGrid):
    """RecallOrderGrid with each candidate's score ratio to recall's first and its thread."""

    def __init__(self, prompts: list[dict], relevance: Callable[[dict], float]):
        super().__init__(prompts, relevance)
        n = len(prompts)
        self.ratio = np.zeros((n, K))
        self.alt = np.full(n, -1)  # the first place 3-5 of a thread other than the first's (-1: none)
        self.same = np.zeros(n, dtype=bool)  # recall's first two of one thread
        for i, p in enumerate(prompts):
            ordered = folds.in_recall_order(p)
            self.ratio[i, :len(ordered)] = ratios(p, ordered)
            threads = [thread_of(p["memories"][c[0]]) for c in ordered]
            if len(threads) > 1 and threads[0] is not None and threads[0] == threads[1]:
                self.same[i] = True
                for j in range(SWAP_FROM, min(SWAP_TO, len(threads))):
                    if threads[j] != threads[0]:
                        self.alt[i] = j
                        break
        self.gap = 1.0 - self.second  # recall's own gap between its first two (0: level)

    def chosen_lever(self, floor: float, note_floor: float, cap: int, margin: float, third: float = 0.0,
                     lean: float = 0.0, swap: float = 1.01) -> np.ndarray:
        """Which candidates (in recall's order) each prompt gets under the shipped rule with the levers."""
        passes = self.best + lean * self.gap >= floor
        over = (self.relevance >= note_floor) & (self.relevance > -1.0)
        chosen = over & (np.cumsum(over, axis=1) <= cap) & passes[:, None]
        count = np.cumsum(chosen, axis=1)
        chosen &= (self.second >= margin)[:, None] | (count <= 1)
        if third > 0.0:
            chosen &= (np.cumsum(chosen, axis=1) <= 2) | (self.ratio >= third)
        if swap <= 1.0:
            rows = np.flatnonzero(self.same & (self.alt >= 0) & chosen[:, 0] & chosen[:, 1])
            if rows.size:
                alt = self.alt[rows]
                ok = (self.ratio[rows, alt] >= swap) & (self.relevance[rows, alt] >= note_floor) & ~chosen[rows, alt]
                rows, alt = rows[ok], alt[ok]
                chosen[rows, 1] = False
                chosen[rows, alt] = True
        return chosen

    def measure_lever(self, params: Sequence, share_guard: bool = True) -> dict[str, float]:
        chosen = self.chosen_lever(*params)
        return self._figures(chosen.sum(axis=1), (chosen & self.evidence).sum(axis=1), share_guard)

    def _figures(self, kept: np.ndarray, found: np.ndarray, share_guard: bool = True) -> dict[str, float]:
        figures = folds.scored(kept, found, self.related)
        if share_guard:  # as RecallOrderGrid.measure_margin: the lowest share of any set given notes
            masks = [self.sets == name for name in np.unique(self.sets)]
            shares = [folds.scored(kept[mask], found[mask], self.related[mask])["precision"]
                      for mask in masks if kept[mask & self.related].any()]
            figures["precision"] = min(shares or [figures["precision"]])
        return figures

    def choose_lever(self, lever: str) -> tuple:
        """(floor, note floor, cap, margin, third, lean, swap) scoring best on ``objective`` with the share guarded
        (the first of equals in the order of the product below); the shipped rule's grid (RecallOrderGrid.
        choose_margin's) times the lever's values. The notes are counted once per (note floor, cap, margin, third,
        swap) with every prompt let in; the floor and the lean only decide which prompts get them."""
        values = {**{name: (off,) for name, off in OFF.items()}, **LEVERS[lever]}
        axes = (folds.FLOORS, folds.NOTE_FLOORS, (2, 3), folds.MARGINS, values["third"], values["lean"],
                values["swap"])
        best, best_key = None, None
        for (b, note_floor), (c, cap), (d, margin), (e, third), (g, swap) in itertools.product(
                *(enumerate(axis) for axis in (axes[1], axes[2], axes[3], axes[4], axes[6]))):
            if third > 0.0 and cap < 3:
                continue
            chosen = self.chosen_lever(-1.0, note_floor, cap, margin, third, 0.0, swap)
            kept_all, found_all = chosen.sum(axis=1), (chosen & self.evidence).sum(axis=1)
            for (a, floor), (f, lean) in itertools.product(enumerate(axes[0]), enumerate(axes[5])):
                if note_floor > floor:
                    continue
                passes = self.best + lean * self.gap >= floor
                key = folds.objective(self._figures(kept_all * passes, found_all * passes))
                order = tuple(-i for i in (a, b, c, d, e, f, g))  # the first of equals wins
                if best_key is None or (key, order) > best_key:
                    best, best_key = (floor, note_floor, cap, margin, third, lean, swap), (key, order)
        return best


def lost_where(p: dict, picked: Iterable[str], relevance: Callable[[dict], float], rule: Sequence) -> str:
    """Where a related prompt's evidence was lost under ``rule`` (floor, note floor, cap, margin, third, lean, …):
    one of ``LOST``."""
    picked = set(picked)
    if picked & p["evidence"]:
        return LOST[0]
    ordered = folds.in_recall_order(p)
    places = [j for j, c in enumerate(ordered) if c[0] in p["evidence"]]
    if not places or places[0] >= 5:
        return LOST[6]
    grid = LeverGrid([p], relevance)
    lean = rule[5] if len(rule) > 5 else 0.0
    if grid.best[0] + lean * grid.gap[0] < rule[0]:
        return LOST[1] if places[0] < 2 else LOST[2]
    if places[0] >= 2:
        return LOST[5]
    if places[0] == 1 and grid.second[0] < rule[3]:
        return LOST[3]
    return LOST[4]

def fitted(train: list[dict], lever: str, features: Sequence[str],
           relevance: Callable[[dict], float] | None = None) -> tuple[Callable[[dict], float], tuple]:
    """The relevance (fitted on ``train`` unless given) and the rule with ``lever`` chosen on ``train``."""
    relevance = relevance or folds.fit_relevance(train, features)
    return relevance, LeverGrid(train, relevance).choose_lever(lever)


def picked_ids(prompts: list[dict], relevance: Callable[[dict], float], rule: Sequence) -> dict[int, list[str]]:
    """Each prompt's notes (ids, in recall's order) under ``rule``, before the token budget."""
    chosen = LeverGrid(prompts, relevance).chosen_lever(*rule)
    return {id(p): [c[0] for j, c in enumerate(folds.in_recall_order(p)) if chosen[i, j]]
            for i, p in enumerate(prompts)}
