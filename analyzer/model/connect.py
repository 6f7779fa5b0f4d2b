"""What a Spark Connect operation ran, read from the text of its request.

A Spark Connect server describes every SQL execution it runs as `Spark Connect - session_id:
"…" plan { root { common { …`, cut at about 128 characters: the same opening for every query of a
session, and a different one (the client's `plan_id` counts up) for every run of one query. The
execution's `details` hold the request itself, in protobuf's text format (`ExecutePlanRequest`,
long strings and deep messages abbreviated). This module reads from it what a person would call
the query: its SQL text (`spark.sql`), else the chain of relations it reads (`range → project`),
a command's target (`write parquet /out`), and the client's line that built it when the client
sent one (`call_site`, Spark 4's Python client).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

CONNECT_DESCRIPTION_PREFIX = "Spark Connect - "
"""How a Spark Connect server starts the description of the SQL executions it runs."""

MAX_REQUEST_CHARS = 200_000
"""Characters of a request's text read (the log's text is unbounded; what names a query is near
the top)."""

MAX_REQUEST_LINES = 2_000
"""Lines of those read."""

MAX_LABEL_CHARS = 300
"""Characters of a label kept (then `…`)."""

MAX_CHAIN = 8
"""Relations of a chain named; a longer one shows its first and last ones around `…`."""

_BLOCK = re.compile(r"([A-Za-z_][A-Za-z0-9_]*) \{")
_FIELD = re.compile(r"([A-Za-z_][A-Za-z0-9_]*): (.*)")
_SPACES = re.compile(r"\s+")


@dataclass
class _Message:
    """One message of the request's text: its name, first value per field, and sub-messages."""

    name: str
    values: dict[str, str] = field(default_factory=dict)
    children: list[_Message] = field(default_factory=list)

    def child(self, name: str) -> _Message | None:
        return next((c for c in self.children if c.name == name), None)

    def kind(self) -> _Message | None:
        """The relation or command a `Relation` or `Command` message holds (not its `common`)."""
        return next((c for c in self.children if c.name != "common"), None)


def _parse(text: str) -> tuple[_Message, str | None]:
    """The request's messages as a tree, and the first `call_site` value found."""
    top = _Message("")
    stack = [top]
    call_site = None
    for raw in text[:MAX_REQUEST_CHARS].splitlines()[:MAX_REQUEST_LINES]:
        line = raw.strip()
        if line == "}":
            if len(stack) > 1:
                stack.pop()
            continue
        block = _BLOCK.fullmatch(line)
        if block is not None:
            message = _Message(block.group(1))
            stack[-1].children.append(message)
            stack.append(message)
            continue
        value = _FIELD.fullmatch(line)
        if value is not None:
            key, literal = value.group(1), value.group(2)
            stack[-1].values.setdefault(key, literal)
            if key == "call_site" and call_site is None:
                call_site = _string(literal)
    return top, call_site


_ESCAPE = re.compile(r"\\(?:([0-7]{1,3})|x([0-9A-Fa-f]{1,2})|(.))", re.DOTALL)
_SIMPLE_ESCAPES = {"n": 10, "t": 9, "r": 13, "a": 7, "b": 8, "f": 12, "v": 11}


def _string(literal: str) -> str:
    r"""A protobuf text string literal's value (its escapes resolved: a string's UTF-8 bytes are
    escaped byte by byte), else the literal as it is.

    >>> _string('"caf\\303\\251 \\"x\\" \\q"')
    'café "x" q'
    """
    if len(literal) < 2 or literal[0] != '"' or literal[-1] != '"':
        return literal
    out = bytearray()
    body = literal[1:-1]
    at = 0
    for match in _ESCAPE.finditer(body):
        out += body[at : match.start()].encode()
        octal, hexa, char = match.groups()
        if octal is not None:
            out.append(int(octal, 8) & 0xFF)
        elif hexa is not None:
            out.append(int(hexa, 16))
        else:
            code = _SIMPLE_ESCAPES.get(char)
            out += bytes([code]) if code is not None else char.encode()
        at = match.end()
    out += body[at:].encode()
    return out.decode("utf-8", "replace")


