"""Learned re-ranking: a small tree model's view of the evidence, added to the score.

The weighted sum of components (recall/scoring.py) scores each candidate on
its own. Some evidence is only visible across the pool: how far a candidate
is from the query's best vector or keyword match, whether its thread holds
other strong candidates, whether it is the question a neighbour answers.
A gradient-boosted tree model (LightGBM's lambdarank, trained by
``benchmarks/quality/train_learned_rank.py``) reads those pool features and gives
each candidate a score; its logistic, in [0, 1], is the ``learned``
component, added with weight ``weight_learned``.

The model file may also hold a query adapter (late_interaction.QueryAdapter)
or a query delta (embedders/query_delta.py), trained before the trees: the
adapter moves the query's token vectors before MaxSim, the delta tunes the
embedding model's layers when it encodes them. The trees read the MaxSim they
give, so each applies exactly when the trees do.

The features include raw cosines and MaxSim values, whose scale belongs to
one embedding model, so the model is used only with the embedder it was
trained with (the model file names it) and with token evidence on;
otherwise recall says why it was not applied.
"""

from __future__ import annotations

import functools
import json
import math
import os
import stat
from dataclasses import dataclass
from datetime import datetime
from importlib import resources
from typing import TYPE_CHECKING, Any, Callable

import numpy as np

from ..embedders.query_delta import QueryDelta
from ..storage.threads import thread_key
from ..timegrammar.mentions import CalendarMention, find_calendar_mention
from ..timeparse import from_epoch
from .late_interaction import QueryAdapter
from .scoring import parse_epoch
from .speaker_roles import ROLE_FEATURES, role_features

if TYPE_CHECKING:
    from ..config import Config
    from ..storage.backend import Backend

FEATURES = (
    "vector", "keyword", "tag", "final",
    "vector_rank", "keyword_rank", "final_rank",
    "final_gap", "vector_gap", "keyword_gap",
    "cosine", "max_sim", "best_token", "share_over_half", "share_over_07", "median_token",
    "log_tokens", "query_words", "cosine_gap", "max_sim_gap", "is_question",
    "prev_vector", "prev_keyword", "prev_final", "next_vector", "next_keyword", "next_final",
    "thread_best", "thread_top20", "thread_gap",
    "names_date", "date_distance", "token_residual",
    *ROLE_FEATURES,
)
# Thread features count pool members among the top this many by weighted score.
THREAD_TOP = 20
# token_residual compares each candidate with this many of the best others by weighted score.
RESIDUAL_LEADERS = 3
# The model scores this many candidates, the best by weighted score.
LEARNED_TOP = 30
# Deeper trees than this are no model localmem trains (7 leaves reach depth 6).
MAX_DEPTH = 64
# The packaged model is about 165 KB; a model file 300 times larger is not one.
MAX_MODEL_BYTES = 50_000_000
MODEL_RESOURCE = "learned_rank.json"


def _reciprocal_rank(values: np.ndarray) -> np.ndarray:
    ranks = np.empty(len(values))
    ranks[np.argsort(-values, kind="stable")] = np.arange(len(values))
    return 1.0 / (1.0 + ranks)


