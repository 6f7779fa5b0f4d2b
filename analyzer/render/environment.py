"""The one jinja Environment every template renderer uses (HTML and text reports share it).

Autoescape is on for `.html` and `.html.j2` templates and undefined names raise (StrictUndefined),
so a typo in a template fails the render instead of printing nothing. Filters are registered here,
in one place, from pure functions in `analyzer.report.formatters`.
"""

from __future__ import annotations

from functools import cache
from pathlib import Path

import jinja2

from analyzer.report import formatters

_PACKAGE_DIR = Path(__file__).resolve().parent.parent
TEMPLATE_DIRS: tuple[Path, ...] = (
    _PACKAGE_DIR / "templates",
    _PACKAGE_DIR.parent / "templates",
)
"""Where templates are looked up, in order: inside the package (installed), then the repository."""


def _autoescape(template_name: str | None) -> bool:
    """Escape HTML templates only; text templates render plain text."""
    if template_name is None:
        return True
    return template_name.endswith((".html", ".html.j2", ".htm", ".xml"))


@cache
def template_env() -> jinja2.Environment:
    """Return the shared, cached Environment (StrictUndefined, autoescape for HTML templates)."""
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader([str(d) for d in TEMPLATE_DIRS]),
        undefined=jinja2.StrictUndefined,
        autoescape=_autoescape,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
    )
    env.filters.update(
        bytes=formatters.fmt_bytes,
        duration_ms=formatters.fmt_duration_ms,
        count=formatters.fmt_count,
        pct=formatters.fmt_pct,
        timestamp_ms=formatters.fmt_timestamp_ms,
        # Text report: width fitting and optional ANSI colour.
        ansi=formatters.ansi,
        clip=formatters.clip_text,
        clip_after=formatters.clip_after,
        wrap_prefixed=formatters.wrap_prefixed,
    )
    return env


def read_asset(name: str) -> str:
    """Return the text of a static asset (CSS, JS) that a template inlines, from `static/`."""
    for directory in TEMPLATE_DIRS:
        path = directory / "static" / name
        if path.is_file():
            return path.read_text(encoding="utf-8")
    raise FileNotFoundError(f"template asset static/{name} not found in {TEMPLATE_DIRS}")
