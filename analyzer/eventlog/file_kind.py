"""What a file is when it is neither a regular file nor a directory: a pipe, a socket, a device.

Such a file is never read as a log or a settings file (opening a pipe would block, a device may
never end); a report for a character device or a pipe is written through it, never renamed over
it, and one for a block device or a socket is refused.
"""

from __future__ import annotations

import stat


def special_kind(mode: int) -> str | None:
    """Name the kind of a file (its `st_mode`) that is neither regular nor a directory, else
    None: what a listing says of it, and what the report writer and the settings-file reader
    refuse or treat apart."""
    if stat.S_ISREG(mode) or stat.S_ISDIR(mode):
        return None
    if stat.S_ISFIFO(mode):
        return "a named pipe"
    if stat.S_ISSOCK(mode):
        return "a socket"
    if stat.S_ISCHR(mode):
        return "a character device"
    if stat.S_ISBLK(mode):
        return "a block device"
    return "a special file"
