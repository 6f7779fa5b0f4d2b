"""Read the fields the fleet tables need from a JSON report without holding the whole file.

A batch run's driver reads every analyzed application's `report.json` to build the fleet tables
and the job history, and a report of a day of micro-batches is hundreds of MB to GB of JSON.
The reports this analyzer writes are indented by two spaces a level (`render_json_chunks`), and a
JSON string holds no raw newline, so a line that starts with exactly two spaces and a quote is a
top-level key, and one that starts with exactly four spaces and a brace opens or closes an item
of a top-level list. `read_for_tables` walks those lines in the file, decodes each stage attempt
and execution on its own and skips what the tables do not read; only the parts it keeps are ever
in memory. A file laid out any other way (edited, damaged, written by another tool) is decoded
whole with `parse_report`, which gives the same rows and records or the same `ReportDocError`.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path
from typing import IO, Any

import msgspec

from analyzer.batch.fleet import (
    DocApplication,
    DocCost,
    DocEnvironment,
    DocExecution,
    DocFinding,
    DocLog,
    DocStage,
    NodeLists,
    ReportDoc,
    Row,
    execution_rows,
    fleet_rows,
    head_rows,
    parse_report,
    row_key,
    without_metrics,
)

OnExecution = Callable[[DocApplication, DocExecution], DocExecution]
"""Called with each execution as it is read (and its application): returns what is kept of it."""

CHUNK_BYTES = 8 << 20
"""How much of the file is read at a time."""

_KEY_LINE = b'\n  "'
_KEY_NAME = re.compile(rb"[a-z_]{1,64}")
_KEY_END = b'": '
_ITEM_END = b"\n    }"
_CLOSERS = {b"[": b"\n  ]", b"{": b"\n  }"}

_VALUES: dict[str, Any] = {
    "application": DocApplication,
    "log": DocLog,
    "findings": list[DocFinding],
    "cost": DocCost | None,
    "environment": DocEnvironment | None,
}
"""The top-level values read whole, by their types."""
_ITEMS: dict[str, Any] = {"stages": DocStage, "executions": DocExecution}
"""The top-level lists read an item at a time, by their items' types."""
_LISTS: dict[str, Any] = {"stages": list[DocStage], "executions": list[DocExecution]}
"""The same lists' types, for a list written on one line (empty)."""


class _NotOurLayout(Exception):
    """The file is not laid out as this analyzer writes a JSON report."""


class _Window:
    """A forward-only view of a file, read a chunk at a time."""

    def __init__(self, handle: IO[bytes]) -> None:
        self._handle = handle
        self._buffer = bytearray()
        self._at = 0
        self._ended = False

    def _find(self, pattern: bytes) -> int:
        """The index in the buffer where `pattern` next starts, reading on as needed."""
        start = self._at
        while True:
            found = self._buffer.find(pattern, start)
            if found >= 0:
                return found
            if self._ended:
                raise _NotOurLayout(f"{pattern!r} not found")
            start = max(self._at, len(self._buffer) - len(pattern) + 1)
            if self._at > len(self._buffer) // 2:  # drop what was consumed
                del self._buffer[: self._at]
                start -= self._at
                self._at = 0
            self._read_chunk()

    def _read_chunk(self) -> None:
        """Add the file's next chunk to the buffer, or note its end."""
        chunk = self._handle.read(CHUNK_BYTES)
        if chunk:
            self._buffer += chunk
        else:
            self._ended = True

    def take_until(self, pattern: bytes) -> bytes:
        """The bytes up to the next `pattern`, consumed with it."""
        found = self._find(pattern)
        taken = bytes(self._buffer[self._at : found])
        self._at = found + len(pattern)
        return taken

    def skip_until(self, pattern: bytes) -> None:
        """Consume everything up to and including the next `pattern`."""
        self._at = self._find(pattern) + len(pattern)

    def rest(self) -> bytes:
        """Everything left in the file."""
        while not self._ended:
            self._read_chunk()
        return bytes(self._buffer[self._at :])


