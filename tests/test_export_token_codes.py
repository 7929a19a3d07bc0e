"""Export/import is a lossless round trip again: version 2 carries each memory's token codes and
the centre they are measured from (issue 35), through the CLI as a user moves a store.

The codes come back when the file's vectors are kept and the database measures codes from the
same centre (or has none yet); otherwise the import says why they are missing. Version 1
files (no codes) still import.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np

from localmem import MemoryStore

ROOT = Path(__file__).resolve().parent.parent
TEXTS = ["We picked PostgreSQL for the billing service because of its window functions.",
         "The billing service runs on two replicas behind the load balancer.",
         "Allergic to penicillin: always tell a new doctor.",
         "Sunday long run: 18 km along the river, knee fine."]


def localmem(db: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    env.pop("LOCALMEM_EMBEDDER", None)
    result = subprocess.run([sys.executable, "-m", "localmem", "--db", str(db), "--embedder", "hash", *args],
                            capture_output=True, text=True, env=env, timeout=120)
    return result


def seeded(path: Path) -> Path:
    with MemoryStore(path, embedder="hash") as store:
        ids = store.store_many([{"content": t} for t in TEXTS])
        store.associate(ids[0], ids[1], "RELATES_TO", 0.7)
        assert store.health()["token_coded_count"] == len(TEXTS)
    return path


def health(path: Path) -> dict:
    with MemoryStore(path, embedder="hash") as store:
        return store.health()


def top_vector_components(path: Path) -> list[tuple[str, float]]:
    with MemoryStore(path, embedder="hash") as store:
        answer = store.recall("which database for billing", limit=4)
    return [(r["id"], round(r["score_components"]["vector"], 6)) for r in answer["results"]]


def test_round_trip_keeps_the_token_codes_and_the_answers(tmp_path: Path) -> None:
    source = seeded(tmp_path / "source.db")
    dump = tmp_path / "dump.jsonl"
    assert localmem(source, "export", str(dump)).returncode == 0
    lines = [json.loads(line) for line in dump.read_text(encoding="utf-8").splitlines()]
    assert lines[0]["version"] == 2 and lines[0]["token_centre"]
    assert all(line["token_codes"]["tokens"] > 0 for line in lines if line["kind"] == "memory")

    target = tmp_path / "target.db"
    imported = localmem(target, "import", str(dump))
    assert imported.returncode == 0, imported.stderr
    assert "token codes" not in imported.stderr  # nothing to warn about
    assert health(target)["token_coded_count"] == health(source)["token_coded_count"] == len(TEXTS)
    again = tmp_path / "again.jsonl"
    assert localmem(target, "export", str(again)).returncode == 0
    assert again.read_bytes() == dump.read_bytes()  # export -> import -> export: the same bytes
    # recall scores the imported store by its token evidence, exactly as the source
    assert top_vector_components(target) == top_vector_components(source)


def test_codes_from_another_centre_are_left_out_and_the_import_says_why(tmp_path: Path) -> None:
    source = seeded(tmp_path / "source.db")
    dump = tmp_path / "dump.jsonl"
    assert localmem(source, "export", str(dump)).returncode == 0
    target = tmp_path / "target.db"
    with MemoryStore(target, embedder="hash") as store:
        store.store("already here")  # records this database's centre
        centre = np.frombuffer(store.conn.execute("SELECT centre FROM token_centre").fetchone()[0],
                               dtype=np.float32).copy()
        centre[0] += 0.25  # as if measured by another build of the model
        store.conn.execute("UPDATE token_centre SET centre = ?", (centre.tobytes(),))
    imported = localmem(target, "--json", "import", str(dump))
    assert imported.returncode == 0, imported.stderr
    body = json.loads(imported.stdout)
    assert body["without_token_codes"] == len(TEXTS)
    assert body["why_without_token_codes"] == "this database measures token codes from another centre"
    assert health(target)["token_coded_count"] == 1
    plain = localmem(tmp_path / "third.db", "import", str(dump))
    assert plain.returncode == 0 and "no usable token codes" not in plain.stderr


def test_a_version_1_file_still_imports_and_says_reembed_adds_the_codes(tmp_path: Path) -> None:
    source = seeded(tmp_path / "source.db")
    dump = tmp_path / "dump.jsonl"
    assert localmem(source, "export", str(dump)).returncode == 0
    lines = [json.loads(line) for line in dump.read_text(encoding="utf-8").splitlines()]
    lines[0]["version"] = 1
    del lines[0]["token_centre"]
    for line in lines[1:]:
        line.pop("token_codes", None)
    old = tmp_path / "v1.jsonl"
    old.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    target = tmp_path / "target.db"
    imported = localmem(target, "import", str(old))
    assert imported.returncode == 0, imported.stderr
    assert f"{len(TEXTS)} memories came with the file's vectors and no usable token codes " \
           "(the file carries no token codes)" in " ".join(imported.stderr.split())
    assert health(target)["token_coded_count"] == 0
    assert localmem(target, "reembed").returncode == 0
    assert health(target)["token_coded_count"] == len(TEXTS)


def test_malformed_token_codes_are_refused_naming_the_line(tmp_path: Path) -> None:
    source = seeded(tmp_path / "source.db")
    dump = tmp_path / "dump.jsonl"
    assert localmem(source, "export", str(dump)).returncode == 0
    lines = dump.read_text(encoding="utf-8").splitlines()
    memory = json.loads(lines[2])
    memory["token_codes"]["codes"] = memory["token_codes"]["codes"][:-8]
    lines[2] = json.dumps(memory)
    bad = tmp_path / "bad.jsonl"
    bad.write_text("\n".join(lines) + "\n", encoding="utf-8")
    target = tmp_path / "target.db"
    result = localmem(target, "import", str(bad))
    assert result.returncode == 2 and "line 3" in result.stderr and "token_codes" in result.stderr, result.stderr
    assert not target.exists() or health(target)["memory_count"] == 0
