"""pytest fixtures for projects that use localmem (registered via the ``pytest11`` entry point).

``memory_store`` is an in-memory store with the hash embedder and a fixed
clock (``FIXED_NOW``); ``memory_store_factory(**kwargs)`` makes more, with
the same defaults, and closes them all after the test.
"""

from __future__ import annotations

from datetime import datetime, timezone
from typing import Any, Callable, Iterator

import pytest

from .store import MemoryStore

FIXED_NOW = datetime(2025, 3, 10, 10, 30, tzinfo=timezone.utc)


@pytest.fixture
def memory_store_factory() -> Iterator[Callable[..., MemoryStore]]:
    """Make stores: ``memory_store_factory(path=":memory:", embedder="hash", now=FIXED_NOW, config=None)``."""
    stores: list[MemoryStore] = []

    def make(path: str = ":memory:", *, embedder: Any = "hash", now: datetime = FIXED_NOW,
             **kwargs: Any) -> MemoryStore:
        store = MemoryStore(path, embedder=embedder, clock=lambda: now, **kwargs)
        stores.append(store)
        return store

    yield make
    for store in stores:
        store.close()


@pytest.fixture
def memory_store(memory_store_factory: Callable[..., MemoryStore]) -> MemoryStore:
    """An in-memory MemoryStore with the hash embedder and the clock fixed at FIXED_NOW."""
    return memory_store_factory()