def pool_features(candidates: list[dict[str, Any]], query: str,
                  mention: CalendarMention | None = None, rows: np.ndarray | None = None) -> np.ndarray:
    """One row of FEATURES per candidate (scored by recall/scoring.py), in the pool's order;
    ``mention`` is the calendar date the query names (timegrammar.mentions), if any.

    ``rows``: the positions of the candidates whose rows are wanted, in the order wanted
    (all, in the pool's order, when None). Each row is still measured against the whole
    pool (ranks, gaps, threads, residuals), so it is the full matrix's row to the bit; a
    candidate's own values (its tokens, dates, roles) are computed only for those rows."""
    n = len(candidates)
    pick = np.arange(n) if rows is None else np.asarray(rows, dtype=np.intp)
    chosen = candidates if rows is None else [candidates[i] for i in pick.tolist()]
    components = [c.get("score_components") or {} for c in candidates]
    vector = np.array([float(c.get("vector", 0.0)) for c in components])
    keyword = np.array([float(c.get("keyword", 0.0)) for c in components])
    tag = np.array([float(c.get("tag", 0.0)) for c in components])
    final = np.array([float(c.get("final_score") or 0.0) for c in candidates])
    cosine = np.array([float(c["_similarity"]) if c.get("_similarity") is not None else 0.0
                       for c in candidates])
    matches = [c.get("_token_match") for c in candidates]
    max_sim = np.array([m.max_sim if m is not None else 0.0 for m in matches])  # its gap reads the pool
    token = np.array([[m.max_sim, m.best, m.share_over_half, m.share_over_07, m.median,
                       math.log1p(m.tokens)] if m is not None else [0.0] * 6
                      for m in (c.get("_token_match") for c in chosen)]).reshape(len(chosen), 6)
    question = np.array([1.0 if "?" in (c["memory"].get("content") or "") else 0.0 for c in chosen])
    final_rank = _reciprocal_rank(final)
    pooled = [
        vector, keyword, tag, final,
        _reciprocal_rank(vector), _reciprocal_rank(keyword), final_rank,
        final - final.max(), vector - vector.max(), keyword - keyword.max(), cosine,
    ]
    columns = [column[pick] for column in pooled] + [
        token[:, 0], token[:, 1], token[:, 2], token[:, 3], token[:, 4],
        token[:, 5], np.full(len(chosen), float(len(query.split()))), (cosine - cosine.max())[pick],
        (max_sim - max_sim.max())[pick], question,
    ]
    top = set(np.flatnonzero(final_rank > 1.0 / (THREAD_TOP + 0.5)).tolist())  # the THREAD_TOP best
    columns += list(_thread_features(candidates, vector, keyword, final, top)[pick].T)
    columns += list(_date_features(chosen, mention).T)
    return np.column_stack(columns + [_token_residual(matches, final)[pick], role_features(chosen, query)])


def _token_residual(matches: list[Any], final: np.ndarray) -> np.ndarray:
    """What each candidate adds to the pool's leaders: the mean over query tokens of how
    far its best match for the token exceeds the best among the RESIDUAL_LEADERS
    highest-scored other candidates (0 where it does not).

    A question whose evidence is spread over two memories ("what did she do after
    moving?") has a leader matching half its words; the memory matching the other
    half scores low on its own but covers what the leaders miss. Held out on the
    dev data, trees with it 0.850 R@10 against 0.841 without it in the same run. A
    candidate without token matches counts as matching every token at the pool's
    lowest match, so it gets 0 and, as a leader, hides nothing.
    """
    n = len(matches)
    out = np.zeros(n)
    if n < 2:
        return out
    rows = [m.per_token if m is not None else None for m in matches]
    width = next((len(r) for r in rows if r is not None and len(r)), 0)
    if width == 0:
        return out
    known = np.array([r is not None and len(r) == width for r in rows], dtype=bool)
    matrix = np.empty((width, n))
    matrix[:, known] = np.array([rows[i] for i in np.flatnonzero(known)], dtype=np.float64).T
    matrix[:, ~known] = matrix[:, known].min()
    leaders = np.argsort(-final, kind="stable")[:RESIDUAL_LEADERS + 1].tolist()
    out[:] = np.maximum(0.0, matrix - matrix[:, leaders[:RESIDUAL_LEADERS]].max(1, keepdims=True)).mean(0)
    for leader in leaders[:RESIDUAL_LEADERS]:  # a leader is measured against the others
        others = [i for i in leaders if i != leader][:RESIDUAL_LEADERS]
        out[leader] = np.maximum(0.0, matrix[:, leader] - matrix[:, others].max(1)).mean()
    return out


def _thread_features(candidates: list[dict[str, Any]], vector: np.ndarray, keyword: np.ndarray,
                     final: np.ndarray, top: set[int]) -> np.ndarray:
    """The pool neighbours before and after each candidate in its thread, and its thread's
    best score and members among ``top``."""
    n = len(candidates)
    groups: dict[Any, int] = {}
    orders = []
    for index, candidate in enumerate(candidates):
        memory = candidate["memory"]
        context = memory.get("context") or "default"
        texts = candidate.get("_texts")
        key = _thread_key_of_texts(context, *texts) if texts is not None else _NO_KEY
        if key is _NO_KEY:
            key = thread_key(context, memory.get("metadata") or {}, memory.get("tags") or [])
        group = groups.setdefault(key if key is not None else f"\x00{index}", len(groups))
        orders.append((group, str(memory.get("timestamp") or ""), int(candidate.get("_pk") or 0), index))
    out = np.zeros((n, 9))
    if n == 0:
        return out
    # Each thread's members in order, threads one after another: a member's neighbours are
    # the entries beside it that share its thread.
    order = np.array([entry[3] for entry in sorted(orders)], dtype=np.intp)
    group = np.array([entry[0] for entry in orders], dtype=np.intp)[order]
    values = np.column_stack([vector, keyword, final])[order]
    same = group[1:] == group[:-1]
    out[order[1:][same], 0:3] = values[:-1][same]
    out[order[:-1][same], 3:6] = values[1:][same]
    starts = np.flatnonzero(np.concatenate(([True], ~same)))
    sizes = np.diff(np.append(starts, n))
    in_top = np.zeros(n)
    in_top[list(top)] = 1.0
    best = np.repeat(np.maximum.reduceat(final[order], starts), sizes)
    out[order, 6] = best
    out[order, 7] = np.repeat(np.add.reduceat(in_top[order], starts), sizes)
    out[order, 8] = final[order] - best
    return out


