"""The int8 query graph (LOCALMEM_QUERY_INT8=1, embedders/query_int8.py, issue 44 item 3):
refused when unusable, made once and checked by its digest, made again when damaged or
when onnxruntime changes."""

from __future__ import annotations

import json
import os
import subprocess
import time
import sys

import numpy as np
import pytest

from localmem import MemoryStore
from localmem.embedders import OnnxEmbedder, query_graph, query_int8
from localmem.errors import ConfigError
from localmem.recall.learned_rank import TreeModel

from test_onnx_embedder import real, run_python  # noqa: F401  (the module's real-model fixture)
from test_query_delta import TEXTS, needs_runtimes, strong_delta


@pytest.mark.parametrize("value, wanted", [("1", True), ("yes", True), (" On ", True), ("0", False),
                                           ("", False), ("off", False)])
def test_the_setting_reads_yes_and_no(value, wanted):
    assert query_int8.wanted({query_int8.ENV: value}) is wanted
    assert query_int8.wanted({}) is False


@pytest.mark.parametrize("value", ["2", "int8", "maybe", "1\x00"])
def test_a_bad_value_is_refused_naming_the_setting(value):
    with pytest.raises(ConfigError, match="LOCALMEM_QUERY_INT8 must be 1 or 0"):
        query_int8.wanted({query_int8.ENV: value})


def test_a_store_with_a_model_refuses_a_bad_value_even_without_an_export(tmp_path, monkeypatch):
    monkeypatch.setenv(query_int8.ENV, "fast")
    with pytest.raises(ConfigError, match="LOCALMEM_QUERY_INT8"):
        MemoryStore(str(tmp_path / "m.db"), embedder="auto")
    assert not (tmp_path / "m.db").exists()
    with pytest.raises(ConfigError, match="LOCALMEM_QUERY_INT8"):  # a bad value is bad whatever the embedder
        MemoryStore(str(tmp_path / "h.db"), embedder="hash")
    assert not (tmp_path / "h.db").exists()


@pytest.mark.parametrize("spec, kind", [("hash", "HashEmbedder"), ("none", "no embedder")])
def test_asking_for_int8_where_there_is_no_query_graph_is_said(tmp_path, monkeypatch, spec, kind):
    monkeypatch.setenv(query_int8.ENV, "1")
    with pytest.warns(UserWarning, match=f"LOCALMEM_QUERY_INT8=1 changes nothing with (the )?{kind}"):
        store = MemoryStore(str(tmp_path / "h.db"), embedder=spec)
    assert store.health()["embedder"]["query_int8"] is False
    store.close()


def test_the_cli_says_the_setting_changes_nothing_for_a_hash_store(tmp_path):
    env = dict(os.environ, LOCALMEM_DB=str(tmp_path / "h.db"), LOCALMEM_EMBEDDER="hash")
    env.pop(query_int8.ENV, None)
    subprocess.run([sys.executable, "-m", "localmem", "store", "a note"], env=env, check=True, capture_output=True)
    said = subprocess.run([sys.executable, "-m", "localmem", "recall", "note"], capture_output=True, text=True,
                          env={**env, query_int8.ENV: "1"})
    assert said.returncode == 0
    assert "warning: LOCALMEM_QUERY_INT8=1 changes nothing with the HashEmbedder embedder" in said.stderr


def test_without_the_onnx_package_the_setting_is_refused_saying_what_to_install(monkeypatch):
    monkeypatch.setitem(sys.modules, "onnx", None)  # as if it were not installed
    with pytest.raises(ConfigError, match=r"LOCALMEM_QUERY_INT8=1 needs the onnx package .*localmem\[onnx\]"):
        OnnxEmbedder("all-MiniLM-L6-v2", environ={query_int8.ENV: "1"})
    assert OnnxEmbedder("all-MiniLM-L6-v2", environ={}).query_int8 is False  # off: onnx not needed


def test_the_setting_loads_neither_onnx_nor_onnxruntime_until_a_query_needs_them():
    found = run_python("import sys\nfrom localmem.embedders import OnnxEmbedder\n"
                       "e = OnnxEmbedder('all-MiniLM-L6-v2')\n"
                       "print(e.query_int8, 'onnxruntime' in sys.modules, 'onnx' in sys.modules)",
                       LOCALMEM_QUERY_INT8="1")
    assert found.returncode == 0, found.stderr
    assert found.stdout.split() == ["True", "False", "False"]


