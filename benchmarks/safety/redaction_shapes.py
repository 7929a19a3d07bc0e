"""Each redaction shape judged alone: main's rules plus that one shape, against main's rules (issue 40, redact16).

A shape is one or more named patterns of localmem/privacy/patterns.py (``SHAPES``), or S12, the dotted-value check
of redact.py (``_class_changes``). The baseline is this tree's rules without any shape's patterns and with S12's
check off: main's rules (``--check-baseline`` compares its answers on the fourth corpus with ``--tree``'s, main's).
For each shape, on the texts its own patterns find something in (S12: on every text, it changes an accept):

- corpus 4 (benchmarks/common/credential_heldout4.py): texts it catches that the baseline misses, per half, and
  texts it loses; its look-alikes it touches that the baseline leaves (caught: as redaction.py ``--heldout``);
- LoCoMo dev and LongMemEval dev turns, and the manual pages' lines (redaction_heldout.py's), it touches that the
  baseline leaves (each printed, to be read);
- texts it loses (the baseline catches, it does not) in the in-sample corpus, the command lines and corpora 1–3.

    python benchmarks/safety/redaction_shapes.py [--shapes S1,S3] [--man /usr/share/man]
    python benchmarks/safety/redaction_shapes.py --check-baseline --tree /work/main
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from benchmarks.common.credential_corpus import command_corpus, corpus  # noqa: E402
from benchmarks.common.credential_heldout import heldout_corpus  # noqa: E402
from benchmarks.common.credential_heldout2 import heldout2_corpus  # noqa: E402
from benchmarks.common.credential_heldout3 import heldout3_corpus  # noqa: E402
from benchmarks.common.credential_heldout4 import heldout4_corpus, lookalike4_corpus, split  # noqa: E402
from benchmarks.safety.redaction import DATA, caught, lme_turns, locomo_turns, redacted_by_tree  # noqa: E402
from benchmarks.safety.redaction_heldout import man_lines  # noqa: E402

from localmem.privacy import patterns  # noqa: E402

redact_module = sys.modules["localmem.privacy.redact"]

SHAPES: dict[str, tuple[str, ...]] = {
    # S2 (SINGLE_DASH_PASSWORD_FLAG, single-dash password flags) failed its rule and was taken out: judged at 5465e46.
    "S1": ("PASS_PREFIXED_ARGUMENT",), "S3": ("USER_THEN_PASSWORD_FLAG",),
    "S4": ("SNMP_SECRET", "SNMP_SERVER_COMMUNITY"), "S5": ("RCLONE_PASS",), "S6": ("WIFI_PSK", "NMCLI_PASSWORD"),
    "S7": ("SESSION_EXPORT",), "S8": ("USER_COLON_PASSWORD",), "S9": ("ORACLE_USER_PASSWORD",),
    "S10": ("WEBHOOK_URL_TOKEN",), "S11": ("AUTHORIZATION_NAMED_VALUE",), "S12": (),
    "S13": ("PASSPHRASE_FLAG",), "S14": ("ARCHIVE_PASSWORD", "ZIP_PASSWORD"),
}
_SHAPE_PATTERNS = {name: {getattr(patterns, constant) for constant in constants}
                   for name, constants in SHAPES.items()}
_ALL_SHAPE_PATTERNS = set().union(*_SHAPE_PATTERNS.values())
BASELINE = tuple(rule for rule in redact_module.RULES if rule.pattern.pattern not in _ALL_SHAPE_PATTERNS)


@contextmanager
def dotted_check(on: bool) -> Iterator[None]:
    """S12 on or off: redact.py's ``_class_changes`` (looked up at each call) as it is, or counting none."""
    kept = redact_module._class_changes
    if not on:
        redact_module._class_changes = lambda part: 0
    try:
        yield
    finally:
        redact_module._class_changes = kept


def rules_of(shape: str) -> tuple:
    return BASELINE + tuple(rule for rule in redact_module.RULES if rule.pattern.pattern in _SHAPE_PATTERNS[shape])


def out(text: str, rules: tuple, dotted: bool) -> str:
    with dotted_check(dotted):
        return redact_module.redact_with_rules(text, rules, private=False).text


