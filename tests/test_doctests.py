"""Every example written in a docstring of `analyzer/` runs with the suite.

pytest collects `analyzer/` with `--doctest-modules` (pyproject's `testpaths` and `addopts`); an
example doctest cannot see (a `>>>` in a comment, or in a string that is no docstring) would be
read as documentation and never run.
"""

from __future__ import annotations

import doctest
import importlib
import tomllib

from eventlog_samples import REPO

PACKAGE = REPO / "analyzer"


def test_pytest_collects_the_doctests_of_the_package() -> None:
    settings = tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["pytest"]
    options = settings["ini_options"]
    assert "--doctest-modules" in options["addopts"].split()
    assert "analyzer" in options["testpaths"]


def test_every_example_in_the_package_is_a_doctest() -> None:
    """Each module whose source holds `>>>` has as many examples as doctest finds in it."""
    finder = doctest.DocTestFinder(exclude_empty=True)
    unseen = []
    n_modules = 0
    for path in sorted(PACKAGE.rglob("*.py")):
        source = path.read_text(encoding="utf-8")
        written = sum(line.lstrip().startswith(">>>") for line in source.splitlines())
        if not written:
            continue
        n_modules += 1
        name = ".".join(path.relative_to(REPO).with_suffix("").parts).removesuffix(".__init__")
        module = importlib.import_module(name)
        found = sum(len(test.examples) for test in finder.find(module, name))
        if found < written:
            unseen.append(f"{name}: {written} written, {found} found")
    assert n_modules >= 40
    assert unseen == []
