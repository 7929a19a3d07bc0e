import os
import shutil
import tempfile

# The fixtures also arrive through the pytest11 entry point once localmem is
# installed; importing them here makes the suite run from a plain checkout too.
from localmem.pytest_plugin import FIXED_NOW, memory_store, memory_store_factory  # noqa: F401

_onnx_cache: list[str] = []

# The memory browser's tests skip without Chromium; a bare "14 skipped" hides that, so the
# summary names them and says what they need.
BROWSER_TESTS = "test_ui_browser.py"


def pytest_configure(config):
    # Hermetic ONNX cache (localmem.embedders.onnx_cache): no test reads or writes the user's
    # ~/.cache/localmem, and loading sentence-transformers exports nothing on its own,
    # so "auto" stays the sentence-transformers embedder unless a test makes an export.
    _onnx_cache.append(tempfile.mkdtemp(prefix="localmem-test-cache-"))
    os.environ["LOCALMEM_CACHE_DIR"] = _onnx_cache[0]
    os.environ["LOCALMEM_ONNX_EXPORT"] = "0"


def pytest_unconfigure(config):
    for path in _onnx_cache:
        shutil.rmtree(path, ignore_errors=True)


def _skip_reason(report) -> str:
    longrepr = report.longrepr
    reason = longrepr[2] if isinstance(longrepr, tuple) and len(longrepr) == 3 else str(longrepr)
    return reason.removeprefix("Skipped: ")


def pytest_terminal_summary(terminalreporter):
    skipped = [r for r in terminalreporter.stats.get("skipped", []) if BROWSER_TESTS in r.nodeid]
    if not skipped:
        return
    terminalreporter.write_sep("-", f"{len(skipped)} browser test(s) skipped: the memory browser was not tested")
    for reason in sorted({_skip_reason(r) for r in skipped}):
        terminalreporter.write_line(f"why: {reason}")
    for report in skipped:
        terminalreporter.write_line(f"SKIPPED {report.nodeid}")
