"""Capture's report in words, for ``localmem hook -v`` (standard library only: the
forwarding client imports it without loading the store)."""

from __future__ import annotations

from typing import Any, Mapping

# The skip reasons that are shape rules of the rules file, as against guards and bad lines.
RULE_REASONS = ("code_or_log", "courtesy", "bare_question", "skip_pattern", "too_long", "too_short")


def describe(report: Mapping[str, Any] | None) -> list[str]:
    """Lines saying what a capture run did: stored, skipped by rule, already captured; []
    when ``report`` is not a capture's."""
    if not isinstance(report, Mapping) or "stored_messages" not in report:
        return []
    skipped = report.get("skipped") if isinstance(report.get("skipped"), Mapping) else {}
    lines = [f"capture: {report.get('stored_messages', 0)} message(s) stored as "
             f"{report.get('stored_memories', 0)} memories ({report.get('deduped', 0)} deduplicated to stored "
             f"ones), {report.get('already_captured', 0)} already captured, "
             f"{report.get('retracted', 0)} earlier memories retracted"]
    by_rule = [f"{k} {v}" for k, v in sorted(skipped.items()) if k in RULE_REASONS]
    other = [f"{k} {v}" for k, v in sorted(skipped.items()) if k not in RULE_REASONS]
    lines.append("capture: skipped by rule: " + (", ".join(by_rule) or "none"))
    lines.append("capture: not messages or never stored: " + (", ".join(other) or "none"))
    if report.get("dumps_cut"):
        lines.append(f"capture: {report['dumps_cut']} stored message(s) kept without their code/log-shaped parts")
    for note in report.get("rules_notes") or []:
        lines.append(f"capture: {note}")
    for reason in report.get("retractions_not_linked") or []:
        lines.append(f"capture: a retraction was not linked: {reason}")
    if report.get("more_to_read"):
        lines.append("capture: more of the transcript is left for the next run")
    return lines