# What _thread_key_of_texts gives for texts it leaves to thread_key on the parsed record.
_NO_KEY = object()


@functools.lru_cache(maxsize=8192)
def _thread_key_of_texts(context: Any, tags_text: Any, metadata_text: Any) -> Any:
    """thread_key of a memory from its stored tags and metadata texts (channels._candidate
    keeps them), read once per text: the same memories come back recall after recall.
    _NO_KEY for texts that are not a list of strings and an object."""
    if not (isinstance(tags_text, str) or tags_text is None) or not (
            isinstance(metadata_text, str) or metadata_text is None):
        return _NO_KEY
    tags = json.loads(tags_text) if tags_text else []
    metadata = json.loads(metadata_text) if metadata_text else {}
    if not isinstance(tags, list) or not all(isinstance(t, str) for t in tags) or not isinstance(metadata, dict):
        return _NO_KEY
    return thread_key(context, metadata, tags)


def _date_features(candidates: list[dict[str, Any]], mention: CalendarMention | None) -> np.ndarray:
    """Whether the query names a date, and each candidate's distance from it in days
    (log1p; -1 without a date or a readable timestamp)."""
    out = np.zeros((len(candidates), 2))
    if mention is None:
        out[:, 1] = -1.0
        return out
    out[:, 0] = 1.0
    for row, candidate in zip(out, candidates):
        epoch = parse_epoch(candidate["memory"].get("timestamp"))  # cached: recency read it too
        row[1] = -1.0 if epoch is None else math.log1p(
            mention.days_from(from_epoch(epoch)))
    return out


def read_query_date(config: "Config", query: str, now: datetime) -> CalendarMention | None:
    """The calendar date ``query`` names, which the features read (None with
    LOCALMEM_QUERY_DATES=0); with LOCALMEM_QUERY_RELATIVE_DATES=1, when it names none, the past
    period it names relative to ``now`` ("last Friday", "two weeks ago")."""
    if not config.query_dates:
        return None
    return find_calendar_mention(query, now, relative=config.query_relative_dates)


def any_in_period(mention: CalendarMention, candidates: list[dict[str, Any]]) -> bool:
    """Whether any candidate's timestamp falls inside the period ``mention`` names."""
    for candidate in candidates:
        epoch = parse_epoch(candidate["memory"].get("timestamp"))
        if epoch is not None and mention.start <= from_epoch(epoch) <= mention.end:
            return True
    return False