def candidates(shape: str, texts: list[str]) -> list[int]:
    """Indexes of the texts the shape could change: those its own patterns find something in (S12: all)."""
    if shape == "S12":
        return list(range(len(texts)))
    own = tuple(rule for rule in redact_module.RULES if rule.pattern.pattern in _SHAPE_PATTERNS[shape])
    return [i for i, text in enumerate(texts) if redact_module._spans(text, own)]


def judge(shape: str, sets: dict[str, list[str]], secrets: dict[str, list[tuple[str, str]]]) -> dict:
    """The shape against the baseline on every set (``secrets``: the sets whose texts hold a known secret)."""
    rules, dotted = rules_of(shape), shape == "S12"
    report: dict[str, object] = {}
    for name, texts in sets.items():
        gained: Counter[str] = Counter()
        lost: Counter[str] = Counter()
        newly_touched = 0
        for index in candidates(shape, texts):
            text = texts[index]
            before, after = out(text, BASELINE, False), out(text, rules, dotted)
            if before == after:
                continue
            if name in secrets:
                label, secret = secrets[name][index]
                piece = 12 if len(secret) >= 24 else 8
                was, now = caught(secret, before, piece), caught(secret, after, piece)
                gained[label] += now and not was
                lost[label] += was and not now
            elif before == text:
                newly_touched += 1
                print(f"  {shape} TOUCHES [{name}]: {text[:200]!r}\n      -> {after[:200]!r}")
        if name in secrets:
            report[name] = {"gained": sum(gained.values()), "lost": sum(lost.values()),
                            "gained_by": dict(gained), "lost_by": dict(lost)}
        else:
            report[name] = {"texts": len(texts), "newly_touched": newly_touched}
    return report


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--shapes", help="comma-separated (default: all of " + ",".join(SHAPES) + ")")
    parser.add_argument("--man", type=Path, default=Path("/usr/share/man"), help="manual pages' folder")
    parser.add_argument("--check-baseline", action="store_true",
                        help="only compare the baseline's answers on the fourth corpus with --tree's")
    parser.add_argument("--tree", type=Path, help="with --check-baseline: main's tree")
    args = parser.parse_args()
    shapes = args.shapes.split(",") if args.shapes else list(SHAPES)
    unknown = set(shapes) - set(SHAPES)
    if unknown:
        parser.error(f"--shapes: no shape {', '.join(sorted(unknown))}; the shapes are {', '.join(SHAPES)}")
    samples4 = list(heldout4_corpus())
    texts4 = [text for _, _, text in samples4] + [text for _, text in lookalike4_corpus()]
    if args.check_baseline:
        if args.tree is None:
            parser.error("--check-baseline needs --tree")
        ours = [out(text, BASELINE, False) for text in texts4]
        differ = sum(a != b for a, b in zip(ours, redacted_by_tree(texts4, args.tree.resolve())))
        print(json.dumps({"texts": len(texts4), "answers_differ": differ}))
        return
    develop, _ = split()
    secret_sets = {
        "corpus4 develop": [s for s in samples4 if s[0] in develop],
        "corpus4 report": [s for s in samples4 if s[0] not in develop],
        "in-sample corpus": list(corpus()), "command lines": list(command_corpus()),
        "corpus1": list(heldout_corpus()), "corpus2": list(heldout2_corpus()), "corpus3": list(heldout3_corpus()),
    }
    sets = {name: [text for _, _, text in samples] for name, samples in secret_sets.items()}
    secrets = {name: [(label, secret) for label, secret, _ in samples] for name, samples in secret_sets.items()}
    sets.update({"corpus4 look-alikes": [text for _, text in lookalike4_corpus()],
                 "locomo-dev": locomo_turns(DATA / "locomo-dev.json"), "lme-dev": lme_turns(DATA / "lme-dev.json"),
                 "man pages": man_lines(args.man)})
    report = {shape: judge(shape, sets, secrets) for shape in shapes}
    print(json.dumps(report, indent=1))


if __name__ == "__main__":
    main()
