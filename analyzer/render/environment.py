"""The jinja environments of the reports: one factory, an HTML flavour and a text flavour.

Both use StrictUndefined (a typo in a template fails the render instead of printing nothing),
the same loader and the same filters, registered here in one place from pure functions of
`analyzer.units` and `analyzer.render.terminal`. The HTML flavour autoescapes every value; the
text flavour passes every printed value through `terminal.neutralize`, its autoescape for a
terminal: control characters from a log are shown, never acted on.
"""

from __future__ import annotations

import base64
import contextlib
import hashlib
from functools import cache
from pathlib import Path

import jinja2
import jinja2.bccache
from markupsafe import Markup

from analyzer import units
from analyzer.render import terminal

_PACKAGE_DIR = Path(__file__).resolve().parent.parent
TEMPLATE_DIRS: tuple[Path, ...] = (
    _PACKAGE_DIR / "templates",
    _PACKAGE_DIR.parent / "templates",
)
"""Where templates are looked up, in order: inside the package (installed), then the repository."""


class _TemplateCache(jinja2.FileSystemBytecodeCache):
    """Jinja's cache of compiled templates, in a private per-user temporary directory (jinja
    makes it mode 0700 and checks it is this user's). It holds our templates only, never a
    value from a log. A cache that cannot be read or written (a full disk, a damaged file) is
    ignored: the template is compiled in memory, as without a cache."""

    def load_bytecode(self, bucket: jinja2.bccache.Bucket) -> None:
        """Load a compiled template, or leave the bucket empty if the file is unusable."""
        try:
            super().load_bytecode(bucket)
        except Exception:  # a damaged or unreadable cache file is a cache miss
            bucket.reset()

    def dump_bytecode(self, bucket: jinja2.bccache.Bucket) -> None:
        """Save a compiled template if the directory can take it."""
        with contextlib.suppress(OSError):
            super().dump_bytecode(bucket)


@cache
def _bytecode_cache() -> jinja2.BytecodeCache | None:
    """The template cache: compiling the report's templates costs about 0.4 to 1 s of every
    run without it. None where no private directory can be made."""
    try:
        return _TemplateCache()
    except (OSError, RuntimeError):
        return None


def _environment(html: bool) -> jinja2.Environment:
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader([str(d) for d in TEMPLATE_DIRS]),
        bytecode_cache=_bytecode_cache(),
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
