"""Which recalled memories a prompt's block holds, and why each other one was left out.

A fixed bar does not separate: on a store of one conversation, an unrelated
prompt's best results still reach it, and a related prompt has many results
over it. So the block holds what *stands out* from the rest of recall's
answer (``StandOut``):

- the best result, when its ``relevance`` clears the floor and leads the
  median relevance of the other candidates by at least ``lead``;
- with it, the others within ``close`` of the best (and over the floor);
- at most ``cap`` of them, taken in recall's order (``order="recall"``, the default: the
  ranking picks which notes better than relevance does) or by relevance;
- in recall's order, a note after the first only when recall's score of its second
  candidate is at least ``margin`` times its first's (recall itself says the two are close),
  and then whatever its relevance over ``note_floor``: once the best clears the floor, the
  ranking decides which notes.

Relevance decides *whether* a prompt gets notes and which are eligible; with
``order="recall"`` the ranking decides *which* of them fill the cap. When recall's
learned ranking scored the answer, *whether* also reads that ranking's own score of
recall's first (``gate_of``: ``blend`` of it with the best relevance, against the
floor less ``blend_drop``): a related prompt's first is scored high by the ranking
even when its relevance falls short.

Every candidate gets a ``reason`` (``KEPT`` or why not), decided here, where
the choice is made, so ``hook -v`` prints the decision itself rather than a
reconstruction of it. The default parameters were chosen on held-out folds
of both dev sets (benchmarks/hooks/hook_injection.py, docs/hooks.md).
"""

from __future__ import annotations

import math
import statistics
from dataclasses import dataclass
from typing import Any, Callable, Mapping

from ..errors import ConfigError
from ..privacy import redact
from ..recall.relevance_model import relevance_floor
from ..text import visible

PREVIEW_WINDOW = 400  # characters of a note redacted for its 80-character preview
KEPT = "kept"
BELOW_FLOOR = "below the floor"
BELOW_NOTE_FLOOR = "below the note floor"
NOT_STANDING_OUT = "nothing stands out"
NOT_CLOSE = "not close to the best"
OVER_CAP = "over the cap"
UNDER_MARGIN = "recall's second far below first"
ALREADY_INJECTED = "already injected this session"
OWN_TURN = "this session's own turn"
OVER_BUDGET = "over the token budget"
CHIT_CHAT = "chit-chat, an acknowledgement or a bare question"
OVER_SESSION_START = "past the session-start list"

# Chosen on held-out folds of both dev sets with the relevance model fitted on the same folds
# (benchmarks/hooks/hook_injection.py, "Held out together"; docs/results/history.md, "Injection that reads
# the ranking", 2026-12-05): every fold chose no lead and a cap of 2, three of five a closeness of 0.05, and
# floors 0.88-0.92 (the median, 0.90, is the default). No lead: a related prompt's other candidates are often
# high too. The floor is the hook's own: recall's calibrated floor (0.92; 0.91 since branch relfit13) keeps
# 95 % of questions about another conversation silent, where the hook answers a prompt only with what stands out.
#
# Since 2026-12-05 (issue 40, branch inject3) the cap is filled in recall's order: with a perfect prompt-level
# decision, recall's first two hold evidence for 0.82 of related prompts against 0.76 for the two of highest relevance
# (held out), and on the nested folds that rule (inject when the best clears the floor, then recall's first two over
# the floor) chose floors 0.90-0.94 (median 0.90) and cap 2 in four of five folds, with no closeness rule.
DEFAULT_LEAD = 0.0
DEFAULT_CLOSE = 1.0
DEFAULT_CAP = 2
DEFAULT_FLOOR = 0.90
ORDERS = ("recall", "relevance")
DEFAULT_ORDER = "recall"
# Since branch rank6 (issue 40): a second note goes in only when recall scores its second candidate at least 0.7 of
# its first, and then whatever its relevance (note floor 0). Chosen on held-out folds of both sets with each set's
# share of notes that are evidence kept >= 0.5 (benchmarks/hooks/hook_injection.py, "… the share guarded in each
# set"; docs/results/history.md, 2026-12-05, branch rank6): every fold chose note floor 0, four of five margin
# 0.7-0.8 and cap 2; the median of their floors is the floor above.
DEFAULT_MARGIN = 0.7
DEFAULT_NOTE_FLOOR = 0.0
# Since branch gate12 (issue 40): when recall's learned ranking scored its answer, the inject-or-not decision reads
# (1 - blend) x the best relevance + blend x the learned ranking's own score of recall's first (its ``learned``
# component, in [0, 1]) against the floor less ``blend_drop``. Chosen on held-out folds of both sets with the rule
# (benchmarks/hooks/gate_levers.py, lever "blend"; docs/results/history.md, 2026-12-06, branch gate12): the folds chose
# blend 0.4-0.6 (median 0.5) and floors 0.82-0.84 (median 0.84: the floor 0.90 less 0.06). Without a learned score
# (another embedder, the trees not applied) the best relevance alone is read against the floor, as before.
DEFAULT_BLEND = 0.5
DEFAULT_BLEND_DROP = 0.06


