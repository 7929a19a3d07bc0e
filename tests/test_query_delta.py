"""The query delta: the learned model's low-rank change to the embedding model's layers
when it encodes a query's tokens (embedders/query_delta.py, issue 16)."""

from __future__ import annotations

import copy
import json

import numpy as np
import pytest

from localmem import Config
from localmem.embedders import HashEmbedder
from localmem.embedders.query_delta import MAX_RANK, QueryDelta
from localmem.recall.learned_rank import TreeModel

from store_helpers import new_store
from test_learned_rank import QUESTION, model_dict, tree
from test_query_adapter import garden_store, vectors
from test_onnx_embedder import EXPORTER, RUNTIME, real, run_python  # noqa: F401  (the module's real-model fixture)

LAYER = "encoder.layer.0.attention.self.query"


def delta_dict(layers=(LAYER,), rank: int = 2, inputs: int = 384, outputs: int = 384,
               scale: float = 0.05, seed: int = 0) -> dict:
    rng = np.random.default_rng(seed)
    return {"layers": {name: {"down": (rng.normal(size=(rank, inputs)) * scale).tolist(),
                              "up": (rng.normal(size=(outputs, rank)) * scale).tolist()}
                       for name in layers}}


def test_a_delta_round_trips_and_its_change_is_up_times_down():
    delta = QueryDelta.from_dict(delta_dict(rank=3))
    again = QueryDelta.from_dict(json.loads(json.dumps(delta.to_dict())))
    down, up = delta.layers[LAYER]
    assert down.shape == (3, 384) and up.shape == (384, 3)
    assert np.allclose(delta.change(LAYER), up @ down, atol=1e-6)
    assert again.digest == delta.digest
    assert QueryDelta.from_dict(delta_dict(rank=3, seed=1)).digest != delta.digest


def test_a_delta_names_the_layer_whose_shape_it_does_not_fit():
    delta = QueryDelta.from_dict(delta_dict(inputs=384, outputs=1536))
    delta.check_shape(LAYER, 1536, 384)
    with pytest.raises(ValueError, match=f"{LAYER} is for a 1536x384 weight, the model's is 384x384"):
        delta.check_shape(LAYER, 384, 384)


@pytest.mark.parametrize("damage, said", [
    (lambda d: "not a delta", "'layers' must be a non-empty object"),
    (lambda d: {"layers": {}}, "'layers' must be a non-empty object"),
    (lambda d: {"layers": {"embeddings.word_embeddings": d["layers"][LAYER]}}, "not an encoder layer"),
    (lambda d: {"layers": {LAYER: [1, 2]}}, "must be an object with down and up"),
    (lambda d: {"layers": {LAYER: {"down": d["layers"][LAYER]["down"]}}}, f"{LAYER}.up must be a list"),
    (lambda d: {"layers": {LAYER: {**d["layers"][LAYER], "down": [[0.0] * 384, [0.0] * 3]}}}, "rectangular"),
    (lambda d: {"layers": {LAYER: {**d["layers"][LAYER], "up": [[float("nan")] * 2] * 384}}}, "finite"),
    (lambda d: {"layers": {LAYER: {**d["layers"][LAYER], "up": [[1e300] * 2] * 384}}}, "finite"),
    (lambda d: {"layers": {LAYER: {**d["layers"][LAYER], "up": [[True] * 2] * 384}}}, "finite"),
    (lambda d: {"layers": {LAYER: {**d["layers"][LAYER], "up": [[0.0] * 3] * 384}}}, "rank must agree"),
    (lambda d: delta_dict(rank=MAX_RANK + 1), "rank must agree and be 1"),
])
def test_a_damaged_delta_is_refused_naming_the_fault(damage, said):
    with pytest.raises(ValueError, match="malformed query delta") as raised:
        QueryDelta.from_dict(damage(delta_dict()))
    assert said in str(raised.value)


def test_a_model_file_with_a_damaged_delta_is_said_and_recall_goes_on(tmp_path, capsys):
    path = tmp_path / "model.json"
    path.write_text(json.dumps({**model_dict([tree(QUESTION, 0.5, -6.0, 6.0)]),
                                "query_delta": {"layers": {LAYER: {"down": [[float("inf")]], "up": [[0.0]]}}}}))
    store = new_store(config=Config(learned_rank_model=str(path)))
    store.store("The garden party went well")
    response = store.recall("garden party")
    assert response["learned_rank"]["applied"] is False and response["results"]
    assert "query delta" in capsys.readouterr().err


