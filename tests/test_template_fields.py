"""Each template reads only documented fields of the view class it is bound to (STYLE.md §2).

Every template declares what it is given in its first line, e.g.
`{#- binds: app: TextReportView, color: bool, width: int -#}`. The test walks the template's
jinja syntax tree with those types: a loop variable over `tuple[X, ...]` is an `X`, `{% set %}`
gives a name the type of its value, an included template must declare the names it is given
with the types they have here, and every attribute read must be a field of the dataclass the
expression has at that point. Every field of every view dataclass is documented where it is
declared (`field(metadata={"help": ...})`).
"""

from __future__ import annotations

import dataclasses
import importlib
import pkgutil
import re
import types
import typing
from pathlib import Path
from typing import Any

import jinja2
import pytest
from jinja2 import nodes

import analyzer.report
from analyzer.render.environment import TEMPLATE_DIRS, text_env

TEMPLATES = TEMPLATE_DIRS[0]
_BINDS = re.compile(r"^\{#-?\s*binds:\s*(?P<binds>.*?)\s*-?#\}")
LOOP_ATTRIBUTES = {"index", "index0", "revindex", "revindex0", "first", "last", "length", "cycle"}
SCALARS: dict[str, Any] = {
    "bool": bool,
    "int": int,
    "str": str,
    "Markup": str,
    "list[Markup]": list[str],
}


def _view_modules() -> list[types.ModuleType]:
    found = []
    for info in pkgutil.walk_packages(analyzer.report.__path__, "analyzer.report."):
        found.append(importlib.import_module(info.name))
    return found


def _view_classes() -> dict[str, type]:
    classes: dict[str, type] = {}
    for module in _view_modules():
        for obj in vars(module).values():
            if (
                isinstance(obj, type)
                and dataclasses.is_dataclass(obj)
                and obj.__module__ == module.__name__
                and obj.__name__.endswith("View")
            ):
                assert obj.__name__ not in classes, f"two view classes named {obj.__name__}"
                classes[obj.__name__] = obj
    return classes


VIEW_CLASSES = _view_classes()


def _parse_type(text: str) -> Any:
    text = text.strip()
    if text in SCALARS:
        return SCALARS[text]
    if text.startswith("tuple[") and text.endswith("]"):
        return tuple[_parse_type(text[6:-1]), ...]  # type: ignore[misc]
    if text in VIEW_CLASSES:
        return VIEW_CLASSES[text]
    raise AssertionError(f"unknown type {text!r} in a binds line")


def template_binds(path: Path) -> dict[str, Any]:
    """Return the names a template is given and their types, from its `binds:` line."""
    match = _BINDS.match(path.read_text(encoding="utf-8"))
    assert match, f"{path.name}: first line must be `{{#- binds: name: Type, … -#}}`"
    binds: dict[str, Any] = {}
    depth, current = 0, ""
    for ch in match.group("binds") + ",":
        if ch == "," and depth == 0:
            name, _, type_text = current.partition(":")
            binds[name.strip()] = _parse_type(type_text)
            current = ""
            continue
        depth += ch == "["
        depth -= ch == "]"
        current += ch
    return binds


def _field_types(cls: type) -> dict[str, Any]:
    hints = typing.get_type_hints(cls)
    return {f.name: hints[f.name] for f in dataclasses.fields(cls)}


def _element(tp: Any) -> Any:
    """The type of one element when iterating over a value of type `tp`."""
    tp = _strip_none(tp)
    args = typing.get_args(tp)
    origin = typing.get_origin(tp)
    if origin in (tuple, list) and args:
        element = args[0]
        if origin is tuple and len(args) > 1 and args[1] is not Ellipsis:
            return Any  # a fixed tuple (label, value) pairs: unpacked, not checked further
        return element
    return Any


def _strip_none(tp: Any) -> Any:
    args = typing.get_args(tp)
    if isinstance(tp, types.UnionType) or typing.get_origin(tp) is typing.Union:
        rest = [a for a in args if a is not type(None)]
        if len(rest) == 1:
            return rest[0]
    return tp


