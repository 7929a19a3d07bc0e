"""What the test run's summary says about itself (issue 45): browser tests that skip
for want of Chromium are named, with the reason, not folded into "14 skipped"."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def test_skipped_browser_tests_are_named_in_the_summary(tmp_path: Path) -> None:
    env = dict(os.environ, LOCALMEM_TEST_CHROMIUM=str(tmp_path / "no-chromium-here"))
    result = subprocess.run([sys.executable, "-m", "pytest", "tests/test_ui_browser.py", "-q", "-p", "no:cacheprovider"],
                            cwd=REPO, env=env, capture_output=True, text=True, timeout=300)
    out = result.stdout
    assert result.returncode == 0, out + result.stderr
    summary = out[out.index("browser test(s) skipped"):]
    named = [line for line in summary.splitlines() if line.startswith("SKIPPED tests/test_ui_browser.py::")]
    assert len(named) >= 10, summary  # each skipped browser test by name
    assert "why: needs chromium and chromium-driver (apt-get install chromium chromium-driver)" in summary


def test_a_run_without_browser_tests_says_nothing_about_them() -> None:
    result = subprocess.run([sys.executable, "-m", "pytest", "tests/test_suite_summary.py", "-q", "-p",
                             "no:cacheprovider", "-k", "nothing_matches_this"], cwd=REPO, capture_output=True,
                            text=True, timeout=300)
    assert "browser test(s) skipped" not in result.stdout


def _fake_tools(folder: Path, update_rc: int, install_rc: int) -> dict[str, str]:
    """A PATH whose ``apt-get`` logs its calls (update exits ``update_rc``, install
    ``install_rc``) and whose ``id -u`` says root; the rest of PATH stays reachable."""
    folder.mkdir()
    log = folder / "calls.log"
    (folder / "apt-get").write_text(
        f'#!/bin/sh\necho "$*" >> {log}\n[ "$1" = update ] && exit {update_rc}\nexit {install_rc}\n')
    (folder / "id").write_text("#!/bin/sh\necho 0\n")
    for tool in ("apt-get", "id"):
        (folder / tool).chmod(0o755)
    return dict(os.environ, PATH=f"{folder}{os.pathsep}{os.environ['PATH']}")


def test_ci_installs_chromium_even_when_apt_get_update_fails(tmp_path: Path) -> None:
    env = _fake_tools(tmp_path / "bin", update_rc=100, install_rc=0)
    result = subprocess.run([str(REPO / ".ci" / "install-os-packages")], env=env, capture_output=True, text=True,
                            timeout=60)
    calls = (tmp_path / "bin" / "calls.log").read_text().splitlines()
    assert result.returncode == 0, result.stderr
    assert calls[0] == "update -qq"
    assert calls[1].startswith("install") and "chromium" in calls[1] and "chromium-driver" in calls[1]
    assert "apt-get update failed" in result.stderr


def test_ci_goes_on_when_the_install_fails_and_says_so(tmp_path: Path) -> None:
    env = _fake_tools(tmp_path / "bin", update_rc=0, install_rc=100)
    result = subprocess.run([str(REPO / ".ci" / "install-os-packages")], env=env, capture_output=True, text=True,
                            timeout=60)
    assert result.returncode == 0
    assert "could not install chromium chromium-driver fish" in result.stderr


def test_ci_run_calls_the_package_step() -> None:
    assert ".ci/install-os-packages\n" in (REPO / ".ci" / "run").read_text()
