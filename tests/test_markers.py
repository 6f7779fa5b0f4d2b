"""Marks sit where pytest reads them: on test functions, never on helpers or fixtures.

A `@pytest.mark.slow` on a helper does nothing, so the test that calls the helper runs in the
quick loop however long it takes.
"""

from __future__ import annotations

import ast
from pathlib import Path

TESTS = Path(__file__).resolve().parent


def _is_mark(decorator: ast.expr) -> bool:
    """`@pytest.mark.<name>` or `@pytest.mark.<name>(...)`, but not `parametrize`, which
    `pytest.param` lists use too."""
    node = decorator.func if isinstance(decorator, ast.Call) else decorator
    return (
        isinstance(node, ast.Attribute)
        and isinstance(node.value, ast.Attribute)
        and node.value.attr == "mark"
        and node.attr not in ("parametrize", "usefixtures", "filterwarnings")
    )


def test_marks_are_on_tests_only() -> None:
    misplaced = []
    for path in sorted(TESTS.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if (
                isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
                and not node.name.startswith("test_")
                and any(_is_mark(d) for d in node.decorator_list)
            ):
                misplaced.append(f"{path.relative_to(TESTS)}:{node.lineno} {node.name}")
    assert misplaced == []