@dataclass(frozen=True)
class TreeModel:
    """An ensemble of binary trees over FEATURES, as flat arrays (one row per tree).

    A node ``j`` of tree ``t`` is a leaf when ``feature[t, j] < 0``; otherwise
    rows with ``x[feature] <= threshold`` go to ``left``, the rest to ``right``.
    """

    feature: np.ndarray
    threshold: np.ndarray
    left: np.ndarray
    right: np.ndarray
    value: np.ndarray
    depth: int
    embedders: tuple[str, ...]
    features: tuple[str, ...]
    # Moves the query's tokens before MaxSim; the trees were trained on the MaxSim it gives.
    query_adapter: QueryAdapter | None = None
    # Changes the embedding model's layers when it encodes the query's tokens (likewise).
    query_delta: QueryDelta | None = None

    @classmethod
    def from_dict(cls, data: Any) -> "TreeModel":
        """A model from its JSON form; ValueError for anything recall could not walk safely."""
        if not isinstance(data, dict) or data.get("format") != 1:
            raise ValueError("unknown learned-rank model format")
        try:
            model = cls._arrays(data)
        except (KeyError, TypeError, AttributeError, IndexError, OverflowError) as exc:
            raise ValueError(f"malformed learned-rank model: {type(exc).__name__}: {exc}") from exc
        # Features are only ever appended, so a model trained before some were added
        # (its list a prefix of FEATURES) reads the same columns and keeps working.
        if not model.features or model.features != FEATURES[:len(model.features)]:
            raise ValueError("the learned-rank model was trained on other features")
        width = model.feature.shape[1]
        inner = model.feature >= 0
        outside = (model.left < 0) | (model.left >= width) | (model.right < 0) | (model.right >= width)
        if (model.feature >= len(model.features)).any() or (inner & outside).any():
            raise ValueError("malformed learned-rank model: a split points outside its tree")
        if not (np.isfinite(model.threshold).all() and np.isfinite(model.value).all()
                and 0 <= model.depth <= MAX_DEPTH):
            raise ValueError("malformed learned-rank model: non-finite values or an impossible depth")
        return model

    @classmethod
    def _arrays(cls, data: dict[str, Any]) -> "TreeModel":
        trees = data["trees"]
        width = max(len(t["feature"]) for t in trees)
        if any(len({len(t[key]) for key in ("feature", "threshold", "left", "right", "value")}) != 1
               for t in trees):
            raise IndexError("a tree's arrays differ in length")

        def stack(key: str, fill: float, dtype: Any) -> np.ndarray:
            return np.array([list(t[key]) + [fill] * (width - len(t[key])) for t in trees], dtype=dtype)

        return cls(feature=stack("feature", -1, np.int64), threshold=stack("threshold", 0.0, np.float64),
                   left=stack("left", 0, np.int64), right=stack("right", 0, np.int64),
                   value=stack("value", 0.0, np.float64), depth=int(data["depth"]),
                   embedders=tuple(str(e) for e in data["embedders"]), features=tuple(data["features"]),
                   query_adapter=(QueryAdapter.from_dict(data["query_adapter"])
                                  if data.get("query_adapter") is not None else None),
                   query_delta=(QueryDelta.from_dict(data["query_delta"])
                                if data.get("query_delta") is not None else None))

    @classmethod
    def packaged(cls) -> "TreeModel":
        """The model shipped with localmem."""
        text = resources.files("localmem").joinpath("models", MODEL_RESOURCE).read_text(encoding="utf-8")
        return cls.from_dict(json.loads(text))

    @classmethod
    def from_file(cls, path: str) -> "TreeModel":
        """A model written by ``benchmarks/quality/train_learned_rank.py --output PATH``: a regular
        file of at most MAX_MODEL_BYTES (a device or a huge file is refused, not read)."""
        # O_NONBLOCK: opening a FIFO for reading would wait for a writer before the check
        # below could refuse it (on a regular file the flag changes nothing).
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
        with open(fd, "rb") as handle:
            if not stat.S_ISREG(os.fstat(handle.fileno()).st_mode):
                raise ValueError("not a regular file")
            data = handle.read(MAX_MODEL_BYTES + 1)
        if len(data) > MAX_MODEL_BYTES:
            raise ValueError(f"larger than {MAX_MODEL_BYTES:,} bytes, which no learned-rank model is")
        try:
            return cls.from_dict(json.loads(data.decode("utf-8")))
        except UnicodeDecodeError as exc:
            raise ValueError(f"not UTF-8 JSON: {exc}") from exc

    def raw_scores(self, rows: np.ndarray) -> np.ndarray:
        """The ensemble's sum of leaf values for each row.

        Every split of every tree is decided for every row in one comparison;
        then all trees descend together, one level per step, on flat node
        indices (tree offset + node), which numpy indexes fastest.
        """
        trees, width = self.feature.shape
        count = rows.shape[0]
        split, offset, left, right, threshold, value = self._flat
        # Every row's next node from every node, as indices into the flattened (row, node)
        # table: one look-up per level instead of deciding, choosing and keeping leaves.
        row_start = np.arange(count)[:, None] * (trees * width)
        step = (np.where(rows[:, split] <= threshold, left, right) + row_start).ravel()
        node = np.repeat(offset, count, axis=1) + row_start.T
        for _ in range(self.depth):
            node = step[node]
        return value[node - row_start.T].sum(axis=0)

    @functools.cached_property
    def _flat(self) -> tuple[np.ndarray, ...]:
        """What ``raw_scores`` walks, derived once per model (the arrays never change): each
        node's feature column (0 at leaves), each tree's offset, the children as flat node
        indices (a leaf is its own child), the thresholds and the leaf values, flat."""
        trees, width = self.feature.shape
        feature, leaf = self.feature.ravel(), self.feature.ravel() < 0
        offset = (np.arange(trees) * width)[:, None]
        flat = np.arange(trees * width)
        left = np.where(leaf, flat, (self.left + offset).ravel())
        right = np.where(leaf, flat, (self.right + offset).ravel())
        return np.where(leaf, 0, feature), offset, left, right, self.threshold.ravel(), self.value.ravel()