def test_the_packaged_model_tunes_minilm_queries_with_a_delta():
    model = TreeModel.packaged()
    assert model.query_adapter is None and model.query_delta is not None
    assert sorted(model.query_delta.layers) == sorted(
        f"encoder.layer.{n}.attention.self.{part}" for n in range(6) for part in ("query", "value"))
    for down, up in model.query_delta.layers.values():
        assert down.shape == (8, 384) and up.shape == (384, 8) and np.abs(up).max() > 1e-4


# -- recall and recall_v1 ---------------------------------------------------------

OTHER = "bought new tyres for the car"


class DeltaHash(HashEmbedder):
    """The hash embedder, whose 'tuned' query tokens are those of another text, so a
    recall that reads them shows it in its MaxSim; ``fail`` makes applying refuse."""

    def __init__(self, fail: str | None = None) -> None:
        super().__init__()
        self.fail = fail
        self.applied: list[str] = []

    def embed_query_tokens(self, texts, delta):
        if self.fail:
            raise ValueError(self.fail)
        self.applied += texts
        return self.embed_with_tokens([OTHER] * len(texts))[1]


def delta_model() -> TreeModel:
    return TreeModel.from_dict({**model_dict([tree(QUESTION, 0.5, -6.0, 6.0)]), "query_delta": delta_dict()})


def test_recall_reads_the_tuned_query_tokens_when_the_model_ranks():
    query = "garden party Sunday went well"
    plain = vectors(garden_store(DeltaHash()).recall(query, adaptive_floor=False))
    embedder = DeltaHash()
    store = garden_store(embedder)
    store.learned_model = delta_model()
    response = store.recall(query, adaptive_floor=False)
    assert response["learned_rank"]["applied"] is True
    assert embedder.applied == [query]
    tuned = vectors(response)
    # MaxSim now matches the tyres memory best: the tokens were the tuned ones.
    assert tuned["Bought new tyres for the car"] > plain.get("Bought new tyres for the car", 0.0) + 0.1


@pytest.mark.parametrize("config, params", [({"learned_rank": False}, {}), ({}, {"sort": "time_desc"})])
def test_no_tuned_tokens_without_the_model_ranking(config, params):
    embedder = DeltaHash()
    store = garden_store(embedder, **config)
    store.learned_model = delta_model()
    response = store.recall("garden party Sunday", **params)
    assert response["learned_rank"]["applied"] is False
    assert embedder.applied == []


def test_an_embedder_that_cannot_tune_its_queries_is_named():
    store = garden_store(HashEmbedder())
    store.learned_model = delta_model()
    response = store.recall("garden party Sunday")
    assert response["learned_rank"] == {
        "applied": False,
        "reason": "the model encodes queries with a tuned copy of the embedding model, which "
                  "HashEmbedder cannot run"}
    assert response["results"]


def test_a_delta_the_embedder_refuses_takes_the_model_out_saying_why():
    store = garden_store(DeltaHash(fail="query delta layer x is not in model 'hash'"))
    store.learned_model = delta_model()
    plain = vectors(garden_store(DeltaHash()).recall("garden party Sunday went well", adaptive_floor=False))
    response = store.recall("garden party Sunday went well", adaptive_floor=False)
    assert response["learned_rank"] == {
        "applied": False,
        "reason": "the model's query delta could not be applied: query delta layer x is not in model 'hash'"}
    assert vectors(response) == pytest.approx(plain)  # MaxSim from the plain tokens


def test_recall_v1_hybrid_reads_the_tuned_tokens_and_says_when_it_cannot():
    embedder = DeltaHash()
    store = garden_store(embedder)
    store.learned_model = delta_model()
    response = store.recall_v1("garden party Sunday went well", k=3, search_mode="hybrid")
    assert response["learned_rank"]["applied"] is True and embedder.applied
    semantic = DeltaHash()
    store = garden_store(semantic)
    store.learned_model = delta_model()
    assert store.recall_v1("garden party", k=3, search_mode="semantic")["learned_rank"]["applied"] is False
    assert semantic.applied == []
    store = garden_store(DeltaHash(fail="no weight for it"))
    store.learned_model = delta_model()
    response = store.recall_v1("garden party Sunday", k=3, search_mode="hybrid")
    assert response["learned_rank"] == {
        "applied": False, "reason": "the model's query delta could not be applied: no weight for it"}
    assert response["results"]


