"""The hash embedder: deterministic feature hashing, standard library only."""

from __future__ import annotations

import hashlib
import math
import re

from ..errors import ConfigError

MAX_HASH_DIMENSIONS = 4096
_WORD_RE = re.compile(r"[a-z0-9]+")
_TRIGRAM_WEIGHT = 0.5  # total weight of a word's trigrams, relative to the word itself
_BUCKETS_PER_FEATURE = 3
_SQRT_BUCKETS = math.sqrt(_BUCKETS_PER_FEATURE)
_EMPTY_SEED = b"localmem:hash-embedder:empty-text"
MAX_TOKEN_WORDS = 512  # token vectors of the first words only, as a model truncates its input


class HashEmbedder:
    """Deterministic, dependency-free feature-hashing embedder.

    Lowercase word tokens and (at lower weight) their character trigrams are
    hashed with BLAKE2b into signed buckets, then L2-normalised. The same text
    gives the same vector in every process and Python version. Texts sharing
    words score a higher cosine than unrelated texts, but there is no meaning
    beyond that: use it for tests and fixtures.
    """

    def __init__(self, dimensions: int = 384) -> None:
        if (
            not isinstance(dimensions, int)
            or isinstance(dimensions, bool)
            or not 1 <= dimensions <= MAX_HASH_DIMENSIONS
        ):
            raise ConfigError(
                f"hash embedder dimensions must be an integer from 1 to "
                f"{MAX_HASH_DIMENSIONS}, got {dimensions!r}"
            )
        self.dimensions = dimensions
        self.name = "hash" if dimensions == 384 else f"hash-{dimensions}"

    def __repr__(self) -> str:
        return f"HashEmbedder(dimensions={self.dimensions})"

    def embed(self, texts: list[str]) -> list[list[float]]:
        """Embed each text; empty or token-free text gets a fixed unit vector."""
        buckets: dict[str, list[tuple[int, float]]] = {}  # per-call cache of feature -> buckets
        return [self._embed_one(text, buckets) for text in texts]

    def embed_with_tokens(self, texts: list[str]) -> tuple[list[list[float]], list]:
        """Each text's vector, and one vector per word (a numpy array, words x dimensions)
        for its first ``MAX_TOKEN_WORDS`` words."""
        import numpy as np

        buckets: dict[str, list[tuple[int, float]]] = {}
        vectors = [self._embed_one(text, buckets) for text in texts]
        tokens = []
        for text in texts:
            words = [m.group() for m, _ in zip(_WORD_RE.finditer(text.lower()), range(MAX_TOKEN_WORDS))]
            tokens.append(np.array([self._embed_one(w, buckets) for w in words], dtype=np.float32)
                          .reshape(len(words), self.dimensions))
        return vectors, tokens

    def _buckets(
        self, feature: str, cache: dict[str, list[tuple[int, float]]]
    ) -> list[tuple[int, float]]:
        # Each feature goes to a few signed buckets, so one unlucky collision
        # between unrelated words moves the cosine less.
        found = cache.get(feature)
        if found is None:
            digest = hashlib.blake2b(
                feature.encode("utf-8"),
                digest_size=4 * _BUCKETS_PER_FEATURE,
                person=b"localmem-hash",
            ).digest()
            found = []
            for i in range(0, len(digest), 4):
                value = int.from_bytes(digest[i : i + 4], "little")
                found.append((value % self.dimensions, 1.0 if value >> 31 else -1.0))
            cache[feature] = found
        return found

    def _embed_one(self, text: str, cache: dict[str, list[tuple[int, float]]]) -> list[float]:
        if not isinstance(text, str):
            raise TypeError(f"HashEmbedder can only embed str, got {type(text).__name__}")
        counts: dict[str, int] = {}
        for word in _WORD_RE.findall(text.lower()):
            counts[word] = counts.get(word, 0) + 1
        vector = [0.0] * self.dimensions
        for word, count in counts.items():
            weight = math.sqrt(count) / _SQRT_BUCKETS
            for index, sign in self._buckets("w:" + word, cache):
                vector[index] += sign * weight
            padded = f"<{word}>"
            trigrams = [padded[i : i + 3] for i in range(len(padded) - 2)]
            trigram_weight = weight * _TRIGRAM_WEIGHT / math.sqrt(len(trigrams))
            for trigram in trigrams:
                for index, sign in self._buckets("t:" + trigram, cache):
                    vector[index] += sign * trigram_weight
        norm = math.sqrt(math.fsum(x * x for x in vector))
        if norm == 0.0:
            return self._empty_vector()
        return [x / norm for x in vector]

    def _empty_vector(self) -> list[float]:
        # A fixed dense pseudo-random unit vector: never zero, close to nothing.
        values: list[float] = []
        counter = 0
        while len(values) < self.dimensions:
            block = hashlib.blake2b(
                _EMPTY_SEED + counter.to_bytes(4, "little"), digest_size=64
            ).digest()
            for i in range(0, 64, 2):
                values.append(int.from_bytes(block[i : i + 2], "little") / 32767.5 - 1.0)
            counter += 1
        values = values[: self.dimensions]
        norm = math.sqrt(math.fsum(x * x for x in values))
        if norm == 0.0:  # cannot happen in practice; stay a unit vector regardless
            return [1.0] + [0.0] * (self.dimensions - 1)
        return [x / norm for x in values]

