"""``QueryDelta``: a learned low-rank change to some linear layers of an embedding model,
applied only when the model encodes a query for its token vectors.

Stored memories keep the plain model's vectors; the query side alone is tuned
(a LoRA: each changed layer's weight ``W`` becomes ``W + up @ down``), so a
change of the delta never needs the store re-embedded. The learned-rank model
file carries one (``recall/learned_rank.py``); the embedders apply it
(``SentenceTransformerEmbedder`` with forward hooks, ``OnnxEmbedder`` by
patching the matching weights of its exported graph).
"""

from __future__ import annotations

import functools
import hashlib
import re
from dataclasses import dataclass
from typing import Any

import numpy as np

# The linear layers of a BERT-style encoder a delta may change, by module name.
LAYER_NAME = re.compile(
    r"encoder\.layer\.[0-9]{1,3}\."
    r"(attention\.self\.(query|key|value)|attention\.output\.dense|intermediate\.dense|output\.dense)")
MAX_LAYERS = 96
MAX_RANK = 64
MAX_VALUE = 1e6


@dataclass(frozen=True, eq=False)
class QueryDelta:
    """Per layer name (``encoder.layer.0.attention.self.query``): ``down`` (rank x inputs)
    and ``up`` (outputs x rank), the change of the layer's weight being ``up @ down``."""

    layers: dict[str, tuple[np.ndarray, np.ndarray]]

    @functools.cached_property
    def digest(self) -> str:
        """Names this delta's values (an embedder keeps one patched model per delta)."""
        hasher = hashlib.sha256()
        for name in sorted(self.layers):
            down, up = self.layers[name]
            hasher.update(name.encode())
            hasher.update(np.ascontiguousarray(down, dtype=np.float32).tobytes())
            hasher.update(np.ascontiguousarray(up, dtype=np.float32).tobytes())
        return hasher.hexdigest()[:16]

    def change(self, name: str) -> np.ndarray:
        """The change of layer ``name``'s weight (outputs x inputs), float32."""
        down, up = self.layers[name]
        return (up @ down).astype(np.float32)

    def check_shape(self, name: str, outputs: int, inputs: int) -> None:
        """ValueError unless the change fits a layer of ``outputs`` x ``inputs``."""
        down, up = self.layers[name]
        if down.shape[1] != inputs or up.shape[0] != outputs:
            raise ValueError(f"query delta layer {name} is for a {up.shape[0]}x{down.shape[1]} weight, "
                             f"the model's is {outputs}x{inputs}")

    def to_dict(self) -> dict[str, Any]:
        return {"layers": {name: {"down": down.tolist(), "up": up.tolist()}
                           for name, (down, up) in self.layers.items()}}

    @classmethod
    def from_dict(cls, raw: Any) -> QueryDelta:
        """Parse and check a delta read from JSON; ValueError naming the fault."""
        layers = raw.get("layers") if isinstance(raw, dict) else None
        if not isinstance(layers, dict) or not layers:
            raise ValueError("malformed query delta: 'layers' must be a non-empty object")
        if len(layers) > MAX_LAYERS:
            raise ValueError(f"malformed query delta: {len(layers)} layers, at most {MAX_LAYERS}")
        parsed: dict[str, tuple[np.ndarray, np.ndarray]] = {}
        for name, pair in layers.items():
            if not isinstance(name, str) or not LAYER_NAME.fullmatch(name):
                raise ValueError(f"malformed query delta: {str(name)[:80]!r} is not an encoder layer name")
            if not isinstance(pair, dict):
                raise ValueError(f"malformed query delta: layer {name} must be an object with down and up")
            down, up = (_matrix(pair.get(key), f"{name}.{key}") for key in ("down", "up"))
            rank = down.shape[0]
            if not 1 <= rank <= MAX_RANK or up.shape[1] != rank:
                raise ValueError(f"malformed query delta: layer {name} has down {down.shape} and up "
                                 f"{up.shape}; their rank must agree and be 1..{MAX_RANK}")
            parsed[name] = (down, up)
        return cls(layers=parsed)


def _matrix(value: Any, what: str) -> np.ndarray:
    if not isinstance(value, list) or not value or not all(isinstance(row, list) for row in value):
        raise ValueError(f"malformed query delta: {what} must be a list of rows")
    width = len(value[0])
    if not width or width > 8192 or len(value) > 8192 or any(len(row) != width for row in value):
        raise ValueError(f"malformed query delta: {what} must be a rectangular matrix of at most 8192 x 8192")
    # One pass over the cell types (JSON gives int, float, bool, str, None, lists, objects),
    # then the values checked as an array: a model file holds tens of thousands of them.
    kinds = {type(cell) for row in value for cell in row}
    matrix = np.asarray(value, dtype=np.float64) if kinds <= {int, float} else None
    if matrix is None or not np.isfinite(matrix).all() or np.abs(matrix).max() > MAX_VALUE:
        raise ValueError(f"malformed query delta: {what} must hold finite numbers within ±{MAX_VALUE:g} only")
    return matrix.astype(np.float32)
