"""Templates use only documented view-model fields (STYLE.md §2).

Every field of a view dataclass is documented where it is declared (`field(metadata={"help":
...})`, or a string right under it), and every attribute a template reads (`{{ x.attr }}`,
`{% for y in x.attr %}`, …) is a field of some view dataclass. The second check is by name, over
all view models at once: it catches typos and attributes no view declares, not a field of the
wrong view.
"""

from __future__ import annotations

import ast
import dataclasses
import inspect
import itertools
import re
import textwrap
from pathlib import Path
from types import ModuleType

import pytest

from analyzer.report import batch_index, html_view, views

VIEW_MODULES: tuple[ModuleType, ...] = (views, html_view, batch_index)
DOCUMENTED_MODULES: tuple[ModuleType, ...] = (views, html_view)
"""Every dataclass of these is checked; of the others, the view models (names ending in View)."""
TEMPLATES = Path(views.__file__).resolve().parent.parent / "templates"
LOOP_ATTRIBUTES = {"index", "index0", "revindex", "revindex0", "first", "last", "length", "cycle"}
"""What jinja's `loop` variable has (not a view model)."""

_TAG = re.compile(r"\{\{(.*?)\}\}|\{%(.*?)%\}", re.DOTALL)
_STRING = re.compile(r"'[^']*'|\"[^\"]*\"")
_DOTTED = re.compile(r"(?<![\w.])([A-Za-z_]\w*)((?:\.[A-Za-z_]\w*)+)")


def _view_classes() -> list[type]:
    found: list[type] = []
    for module in VIEW_MODULES:
        for obj in vars(module).values():
            if (
                isinstance(obj, type)
                and dataclasses.is_dataclass(obj)
                and obj.__module__ == module.__name__
            ):
                found.append(obj)
    return found


def _attribute_docstrings(cls: type) -> set[str]:
    """Names of the fields followed by a string literal in the class body."""
    class_def = ast.parse(textwrap.dedent(inspect.getsource(cls))).body[0]
    assert isinstance(class_def, ast.ClassDef)
    names: set[str] = set()
    for stmt, after in itertools.pairwise(class_def.body):
        if (
            isinstance(stmt, ast.AnnAssign)
            and isinstance(stmt.target, ast.Name)
            and isinstance(after, ast.Expr)
            and isinstance(after.value, ast.Constant)
            and isinstance(after.value.value, str)
        ):
            names.add(stmt.target.id)
    return names


VIEW_CLASSES = _view_classes()
CHECKED_CLASSES = [
    c
    for c in VIEW_CLASSES
    if c.__name__.endswith("View") or any(c.__module__ == m.__name__ for m in DOCUMENTED_MODULES)
]


def test_view_classes_are_found() -> None:
    names = {c.__name__ for c in VIEW_CLASSES}
    assert {"HtmlReportView", "ExecutionView", "FindingView", "BatchIndexView"} <= names


@pytest.mark.parametrize(
    "cls", CHECKED_CLASSES, ids=[f"{c.__module__}.{c.__name__}" for c in CHECKED_CLASSES]
)
def test_every_view_field_is_documented(cls: type) -> None:
    documented = _attribute_docstrings(cls)
    undocumented = [
        f.name
        for f in dataclasses.fields(cls)
        if not str(f.metadata.get("help", "")).strip() and f.name not in documented
    ]
    assert undocumented == [], f"{cls.__name__}: document these fields where they are declared"


def template_attributes(text: str) -> set[tuple[str, str]]:
    """Return (variable, attribute) pairs read in a template's tags, string literals left out."""
    found: set[tuple[str, str]] = set()
    for match in _TAG.finditer(text):
        expression = _STRING.sub("''", match.group(1) or match.group(2) or "")
        for root, chain in _DOTTED.findall(expression):
            for attr in chain.lstrip(".").split("."):
                found.add((root, attr))
    return found


def test_template_attributes_are_found() -> None:
    text = "{% for n in plan.nodes if n.x > 0 %}{{ n.label_str|e }} {{ 'a.b' }}{% endfor %}"
    assert template_attributes(text) == {("plan", "nodes"), ("n", "x"), ("n", "label_str")}


def test_templates_read_only_view_fields() -> None:
    fields = {f.name for cls in VIEW_CLASSES for f in dataclasses.fields(cls)}
    templates = sorted(TEMPLATES.glob("*.j2"))
    assert templates
    unknown: list[str] = []
    for path in templates:
        for root, attr in sorted(template_attributes(path.read_text(encoding="utf-8"))):
            if root == "loop":
                if attr not in LOOP_ATTRIBUTES:
                    unknown.append(f"{path.name}: loop.{attr}")
            elif attr not in fields:
                unknown.append(f"{path.name}: {root}.{attr}")
    assert unknown == []
