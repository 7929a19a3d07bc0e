"""Where to look next: ``related_tags``, ``tag_suggestions`` and ``explore_hints``.

- ``related_tags`` (every response, at most 10): the tags of the returned
  memories, most frequent among them first, each with how many memories in
  the searched context(s) carry it, the summary of the most recently
  updated one and when that was (``last_used_at``). With no results: the
  most used tags of the context(s).
- ``tag_suggestions``: for each filter tag that matches no memory in the
  context(s), up to 5 tags (or tag prefixes) that do exist and resemble it:
  the same after case, ``-`` / ``_`` / space / ``.`` and plural
  normalisation, the same as a tag's last segment (``database`` →
  ``tech:database``), or a near spelling (similarity ≥ 0.8). Advisory only:
  the filter is never widened. Absent (null) when every filter tag matched.
- ``explore_hints`` (when asked, at most 3, distinct memories):
  ``top_result`` (the best result), ``high_centrality`` (the other result
  with the most edges, if it has any) and ``unexplored_neighbor`` (the
  current memory, not among the results, most strongly linked to one of
  the top three results, least recently accessed first).
"""

from __future__ import annotations

import difflib
import json
import re
from collections import Counter
from typing import TYPE_CHECKING, Any

from ..storage.records import rows_as_dicts, to_record
from ..recall.state import state_reason
from .folding import direct_successors
from .scope import SearchScope

if TYPE_CHECKING:
    from ..storage.backend import Backend

RELATED_TAGS_LIMIT = 10
SUGGESTIONS_PER_TAG = 5
VOCABULARY_LIMIT = 5000
NEAR_SPELLING = 0.8
_SEPARATORS = re.compile(r"[\s_\-.]+")


def related_tags(backend: "Backend", scope: SearchScope, memories: list[dict[str, Any]],
                 now_iso: str) -> list[dict[str, Any]]:
    seen: Counter[str] = Counter()
    spelling: dict[str, str] = {}
    for memory in memories:
        for tag in memory.get("tags") or []:
            key = tag.lower()
            seen[key] += 1
            spelling.setdefault(key, tag)
    if not seen:
        rows = _tag_rows(backend, scope, None, RELATED_TAGS_LIMIT, now_iso)
    else:
        facts = _tag_facts(backend, scope.contexts_json, list(seen))
        rows = [row for tag in seen if (row := _tag_row(backend, scope, tag, facts[tag], now_iso)) is not None]
        rows.sort(key=lambda r: (-seen[r["tag"]], -r["count"], r["tag"]))
    return [{"tag": spelling.get(r["tag"], r["tag"]), "count": r["count"],
             "sample_summary": r["sample_summary"], "last_used_at": r["last_used_at"]}
            for r in rows[:RELATED_TAGS_LIMIT]]


def _tag_rows(backend: "Backend", scope: SearchScope, tags: list[str] | None, limit: int,
              now_iso: str) -> list[dict[str, Any]]:
    """kagura_related_tags.sql: the listed tags' rows, or (None) the ``limit`` most used."""
    params = {"contexts": scope.contexts_json, "now": now_iso,
              "tags": json.dumps(tags) if tags else None, "limit": limit}
    tag_filter = "t.tag IN (SELECT value FROM json_each(:tags))" if tags else "1"
    statement = backend.sql.compose("kagura_related_tags", tag_filter=tag_filter)
    return list(rows_as_dicts(backend.conn.execute(statement, params)))


_ABSENT: tuple[()] = ()  # a tag no memory in scope carries (kept as such)
_UNSURE = "unsure"  # a tag whose values Python cannot order as SQLite does: the statement answers


def _order_key(updated_at: Any, pk: int) -> tuple[bool, str, int]:
    """kagura_related_tags.sql's order (updated_at DESC, pk DESC; NULL last), ascending."""
    return (updated_at is not None, updated_at or "", pk)


