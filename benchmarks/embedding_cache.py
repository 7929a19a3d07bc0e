"""An on-disk cache of embeddings (and token vectors) for benchmark runs.

Embedding ~2,800 LoCoMo turns with MiniLM takes minutes on a shared 2-core
machine; every experiment after the first reads them back in milliseconds.
Keyed by the embedder's name and the exact text, so a changed text or model
is simply a miss. Lives in benchmarks/.cache/ (git-ignored).
"""

from __future__ import annotations

import hashlib
import sqlite3
from array import array
from pathlib import Path
from typing import Any

CACHE_DIR = Path(__file__).resolve().parent / ".cache"


def _key(name: str, kind: str, text: str) -> str:
    return hashlib.sha256(f"{name}\0{kind}\0{text}".encode("utf-8")).hexdigest()


class CachedEmbedder:
    """Wraps an embedder; ``embed`` (and ``embed_tokens`` when the inner one has it) hit the cache first."""

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

    def embed_tokens(self, texts: list[str]) -> list[Any]:
        """Unit-length token vectors (tokens x dimensions, float32) of a sentence-transformers
        model, stored as int8 (each token scaled to use the whole int8 range)."""
        import numpy as np

        dims = self.dimensions

        def compute(miss: list[str]) -> list[bytes]:
            # The ONNX embedder pools inside its runtime: token vectors come from
            # the sentence-transformers reference of the same model.
            from localmem.embedders.sentence_transformer import SentenceTransformerEmbedder

            model = SentenceTransformerEmbedder(self.name).load()
            out = []
            for matrix in model.encode(miss, output_value="token_embeddings", batch_size=64,
                                       convert_to_numpy=False, show_progress_bar=False):
                m = matrix.float().numpy()
                scale = 127.0 / np.maximum(np.abs(m).max(axis=1, keepdims=True), 1e-12)
                out.append(np.round(m * scale).astype(np.int8).tobytes())
            return out

        result = []
        for blob in self._lookup("tokens-int8", list(texts), compute):
            m = np.frombuffer(blob, dtype=np.int8).reshape(-1, dims).astype(np.float32)
            result.append(m / np.linalg.norm(m, axis=1, keepdims=True))
        return result
