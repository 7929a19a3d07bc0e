"""The ONNX embedder: a sentence-transformers model run by ONNX Runtime, without torch.

``OnnxEmbedder`` loads a cached export (see ``onnx_cache``) with onnxruntime
and the model's own ``tokenizer.json`` with the ``tokenizers`` library, and
applies the pipeline read from the model folder (``st_pipeline``). It has the
same ``name`` as the ``SentenceTransformerEmbedder`` it mirrors, so a
database made with one opens with the other. numpy, onnxruntime and
tokenizers are imported when the model loads.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..errors import ConfigError
from .base import Embedder, EmbedderUnavailable
from .model_files import DEFAULT_MODEL, installed, known_dimensions, local_model_path, read_json
from . import query_graph, query_int8
from .onnx_cache import ONNX_FILE, RUNTIME_REQUIREMENTS, find_export, onnx_root
from .st_pipeline import Pipeline, read_pipeline

if TYPE_CHECKING:
    from .query_delta import QueryDelta

log = logging.getLogger("localmem.onnx")


class OnnxEmbedder:
    """A sentence-transformers model run by onnxruntime from a cached export; no torch.

    ``name`` is the model name as given (the same as the
    ``SentenceTransformerEmbedder`` it mirrors). Loading needs numpy,
    onnxruntime, tokenizers, the local model folder and an export of it in the
    cache (``localmem embedder export``); failures raise
    ``EmbedderUnavailable`` and are remembered.
    """

    batch_size = 64

    def __init__(
        self,
        model: str = DEFAULT_MODEL,
        *,
        export_path: str | os.PathLike[str] | None = None,
        environ: Mapping[str, str] | None = None,
        fallback: Callable[[], Embedder] | None = None,
    ) -> None:
        if not isinstance(model, str) or not model.strip():
            raise ConfigError(f"embedding model must be a non-empty string, got {model!r}")
        self.name = model.strip()
        # fallback: makes the embedder used when the ONNX path cannot load (a broken
        # onnxruntime, a deleted export...): sentence-transformers, instead of failing.
        self.fallback = fallback
        self._delegate: Any = None
        self.path = local_model_path(self.name)
        self._export_path = Path(export_path) if export_path is not None else None
        self._environ = environ
        # LOCALMEM_QUERY_INT8=1: queries through the int8 query graph (embedders/query_int8.py).
        self.query_int8 = query_int8.wanted(environ)
        if self.query_int8 and (why := query_int8.unavailable_reason()) is not None:
            raise ConfigError(why)
        self._dimensions: int | None = None
        self._pipeline: Pipeline | None = None
        self._session: Any = None
        self._tokenizer: Any = None
        self._np: Any = None
        self._error: str | None = None
        self._query: tuple[str, Any] | None = None  # (delta digest, session with the delta applied)
        self._opened: tuple[str, Path, Any] | None = None  # a query graph session opened ahead
        self._lock = threading.Lock()
        self.export_path: Path | None = None  # set by load()

    def __repr__(self) -> str:
        return f"OnnxEmbedder({self.name!r}{', fallback=True' if self.fallback else ''})"

    @property
    def dimensions(self) -> int:
        """Vector length, from the model files or the well-known table (no loading)."""
        if self._dimensions is None:
            dimensions = known_dimensions(self.name, path=self.path)
            if dimensions is None:
                dimensions = self._read_pipeline().dimensions
            self._dimensions = dimensions
        return self._dimensions

    @property
    def loaded(self) -> bool:
        return self._session is not None

    def _read_pipeline(self) -> Pipeline:
        if self._pipeline is None:
            if self.path is None:
                raise EmbedderUnavailable(
                    f"embedding model {self.name!r} has no local folder for the ONNX embedder"
                )
            self._pipeline = read_pipeline(self.path)
        return self._pipeline

    def load(self) -> None:
        """Read the pipeline, load the tokenizer and the ONNX session (once)."""
        self._load_step(self._load)

    def _load_step(self, step: Callable[[], None]) -> None:
        """Run one loading step under the lock; a failure is remembered and raised as
        ``EmbedderUnavailable`` by every later call."""
        with self._lock:
            if self._error is not None:
                raise EmbedderUnavailable(self._error)
            try:
                step()
            except EmbedderUnavailable as ex:
                self._error = ex.message
                raise
            except Exception as ex:  # ImportError, onnxruntime and tokenizers errors...
                self._error = (
                    f"cannot load ONNX embedding model {self.name!r}: {type(ex).__name__}: {ex}"
                )
                raise EmbedderUnavailable(self._error) from ex

    def _load(self) -> None:
        if self._session is not None:
            return
        self._load_runtime()
        assert self.export_path is not None
        session = self._new_session(str(self.export_path / ONNX_FILE))
        inputs = tuple(i.name for i in session.get_inputs())
        unknown = set(inputs) - {"input_ids", "attention_mask", "token_type_ids"}
        if "input_ids" not in inputs or unknown:
            raise EmbedderUnavailable(f"ONNX export at {self.export_path} has unexpected inputs {inputs}")
        self._session = session

    def _load_runtime(self) -> None:
        """Everything but a session: the pipeline, the export's folder, numpy and the
        tokenizer (a process that only encodes queries never loads the plain session)."""
        if self._tokenizer is not None:
            return
        pipeline = self._read_pipeline()
        assert self.path is not None
        target = self._export()
        if target is None:
            raise EmbedderUnavailable(
                f"no ONNX export of embedding model {self.name!r} in {onnx_root(self._environ)}; "
                f"run 'localmem embedder export {self.name}' (needs torch, sentence-transformers "
                "and onnx)"
            )
        missing = [m for m in RUNTIME_REQUIREMENTS if not installed(m)]
        if missing:
            raise EmbedderUnavailable(
                f"the ONNX embedder needs {', '.join(missing)} (pip install 'localmem[onnx]')"
            )
        import numpy as np
        from tokenizers import Tokenizer

        tokenizer = Tokenizer.from_file(str(Path(self.path) / "tokenizer.json"))
        # tokenizer.json often carries its own truncation/padding (all-MiniLM-L6-v2's
        # truncates at 128); sentence-transformers overrides both, and so do we.
        tokenizer.no_padding()
        tokenizer.enable_truncation(
            max_length=pipeline.max_seq_length, strategy="longest_first", direction="right"
        )
        pad_id, pad_token = _pad_token(Path(self.path), tokenizer)
        tokenizer.enable_padding(direction="right", pad_id=pad_id, pad_token=pad_token)
        self._np, self.export_path = np, target
        self._tokenizer = tokenizer

    @staticmethod
    def _new_session(model: str | bytes, *, one_query: bool = False) -> Any:
        """An inference session whose threads sleep as soon as a run is done; ``one_query``:
        for the query graph, which runs one short text (two rows) per recall, on at most two
        threads. onnxruntime's default pool keeps its threads spinning for more work after
        each run, taking the CPU from the rest of the recall and from other processes; 640
        turns embedded in 10.0 s against 14.3 s on a loaded 2-core machine. One thread saves
        CPU when every core is busy (paired on a loaded machine, the recall's CPU 0.995 of
        main's against 1.056), but where a core is free, as on most laptops, two answer
        sooner: on a quiet 2-core machine, recall with query text p50 14.96 ms on two threads
        against 15.63 on one, paired (history, "Quiet-machine reruns after the third
        session's merges"). The outputs are the same, bit for bit (tests/test_query_delta.py)."""
        import onnxruntime as ort

        options = ort.SessionOptions()
        options.log_severity_level = 3  # errors only
        options.add_session_config_entry("session.intra_op.allow_spinning", "0")
        if one_query:
            options.intra_op_num_threads = min(2, os.cpu_count() or 1)
        return ort.InferenceSession(model, sess_options=options, providers=["CPUExecutionProvider"])

    def embed(self, texts: list[str]) -> list[list[float]]:
        """Embed texts in batches of 64 (longest first, as sentence-transformers does)."""
        return self._run(texts, with_tokens=False)[0]

    def embed_with_tokens(self, texts: list[str]) -> tuple[list[list[float]], list[Any]]:
        """Each text's unit vector, and its token vectors (special tokens left out),
        from one run of the model."""
        vectors, tokens = self._run(texts, with_tokens=True)
        return vectors, tokens or []

    def _run(self, texts: list[str], *, with_tokens: bool) -> tuple[list[list[float]], list[Any] | None]:
        texts = list(texts)
        if not texts:
            return [], []
        for text in texts:
            if not isinstance(text, str):
                raise TypeError(f"OnnxEmbedder can only embed str, got {type(text).__name__}")
        self._ready()
        if self._delegate is not None:
            if with_tokens:
                return self._delegate.embed_with_tokens(texts)
            return self._delegate.embed(texts), None
        vectors, tokens = self._checked_run(texts, with_tokens, self._session)
        return vectors.tolist(), tokens

    def _checked_run(self, texts: list[str], with_tokens: bool, session: Any,
                     gates: tuple[float, ...] | None = None) -> tuple[Any, list[Any] | None]:
        """``_embed`` with its failures as ``EmbedderUnavailable`` and its width checked."""
        try:
            vectors, tokens = self._embed(texts, with_tokens, session, gates)
        except EmbedderUnavailable:
            raise
        except Exception as ex:
            raise EmbedderUnavailable(
                f"ONNX embedding model {self.name!r} failed: {type(ex).__name__}: {ex}"
            ) from ex
        expected = self.dimensions
        if vectors.shape[1] != expected:
            raise EmbedderUnavailable(
                f"ONNX embedding model {self.name!r} returned vectors of length "
                f"{vectors.shape[1]}, expected {expected}"
            )
        return vectors, tokens

    def _ready(self, *, session: bool = True) -> None:
        """Load the plain session (only the tokenizer and the rest without ``session``), or
        (when that fails and a fallback is given) the delegate."""
        if self._delegate is None:
            try:
                self._load_step(self._load if session else self._load_runtime)
            except EmbedderUnavailable as ex:
                if not self.fallback or not all(installed(m) for m in ("sentence_transformers", "torch")):
                    raise
                log.warning("%s; using sentence-transformers instead", ex.message)
                with self._lock:
                    if self._delegate is None:
                        self._delegate = self.fallback()

    def embed_query(self, text: str, delta: QueryDelta) -> tuple[list[float], Any, Any]:
        """The query's unit vector and token vectors from the plain model, and its token
        vectors with ``delta`` added to the model's layers (special tokens left out), from
        one run of the query graph (embedders/query_graph.py) on a batch of two rows;
        ValueError when the delta cannot be applied to this export."""
        if not isinstance(text, str):
            raise TypeError(f"OnnxEmbedder can only embed str, got {type(text).__name__}")
        opening = self._open_saved_graph(delta)
        self._ready(session=False)  # the tokenizer loads while the thread opens the graph
        if opening is not None:
            opening.join()
        if self._delegate is not None:
            vectors, tokens = self._delegate.embed_with_tokens([text])
            return vectors[0], tokens[0], self._delegate.embed_query_tokens([text], delta)[0]
        session = self._query_session(delta)
        vectors, tokens = self._checked_run([text, text], True, session, gates=(0.0, 1.0))
        assert tokens is not None
        return vectors.tolist()[0], tokens[0], tokens[1]

    def embed_query_tokens(self, texts: list[str], delta: QueryDelta) -> list[Any]:
        """Each text's token vectors (special tokens left out) with ``delta`` added to the
        model's layers, from the query graph; ValueError when the delta cannot be applied
        to this export."""
        texts = list(texts)
        if not texts:
            return []
        self._ready(session=False)
        if self._delegate is not None:
            return self._delegate.embed_query_tokens(texts, delta)
        session = self._query_session(delta)
        return self._checked_run(texts, True, session, gates=(1.0,) * len(texts))[1] or []

    def _export(self) -> Path | None:
        """The export's folder (the one given, else the cache's current one), looked up once:
        finding it hashes the model's configuration files."""
        if self._export_path is None:
            self._export_path = find_export(self.name, environ=self._environ)
        return self._export_path

    def _open_saved_graph(self, delta: QueryDelta) -> threading.Thread | None:
        """On a process's first query: a thread opening the saved query graph for ``delta``
        (onnxruntime builds a session without holding the GIL, so the tokenizer and the
        rest load meanwhile); None when there is nothing to open ahead."""
        if self._query is not None or self._delegate is not None or self._error is not None:
            return None
        try:
            export = self._export()
        except Exception:  # found again, and said, by the ordinary path
            return None
        path = query_graph.graph_path(export, delta) if export is not None else None
        if path is not None and self.query_int8:
            path = query_int8.int8_path(path)
        if path is None or not path.is_file() or not installed("onnxruntime"):
            return None

        def open_graph() -> None:
            try:
                session = self._open_graph_file(path)
                self._opened = None if session is None else (delta.digest, path, session)
            except Exception:  # the ordinary path opens it again and says why it fails
                self._opened = None

        thread = threading.Thread(target=open_graph, name="localmem-query-graph", daemon=True)
        thread.start()
        return thread

    def _query_session(self, delta: QueryDelta) -> Any:
        """The session of the query graph for ``delta``: opened from the file saved beside
        the export (maybe already, by ``_open_saved_graph``), which is built (with the onnx
        package) only when there is none."""
        with self._lock:
            if self._query is not None and self._query[0] == delta.digest:
                return self._query[1]
            assert self.export_path is not None
            session = None
            path = query_graph.graph_path(self.export_path, delta)
            if self.query_int8:
                path = query_int8.int8_path(path)
            opened, self._opened = self._opened, None
            if opened is not None and opened[:2] == (delta.digest, path):
                session = opened[2]
            elif path.is_file():
                try:
                    session = self._open_graph_file(path)
                except Exception as ex:  # a damaged file: built again below
                    log.warning("query graph %s would not load (%s: %s); building it again",
                                path, type(ex).__name__, ex)
                    (query_int8.discard if self.query_int8 else query_graph.discard)(path)
            if session is None:
                if not installed("onnx"):
                    raise ValueError("building the query graph for the learned ranking's query delta "
                                     "needs the onnx package (pip install 'localmem[onnx]')")
                log.info("building the query graph for the learned ranking (once per model and ranking model)...")
                started = time.perf_counter()
                saved, inline, why = query_graph.saved_graph(self.export_path, delta)
                if why is not None:
                    log.warning("%s; building it in memory in every process", why)
                else:
                    log.info("query graph built in %.1f s: %s", time.perf_counter() - started, saved)
                model: str | bytes = str(saved) if saved is not None else inline  # type: ignore[assignment]
                try:
                    if self.query_int8:
                        started = time.perf_counter()
                        model = query_int8.quantise(saved if saved is not None else inline,  # type: ignore[arg-type]
                                                    path if saved is not None else None)
                        log.info("query graph quantised to int8 in %.1f s: %s", time.perf_counter() - started, path)
                    session = self._new_session(model, one_query=True)
                except Exception as ex:
                    kind = "int8 query graph (LOCALMEM_QUERY_INT8=1)" if self.query_int8 else "query graph"
                    raise EmbedderUnavailable(f"the {kind} of ONNX embedding model {self.name!r} would "
                                              f"not load: {type(ex).__name__}: {ex}") from ex
            inputs = {i.name for i in session.get_inputs()}
            if "input_ids" not in inputs or query_graph.GATE_INPUT not in inputs:
                raise ValueError(f"the query graph for this export has inputs {sorted(inputs)}")
            self._query = (delta.digest, session)
            return session

    def _open_graph_file(self, path: Path) -> Any:
        """A session of the saved query graph at ``path``; for the int8 graph only when its
        digest checks out (None when it does not: the file is gone, to be made again)."""
        if not self.query_int8:
            return self._new_session(str(path), one_query=True)
        data = query_int8.verified_bytes(path)
        if data is None:
            log.warning("int8 query graph %s is missing or does not match its digest; making it again", path)
            return None
        return self._new_session(data, one_query=True)

    def encode_ids(self, texts: Sequence[str]) -> list[list[int]]:
        """The token ids the model sees for each text (for checks against sentence-transformers)."""
        self.load()
        pipeline = self._read_pipeline()
        encodings = self._tokenizer.encode_batch([self._prepare(t, pipeline) for t in texts])
        return [[i for i, m in zip(e.ids, e.attention_mask) if m] for e in encodings]

    @staticmethod
    def _prepare(text: str, pipeline: Pipeline) -> str:
        if pipeline.prompt:
            text = pipeline.prompt + text
        return text.lower() if pipeline.lowercase else text

    def _embed(self, texts: list[str], with_tokens: bool, session: Any,
               gates: tuple[float, ...] | None = None) -> tuple[Any, list[Any] | None]:
        """Unit vectors (and token vectors) of ``texts`` from ``session``; ``gates`` (one per
        text) feed the query graph's gate input.""" 
        np = self._np
        pipeline = self._read_pipeline()
        prepared = [self._prepare(t, pipeline) for t in texts]
        order = sorted(range(len(prepared)), key=lambda i: -len(prepared[i]))
        out = np.empty((len(prepared), pipeline.dimensions), dtype=np.float32)
        token_vectors: list[Any] = [None] * len(prepared)
        inputs = {i.name for i in session.get_inputs()}
        for start in range(0, len(order), self.batch_size):
            index = order[start : start + self.batch_size]
            batch = [prepared[i] for i in index]
            if len(set(batch)) == 1:
                # One text (a query, or a query twice for the query graph): encode_batch
                # hands even that to the tokenizer's thread pool, whose threads a busy
                # machine is slow to schedule (p95 5-17 ms against 0.1 ms here).
                encodings = [self._tokenizer.encode(batch[0])] * len(batch)
            else:
                encodings = self._tokenizer.encode_batch(batch)
            ids = np.array([e.ids for e in encodings], dtype=np.int64)
            mask = np.array([e.attention_mask for e in encodings], dtype=np.int64)
            feed = {"input_ids": ids}
            if "attention_mask" in inputs:
                feed["attention_mask"] = mask
            if "token_type_ids" in inputs:
                feed["token_type_ids"] = np.array([e.type_ids for e in encodings], dtype=np.int64)
            if gates is not None:
                feed[query_graph.GATE_INPUT] = np.array([gates[i] for i in index], dtype=np.float32)
            tokens = session.run(None, feed)[0]
            out[index] = _pool(np, tokens, mask, pipeline)
            if with_tokens:
                for row, (i, e) in enumerate(zip(index, encodings)):
                    keep = np.array(e.attention_mask, dtype=bool) & ~np.array(e.special_tokens_mask, dtype=bool)
                    token_vectors[i] = tokens[row][keep].astype(np.float32)
        norms = np.linalg.norm(out, axis=1, keepdims=True)
        return out / np.maximum(norms, 1e-12), (token_vectors if with_tokens else None)


def _pad_token(folder: Path, tokenizer: Any) -> tuple[int, str]:
    """The pad token: tokenizer_config.json, special_tokens_map.json, tokenizer.json, else id 0."""
    for name in ("tokenizer_config.json", "special_tokens_map.json"):
        config = read_json(folder / name)
        token = config.get("pad_token") if isinstance(config, dict) else None
        if isinstance(token, dict):
            token = token.get("content")
        if isinstance(token, str):
            token_id = tokenizer.token_to_id(token)
            if token_id is not None:
                return token_id, token
    padding = (read_json(folder / "tokenizer.json") or {}).get("padding") or {}
    if isinstance(padding, dict) and isinstance(padding.get("pad_id"), int):
        return padding["pad_id"], str(padding.get("pad_token", "[PAD]"))
    return 0, "[PAD]"


def _pool(np: Any, tokens: Any, mask: Any, pipeline: Pipeline) -> Any:
    """sentence-transformers' Pooling on padded token embeddings (right padding), then truncate_dim."""
    tokens = tokens.astype(np.float32, copy=False)
    weights = mask[:, :, None].astype(np.float32)
    lengths = mask.sum(axis=1)
    parts = []
    for mode in pipeline.pooling:
        if mode == "cls":
            parts.append(tokens[:, 0])
        elif mode == "max":
            parts.append(np.where(weights > 0, tokens, np.float32(-1e9)).max(axis=1))
        elif mode == "lasttoken":
            parts.append(tokens[np.arange(tokens.shape[0]), np.maximum(lengths - 1, 0)])
        else:
            summed = (tokens * weights).sum(axis=1)
            counts = np.maximum(weights.sum(axis=1), np.float32(1e-9))
            parts.append(summed / (np.sqrt(counts) if mode == "mean_sqrt_len_tokens" else counts))
    pooled = parts[0] if len(parts) == 1 else np.concatenate(parts, axis=1)
    if pipeline.truncate_dim is not None:
        pooled = pooled[:, : pipeline.truncate_dim]
    return pooled


# -- exporting ------------------------------------------------------------------

