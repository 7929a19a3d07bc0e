"""``import localmem`` loads its public names on first use (PEP 562); every name of the contract
still imports, ``localmem.cli`` defers apsw and the parser until a command needs them, and the
installed hook command imports an exact, small set of modules when the warm process answers."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
CONTRACT_NAMES = ("MemoryStore", "ValidationError", "NotFoundError", "ConfigError", "LocalMemError",
                  "AuthError", "StorageError", "Config")


def python(code: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    return subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=60)


def test_bare_import_loads_neither_the_store_nor_apsw():
    result = python("import sys, localmem\n"
                    "print(sorted(m for m in ('apsw', 'localmem.store', 'numpy', 'typing', 'torch') "
                    "if m in sys.modules))")
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "[]"


def test_every_contract_name_imports_as_before():
    names = ", ".join(CONTRACT_NAMES)
    result = python(f"from localmem import {names}\n"
                    "import localmem\n"
                    "from localmem.store import MemoryStore as S\n"
                    "from localmem.errors import LocalMemError as E\n"
                    "assert MemoryStore is S and LocalMemError is E and localmem.MemoryStore is S\n"
                    "assert issubclass(ValidationError, LocalMemError)\n"
                    "assert sorted(localmem.__all__) == sorted(" + repr(list(CONTRACT_NAMES)) + ")\n"
                    "ns = {}\n"
                    "exec('from localmem import *', ns)\n"
                    "assert all(name in ns for name in localmem.__all__)\n"
                    "assert localmem.store.MemoryStore is S and localmem.__version__\n"
                    "try:\n    localmem.no_such_name\nexcept AttributeError as exc:\n    print('refused', exc)\n")
    assert result.returncode == 0, result.stderr
    assert "refused module 'localmem' has no attribute 'no_such_name'" in result.stdout


def test_cli_import_defers_apsw_and_the_parser():
    result = python("import sys, localmem.cli\n"
                    "print(sorted(m for m in ('apsw', 'localmem.cli.parser', 'localmem.store') if m in sys.modules))")
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "[]"


# What the hook command ``hooks install`` writes may import when the warm process answers: the
# standard library's small modules and these of localmem, nothing else (no site, apsw, numpy,
# dateutil, the store, argparse, typing or threading; not even json, re, socket or hashlib, whose
# imports cost more than the C modules under them).
HOOK_CLIENT_MODULES = {"localmem", "localmem.paths", "localmem.hooks", "localmem.hooks.client", "localmem.daemon",
                       "localmem.daemon.client", "localmem.daemon.plain_json", "localmem.daemon.rundir",
                       "localmem.daemon.wire", "localmem.hooks.event_names"}  # event_names: three tuples, no imports
NEVER_ON_THE_HOOK_PATH = {"site", "typing", "argparse", "threading", "dataclasses", "subprocess", "logging",
                          "shutil", "asyncio", "importlib.metadata", "pkg_resources", "apsw", "numpy", "dateutil",
                          "json", "re", "enum", "socket", "hashlib"}


@pytest.mark.skipif(sys.platform != "linux", reason="the warm process needs Linux")
def test_the_installed_hook_imports_only_the_standard_librarys_small_modules(tmp_path: Path):
    import json
    import shlex

    from daemon_helpers import Warm

    warm = Warm(tmp_path / "memory.db")
    try:
        stored = warm.localmem("store", "deploy the orchid service with blue-green rollout", LOCALMEM_DAEMON="0")
        assert stored.returncode == 0, stored.stderr
        warm.start()
        snippet = warm.localmem("hooks", "install", "claude-code", "--print")
        assert snippet.returncode == 0, snippet.stderr
        before = warm.status()["requests"]
        command = json.loads(snippet.stdout)["hooks"]["UserPromptSubmit"][0]["hooks"][0]["command"]
        words = shlex.split(command)
        assert words[1] == "-S" and words[2].endswith("/localmem/hooks/fast_client.py"), command
        payload = json.dumps({"session_id": "s1", "prompt": "how do we deploy the orchid service", "cwd": "/"})
        timed = subprocess.run(shlex.join([words[0], "-X", "importtime", *words[1:]]), shell=True,
                               input=payload, capture_output=True, text=True, env=warm.env, timeout=120)
        assert timed.returncode == 0 and "blue-green rollout" in timed.stdout, timed.stderr
        assert warm.status()["requests"] == before + 2  # answered there (the status ask is counted too)
        imported = {line.rsplit("|", 1)[1].strip() for line in timed.stderr.splitlines()
                    if line.startswith("import time:") and not line.endswith("imported package")}
    finally:
        warm.close()
    ours = {name for name in imported if name.split(".")[0] == "localmem"}
    assert ours == HOOK_CLIENT_MODULES, sorted(ours ^ HOOK_CLIENT_MODULES)
    others = {name.split(".")[0] for name in imported - ours}
    assert others <= set(sys.stdlib_module_names), sorted(others - set(sys.stdlib_module_names))
    assert not imported & NEVER_ON_THE_HOOK_PATH, sorted(imported & NEVER_ON_THE_HOOK_PATH)
