"""The exception that started a failure, read out of Spark's wrapped error messages.

Spark wraps the error a task raised several times over: a job's message says which task failed
how often, then quotes the task's exception; a Python UDF's exception arrives as a Java
`PythonException` whose text is the whole Python traceback; a Java exception's real cause comes
last, after `Caused by:`. What a reader needs is the innermost one: `ValueError: bad customer id
4242`, not `Traceback (most recent call last):` or `Job aborted due to stage failure`.
"""

from __future__ import annotations

import re

from analyzer.units import readable_error

__all__ = ["root_cause"]

MAX_CHARS = 200
"""A root cause is cut to this many characters."""

_MOST_RECENT = re.compile(
    r"most recent failure: Lost task [\d.]+ in stage [\d.]+ \(TID \d+\)(?: \([^)]*\))?: "
)
_TRACEBACK = "Traceback (most recent call last):"
_JAVA_FRAME = re.compile(r"^\s*at [\w$.<>]+\(.*\)$|^\s*\.\.\. \d+ more$")
_CAUSED_BY = re.compile(r"^\s*Caused by: (.+)$")
_WRAPPERS = (
    "org.apache.spark.api.python.PythonException: ",
    "org.apache.spark.SparkException: ",
    "pyspark.errors.exceptions.captured.",
)


def _cut(text: str, limit: int = MAX_CHARS) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _python_exception(lines: list[str]) -> str | None:
    """Return the exception line that ends the first Python traceback in `lines`, if any."""
    start = next((i for i, line in enumerate(lines) if _TRACEBACK in line), None)
    if start is None:
        return None
    last = None
    for line in lines[start + 1 :]:
        if _JAVA_FRAME.match(line):
            break
        if line.strip() and not line[0].isspace():
            last = line.strip()
            if _TRACEBACK in last:  # a chained traceback: its own exception comes later
                last = None
    return last


def root_cause(message: str | None) -> str:
    """Return the line naming the exception that started a failure, cut to `MAX_CHARS`.

    >>> root_cause("org.apache.spark.api.python.PythonException: Traceback (most recent call "
    ...            "last):\\n  File \\"u.py\\", line 3, in f\\n    raise ValueError(x)\\n"
    ...            "ValueError: bad customer id 4242\\n\\n\\tat org.apache.Foo.bar(Foo.scala:1)")
    'ValueError: bad customer id 4242'
    >>> root_cause("Job aborted due to stage failure: Task 51 in stage 34.0 failed 4 times, most "
    ...            "recent failure: Lost task 51.3 in stage 34.0 (TID 12417) (host executor 0): "
    ...            "java.lang.OutOfMemoryError: GPU OutOfMemory\\n\\tat a.b.C.d(C.java:1)")
    'java.lang.OutOfMemoryError: GPU OutOfMemory'
    >>> root_cause("java.lang.RuntimeException: wrapper\\n\\tat a.B.c(B.java:1)\\n"
    ...            "Caused by: java.io.IOException: disk full\\n\\tat a.D.e(D.java:2)")
    'java.io.IOException: disk full'
    >>> root_cause("")
    ''
    """
    if not message:
        return ""
    text = readable_error(message)
    match = _MOST_RECENT.search(text)
    if match is not None:
        text = text[match.end() :]
    lines = text.splitlines()
    python = _python_exception(lines)
    if python is not None:
        return _cut(python)
    causes = [m.group(1) for line in lines if (m := _CAUSED_BY.match(line))]
    if causes:
        return _cut(causes[-1])
    first = next((line.strip() for line in lines if line.strip()), "")
    for wrapper in _WRAPPERS:
        if first.startswith(wrapper) and len(first) > len(wrapper):
            first = first[len(wrapper) :]
    return _cut(first)