# -- the real model: both runtimes apply the same change ------------------------------

needs_runtimes = pytest.mark.skipif(not (RUNTIME and EXPORTER),
                                    reason="ONNX runtime, exporter or offline MiniLM missing")
TEXTS = ["What video games does Nate play?", "when did she go to the support group", "a"]


def strong_delta() -> QueryDelta:
    names = [f"encoder.layer.{n}.attention.self.{part}" for n in (0, 3, 5) for part in ("query", "value")]
    return QueryDelta.from_dict(delta_dict(names, rank=4, scale=0.1, seed=3))


def merged_tokens(st_model, delta: QueryDelta, texts: list[str]) -> list[np.ndarray]:
    """The reference: a copy of the model with up @ down added to each layer's weight."""
    import torch

    merged = copy.deepcopy(st_model)
    transformer = merged[0].auto_model
    with torch.no_grad():
        for name in delta.layers:
            transformer.get_submodule(name).weight += torch.from_numpy(delta.change(name))
    outputs = merged.encode(texts, output_value=None, show_progress_bar=False)
    special = set(merged.tokenizer.all_special_ids)
    return [o["token_embeddings"].numpy()[~np.isin(o["input_ids"].numpy(), list(special))] for o in outputs]


@pytest.mark.model
@needs_runtimes
def test_sentence_transformers_applies_the_delta_as_merged_weights(real):  # noqa: F811
    reference, delta = real["reference"], strong_delta()
    before = reference.embed_with_tokens(TEXTS)[1]
    tuned = reference.embed_query_tokens(TEXTS, delta)
    expected = merged_tokens(real["st_model"], delta, TEXTS)
    for got, want, plain in zip(tuned, expected, before):
        assert got.shape == want.shape == plain.shape
        assert np.allclose(got, want, atol=1e-4)
        assert not np.allclose(got, plain, atol=1e-2)  # the change is real
    after = reference.embed_with_tokens(TEXTS)[1]
    assert all(np.array_equal(a, b) for a, b in zip(after, before))  # the hooks are gone


@pytest.mark.model
@needs_runtimes
def test_onnx_applies_the_same_delta_to_its_exported_graph(real, monkeypatch):  # noqa: F811
    from localmem.embedders import OnnxEmbedder

    monkeypatch.setenv("LOCALMEM_CACHE_DIR", str(real["cache"]))
    onnx, delta = OnnxEmbedder("all-MiniLM-L6-v2"), strong_delta()
    tuned = onnx.embed_query_tokens(TEXTS, delta)
    expected = real["reference"].embed_query_tokens(TEXTS, delta)
    for got, want in zip(tuned, expected):
        assert got.shape == want.shape and np.allclose(got, want, atol=1e-4)
    plain = onnx.embed_with_tokens(TEXTS)[1]  # the plain session is untouched
    assert all(np.allclose(p, r, atol=1e-4) for p, r in zip(plain, real["reference"].embed_with_tokens(TEXTS)[1]))


@pytest.mark.model
@needs_runtimes
def test_both_runtimes_refuse_a_delta_of_another_shape_naming_the_layer(real, monkeypatch):  # noqa: F811
    from localmem.embedders import OnnxEmbedder

    monkeypatch.setenv("LOCALMEM_CACHE_DIR", str(real["cache"]))
    wrong = QueryDelta.from_dict(delta_dict(["encoder.layer.2.intermediate.dense"], inputs=384, outputs=384))
    for embedder in (real["reference"], OnnxEmbedder("all-MiniLM-L6-v2")):
        with pytest.raises(ValueError, match="encoder.layer.2.intermediate.dense is for a 384x384 weight, "
                                             "the model's is 1536x384"):
            embedder.embed_query_tokens(TEXTS, wrong)
    absent = QueryDelta.from_dict(delta_dict(["encoder.layer.9.attention.self.query"]))
    with pytest.raises(ValueError, match="encoder.layer.9.attention.self.query"):
        real["reference"].embed_query_tokens(TEXTS, absent)


# -- the query graph: one run, built once, opened by later processes ------------------

