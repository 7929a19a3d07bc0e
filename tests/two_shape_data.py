"""Small data for runs of the two-shape benchmarks (train_rank_two_shapes.py,
role_length_levers.py): the first LoCoMo dev conversation cut short, and LongMemEval-shaped
instances with one evidence turn each."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

LOCOMO = Path(__file__).resolve().parents[2] / "shared" / "data" / "locomo-dev.json"
ANSWER = "Here is a long and generic answer about gardening and the weather. " * 40


def lme_instance(number: int) -> dict:
    pet = ["beagle", "tabby cat", "parrot", "hamster", "goldfish", "tortoise"][number]
    return {
        "question_id": f"q{number}", "question_type": "single-session-user",
        "question": f"What kind of pet did I adopt, number {number}?", "question_date": "2023/06/01 (Thu) 10:00",
        "answer": pet, "answer_session_ids": [f"s{number}b"],
        "haystack_session_ids": [f"s{number}a", f"s{number}b"],
        "haystack_dates": ["2023/05/01 (Mon) 09:00", "2023/05/20 (Sat) 14:30"],
        "haystack_sessions": [
            [{"role": "user", "content": "How do I grow tomatoes on a balcony?", "has_answer": False},
             {"role": "assistant", "content": ANSWER, "has_answer": False}],
            [{"role": "user", "content": f"I adopted a {pet} last week, pet number {number}.", "has_answer": True},
             {"role": "assistant", "content": f"Congratulations on your new {pet}! " + ANSWER[:300],
              "has_answer": False}],
        ],
    }


def small_data(folder: Path, questions: int, instances: int) -> list[str]:
    """Pool options for a run on the first LoCoMo conversation's first ``questions`` questions
    and ``instances`` small LongMemEval instances, with the hash embedder."""
    sample = json.loads(LOCOMO.read_text())[0]
    sample["qa"] = sample["qa"][:questions]
    locomo_path = folder / "locomo.json"
    locomo_path.write_text(json.dumps([sample]))
    lme_path = folder / "lme.json"
    lme_path.write_text(json.dumps({"instances": [lme_instance(n) for n in range(instances)]}))
    return ["--embedder", "hash", "--no-cache", "--locomo", str(locomo_path), "--lme", str(lme_path)]


def random_pools(seed: int, threads: list[str], count: int = 40) -> list[dict]:
    """``count`` recorded-pool stand-ins of 12 candidates with random FEATURES rows, a label led by the
    first column (the first candidate always evidence), ``threads`` as the candidates' thread ids, folds
    0-4 in turn and the two shapes alternating: what thread_levers.py's trees train and judge on."""
    from localmem.recall.learned_rank import FEATURES

    rng = np.random.default_rng(seed)
    pools = []
    for index in range(count):
        rows = rng.normal(size=(12, len(FEATURES)))
        labels = (rows[:, 0] + rng.normal(scale=0.5, size=12) > 1.0).astype(float)
        labels[0] = 1.0
        pools.append({"rows": rows, "labels": labels, "final": rows[:, 3], "threads": list(threads),
                      "fold": index % 5, "shape": "locomo" if index % 2 else "lme"})
    return pools


def uniform_pools(count: int, seed: int, lme_every: int = 2) -> list[dict]:
    """``count`` pool stand-ins of 20 candidates with uniform random FEATURES rows, a label led by the first
    column (the first candidate always evidence), folds 0-4 in turn, every ``lme_every``-th one (from the
    first) LongMemEval's: what seed_ensemble.py and the recipes' trees train on."""
    from localmem.recall.learned_rank import FEATURES

    rng = np.random.default_rng(seed)
    pools = []
    for number in range(count):
        rows = rng.random((20, len(FEATURES)))
        labels = (rows[:, 0] + 0.3 * rng.random(20) > 0.9).astype(int)
        labels[0] = 1
        pools.append({"rows": rows, "labels": labels, "shape": "lme" if number % lme_every == 0 else "locomo",
                      "fold": number % 5, "number": number})
    return pools