def injection_floor(hook_floor: float | None, config: Any) -> float:
    """The floor a prompt's notes must clear: the hook's setting (``LOCALMEM_HOOK_RELEVANCE_FLOOR``), else
    recall's when one is configured (``LOCALMEM_RELEVANCE_FLOOR``), else ``DEFAULT_FLOOR``."""
    if hook_floor is not None:
        return hook_floor
    if getattr(config, "relevance_floor", None) is not None:
        return relevance_floor(config)  # checked there: a bad value is refused, naming the field
    return DEFAULT_FLOOR


@dataclass
class Candidate:
    """One recalled memory and the decision about it (``reason``: ``KEPT`` or why it was left out)."""
    memory_id: str
    relevance: float
    memory: Mapping[str, Any]
    reason: str = ""
    inputs: Mapping[str, float] | None = None  # recall's relevance_inputs, shown by ``hook -v``
    rank: int | None = None  # its place in recall's answer (1: recall's first), shown by ``hook -v``
    score: float | None = None  # recall's score, for the margin of its second over its first
    learned: float | None = None  # the learned ranking's own score of it (recall's ``learned`` component), or None

    def explain(self) -> dict[str, Any]:
        # Shown by hook -v and in the report: redacted as the injected block is, in a window (a credential
        # starting in the preview and over 300 characters long is cut, but the unclosed key-block rule holds).
        window = str(self.memory.get("content", ""))[:PREVIEW_WINDOW]
        content = visible(" ".join(redact(window).text.split()))
        explained = {"id": self.memory_id, "relevance": round(self.relevance, 4), "decision": self.reason,
                     "preview": content[:80] + ("…" if len(content) > 80 else "")}
        if self.inputs:
            explained["inputs"] = dict(self.inputs)
        if self.rank is not None:
            explained["rank"] = self.rank
        if self.score is not None:
            explained["score"] = round(self.score, 4)
        if self.learned is not None:
            explained["learned"] = round(self.learned, 4)
        return explained


@dataclass(frozen=True)
class StandOut:
    """The stand-out rule's parameters (see the module docstring); each is validated. ``note_floor`` and
    ``margin`` apply in recall's order only (by relevance, every note clears the floor, none is held by the
    margin); ``note_floor`` None is the floor itself."""
    floor: float
    lead: float = DEFAULT_LEAD
    close: float = DEFAULT_CLOSE
    cap: int = DEFAULT_CAP
    order: str = DEFAULT_ORDER
    note_floor: float | None = DEFAULT_NOTE_FLOOR
    margin: float = DEFAULT_MARGIN
    blend: float = DEFAULT_BLEND
    blend_drop: float = DEFAULT_BLEND_DROP

    def __post_init__(self) -> None:
        if self.order not in ORDERS:
            raise ConfigError(f"stand-out setting 'order' must be one of {', '.join(ORDERS)}, got {self.order!r}")
        for name in ("floor", "lead", "close", "note_floor", "margin", "blend", "blend_drop"):
            value = getattr(self, name)
            if name == "note_floor" and value is None:
                continue
            if (isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value)
                    or not 0.0 <= value <= 1.0):
                raise ConfigError(f"stand-out setting '{name}' must be a number from 0 to 1, got {value!r}")
        if isinstance(self.cap, bool) or not isinstance(self.cap, int) or not 1 <= self.cap <= 100:
            raise ConfigError(f"stand-out setting 'cap' must be an integer from 1 to 100, got {self.cap!r}")


def background_of(relevances: list[float]) -> float:
    """The median relevance of all candidates but the best (0 when there is no other)."""
    rest = sorted(relevances, reverse=True)[1:]
    return float(statistics.median(rest)) if rest else 0.0


def second_over_first(in_order: list[Candidate]) -> float | None:
    """Recall's score of its second candidate over its first's (None: fewer than two, or no scores)."""
    if len(in_order) < 2 or in_order[0].score is None or in_order[1].score is None or in_order[0].score <= 0:
        return None
    return in_order[1].score / in_order[0].score


def in_recall_order(candidates: list[Candidate]) -> list[Candidate]:
    """The candidates by their place in recall's answer (unplaced last, in their present order)."""
    return sorted(candidates, key=lambda c: c.rank if c.rank is not None else math.inf)