def test_a_saved_graph_is_read_back_only_while_its_digest_matches(tmp_path):
    graph = tmp_path / "query-v1-0123456789abcdef.onnx"
    target = query_int8.int8_path(graph)
    assert target.name.startswith(graph.stem + "-int8-") and target.parent == tmp_path
    data = bytes(range(256)) * 64
    query_int8._save(data, target)
    assert query_int8.verified_bytes(target) == data
    damaged = bytearray(data)
    damaged[5000] ^= 1  # same size, one bit: it might even load
    target.write_bytes(bytes(damaged))
    assert query_int8.verified_bytes(target) is None
    assert not target.exists() and not target.with_name(target.name + ".sha256").exists()
    query_int8._save(data, target)
    target.with_name(target.name + ".sha256").unlink()  # a process that died between the two renames
    assert query_int8.verified_bytes(target) is None and not target.exists()


def test_a_copy_for_another_onnxruntime_is_named_apart_and_deleted_when_a_new_one_is_saved(tmp_path, monkeypatch):
    graph = tmp_path / "query-v1-0123456789abcdef.onnx"
    current = query_int8.int8_path(graph)
    monkeypatch.setattr(query_int8.importlib.metadata, "version", lambda name: "0.0.1")
    older = query_int8.int8_path(graph)
    monkeypatch.undo()
    assert older != current
    query_int8._save(b"made by another onnxruntime", older)
    other_delta = tmp_path / "query-v1-fedcba9876543210-int8-aaaaaaaaaaaa.onnx"
    other_delta.write_bytes(b"another delta's")
    query_int8._save(b"this onnxruntime's", current)
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(
        [current.name, current.name + ".sha256", other_delta.name])


# -- the real model ---------------------------------------------------------------


def int8_embedder() -> OnnxEmbedder:
    return OnnxEmbedder("all-MiniLM-L6-v2", environ=dict(os.environ, **{query_int8.ENV: "1"}))


@pytest.mark.model
@needs_runtimes
def test_the_int8_graph_is_made_once_and_answers_close_to_the_float_one(real, monkeypatch):  # noqa: F811
    monkeypatch.setenv("LOCALMEM_CACHE_DIR", str(real["cache"]))
    delta = TreeModel.packaged().query_delta
    plain = OnnxEmbedder("all-MiniLM-L6-v2")
    fast = int8_embedder()
    for text in TEXTS:
        vector, tokens, tuned = plain.embed_query(text, delta)
        vector8, tokens8, tuned8 = fast.embed_query(text, delta)
        assert float(np.dot(vector, vector8)) > 0.98, text  # close, not equal: answers may move
        assert vector8 != vector
        assert tokens8.shape == tokens.shape and tuned8.shape == tuned.shape
        assert not np.allclose(tuned8, tokens8, atol=1e-2)  # the delta still applies
    path = query_int8.int8_path(query_graph.graph_path(fast.export_path, delta))
    made = path.stat().st_mtime_ns
    again = int8_embedder().embed_query(TEXTS[0], delta)  # as a new process: opened, not made
    assert path.stat().st_mtime_ns == made
    assert again[0] == fast.embed_query(TEXTS[0], delta)[0]
    assert float(np.dot(plain.embed(TEXTS[:1])[0], again[0])) > 0.98
    other = strong_delta()
    fast.embed_query(TEXTS[0], other)  # another delta: its own int8 graph
    assert query_int8.int8_path(query_graph.graph_path(fast.export_path, other)).is_file()


@pytest.mark.model
@needs_runtimes
def test_a_damaged_int8_graph_is_never_loaded_and_is_made_again(real, monkeypatch, caplog):  # noqa: F811
    monkeypatch.setenv("LOCALMEM_CACHE_DIR", str(real["cache"]))
    delta = TreeModel.packaged().query_delta
    expected = int8_embedder().embed_query(TEXTS[1], delta)
    path = query_int8.int8_path(query_graph.graph_path(int8_embedder()._export(), delta))
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 0x40  # a flipped bit in a weight: onnxruntime would load it
    path.write_bytes(bytes(data))
    got = int8_embedder().embed_query(TEXTS[1], delta)
    assert "does not match its digest" in caplog.text
    assert got[0] == expected[0] and np.array_equal(got[2], expected[2])
    assert query_int8.verified_bytes(path) is not None  # made again, whole
    path.write_bytes(path.read_bytes()[:1000])  # truncated
    assert int8_embedder().embed_query(TEXTS[1], delta)[0] == expected[0]


