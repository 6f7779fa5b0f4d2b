"""Every error slug has a section in docs/errors.md, and the doc names no unknown slug."""

from __future__ import annotations

import re

from eventlog_samples import REPO

from analyzer import errors


def _slugs() -> set[str]:
    out = set()
    for value in vars(errors).values():
        if isinstance(value, type) and issubclass(value, errors.AnalyzerError):
            out.add(value.slug)
    return out


def test_each_slug_is_documented() -> None:
    text = (REPO / "docs" / "errors.md").read_text()
    sections = set(re.findall(r"^## (\S+)$", text, flags=re.MULTILINE))
    assert sections == _slugs()