def learned_components(model: TreeModel, candidates: list[dict[str, Any]], query: str,
                       mention: CalendarMention | None = None, top: int = LEARNED_TOP) -> dict[int, float]:
    """The ``learned`` component of the pool's ``top`` best candidates by weighted
    score (by position in ``candidates``): the logistic of the model's score.
    ``mention`` is the calendar date the query names, if any (pool_features); ``top``
    is recall's LEARNED_TOP except where a benchmark compares cuts.

    Every candidate's features are measured against the whole pool, but only the
    top ones are scored: held out on the dev data, the model's gain all comes from
    reordering the top 20 (R@10 0.8225 scoring the top 20, 0.8221 scoring all).
    """
    if top < 1:
        raise ValueError(f"top: the learned ranking scores at least 1 candidate (got {top})")
    if not candidates:
        return {}
    # Scores are finite by construction; a value read from a damaged row is no evidence.
    # The best by the features' "final" column; only their rows are computed (each still
    # measured against the whole pool).
    final = np.nan_to_num(np.array([float(c.get("final_score") or 0.0) for c in candidates]),
                          nan=0.0, posinf=0.0, neginf=0.0)
    best = np.argsort(-final, kind="stable")[:top]
    rows = np.nan_to_num(pool_features(candidates, query, mention, rows=best), nan=0.0, posinf=0.0, neginf=0.0)
    raw = model.raw_scores(rows)
    learned = 1.0 / (1.0 + np.exp(-np.clip(raw, -60.0, 60.0)))
    return dict(zip(best.tolist(), learned.tolist()))


def usable_model(backend: "Backend", load: Callable[[], TreeModel | None] | None
                 ) -> tuple[str | None, TreeModel | None]:
    """(why no learned-rank model can rank this store's candidates, or None; the model
    when one can). Configuration and embedder are checked first, so the model is read
    (``load``) only when it could be used."""
    config = backend.config
    if not config.learned_rank:
        return "off (LOCALMEM_LEARNED_RANK=0)", None
    if not config.token_evidence:
        return "token evidence is off (LOCALMEM_TOKEN_EVIDENCE=0); the model reads MaxSim", None
    if not backend.token_evidence:
        return "the embedder gives no token vectors; the model reads MaxSim", None
    model = load() if load is not None else None
    if model is None:
        # Over HTTP or MCP the reader's stderr is the server's, not the client's.
        return ("no learned-rank model could be read "
                "(why: on the stderr of the process that opened this store)"), None
    embedder_name = backend.meta("embedder")
    if embedder_name not in model.embedders:
        return (f"the model was trained on {', '.join(model.embedders)} features; "
                f"this store embeds with {embedder_name or 'no embedder'}"), None
    adapter = model.query_adapter
    if adapter is not None and adapter.dimensions != backend.dimensions:
        return (f"the model's query adapter is for {adapter.dimensions}-dimensional tokens; "
                f"this store's have {backend.dimensions}"), None
    if model.query_delta is not None and not callable(getattr(backend.embedder, "embed_query_tokens", None)):
        return (f"the model encodes queries with a tuned copy of the embedding model, which "
                f"{type(backend.embedder).__name__} cannot run"), None
    return None, model


def report(reason: str | None, candidates: int, dates: list[dict[str, Any]] | tuple = ()) -> dict[str, Any]:
    """The answer's ``learned_rank`` block; ``dates`` describe the calendar dates the queries
    name, which the model read as a hint (never a filter: that is ``time_query``)."""
    if reason is not None:
        return {"applied": False, "reason": reason}
    block: dict[str, Any] = {"applied": True, "candidates": candidates}
    if dates:
        block["dates_in_query"] = list(dates)
    return block