@pytest.mark.model
@needs_runtimes
def test_stats_and_doctor_say_queries_run_through_the_int8_graph(real, tmp_path):  # noqa: F811
    db = str(tmp_path / "m.db")
    env = dict(os.environ, LOCALMEM_CACHE_DIR=str(real["cache"]), HF_HUB_OFFLINE="1")
    run = [sys.executable, "-m", "localmem", "--db", db]
    store = subprocess.run(run + ["--embedder", "auto", "store", "Nate plays Xenoblade on his Switch"],
                           env=env, capture_output=True, text=True, timeout=300)
    assert store.returncode == 0, store.stderr
    said = {}
    for value in ("0", "1"):
        env[query_int8.ENV] = value
        stats = subprocess.run(run + ["stats", "--json"], env=env, capture_output=True, text=True, timeout=300)
        doctor = subprocess.run(run + ["doctor"], env=env, capture_output=True, text=True, timeout=300)
        assert stats.returncode == 0 and doctor.returncode == 0, stats.stderr + doctor.stderr
        said[value] = (json.loads(stats.stdout)["embedder"]["query_int8"], "int8 query graph" in doctor.stdout)
    assert said == {"0": (False, False), "1": (True, True)}
    env[query_int8.ENV] = "sometimes"
    refused = subprocess.run(run + ["stats"], env=env, capture_output=True, text=True, timeout=300)
    assert refused.returncode != 0 and "LOCALMEM_QUERY_INT8 must be 1 or 0" in refused.stderr


def test_pruning_keeps_the_current_graphs_int8_copy_and_ages_out_others_with_their_digests(tmp_path):
    keep = tmp_path / "query-v1-aaaaaaaaaaaaaaaa.onnx"
    current = [keep, tmp_path / f"{keep.stem}-int8-111111111111.onnx",
               tmp_path / f"{keep.stem}-int8-111111111111.onnx.sha256"]
    stale = [tmp_path / "query-v1-bbbbbbbbbbbbbbbb.onnx", tmp_path / "query-v1-bbbbbbbbbbbbbbbb-int8-111111111111.onnx",
             tmp_path / "query-v1-bbbbbbbbbbbbbbbb-int8-111111111111.onnx.sha256"]
    recent = [tmp_path / "query-v1-cccccccccccccccc-int8-111111111111.onnx.sha256"]
    week_ago = time.time() - query_graph.UNUSED_GRAPH_SECONDS - 60
    for path in current + stale + recent:
        path.write_bytes(b"x")
    for path in current + stale:
        os.utime(path, (week_ago, week_ago))
    query_graph.prune(tmp_path, keep=keep)
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(p.name for p in current + recent)


@pytest.mark.model
@needs_runtimes
def test_a_full_cache_quantises_in_memory_and_leaves_no_file(real, monkeypatch, caplog):  # noqa: F811
    from pathlib import Path

    monkeypatch.setenv("LOCALMEM_CACHE_DIR", str(real["cache"]))
    delta = strong_delta()
    expected = int8_embedder().embed_query(TEXTS[2], delta)
    export = int8_embedder()._export()
    graph = query_graph.graph_path(export, delta)
    query_graph.discard(graph)
    query_int8.discard(query_int8.int8_path(graph))
    real_save = Path.write_bytes

    def full_disk(self, data):
        if self.name.startswith(".query-"):
            raise OSError(28, "No space left on device")
        return real_save(self, data)

    monkeypatch.setattr(Path, "write_bytes", full_disk)
    got = int8_embedder().embed_query(TEXTS[2], delta)
    assert got[0] == pytest.approx(expected[0], abs=1e-6) and np.allclose(got[2], expected[2], atol=1e-5)
    assert "cannot save the query graph" in caplog.text
    assert not graph.exists() and not query_int8.int8_path(graph).exists()
    assert not [p.name for p in export.iterdir() if p.name.endswith(".tmp")]
