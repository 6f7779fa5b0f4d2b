"""Data flows one way: each layer imports only from the layers to its left (STYLE.md)."""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent / "analyzer"

# Layer order: a module may import from its own layer and layers earlier in this list; the
# command line and the batch runner are both thin shells over the API, at the same rank.
ORDER = [
    "units",
    "walk",
    "errors",
    "eventlog",
    "model",
    "replay",
    "aggregate",
    "insights",
    "compare",
    "redact",
    "report",
    "render",
    "output",
    "api",
    "cli",
]
RANK_ALIASES = {"batch": "cli", "cli_options": "cli"}


def _layer(module: str) -> str | None:
    parts = module.split(".")
    if parts[0] != "analyzer" or len(parts) < 2:
        return None
    return RANK_ALIASES.get(parts[1], parts[1])


def _imports(path: Path) -> list[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    found: list[str] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.append(node.module)
            found += [f"{node.module}.{a.name}" for a in node.names]
    return found


def test_layers_import_only_leftwards() -> None:
    bad: list[str] = []
    for path in sorted(PACKAGE.rglob("*.py")):
        rel = path.relative_to(PACKAGE.parent).with_suffix("")
        module = ".".join(rel.parts)
        own = _layer(module)
        if own is None or module == "analyzer.__init__":
            continue
        if own not in ORDER:
            bad.append(f"{module} belongs to no layer of ORDER")
            continue
        for imported in _imports(path):
            other = _layer(imported)
            if other is None or other not in ORDER:
                continue
            if ORDER.index(other) > ORDER.index(own):
                bad.append(f"{module} imports {imported}")
    assert bad == []


def test_polars_and_pyspark_stay_in_their_layers() -> None:
    bad: list[str] = []
    for path in sorted(PACKAGE.rglob("*.py")):
        rel = ".".join(path.relative_to(PACKAGE.parent).with_suffix("").parts)
        for imported in _imports(path):
            top = imported.split(".")[0]
            if top == "polars" and not rel.startswith(("analyzer.aggregate", "analyzer.batch")):
                bad.append(f"{rel} imports polars")
            if top == "pyspark" and not rel.startswith("analyzer.batch"):
                bad.append(f"{rel} imports pyspark")
    assert bad == []


VIEW_PACKAGES = ("analyzer.report", "analyzer.render")
"""Views shape what the analysis holds: they compute nothing themselves."""
COMPUTING_PACKAGES = ("analyzer.aggregate", "analyzer.insights")


def _imported_objects(path: Path) -> list[tuple[str, str, object]]:
    """Every name a module imports from the computing layers, with the object it names."""
    import importlib

    tree = ast.parse(path.read_text(encoding="utf-8"))
    found: list[tuple[str, str, object]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [(a.name, "", importlib.import_module(a.name)) for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            if not node.module.startswith(COMPUTING_PACKAGES):
                continue
            module = importlib.import_module(node.module)
            found += [(node.module, a.name, getattr(module, a.name)) for a in node.names]
    return found


def test_views_call_nothing_below_them_for_computation() -> None:
    """A view module imports no polars and, from `aggregate/` and `insights/`, only types and
    constants: every figure it shows comes from an `Analysis` accessor (or the findings)."""
    import inspect

    bad: list[str] = []
    for path in sorted(PACKAGE.rglob("*.py")):
        module = ".".join(path.relative_to(PACKAGE.parent).with_suffix("").parts)
        if not module.startswith(VIEW_PACKAGES):
            continue
        for imported in _imports(path):
            if imported.split(".")[0] == "polars":
                bad.append(f"{module} imports polars")
        for source, name, obj in _imported_objects(path):
            if not source.startswith(COMPUTING_PACKAGES) and not name:
                continue
            if inspect.ismodule(obj) or inspect.isroutine(obj):
                bad.append(f"{module} imports {source}.{name or ''} (a computation)".rstrip("."))
    assert bad == []


def test_every_polars_query_names_its_engine() -> None:
    """Every lazy query of the aggregation collects on `aggregate.ENGINE`: polars' default may
    pick its streaming engine, which took several times the memory on a million task rows."""
    bare: list[str] = []
    for path in sorted((PACKAGE / "aggregate").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Attribute)
                and node.func.attr == "collect"
                and not any(k.arg == "engine" for k in node.keywords)
            ):
                bare.append(f"{path.name}:{node.lineno}")
    assert not bare, f"collect() without engine=ENGINE: {bare}"