def _tag_facts(backend: "Backend", contexts: str | None, tags: list[str]) -> dict[str, Any]:
    """Each tag's facts for related_tags at any clock, kept until the file changes
    (counting a common tag's memories reads each of their rows, and a context's results
    share tags): (count, last_used_at, candidates for the sample summary), _ABSENT or
    _UNSURE. The candidates, newest first as (t_invalid, summary), are the newest memory
    that never expires (t_invalid NULL) and the newer ones that do and could come first
    at some clock: each expiring later than every newer one (one that expires no later
    than a newer one is never the first still valid)."""
    cache = backend.content_cache()
    found: dict[str, Any] = {}
    missing = []
    for tag in tags:
        known = cache.get(("kagura_tag_facts", tag, contexts)) if cache is not None else None
        if known is None:
            missing.append(tag)
        else:
            found[tag] = known
    if not missing:
        return found
    rows: dict[str, list[tuple[int, Any, Any]]] = {}
    for tag, pk, updated_at, t_invalid in backend.conn.execute(
            backend.sql["kagura_related_tag_rows"], {"tags": json.dumps(missing), "contexts": contexts}):
        rows.setdefault(tag, []).append((pk, updated_at, t_invalid))
    picked: dict[str, list[tuple[int, Any]]] = {}
    for tag in missing:
        memories = rows.get(tag)
        if not memories:
            found[tag] = _ABSENT
            continue
        if any(not isinstance(u, (str, type(None))) or not isinstance(t, (str, type(None)))
               for _, u, t in memories):
            found[tag] = _UNSURE
            continue
        lasting = max((m for m in memories if m[2] is None), key=lambda m: _order_key(m[1], m[0]), default=None)
        floor = _order_key(lasting[1], lasting[0]) if lasting is not None else None
        newer = sorted((m for m in memories if m[2] is not None
                        and (floor is None or _order_key(m[1], m[0]) > floor)),
                       key=lambda m: _order_key(m[1], m[0]), reverse=True)
        chosen: list[tuple[int, Any]] = []
        for pk, _updated_at, t_invalid in newer:
            if not chosen or t_invalid > chosen[-1][1]:
                chosen.append((pk, t_invalid))
        if lasting is not None:
            chosen.append((lasting[0], None))
        picked[tag] = chosen
        last_used = [u for _, u, _ in memories if u is not None]
        found[tag] = (len(memories), max(last_used) if last_used else None)
    summaries = dict(backend.conn.execute(backend.sql["kagura_sample_summaries"], {
        "pks": json.dumps(sorted({pk for chosen in picked.values() for pk, _ in chosen}))})) if picked else {}
    for tag in missing:
        if tag in picked:
            found[tag] = (*found[tag], [(t_invalid, summaries[pk]) for pk, t_invalid in picked[tag]])
        if cache is not None:
            cache[("kagura_tag_facts", tag, contexts)] = found[tag]
    return found


def _tag_row(backend: "Backend", scope: SearchScope, tag: str, facts: Any,
             now_iso: str) -> dict[str, Any] | None:
    """kagura_related_tags.sql's row for one tag, from its facts (_tag_facts)."""
    if facts is _ABSENT:
        return None
    if facts is _UNSURE:
        rows = _tag_rows(backend, scope, [tag], 1, now_iso)
        return rows[0] if rows else None
    count, last_used_at, candidates = facts
    # Valid first, then newest first: the first candidate valid now, else the newest of all.
    sample = next((summary for t_invalid, summary in candidates
                   if t_invalid is None or t_invalid > now_iso), candidates[0][1])
    return {"tag": tag, "count": count, "last_used_at": last_used_at, "sample_summary": sample}


def _singular(word: str) -> str:
    if len(word) > 4 and word.endswith("ies"):
        return word[:-3] + "y"
    if len(word) > 4 and word.endswith(("sses", "ches", "shes", "xes", "zes")):
        return word[:-2]
    if len(word) > 3 and word.endswith("s") and not word.endswith(("ss", "us", "is")):
        return word[:-1]
    return word


