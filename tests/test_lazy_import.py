"""``import localmem`` loads its public names on first use (PEP 562); every name of the contract
still imports, and ``localmem.cli`` defers apsw and the parser until a command needs them."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

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