def _relation_name(kind: _Message) -> str:
    """A relation named as a reader would: `read parquet /data`, `inner join`, `range`."""
    name = kind.name
    if name == "read":
        source = kind.child("data_source")
        if source is not None:
            what = _string(source.values.get("format", '""')) or "data source"
            paths = source.values.get("paths")
            return f"read {what}" + (f" {_string(paths)}" if paths else "")
        table = kind.child("named_table")
        if table is not None:
            return f"read {_string(table.values.get('unparsed_identifier', '?'))}"
    if name == "join":
        join_type = kind.values.get("join_type", "").removeprefix("JOIN_TYPE_").lower()
        return f"{join_type.replace('_', ' ')} join" if join_type else "join"
    if name == "sql":
        return f"SQL {_string(kind.values.get('query', ''))}".strip()
    return name.replace("_", " ")


def _chain(relation: _Message | None) -> list[str]:
    """The relations a `Relation` message reads, first to last (data flow order)."""
    names: list[str] = []
    while relation is not None and len(names) < 100:
        kind = relation.kind()
        if kind is None:
            break
        names.append(_relation_name(kind))
        relation = kind.child("input")
    names.reverse()
    if len(names) > MAX_CHAIN:
        names = [*names[:2], "…", *names[-(MAX_CHAIN - 3) :]]
    return names


def _command(command: _Message) -> list[str]:
    """A command's relations and its own step: `range → write parquet /out`."""
    if command.name == "sql_command":
        sql = command.values.get("sql")
        if sql is not None:
            return [f"SQL {_string(sql)}"]
        return _chain(command.child("input"))
    steps = _chain(command.child("input"))
    if command.name in ("write_operation", "write_operation_v2"):
        target = command.values.get("path") or command.values.get("table_name")
        table = command.child("table")
        if target is None and table is not None:
            target = table.values.get("table_name")
        source = command.values.get("source") or command.values.get("provider")
        step = "write" + (f" {_string(source)}" if source else "")
        steps.append(step + (f" {_string(target)}" if target else ""))
    elif command.name == "create_dataframe_view":
        steps.append(f"create view {_string(command.values.get('name', '?'))}")
    else:
        steps.append(command.name.replace("_", " "))
    return steps


def _file_name(call_site: str) -> str:
    r"""A client's call site with its file's name only: the directory it ran from differs from
    machine to machine and run to run, where the file and line name the code.

    >>> _file_name("/home/ana/jobs/nightly.py:42"), _file_name(r"C:\jobs\nightly.py:42")
    ('nightly.py:42', 'nightly.py:42')
    """
    return re.split(r"[/\\]", call_site)[-1] or call_site


def connect_label(description: str, details: str) -> str | None:
    """Return what a Spark Connect execution ran, on one line, or None for any other execution.

    >>> connect_label('Spark Connect - session_id: "s"', 'plan {\\n  root {\\n    sql {\\n'
    ...     '      query: "select 1"\\n    }\\n  }\\n}')
    'Spark Connect: SQL select 1'
    >>> connect_label("count at job.py:3", "") is None
    True
    """
    if not description.startswith(CONNECT_DESCRIPTION_PREFIX):
        return None
    top, call_site = _parse(details)
    plan = top.child("plan")
    steps: list[str] = []
    if plan is not None:
        root = plan.child("root")
        command = plan.child("command")
        kind = command.kind() if command is not None else None
        if root is not None:
            steps = _chain(root)
        elif kind is not None:
            steps = _command(kind)
    text = " → ".join(steps) or "a request"
    if call_site:
        text += f" (at {_file_name(call_site)})"
    text = _SPACES.sub(" ", f"Spark Connect: {text}").strip()
    return text if len(text) <= MAX_LABEL_CHARS else text[: MAX_LABEL_CHARS - 1] + "…"