def read_for_tables(path: Path, app_key: str) -> tuple[ReportDoc, dict[str, list[Row]]]:
    """The fleet tables' rows of the JSON report at `path` (`fleet.fleet_rows`), and what the
    job history reads of it: its fields less the stage attempts and the nodes' metrics.

    Each execution's rows are made as it is read, and only the execution less its metrics is
    kept, so the metrics are in memory once, as rows (executions with equal nodes share one list
    of them: `fleet.without_metrics`). `ReportDocError` if the fields do not fit,
    `OSError` if the file cannot be read.
    """
    with path.open("rb") as handle:
        executions: list[Row] = []
        metrics: list[Row] = []
        node_lists: NodeLists = {}

        def keep(app: DocApplication, ex: DocExecution) -> DocExecution:
            execution, ex_metrics = execution_rows(row_key(app_key, app), ex)
            executions.append(execution)
            metrics.extend(ex_metrics)
            return without_metrics(ex, node_lists)

        try:
            doc = _read_by_layout(_Window(handle), keep)
        except (_NotOurLayout, msgspec.MsgspecError):
            handle.seek(0)
            whole = parse_report(handle.read())
            kept = [without_metrics(ex, node_lists) for ex in whole.executions]
            return msgspec.structs.replace(whole, stages=[], executions=kept), fleet_rows(
                app_key, whole
            )
    rows = head_rows(app_key, doc)
    rows["executions"] = executions
    rows["plan_node_metrics"] = metrics
    return msgspec.structs.replace(doc, stages=[]), rows


def _read_by_layout(window: _Window, on_execution: OnExecution) -> ReportDoc:
    """The report's fields, walking its layout, each execution through `on_execution`;
    `_NotOurLayout` (or a decoding error) if the file is laid out otherwise."""
    if window.take_until(_KEY_LINE) != b"{":
        raise _NotOurLayout("no top-level object")
    found: dict[str, Any] = {}
    while True:
        key = window.take_until(_KEY_END)
        if not _KEY_NAME.fullmatch(key):
            raise _NotOurLayout("an unexpected top-level key")
        name = key.decode("ascii")
        if name in found:
            raise _NotOurLayout("a repeated top-level key")
        first = window.take_until(b"\n")
        last = not first.endswith(b",")
        opener = first.rstrip(b",")
        if opener in _CLOSERS and not last:
            raise _NotOurLayout("a container opened with a comma")
        if opener in _CLOSERS:
            closer = _CLOSERS[opener]
            if name in _ITEMS and opener == b"[":
                keep = None
                if name == "executions":
                    app = found.get("application")
                    if app is None:
                        raise _NotOurLayout("executions before the application")
                    keep = _bound(on_execution, app)
                found[name] = _read_items(window, _ITEMS[name], keep)
            elif name in _VALUES:
                body = window.take_until(closer)
                found[name] = msgspec.json.decode(
                    b"\n".join((opener, body, closer[1:])), type=_VALUES[name]
                )
            else:
                window.skip_until(closer)
            after = window.take_until(b"\n")
            last = after == b""
            if after not in (b"", b","):
                raise _NotOurLayout("text after a container")
        elif name in _ITEMS:  # an empty list
            found[name] = msgspec.json.decode(opener, type=_LISTS[name])
            if found[name]:
                raise _NotOurLayout("a list of items on one line")
        elif name in _VALUES:
            found[name] = msgspec.json.decode(opener, type=_VALUES[name])
        if last:
            break
        if window.take_until(b'  "') != b"":
            raise _NotOurLayout("a key not at the start of its line")
    if window.rest().strip() != b"}":
        raise _NotOurLayout("text after the top-level object")
    try:
        return ReportDoc(**found)
    except TypeError as error:  # a required part is missing
        raise _NotOurLayout(str(error)) from None


def _bound(on_execution: OnExecution, app: DocApplication) -> Callable[[Any], Any]:
    """`on_execution` with its application given."""
    return lambda ex: on_execution(app, ex)


def _read_items(
    window: _Window, item_type: Any, keep: Callable[[Any], Any] | None = None
) -> list[Any]:
    """The items of a top-level list whose opening bracket ended the line, one at a time, each
    through `keep` when given."""
    decoder: msgspec.json.Decoder[Any] = msgspec.json.Decoder(item_type)
    decode = decoder.decode if keep is None else (lambda data: keep(decoder.decode(data)))
    items: list[Any] = []
    while True:
        start = window.take_until(b"\n")
        if start != b"    {":
            raise _NotOurLayout("a list item that is not an object on its own line")
        body = window.take_until(_ITEM_END)
        items.append(decode(b"\n".join((b"{", body, b"}"))))
        after = window.take_until(b"\n")
        if after == b",":
            continue
        if after == b"" and window.take_until(b"]") == b"  ":
            return items
        raise _NotOurLayout("text after a list item")