def normalise_tag(tag: str) -> str:
    """Case, separators and plurals folded: ``Python_Tips`` → ``python-tip``."""
    segments = []
    for segment in re.split(r"[:/]", tag.lower()):
        words = [_singular(w) for w in _SEPARATORS.split(segment) if w]
        if words:
            segments.append("-".join(words))
    return ":".join(segments)


def _resemblance(wanted: str, wanted_last: str, candidate: str) -> float:
    normal = normalise_tag(candidate)
    if normal == wanted:
        return 1.0
    last = normal.rsplit(":", 1)[-1]
    if last == wanted_last and ":" in normal and ":" not in wanted:
        return 0.95
    best = 0.0
    for a, b in ((wanted, normal), (wanted_last, last)):
        if not a or not b or abs(len(a) - len(b)) > max(2, len(a) // 4):
            continue
        matcher = difflib.SequenceMatcher(None, a, b)
        if matcher.real_quick_ratio() < NEAR_SPELLING or matcher.quick_ratio() < NEAR_SPELLING:
            continue
        best = max(best, matcher.ratio())
    return best if best >= NEAR_SPELLING else 0.0


def tag_suggestions(backend: "Backend", scope: SearchScope) -> dict[str, list[str]] | None:
    requested = scope.filters.requested_tags
    if not requested:
        return None
    present = {row[0] for row in backend.conn.execute(backend.sql["kagura_tags_present"], {
        "tags": json.dumps(list(requested)), "contexts": scope.contexts_json})}
    missing = {canonical: raw for canonical, raw in requested.items() if canonical not in present}
    if not missing:
        return None
    vocabulary = {row[0]: row[1] for row in backend.conn.execute(
        backend.sql["kagura_tag_vocabulary"], {"contexts": scope.contexts_json,
                                             "limit": VOCABULARY_LIMIT})}
    suggestions: dict[str, list[str]] = {}
    for canonical, raw in missing.items():
        wanted = normalise_tag(canonical)
        wanted_last = wanted.rsplit(":", 1)[-1]
        scored = [(score, count, tag) for tag, count in vocabulary.items()
                  if (score := _resemblance(wanted, wanted_last, tag)) > 0]
        scored.sort(key=lambda item: (-item[0], -item[1], item[2]))
        suggestions[raw] = [tag for _, _, tag in scored[:SUGGESTIONS_PER_TAG]]
    return suggestions or None


def explore_hints(backend: "Backend", scope: SearchScope, result_ids: list[str], now_iso: str
                  ) -> list[dict[str, str]]:
    if not result_ids:
        return []
    hints = [{"memory_id": result_ids[0], "reason": "top_result"}]
    used = {result_ids[0]}
    degrees = {memory_id: degree for memory_id, degree in backend.conn.execute(
        backend.sql["kagura_degrees"], {"ids": json.dumps(result_ids), "contexts": scope.contexts_json})}
    central = [(degrees.get(i, 0), -n, i) for n, i in enumerate(result_ids) if i not in used]
    central = [c for c in central if c[0] > 0]
    if central:
        best = max(central)[2]
        hints.append({"memory_id": best, "reason": "high_centrality"})
        used.add(best)
    rows = list(rows_as_dicts(backend.conn.execute(backend.sql["kagura_neighbours"], {
        "ids": json.dumps(result_ids[:3]), "exclude": json.dumps(result_ids),
        "contexts": scope.contexts_json, "limit": 50})))
    candidates = [to_record(row) for row in rows]
    superseded = direct_successors(backend, [m["id"] for m in candidates])
    for memory in candidates:
        if memory["id"] in used or memory["id"] in superseded or state_reason(memory, now_iso):
            continue
        if memory.get("type") in scope.excluded_types:
            continue
        hints.append({"memory_id": memory["id"], "reason": "unexplored_neighbor"})
        break
    return hints
