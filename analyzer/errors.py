"""The one exception root of the analyzer, its subclasses, and how strictly to read messy input.

Every error the user can cause is an `AnalyzerError`: it carries a short slug (documented in
docs/errors.md), the file and line or byte offset it concerns, and what to do about it. The CLI
prints `str(error)` as one line; anything else that escapes is a bug.
"""

from __future__ import annotations

import enum

from analyzer.units import show_invisible, shown_path


class Strictness(enum.Enum):
    """How to treat a malformed line in the middle of a log."""

    STRICT = "strict"
    """Stop with `MalformedLineError` (what Spark's History Server does)."""
    LENIENT = "lenient"
    """Skip the line, count it, and go on."""


def path_in_error(path: str) -> str:
    r"""A path as an error message names it: one line whatever the path holds, its invisible
    characters seen, not acted on.

    >>> path_in_error("logs/bad\nname\u202e")
    'logs/bad\\x0aname\\u202e'
    """
    return show_invisible(shown_path(path), newlines=True)


class AnalyzerError(Exception):
    """Root of every error the analyzer reports to users."""

    slug = "analyzer-error"

    def __init__(
        self,
        message: str,
        *,
        path: str | None = None,
        line: int | None = None,
        offset: int | None = None,
        hint: str | None = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.path = path
        self.line = line
        self.offset = offset
        self.hint = hint

    def __str__(self) -> str:
        where = ""
        if self.path is not None:
            where = path_in_error(self.path)
            if self.line is not None:
                where += f":{self.line}"
            elif self.offset is not None:
                where += f" (byte {self.offset})"
            where += ": "
        text = f"{where}{self.message}"
        if self.hint:
            text += f"; {self.hint}"
        return f"{text} [{self.slug}]"


class LogNotFoundError(AnalyzerError):
    """The path given does not exist or holds no event log."""

    slug = "not-found"


class UnknownCodecError(AnalyzerError):
    """The file's extension names a compression codec Spark does not write."""

    slug = "unknown-codec"


class CorruptCompressedDataError(AnalyzerError):
    """Compressed bytes could not be decoded (not a truncated tail, which is tolerated)."""

    slug = "corrupt-data"


class MalformedLineError(AnalyzerError):
    """A line that is not a JSON object, away from the end of the log."""

    slug = "malformed-line"


class LineTooLongError(MalformedLineError):
    """A line longer than the reader's maximum (`analyzer.eventlog.lines.MAX_LINE_BYTES`)."""

    slug = "line-too-long"


class TruncatedPartError(AnalyzerError):
    """A part of a multi-file log, other than the last, ends mid-frame or mid-line."""

    slug = "truncated-part"


class MissingRollingFileError(AnalyzerError):
    """A rolling event-log directory whose `events_N` files are not contiguous."""

    slug = "missing-rolling-file"


class EmptyLogError(AnalyzerError):
    """The event log holds no bytes, or no events."""

    slug = "empty-log"


class NotAnEventLogError(AnalyzerError):
    """The file is readable but is not a Spark event log."""

    slug = "not-an-event-log"


class CodecMismatchError(NotAnEventLogError):
    """The file's bytes are in another format than its extension names (lz4 in a `.zstd`)."""

    slug = "codec-mismatch"


class RemoteStorageError(AnalyzerError):
    """A remote URL was given but fsspec (or its protocol driver) is not installed or failed."""

    slug = "remote-storage"


class CannotWriteError(AnalyzerError):
    """An output cannot be written where asked (a directory, no permission, disk full, ...)."""

    slug = "cannot-write"


class OutputIsInputError(CannotWriteError):
    """The output path is one of the command's inputs (a log or a part of one): writing there
    would destroy the log, so nothing is written."""

    slug = "output-is-input"


class UsageError(AnalyzerError):
    """An option value the user gave is not valid."""

    slug = "usage"


class BatchBusyError(AnalyzerError):
    """Another batch run holds the lock of the output directory."""

    slug = "busy"


class PriceFileError(AnalyzerError):
    """A price file (`--price-file`) cannot be read or does not fit docs/cost.md."""

    slug = "bad-price-file"
