"""Small matrix products on one BLAS thread.

Recall's token similarities are one float32 product of about 13 query tokens
by a few thousand stored tokens (a few tens of millions of multiply-adds).
OpenBLAS splits a product that size over every core, and waking its threads
costs more than the product: on a 2-core machine 2.1 ms on one thread
against 7-15 ms on two once other processes keep the cores busy (an
assistant's machine usually). Older OpenBLAS builds split only the rows and
columns of the output, so one thread gave the same bits; 0.3.31 may sum in
another order, so the answer matches up to float rounding, and one thread
gives the same answer every time.

threadpoolctl (when installed) switches the thread count for the duration of
the product; without it the product runs as BLAS is configured.
"""

from __future__ import annotations

import contextlib
import functools
import threading
from typing import Any, Iterator

# Switching is process-wide: one switch at a time, so overlapping switches from
# two threads cannot leave the count at one when both are done.
_SWITCH = threading.Lock()


@functools.lru_cache(maxsize=1)
def _controller() -> Any:
    try:
        from threadpoolctl import ThreadpoolController
    except ImportError:
        return None
    try:
        controller = ThreadpoolController().select(user_api="blas")
    except Exception:  # a library threadpoolctl cannot inspect: leave BLAS as it is
        return None
    return controller if controller.lib_controllers else None


@contextlib.contextmanager
def one_blas_thread() -> Iterator[None]:
    """Run the block's BLAS products on one thread (as configured without threadpoolctl)."""
    controller = _controller()
    if controller is None:
        yield
        return
    with _SWITCH, controller.limit(limits=1):
        yield
