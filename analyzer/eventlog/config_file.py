"""Small settings files a user names (a price file, a remote-storage config): read them bounded.

Such a file is read whole, so it must be a regular file of at most a given size: a FIFO would
block the command forever and `/dev/zero` would fill memory. Its TOML must parse, and nest at
most `MAX_DEPTH` tables and arrays: Python's TOML and JSON readers recurse, so a file nested
thousands of levels deep would stop them with a `RecursionError`, not a message.
"""

from __future__ import annotations

import os
import stat
import tomllib
from typing import Any

from analyzer.eventlog.file_kind import special_kind

MAX_DEPTH = 32
"""The deepest a settings file's tables and arrays may nest (real ones nest two or three)."""


class ConfigFileError(Exception):
    """A settings file that cannot be used; the message says why, the caller names the file."""


def read_settings_file(path: str | os.PathLike[str], max_bytes: int) -> bytes:
    """The bytes of a regular file of at most `max_bytes`; `ConfigFileError` otherwise, or
    `OSError` when it cannot be read."""
    mode = os.stat(path).st_mode
    if not stat.S_ISREG(mode):
        raise ConfigFileError(f"not a regular file ({special_kind(mode) or 'a directory'})")
    # Not blocking, in case the path became a pipe since it was looked at.
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    with os.fdopen(fd, "rb") as handle:
        data = handle.read(max_bytes + 1)
    if len(data) > max_bytes:
        raise ConfigFileError(f"larger than {max_bytes:,} bytes")
    return data


def parse_toml(data: bytes) -> dict[str, Any]:
    """The TOML document of `data`; `ConfigFileError` for one that is not UTF-8, not TOML, or
    nested deeper than `MAX_DEPTH`."""
    try:
        doc = tomllib.loads(data.decode("utf-8"))
    except UnicodeDecodeError:
        raise ConfigFileError("not UTF-8 text") from None
    except RecursionError:
        raise ConfigFileError(f"nested more than {MAX_DEPTH} levels deep") from None
    except tomllib.TOMLDecodeError as error:
        raise ConfigFileError(f"not valid TOML: {error}") from None
    except ValueError:  # an integer of more digits than Python reads
        raise ConfigFileError("not valid TOML: it holds a number of thousands of digits") from None
    check_depth(doc)
    return doc


def check_depth(value: object) -> None:
    """`ConfigFileError` when `value`'s dicts and lists nest deeper than `MAX_DEPTH`."""
    stack: list[tuple[object, int]] = [(value, 0)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict | list):
            if depth >= MAX_DEPTH:
                raise ConfigFileError(f"nested more than {MAX_DEPTH} levels deep")
            children = item.values() if isinstance(item, dict) else item
            stack.extend((child, depth + 1) for child in children)
