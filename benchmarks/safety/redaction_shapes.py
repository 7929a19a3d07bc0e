"""Each redaction shape judged alone: main's rules plus that one shape, against main's rules (issue 40).

A shape is one or more named patterns of localmem/privacy/patterns.py (``SHAPES``: this round's, branch redact17;
redact16's S1–S14 were judged with this script as it was at commit 2aad871). The baseline is this tree's rules
without any shape's patterns: main's rules (``--check-baseline`` compares its answers on the fifth corpus with
``--tree``'s, main's). For each shape, on the texts its own patterns find something in:

- corpus 5 (benchmarks/common/credential_heldout5.py): texts it catches that the baseline misses, per half, and
  texts it loses; its look-alikes, and corpus 4's, it touches that the baseline leaves (each printed);
- LoCoMo dev and LongMemEval dev turns, and the manual pages' lines (redaction_heldout.py's), it touches that the
  baseline leaves (each printed, to be read);
- texts it gains or loses in the in-sample corpus, the command lines and corpora 1–4 (for the record: not held out
  for this round's shapes, which were written from corpus 4's misses).

    python benchmarks/safety/redaction_shapes.py [--shapes W1,W3] [--man /usr/share/man]
    python benchmarks/safety/redaction_shapes.py --check-baseline --tree /work/main
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from benchmarks.common.credential_corpus import command_corpus, corpus  # noqa: E402
from benchmarks.common.credential_heldout import heldout_corpus  # noqa: E402
from benchmarks.common.credential_heldout2 import heldout2_corpus  # noqa: E402
from benchmarks.common.credential_heldout3 import heldout3_corpus  # noqa: E402
from benchmarks.common.credential_heldout4 import heldout4_corpus, lookalike4_corpus  # noqa: E402
from benchmarks.common.credential_heldout5 import heldout5_corpus, lookalike5_corpus, split  # noqa: E402
from benchmarks.safety.redaction import DATA, caught, lme_turns, locomo_turns, redacted_by_tree  # noqa: E402
from benchmarks.safety.redaction_heldout import man_lines  # noqa: E402

from localmem.privacy import patterns  # noqa: E402

redact_module = sys.modules["localmem.privacy.redact"]

SHAPES: dict[str, tuple[str, ...]] = {
    "W1": ("SINGLE_DASH_PASSWORD_FLAG",),
    "W2": ("RABBITMQCTL_PASSWORD", "WPA_PASSPHRASE_ARGUMENT", "MOSQUITTO_PASSWD_BATCH", "MINIO_ALIAS_SECRET",
           "NET_USE_PASSWORD", "DB2_USING_PASSWORD"),
    "W3": ("SECURESTRING_PLAIN_TEXT",), "W4": ("PHP_DEFINE_SECRET", "C_DEFINE_SECRET"), "W5": ("WIFI_QR_PASSWORD",),
    "W6": ("NETSH_KEY_CONTENT",), "W7": ("NICKSERV_IDENTIFY",), "W8": ("VSQL_PASSWORD",),
    # W9 (REDIS_ACL_PASSWORD, REDIS_AUTH: Redis's ACL and AUTH) failed its rule and was taken out: judged at e7512f9.
    # W10 (DSL_PASSWORD_LINE, a Gradle DSL password line) failed (a): corpus 5's report half holds its shape and it
    # took none of them.
    "W11": ("JENKINS_AUTH",),
    "W12": ("CODECOV_TOKEN",), "W13": ("IFTTT_KEY",), "W14": ("KEEPASS_PASSWORD_VALUE",), "W15": ("ERLANG_COOKIE",),
}
_SHAPE_PATTERNS = {name: {getattr(patterns, constant) for constant in constants}
                   for name, constants in SHAPES.items()}
_ALL_SHAPE_PATTERNS = set().union(*_SHAPE_PATTERNS.values())
BASELINE = tuple(rule for rule in redact_module.RULES if rule.pattern.pattern not in _ALL_SHAPE_PATTERNS)


def own_rules(shape: str) -> tuple:
    return tuple(rule for rule in redact_module.RULES if rule.pattern.pattern in _SHAPE_PATTERNS[shape])


def out(text: str, rules: tuple) -> str:
    return redact_module.redact_with_rules(text, rules, private=False).text


def judge(shape: str, sets: dict[str, list[str]], secrets: dict[str, list[tuple[str, str]]]) -> dict:
    """The shape against the baseline on every set (``secrets``: the sets whose texts hold a known secret)."""
    own = own_rules(shape)
    rules = BASELINE + own
    report: dict[str, object] = {}
    for name, texts in sets.items():
        gained: Counter[str] = Counter()
        lost: Counter[str] = Counter()
        newly_touched = 0
        for index in (i for i, text in enumerate(texts) if redact_module._spans(text, own)):
            text = texts[index]
            before, after = out(text, BASELINE), out(text, rules)
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
                        help="only compare the baseline's answers on the fifth corpus with --tree's")
    parser.add_argument("--tree", type=Path, help="with --check-baseline: main's tree")
    args = parser.parse_args()
    shapes = args.shapes.split(",") if args.shapes else list(SHAPES)
    unknown = set(shapes) - set(SHAPES)
    if unknown:
        parser.error(f"--shapes: no shape {', '.join(sorted(unknown))}; the shapes are {', '.join(SHAPES)}")
    samples5 = list(heldout5_corpus())
    texts5 = [text for _, _, text in samples5] + [text for _, text in lookalike5_corpus()]
    if args.check_baseline:
        if args.tree is None:
            parser.error("--check-baseline needs --tree")
        ours = [out(text, BASELINE) for text in texts5]
        differ = sum(a != b for a, b in zip(ours, redacted_by_tree(texts5, args.tree.resolve())))
        print(json.dumps({"texts": len(texts5), "answers_differ": differ}))
        return
    develop, _ = split()
    secret_sets = {
        "corpus5 develop": [s for s in samples5 if s[0] in develop],
        "corpus5 report": [s for s in samples5 if s[0] not in develop],
        "in-sample corpus": list(corpus()), "command lines": list(command_corpus()),
        "corpus1": list(heldout_corpus()), "corpus2": list(heldout2_corpus()), "corpus3": list(heldout3_corpus()),
        "corpus4": list(heldout4_corpus()),
    }
    sets = {name: [text for _, _, text in samples] for name, samples in secret_sets.items()}
    secrets = {name: [(label, secret) for label, secret, _ in samples] for name, samples in secret_sets.items()}
    sets.update({"corpus5 look-alikes": [text for _, text in lookalike5_corpus()],
                 "corpus4 look-alikes": [text for _, text in lookalike4_corpus()],
                 "locomo-dev": locomo_turns(DATA / "locomo-dev.json"), "lme-dev": lme_turns(DATA / "lme-dev.json"),
                 "man pages": man_lines(args.man)})
    report = {shape: judge(shape, sets, secrets) for shape in shapes}
    print(json.dumps(report, indent=1))


if __name__ == "__main__":
    main()
