"""benchmarks/speed/candidate_work.py: the pool settings it compares (and pool_cut.py records),
and the candidates it counts per stage, on a hash-embedder store."""

from __future__ import annotations

import argparse
import re
import sys
import time
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.speed import candidate_work  # noqa: E402
from localmem import Config, MemoryStore  # noqa: E402
from localmem.embedders import HashEmbedder  # noqa: E402

WORDS = "apple river stone cloud paper garden window silver music winter".split()


def test_pool_settings_are_read_and_bad_ones_refused_by_name() -> None:
    assert candidate_work.read_setting("2").config == (("vector_overfetch", 2),)
    assert candidate_work.read_setting("2/30").config == (("vector_overfetch", 2), ("keyword_fetch", 30))
    assert candidate_work.read_setting("first:60").constants == (("FIRST_CUT", 60),)
    assert candidate_work.read_setting("keyword:30").constants == (("KEYWORD_PAGE", 30),)
    for bad in ("x", "0", "2/0", "first:0", "other:3", "first:"):
        with pytest.raises(argparse.ArgumentTypeError, match=re.escape(f"got {bad!r}")):
            candidate_work.read_setting(bad)
    with pytest.raises(argparse.ArgumentTypeError, match="at least two"):
        candidate_work.setting_list("4")


@pytest.mark.skipif(candidate_work.candidate_pool is not None, reason="this tree has the levers' code")
def test_a_lever_setting_is_refused_where_its_code_is_not() -> None:
    candidate_work.read_setting("2").apply()  # a configuration setting needs no code
    with pytest.raises(SystemExit, match="first:60.*80f611e"):
        candidate_work.read_setting("first:60").apply()


@pytest.fixture()
def store_file(tmp_path: Path) -> str:
    path = tmp_path / "pool.db"
    store = MemoryStore(path, embedder=HashEmbedder(), config=Config(track_access=False))
    for n in range(150):
        words = [WORDS[(n * 7 + k) % len(WORDS)] for k in range(4)]
        store.store(f"note {n}: {' '.join(words)}", tags=["pool"])
    store.close()
    return str(path)


def test_a_smaller_overfetch_gives_each_recall_a_smaller_pool(store_file: str) -> None:
    work = [(f"{a} {b}", {"tags": ["pool"], "limit": 5}) for a, b in zip(WORDS, WORDS[3:])]
    sizes = {}
    for overfetch in (4, 1):
        store = MemoryStore(store_file, embedder=HashEmbedder(),
                            config=Config(track_access=False).with_changes(vector_overfetch=overfetch))
        sizes[overfetch] = candidate_work.pool_sizes(store, work)
        store.close()
    assert len(sizes[4]) == len(work)
    assert all(small <= large for small, large in zip(sizes[1], sizes[4]))
    assert sum(sizes[1]) < sum(sizes[4])


def test_the_stage_table_counts_what_each_stage_is_given(store_file: str) -> None:
    store = MemoryStore(store_file, embedder=HashEmbedder(), config=Config(track_access=False))
    work = [(f"{a} {b}", {"tags": ["pool"], "limit": 5}) for a, b in zip(WORDS, WORDS[3:])]
    pools = candidate_work.pool_sizes(store, work)
    rows = {row.split(" | ")[0].lstrip("| "): row.split(" | ")
            for row in candidate_work.stage_table(store, work, time.perf_counter)[2:]}
    store.close()
    mean_pool = sum(pools) / len(pools)
    # each candidate of the pool is scored once, and the learned stage is given the whole pool
    assert float(rows["per-candidate scoring"][2]) == pytest.approx(mean_pool, abs=0.05)
    assert float(rows["learned ranking (pool)"][2]) == pytest.approx(mean_pool, abs=0.05)
    assert float(rows["response (results)"][2]) <= 5
