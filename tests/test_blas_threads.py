"""storage/blas.py: recall's token similarities on one BLAS thread, with the same bits."""

from __future__ import annotations

import numpy as np
import pytest

from localmem.storage.blas import one_blas_thread
from localmem.storage.token_codes import decode, similarities

threadpoolctl = pytest.importorskip("threadpoolctl")


def blas_threads() -> list[int]:
    """Thread counts of the BLAS libraries loaded with numpy (the ones recall's products use;
    another loaded later, torch's say, is none of recall's business)."""
    from localmem.storage.blas import _controller
    controller = _controller()
    assert controller is not None, "numpy's BLAS should be visible to threadpoolctl"
    paths = {lib.filepath for lib in controller.lib_controllers}
    return [lib["num_threads"] for lib in threadpoolctl.threadpool_info() if lib["filepath"] in paths]


def test_one_thread_inside_and_the_configured_count_after() -> None:
    before = blas_threads()
    assert before, "numpy's BLAS should be visible to threadpoolctl"
    with one_blas_thread():
        assert set(blas_threads()) == {1}
    assert blas_threads() == before
    with pytest.raises(RuntimeError):  # restored when the block raises too
        with one_blas_thread():
            raise RuntimeError("boom")
    assert blas_threads() == before


def test_the_product_on_one_thread_is_reproducible_and_matches_the_threaded_one() -> None:
    rng = np.random.default_rng(7)
    dims, tokens = 384, 3000  # recall's size: ~130 candidates of ~25 tokens, far above BLAS's threading threshold
    codes = rng.integers(0, 256, size=(tokens, dims // 8), dtype=np.uint8).tobytes()
    query = rng.standard_normal((13, dims)).astype(np.float32)
    query /= np.abs(query).sum(axis=1, keepdims=True)
    bits = np.unpackbits(np.frombuffer(codes, dtype=np.uint8).reshape(tokens, -1), axis=1,
                         bitorder="little").astype(np.float32)
    threaded = (bits @ query.T).T  # the same product on BLAS's own threads
    got = similarities(query, tokens, codes, dims)
    # One thread gives the same answer every time (recall's scores are reproducible), and the
    # threaded product's answer up to float rounding: OpenBLAS 0.3.31 splits the sums across
    # threads in another order, so the last bits may differ (the older builds gave equal bits).
    assert np.array_equal(got, similarities(query, tokens, codes, dims))
    assert np.allclose(got, 2.0 * threaded - query.sum(axis=1, keepdims=True), rtol=0, atol=1e-6)
    assert np.allclose(got, query @ decode(tokens, codes, dims).T, atol=1e-5)
