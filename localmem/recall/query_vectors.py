"""``QueryVectors``: a recall request's query encodings, computed once per distinct text."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable

if TYPE_CHECKING:
    from ..embedders.query_delta import QueryDelta
    from ..storage.backend import Backend, QueryEncoding


class QueryVectors:
    """Query embeddings for one request, computed once per distinct text.

    ``tuned_delta`` gives the learned ranking's query delta when the model ranks this
    request (None otherwise): the query's tuned token vectors then come from the same
    run of the model as its vector (Backend.embed_query).
    """

    def __init__(self, backend: "Backend", explicit: bytes | None,
                 tuned_delta: Callable[[], QueryDelta | None] = lambda: None) -> None:
        self.backend = backend
        self.explicit = explicit
        self.tuned_delta = tuned_delta
        self.available = explicit is not None or (backend.embedder is not None and backend.has_vector_index)
        self._cache: dict[str, QueryEncoding | None] = {}
        self._started: dict[str, Callable[[], QueryEncoding | None]] = {}  # encodings under way

    def start(self, query: str) -> bool:
        """Start encoding ``query`` on another thread when that is one run of the model
        (Backend.embed_query_soon), for ``encoding`` to wait for; whether it started."""
        if self.explicit is None and query and self.available and query not in self._cache \
                and query not in self._started:
            started = self.backend.embed_query_soon(query, self.tuned_delta())
            if started is not None:
                self._started[query] = started
                return True
        return False

    def encoding(self, query: str) -> QueryEncoding | None:
        """The query's encodings (None with an explicit query vector, no query or no embedder)."""
        if self.explicit is not None or not query or not self.available:
            return None
        if query not in self._cache:
            started = self._started.pop(query, None)
            found = self._cache[query] = (started() if started is not None
                                          else self.backend.embed_query(query, self.tuned_delta()))
            if found is None:
                self.available = False
        return self._cache[query]

    def for_query(self, query: str) -> bytes | None:
        if self.explicit is not None:
            return self.explicit
        found = self.encoding(query)
        return found.vector if found is not None else None

    def tokens_for(self, query: str) -> Any:
        """The query's token vectors; None with an explicit query vector or no token evidence."""
        found = self.encoding(query)
        return found.tokens if found is not None else None