PROBE = """
import json, sys
sys.modules["onnx"] = None  # this process must not need the onnx package: the graph is saved
from localmem.embedders import OnnxEmbedder
from localmem.recall.learned_rank import TreeModel
delta = TreeModel.packaged().query_delta
vector, plain, tuned = OnnxEmbedder("all-MiniLM-L6-v2").embed_query("What video games does Nate play?", delta)
print(json.dumps({"vector": vector, "tuned": tuned.tolist()}))
"""


@pytest.mark.model
@needs_runtimes
def test_one_run_gives_the_plain_and_the_tuned_encoding(real, monkeypatch):  # noqa: F811
    from localmem.embedders import OnnxEmbedder

    monkeypatch.setenv("LOCALMEM_CACHE_DIR", str(real["cache"]))
    onnx, delta = OnnxEmbedder("all-MiniLM-L6-v2"), strong_delta()
    tuned_reference = real["reference"].embed_query_tokens(TEXTS, delta)
    vectors, tokens = onnx.embed_with_tokens(TEXTS)
    for text, vector, plain, want in zip(TEXTS, vectors, tokens, tuned_reference):
        got_vector, got_plain, got_tuned = onnx.embed_query(text, delta)
        assert np.allclose(got_vector, vector, atol=1e-6) and np.allclose(got_plain, plain, atol=1e-6)
        assert got_tuned.shape == want.shape and np.allclose(got_tuned, want, atol=1e-4)
    assert not np.allclose(tuned_reference[0], tokens[0], atol=1e-2)  # the change is real


@pytest.mark.model
@needs_runtimes
def test_a_second_process_opens_the_saved_query_graph_without_building_it(real):  # noqa: F811
    from localmem.embedders import query_graph
    from localmem.embedders.onnx_cache import find_export

    env = {"LOCALMEM_CACHE_DIR": str(real["cache"])}
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("LOCALMEM_CACHE_DIR", str(real["cache"]))
        export = find_export("all-MiniLM-L6-v2")
    # Kept in the export's folder, which is named after the model's content: another model
    # (or another state of its files) has another folder, so its graph is built anew.
    saved = query_graph.graph_path(export, TreeModel.packaged().query_delta)
    query_graph.discard(saved)
    first = run_python(PROBE.replace('sys.modules["onnx"] = None', ""), **env)
    assert first.returncode == 0, first.stderr
    assert saved.is_file()
    built = saved.stat().st_mtime_ns
    second = run_python(PROBE, **env)
    assert second.returncode == 0, second.stderr
    assert saved.stat().st_mtime_ns == built  # opened, not built again
    assert np.allclose(json.loads(second.stdout)["tuned"], json.loads(first.stdout)["tuned"], atol=1e-6)
    assert json.loads(second.stdout)["vector"] == pytest.approx(json.loads(first.stdout)["vector"], abs=1e-6)


@pytest.mark.model
@needs_runtimes
def test_another_delta_builds_its_own_graph_and_a_damaged_one_is_rebuilt(real, monkeypatch, caplog):  # noqa: F811
    from localmem.embedders import OnnxEmbedder, query_graph

    monkeypatch.setenv("LOCALMEM_CACHE_DIR", str(real["cache"]))
    first, second = strong_delta(), QueryDelta.from_dict(delta_dict(
        ["encoder.layer.1.attention.self.query"], rank=4, scale=0.2, seed=9))
    onnx = OnnxEmbedder("all-MiniLM-L6-v2")
    a = onnx.embed_query(TEXTS[0], first)[2]
    b = onnx.embed_query(TEXTS[0], second)[2]
    paths = [query_graph.graph_path(onnx.export_path, d) for d in (first, second)]
    assert paths[0] != paths[1] and all(p.is_file() for p in paths)
    assert not np.allclose(a, b, atol=1e-3)
    paths[1].write_bytes(paths[1].read_bytes()[:1000])  # damaged (a full disk, a bad copy...)
    again = OnnxEmbedder("all-MiniLM-L6-v2").embed_query(TEXTS[0], second)[2]
    assert np.allclose(again, b, atol=1e-6)
    assert "would not load" in caplog.text and paths[1].stat().st_size > 1000


