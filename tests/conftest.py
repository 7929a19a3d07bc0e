import os
import shutil
import tempfile

# The fixtures also arrive through the pytest11 entry point once localmem is
# installed; importing them here makes the suite run from a plain checkout too.
from localmem.pytest_plugin import FIXED_NOW, memory_store, memory_store_factory  # noqa: F401

_onnx_cache: list[str] = []


def pytest_configure(config):
    # Hermetic ONNX cache (localmem.embedders.onnx_cache): no test reads or writes the user's
    # ~/.cache/localmem, and loading sentence-transformers exports nothing on its own,
    # so "auto" stays the sentence-transformers embedder unless a test makes an export.
    _onnx_cache.append(tempfile.mkdtemp(prefix="localmem-test-cache-"))
    os.environ["LOCALMEM_CACHE_DIR"] = _onnx_cache[0]
    os.environ["LOCALMEM_ONNX_EXPORT"] = "0"
    # No test starts a warm process (docs/daemon.md) unless it turns it on for itself.
    os.environ["LOCALMEM_DAEMON"] = "0"


def pytest_unconfigure(config):
    for path in _onnx_cache:
        shutil.rmtree(path, ignore_errors=True)
