"""The jinja environments of the reports: one factory, an HTML flavour and a text flavour.

Both use StrictUndefined (a typo in a template fails the render instead of printing nothing),
the same loader and the same filters, registered here in one place from pure functions of
`analyzer.units` and `analyzer.render.terminal`. The HTML flavour autoescapes every value; the
text flavour passes every printed value through `terminal.neutralize`, its autoescape for a
terminal: control characters from a log are shown, never acted on.
"""

from __future__ import annotations

import base64
import hashlib
from functools import cache
from pathlib import Path

import jinja2
from markupsafe import Markup

from analyzer import units
from analyzer.render import terminal

_PACKAGE_DIR = Path(__file__).resolve().parent.parent
TEMPLATE_DIRS: tuple[Path, ...] = (
    _PACKAGE_DIR / "templates",
    _PACKAGE_DIR.parent / "templates",
)
"""Where templates are looked up, in order: inside the package (installed), then the repository."""


def _environment(html: bool) -> jinja2.Environment:
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader([str(d) for d in TEMPLATE_DIRS]),
        undefined=jinja2.StrictUndefined,
        autoescape=html,
        finalize=None if html else terminal.finalize_terminal,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
    )
    env.filters.update(
        bytes=units.fmt_bytes,
        duration_ms=units.fmt_duration_ms,
        count=units.fmt_count,
        pct=units.fmt_pct,
        timestamp_ms=units.fmt_timestamp_ms,
        # Text report: width fitting and colour marks.
        ansi=terminal.ansi,
        clip=terminal.clip_text,
        clip_after=terminal.clip_after,
        wrap_prefixed=terminal.wrap_prefixed,
        csp_source=csp_source,
    )
    return env


def csp_source(inline: str) -> Markup:
    """Return the Content-Security-Policy source that allows exactly this inline block:
    `'sha256-…'` of its text, so that no other script (an injected one) can run."""
    digest = hashlib.sha256(str(inline).encode("utf-8")).digest()
    return Markup(f"'sha256-{base64.b64encode(digest).decode('ascii')}'")


@cache
def html_env() -> jinja2.Environment:
    """Return the cached environment of HTML templates (autoescape on)."""
    return _environment(html=True)


@cache
def text_env() -> jinja2.Environment:
    """Return the cached environment of text templates (every printed value neutralized)."""
    return _environment(html=False)


def read_asset(name: str) -> str:
    """Return the text of a static asset (CSS, JS) that a template inlines, from `static/`."""
    for directory in TEMPLATE_DIRS:
        path = directory / "static" / name
        if path.is_file():
            return path.read_text(encoding="utf-8")
    raise FileNotFoundError(f"template asset static/{name} not found in {TEMPLATE_DIRS}")