class _Checker:
    """Walk a template's syntax tree with types for its names; collect unknown attributes."""

    def __init__(self, env: jinja2.Environment) -> None:
        self.env = env
        self.errors: list[str] = []

    def type_of(self, node: nodes.Node, scope: dict[str, Any], where: str) -> Any:
        if isinstance(node, nodes.Name):
            return scope.get(node.name, Any)
        if isinstance(node, nodes.Getattr):
            owner = _strip_none(self.type_of(node.node, scope, where))
            if owner is Any:
                return Any
            if isinstance(node.node, nodes.Name) and node.node.name == "loop":
                if node.attr not in LOOP_ATTRIBUTES:
                    self.errors.append(f"{where}: loop.{node.attr}")
                return Any
            if isinstance(owner, type) and dataclasses.is_dataclass(owner):
                fields = _field_types(owner)
                if node.attr not in fields:
                    self.errors.append(f"{where}: {owner.__name__} has no field {node.attr!r}")
                    return Any
                return fields[node.attr]
            return Any
        if isinstance(node, nodes.Getitem):
            return _element(self.type_of(node.node, scope, where))
        if isinstance(node, nodes.Filter) and node.node is not None:
            return Any
        if isinstance(node, nodes.CondExpr):
            return Any
        return Any

    def check_expressions(self, node: nodes.Node, scope: dict[str, Any], where: str) -> None:
        for attr in node.find_all(nodes.Getattr):
            self.type_of(attr, scope, where)

    def walk(self, body: list[nodes.Node], scope: dict[str, Any], where: str) -> None:
        for node in body:
            if isinstance(node, nodes.For):
                self.check_expressions(node.iter, scope, where)
                inner = dict(scope)
                element = _element(self.type_of(node.iter, scope, where))
                if isinstance(node.target, nodes.Name):
                    inner[node.target.name] = element
                else:
                    for name in node.target.find_all(nodes.Name):
                        inner[name.name] = Any
                inner["loop"] = object
                if node.test is not None:
                    self.check_expressions(node.test, inner, where)
                self.walk(node.body, inner, where)
                self.walk(node.else_, scope, where)
            elif isinstance(node, nodes.Assign) and isinstance(node.target, nodes.Name):
                self.check_expressions(node.node, scope, where)
                scope[node.target.name] = self.type_of(node.node, scope, where)
            elif isinstance(node, nodes.If):
                self.check_expressions(node.test, scope, where)
                self.walk(node.body, scope, where)
                for elif_ in node.elif_:
                    self.check_expressions(elif_.test, scope, where)
                    self.walk(elif_.body, scope, where)
                self.walk(node.else_, scope, where)
            elif isinstance(node, nodes.Include):
                self.check_include(node, scope, where)
            elif isinstance(node, nodes.Macro):
                inner = dict(scope)
                for arg in node.args:
                    inner[arg.name] = scope.get(arg.name, Any)
                self.walk(node.body, inner, where)
            elif isinstance(node, nodes.Block | nodes.Scope):
                self.walk(node.body, scope, where)
            elif isinstance(node, nodes.Extends | nodes.FromImport | nodes.Import):
                continue
            else:
                self.check_expressions(node, scope, where)

    def check_include(self, node: nodes.Include, scope: dict[str, Any], where: str) -> None:
        if not isinstance(node.template, nodes.Const):
            self.errors.append(f"{where}: include of a computed name")
            return
        name = node.template.value
        wanted = template_binds(TEMPLATES / name)
        for bound, tp in wanted.items():
            have = scope.get(bound, Any)
            if have is not Any and have != tp and not _compatible(have, tp):
                self.errors.append(f"{where}: includes {name} with {bound}: {have}, wants {tp}")


def _compatible(have: Any, want: Any) -> bool:
    have, want = _strip_none(have), _strip_none(want)
    if have == want:
        return True
    return _element(have) == _element(want) and typing.get_origin(have) in (tuple, list)


TEMPLATE_PATHS = sorted(TEMPLATES.glob("*.j2"))


@pytest.mark.parametrize("path", TEMPLATE_PATHS, ids=lambda p: p.name)
def test_template_reads_only_fields_of_its_view(path: Path) -> None:
    binds = template_binds(path)
    env = text_env()
    tree = env.parse(path.read_text(encoding="utf-8"))
    checker = _Checker(env)
    scope = dict(binds)
    # Macros imported from another template see the names their arguments are given.
    scope.setdefault("m", VIEW_CLASSES["MetricView"])
    checker.walk(tree.body, scope, path.name)
    assert sorted(set(checker.errors)) == []


def test_every_template_declares_its_view() -> None:
    assert TEMPLATE_PATHS
    for path in TEMPLATE_PATHS:
        assert template_binds(path)


def test_checker_finds_a_wrong_field() -> None:
    env = text_env()
    checker = _Checker(env)
    tree = env.parse("{% for f in v.items %}{{ f.titel }}{% endfor %}")
    checker.walk(tree.body, {"v": VIEW_CLASSES["FindingsView"]}, "inline")
    assert checker.errors == ["inline: FindingView has no field 'titel'"]


@pytest.mark.parametrize("cls", list(VIEW_CLASSES.values()), ids=list(VIEW_CLASSES))
def test_every_view_field_is_documented(cls: type) -> None:
    undocumented = [
        f.name for f in dataclasses.fields(cls) if not str(f.metadata.get("help", "")).strip()
    ]
    assert undocumented == [], f"{cls.__name__}: document these fields where they are declared"