def gate_of(best: float, first: Candidate | None, rule: StandOut) -> tuple[float, float, float | None]:
    """The inject-or-not decision's (value, floor, learned score read): with a learned score of recall's first and a
    blend over 0, ``(1 - blend) x best + blend x learned`` against the floor less ``blend_drop``; else the best
    relevance against the floor."""
    learned = first.learned if first is not None else None
    if rule.blend <= 0 or learned is None or not math.isfinite(learned):
        return best, rule.floor, None
    return (1.0 - rule.blend) * best + rule.blend * learned, max(0.0, rule.floor - rule.blend_drop), learned


def choose(candidates: list[Candidate], rule: StandOut) -> dict[str, float]:
    """Mark each candidate kept or not (``reason``), best first; returns the thresholds used.

    ``candidates`` must already be free of those never eligible (this session's
    own turns); the ones that remain are sorted by relevance, best first.
    """
    candidates.sort(key=lambda c: -c.relevance)
    if not candidates:
        return {"floor": rule.floor}
    eligible, note_floor, cap_after_first = candidates, rule.floor, rule.cap
    thresholds: dict[str, float] = {}
    ranked = in_recall_order(candidates)
    if rule.order == "recall":  # the cap is filled in recall's order (unplaced last, by relevance)
        eligible = ranked
        note_floor = rule.floor if rule.note_floor is None else rule.note_floor
        ratio = second_over_first(eligible)
        if ratio is not None:
            thresholds["second_over_first"] = round(ratio, 4)
            if ratio < rule.margin:
                cap_after_first = 1
    best = candidates[0].relevance
    background = background_of([c.relevance for c in candidates])
    keep_from = max(note_floor, best - rule.close)
    gate, gate_floor, learned = gate_of(best, ranked[0], rule)
    thresholds.update({"floor": rule.floor, "best": round(best, 4), "background": round(background, 4),
                       "lead": rule.lead, "stand_out": round(keep_from, 4)})
    if learned is not None:
        thresholds.update({"first_learned": round(learned, 4), "gate": round(gate, 4),
                           "gate_floor": round(gate_floor, 4)})
    stands_out = gate >= gate_floor and best - background >= rule.lead
    kept = 0
    for candidate in eligible:
        if not stands_out:
            candidate.reason = BELOW_FLOOR if gate < gate_floor or candidate.relevance < rule.floor \
                else NOT_STANDING_OUT
        elif candidate.relevance < note_floor:
            candidate.reason = BELOW_FLOOR if note_floor == rule.floor else BELOW_NOTE_FLOOR
        elif candidate.relevance < keep_from:
            candidate.reason = NOT_CLOSE
        elif kept >= rule.cap:
            candidate.reason = OVER_CAP
        elif kept >= cap_after_first:
            candidate.reason = UNDER_MARGIN
        else:
            candidate.reason = KEPT
            kept += 1
    return thresholds


def choose_injectable(candidates: list[Candidate], rule: StandOut,
                      never: Callable[[Candidate], str | None]) -> dict[str, float]:
    """``choose`` over the candidates ``never`` finds no reason against (its reason becomes theirs), asking it
    only where the answer can change the choice: the notes ``choose`` keeps, the most relevant, and the first two
    in recall's order (the margin); every one when the best must lead the rest (a lead over 0); none when nothing
    is kept with no lead (nothing left out can then make a note kept), but recall's first when the gate may read a
    learned score (``gate_of``: another first may clear it). What is kept is what ``choose`` keeps after
    every candidate ``never`` refuses is out (tests/test_hook_content_free.py checks it on random pools); the rest's
    median it reports may still count a refused candidate the choice never reached."""
    eligible = [c for c in candidates if not c.reason]
    asked: set[int] = set()
    while True:
        thresholds = choose(eligible, rule)  # sorts ``eligible`` by relevance, best first
        kept = [c for c in eligible if c.reason == KEPT]
        # When the gate may read a learned score, it reads recall's first's: a refused first hands the gate to the next.
        learned = rule.blend > 0 and any(c.learned is not None for c in eligible)
        first = in_recall_order(eligible)[:1] if learned else []
        if not kept and rule.lead == 0:
            if not first or id(first[0]) in asked:
                return thresholds
            deciding = first
        else:
            deciding = eligible if rule.lead > 0 else kept + eligible[:1] + first
            if rule.order == "recall" and rule.lead == 0:
                deciding += in_recall_order(eligible)[:2]
        refused = []
        for candidate in deciding:
            if id(candidate) not in asked:
                asked.add(id(candidate))
                reason = never(candidate)
                if reason:
                    candidate.reason = reason
                    refused.append(id(candidate))
        if not refused:
            return thresholds
        eligible = [c for c in eligible if id(c) not in refused]
