"""The package's imports run one way: no circles, and no layer imports one above it.

Every import counts — at module level, inside functions and under
``TYPE_CHECKING`` — because each is a dependency a reader has to hold in mind.
Importing a module's parent package (which Python does implicitly) does not.
"""

from __future__ import annotations

import ast
import functools
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "localmem"

# Lowest first. A module may import its own layer and those below it.
LAYERS: list[tuple[str, tuple[str, ...]]] = [
    ("base", ("errors", "config", "paths")),
    ("helpers", ("text", "tags", "timeparse", "timegrammar", "validation", "classify", "relations", "progress",
                 "metadata_search", "embedders", "loopback", "request_body", "privacy", "regex_literals")),
    ("storage", ("storage",)),
    ("pipelines", ("recall", "kagura")),
    ("store", ("store",)),
    ("around the store", ("maintenance", "replication", "trash", "settings", "demo", "pytest_plugin", "hooks",
                          "daemon", "")),
    ("interfaces", ("cli", "http", "mcp_server", "ui", "daemon_server", "__main__")),
]


def module_names() -> dict[str, tuple[Path, bool]]:
    """Dotted name -> (file, is a package's __init__)."""
    found = {}
    for path in PACKAGE.rglob("*.py"):
        parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
        is_package = parts[-1] == "__init__"
        if is_package:
            parts.pop()
        found[".".join(parts)] = (path, is_package)
    return found


@functools.cache
def import_graph() -> dict[str, set[str]]:
    modules = module_names()
    graph: dict[str, set[str]] = {}
    for name, (path, is_package) in modules.items():
        package = name if is_package else name.rpartition(".")[0]
        targets: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                targets.update(alias.name for alias in node.names)
            elif isinstance(node, ast.ImportFrom):
                if node.level:
                    base = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                    source = ".".join(base + ([node.module] if node.module else []))
                else:
                    source = node.module or ""
                for alias in node.names:  # `from pkg import module` imports the module
                    child = f"{source}.{alias.name}"
                    targets.add(child if child in modules else source)
        graph[name] = {t for t in targets if t in modules and t != name}
    return graph


def layer_of(module: str) -> int:
    relative = module.removeprefix("localmem").lstrip(".")
    top = relative.split(".")[0]
    for index, (_, roots) in enumerate(LAYERS):
        if top in roots:
            return index
    raise AssertionError(f"{module} is in no layer: add it to LAYERS in {__file__}")


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components with more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for target in sorted(graph[node]):
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in on_stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def test_the_graph_is_read_from_the_code():
    graph = import_graph()
    assert "localmem.storage.backend" in graph["localmem.store"]
    assert "localmem.recall.pipeline" in graph["localmem.store"]
    assert "localmem.embedders.onnx_export" in graph["localmem.embedders.sentence_transformer"]  # in a function


def test_no_import_circle():
    assert cycles(import_graph()) == []


def test_the_cycle_finder_finds_a_circle():
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


@pytest.mark.parametrize("module", sorted(import_graph()))
def test_no_module_imports_a_higher_layer(module: str):
    mine = layer_of(module)
    higher = sorted(t for t in import_graph()[module] if layer_of(t) > mine)
    assert not higher, (f"{module} ({LAYERS[mine][0]}) imports {higher} from a higher layer")


# The command line starts the servers and the HTTP server mounts the browser's routes (and
# MCP); those two compose the others. The browser and MCP build on no other interface.
COMPOSERS = ("cli", "http")
INTERFACE_ROOTS = ("cli", "http", "mcp_server", "ui")
# Of the two recall pipelines, Kagura's builds on recall's parts, never the other way.
PIPELINE_ORDER = {"recall": 0, "kagura": 1}


def _root(module: str) -> str:
    return module.removeprefix("localmem").lstrip(".").split(".")[0]


@pytest.mark.parametrize("module", sorted(m for m in import_graph()
                                          if _root(m) in INTERFACE_ROOTS and _root(m) not in COMPOSERS))
def test_no_interface_imports_another(module: str):
    others = sorted(t for t in import_graph()[module]
                    if _root(t) in INTERFACE_ROOTS and _root(t) != _root(module))
    assert not others, f"{module} imports {others}: shared code belongs in a lower layer"


@pytest.mark.parametrize("module", sorted(m for m in import_graph() if _root(m) in PIPELINE_ORDER))
def test_recall_imports_nothing_from_kagura(module: str):
    above = sorted(t for t in import_graph()[module]
                   if _root(t) in PIPELINE_ORDER and PIPELINE_ORDER[_root(t)] > PIPELINE_ORDER[_root(module)])
    assert not above, f"{module} imports {above}"


def test_no_module_is_over_about_600_lines():
    long = {str(path.relative_to(PACKAGE)): n for path in PACKAGE.rglob("*.py")
            if (n := len(path.read_text(encoding="utf-8").splitlines())) > 620}
    assert not long, f"split these modules: {long}"


BENCHMARKS = PACKAGE.parent / "benchmarks"


def test_benchmarks_import_each_other_as_a_package():
    """benchmarks/ is grouped in folders (issue 45): a script imports another's module as
    ``benchmarks.<group>.<name>``, never by its bare name from a folder put on ``sys.path``
    (which worked only while they all sat in one folder, and breaks a moved script silently)."""
    scripts = {path.stem: path.parent.name for path in BENCHMARKS.glob("*/*.py")}
    bare = []
    for path in sorted(BENCHMARKS.glob("*/*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else \
                [node.module] if isinstance(node, ast.ImportFrom) and node.module and not node.level else []
            for name in names:
                if name.split(".")[0] in scripts or name == "benchmarks":
                    bare.append(f"{path.relative_to(BENCHMARKS)}:{node.lineno} imports {name}")
    assert not bare, "import these as benchmarks.<group>.<name>: " + "; ".join(bare)


def test_benchmarks_import_each_other_in_a_found_module():
    """Each ``benchmarks.<group>.<name>`` a script imports is a file there."""
    missing = []
    for path in sorted(BENCHMARKS.glob("*/*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            targets = []
            if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("benchmarks."):
                targets = [node.module] if node.module.count(".") == 2 else \
                    [f"{node.module}.{a.name}" for a in node.names]
            for target in targets:
                if not (PACKAGE.parent / (target.replace(".", "/") + ".py")).exists():
                    missing.append(f"{path.relative_to(BENCHMARKS)}:{node.lineno} {target}")
    assert not missing, missing
