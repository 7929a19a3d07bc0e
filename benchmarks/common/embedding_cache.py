"""An on-disk cache of embeddings (and token vectors) for benchmark runs.

Embedding ~2,800 LoCoMo turns with MiniLM takes minutes on a shared 2-core
machine; every experiment after the first reads them back in milliseconds.
Keyed by the embedder's name and the exact text, so a changed text or model
is simply a miss. Lives in benchmarks/.cache/ (git-ignored).
"""

from __future__ import annotations

import hashlib
import sqlite3
import threading
from array import array
from pathlib import Path
from typing import Any

CACHE_DIR = Path(__file__).resolve().parents[1] / ".cache"


def _key(name: str, kind: str, text: str) -> str:
    return hashlib.sha256(f"{name}\0{kind}\0{text}".encode("utf-8")).hexdigest()


class CachedEmbedder:
    """Wraps an embedder; ``embed`` and ``embed_with_tokens`` hit the cache first."""

    def __init__(self, inner: Any, path: Path | None = None) -> None:
        self.inner = inner
        self.name = inner.name
        CACHE_DIR.mkdir(exist_ok=True)
        self.db = sqlite3.connect(str(path or CACHE_DIR / "embeddings.sqlite"))
        self.db.execute("CREATE TABLE IF NOT EXISTS cache (key TEXT PRIMARY KEY, value BLOB)")

    @property
    def dimensions(self) -> int:
        return self.inner.dimensions

    def _lookup(self, kind: str, texts: list[str], compute) -> list[bytes]:
        keys = [_key(self.name, kind, t) for t in texts]
        found: dict[str, bytes] = {}
        for start in range(0, len(keys), 500):
            chunk = keys[start:start + 500]
            marks = ",".join("?" * len(chunk))
            found.update(self.db.execute(f"SELECT key, value FROM cache WHERE key IN ({marks})", chunk))
        missing = list(dict.fromkeys(t for t, k in zip(texts, keys) if k not in found))
        if missing:
            values = compute(missing)
            rows = [(_key(self.name, kind, t), v) for t, v in zip(missing, values)]
            self.db.executemany("INSERT OR REPLACE INTO cache VALUES (?, ?)", rows)
            self.db.commit()
            found.update(rows)
        return [found[k] for k in keys]

    def embed(self, texts: list[str]) -> list[list[float]]:
        blobs = self._lookup("embed", list(texts),
                             lambda miss: [array("f", v).tobytes() for v in self.inner.embed(miss)])
        return [list(array("f", b)) for b in blobs]

    def embed_with_tokens(self, texts: list[str]) -> tuple[list[list[float]], list[Any]]:
        """The inner embedder's ``embed_with_tokens``: vectors from the ``embed`` cache,
        token vectors (special tokens left out) cached as float16."""
        import numpy as np

        texts = list(texts)
        dims = self.dimensions

        def compute(miss: list[str]) -> list[bytes]:
            return [t.astype(np.float16).tobytes() for t in self.inner.embed_with_tokens(miss)[1]]

        tokens = [np.frombuffer(b, dtype=np.float16).reshape(-1, dims).astype(np.float32)
                  for b in self._lookup("tokens-f16", texts, compute)]
        return self.embed(texts), tokens

    def embed_query_tokens(self, texts: list[str], delta: Any) -> list[Any]:
        """The inner embedder's ``embed_query_tokens`` (query tokens from the model with a
        learned query delta), cached per delta as float16."""
        import numpy as np

        dims = self.dimensions

        def compute(miss: list[str]) -> list[bytes]:
            return [t.astype(np.float16).tobytes() for t in self.inner.embed_query_tokens(miss, delta)]

        return [np.frombuffer(b, dtype=np.float16).reshape(-1, dims).astype(np.float32)
                for b in self._lookup(f"query-tokens-{delta.digest}", list(texts), compute)]


class QueryGraphCachedEmbedder(CachedEmbedder):
    """A ``CachedEmbedder`` that also passes ``embed_query`` (the query graph's one run:
    vector, plain tokens, tuned tokens) through the cache, so recall's queries take the
    embedder's own query path. For an ONNX embedder with ``LOCALMEM_QUERY_INT8=1``
    (``cached_embedder`` in quality/locomo.py picks it then): its query vectors differ from
    ``embed``'s, so they are cached apart, per onnxruntime version and delta. Recall runs
    ``embed_query`` on the store's aside thread: the cache's connection is shared under a lock."""

    def __init__(self, inner: Any, path: Path | None = None) -> None:
        super().__init__(inner, path)
        self.db.close()
        self.db = sqlite3.connect(str(path or CACHE_DIR / "embeddings.sqlite"), check_same_thread=False)
        self._lock = threading.Lock()

    def _lookup(self, kind: str, texts: list[str], compute) -> list[bytes]:
        with self._lock:
            return super()._lookup(kind, texts, compute)

    def embed_query(self, text: str, delta: Any) -> tuple[list[float], Any, Any]:
        import importlib.metadata

        import numpy as np

        dims = self.dimensions
        kind = f"query-int8-{importlib.metadata.version('onnxruntime')}-{delta.digest}"

        def compute(miss: list[str]) -> list[bytes]:
            out = []
            for one in miss:
                vector, plain, tuned = self.inner.embed_query(one, delta)
                out.append(np.asarray(vector, dtype=np.float32).tobytes()
                           + np.asarray(plain, dtype=np.float16).tobytes()
                           + np.asarray(tuned, dtype=np.float16).tobytes())
            return out

        blob = self._lookup(kind, [text], compute)[0]
        vector = np.frombuffer(blob[:4 * dims], dtype=np.float32)
        tokens = np.frombuffer(blob[4 * dims:], dtype=np.float16).reshape(2, -1, dims).astype(np.float32)
        return vector.tolist(), tokens[0], tokens[1]