@pytest.mark.model
@needs_runtimes
def test_a_cache_that_cannot_take_the_graph_builds_the_query_graph_in_memory_saying_why(real, monkeypatch, caplog):  # noqa: F811
    from localmem.embedders import OnnxEmbedder, query_graph

    monkeypatch.setenv("LOCALMEM_CACHE_DIR", str(real["cache"]))
    delta = QueryDelta.from_dict(delta_dict(["encoder.layer.4.attention.self.value"], rank=3, seed=5))
    export = OnnxEmbedder("all-MiniLM-L6-v2")
    export.load()
    expected = export.embed_query(TEXTS[1], delta)[2]
    query_graph.discard(query_graph.graph_path(export.export_path, delta))
    real_save = query_graph.Path.write_bytes

    def full_disk(self, data):
        if self.name.startswith(".query-"):
            raise OSError(28, "No space left on device")
        return real_save(self, data)

    monkeypatch.setattr(query_graph.Path, "write_bytes", full_disk)
    got = OnnxEmbedder("all-MiniLM-L6-v2").embed_query(TEXTS[1], delta)[2]
    assert np.allclose(got, expected, atol=1e-6)
    assert "cannot save the query graph" in caplog.text and "No space left" in caplog.text
    assert not query_graph.graph_path(export.export_path, delta).exists()
    assert not [p.name for p in export.export_path.iterdir() if p.name.endswith(".tmp")]


@pytest.mark.model
@needs_runtimes
def test_warm_up_opens_what_the_first_recall_and_write_need(real, monkeypatch, tmp_path):  # noqa: F811
    from localmem import MemoryStore
    from localmem.embedders import OnnxEmbedder

    monkeypatch.setenv("LOCALMEM_CACHE_DIR", str(real["cache"]))
    embedder = OnnxEmbedder("all-MiniLM-L6-v2")
    store = MemoryStore(str(tmp_path / "warm.db"), embedder=embedder)
    try:
        assert not embedder.loaded and embedder._query is None
        parts = store.warm_up()
        assert set(parts) == {"learned_model", "query_encoding", "vector_codes", "embedder"}
        # The query graph of the packaged model's delta (recall) and the plain session (writes).
        assert embedder._query is not None and embedder._query[0] == store.learned_model.query_delta.digest
        assert embedder.loaded
    finally:
        store.close()


class _BatchTokenizer:
    """A tokenizer that answers ``encode`` through ``encode_batch``, as every text was
    encoded before the one-text shortcut (OnnxEmbedder._embed)."""

    def __init__(self, inner):
        self.inner = inner

    def encode(self, text):
        return self.inner.encode_batch([text, text])[0]

    def encode_batch(self, texts):
        return self.inner.encode_batch(texts)


@pytest.mark.model
@needs_runtimes
def test_encodings_are_bit_for_bit_those_of_the_runtime_default_pool(real, monkeypatch):  # noqa: F811
    """The sessions' threads now sleep after a run (the query graph's on at most two of
    them), and a lone text is tokenized by ``encode``: the numbers are those of
    onnxruntime's default pool and of ``encode_batch``, bit for bit (answers must not move)."""
    import onnxruntime as ort
    from localmem.embedders import OnnxEmbedder

    monkeypatch.setenv("LOCALMEM_CACHE_DIR", str(real["cache"]))
    onnx, delta = OnnxEmbedder("all-MiniLM-L6-v2"), TreeModel.packaged().query_delta
    texts = TEXTS + ["", "Émilie said 😀 " * 3, "long " * 400, "x\x00y"]
    fast = [onnx.embed_query(text, delta) for text in texts]
    batch = texts + ["one text", "another, longer text than the first"]  # padded together
    fast_batch, fast_one = onnx.embed(batch), [onnx.embed([text]) for text in texts]
    for session in (onnx._query[1], onnx._session):
        options = session.get_session_options()
        assert options.get_session_config_entry("session.intra_op.allow_spinning") == "0"
    assert onnx._query[1].get_session_options().intra_op_num_threads in (1, 2)  # 0: the default pool

    def default_pool(session):
        return ort.InferenceSession(session._model_path, providers=["CPUExecutionProvider"])

    onnx._query = (onnx._query[0], default_pool(onnx._query[1]))
    onnx._session = default_pool(onnx._session)
    onnx._tokenizer = _BatchTokenizer(onnx._tokenizer)
    for text, got in zip(texts, fast):
        want = onnx.embed_query(text, delta)
        assert np.array_equal(got[0], want[0]), text[:30]
        assert np.array_equal(got[1], want[1]) and np.array_equal(got[2], want[2]), text[:30]
    assert onnx.embed(batch) == fast_batch
    assert [onnx.embed([text]) for text in texts] == fast_one
