"""Unicode that cannot lie: bidi controls and invisible characters (Unicode's
Default_Ignorable_Code_Point set, fillers, tag characters) from a log are shown as escapes
(`\\u202e`) in every format, the HTML page and the JSON text included, and names keep their
meaning (the JSON value is unchanged)."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import orjson
import pytest
import zstandard
from eventlog_samples import SAMPLES

from analyzer import api
from analyzer.render.json_render import visible_json
from analyzer.render.terminal import neutralize
from analyzer.report.options import ReportOptions
from analyzer.units import show_invisible

SOURCE = SAMPLES / "local-1795449716774.zstd"

SPOOFS = {
    "rlo": "payroll \u202edetacifirev ton",
    "isolates": "\u2066total = $\u2069\u2067 1000.00\u2069\u200f\u200e\u202a\u202b\u202c\u202d",
    "tags": "admin\U000e0041\U000e0042\U000e007f",
    "fillers": "a\u115fb\u1160c\u3164d\uffa0e",
    "joiners": "x\u034fy\u2800z\u00ad\u200b\u2060\ufeff\u180e\u061c",
}
INVISIBLE = (
    [chr(c) for c in range(0x202A, 0x202F)]
    + [chr(c) for c in range(0x2066, 0x206A)]
    + ["\u200e", "\u200f", "\u115f", "\u1160", "\u3164", "\uffa0", "\u034f", "\u2800"]
    + ["\u00ad", "\u200b", "\u2060", "\ufeff", "\u180e", "\u061c"]
    + [chr(c) for c in range(0xE0000, 0xE0080)]
)
FORBIDDEN = re.compile("[" + "".join(re.escape(c) for c in INVISIBLE) + "]")
PAYLOAD = "".join(SPOOFS.values())


def _poison(event: dict[str, Any]) -> dict[str, Any]:
    name = event["Event"]
    if name == "SparkListenerApplicationStart":
        event["App Name"] += PAYLOAD
        event["User"] = event.get("User", "") + SPOOFS["fillers"]
    elif name.endswith("SQLExecutionStart"):
        event["description"] = event.get("description", "") + PAYLOAD
        stack = [event["sparkPlanInfo"]]
        while stack:
            node = stack.pop()
            node["nodeName"] += SPOOFS["rlo"]
            node["simpleString"] += SPOOFS["tags"]
            stack.extend(node.get("children", []))
    elif name == "SparkListenerJobStart":
        props = event.get("Properties") or {}
        props["spark.job.description"] = PAYLOAD
        event["Properties"] = props
    elif name == "SparkListenerExecutorAdded":
        event["Executor Info"]["Host"] += SPOOFS["joiners"]
    elif name == "SparkListenerTaskEnd":
        event["Task Info"]["Host"] += SPOOFS["joiners"]
    return event


@pytest.fixture(scope="module")
def spoof_log(tmp_path_factory: pytest.TempPathFactory) -> Path:
    if not SOURCE.exists():
        pytest.skip(f"sample log {SOURCE} not present")
    with SOURCE.open("rb") as f:
        data = zstandard.ZstdDecompressor().stream_reader(f, read_across_frames=True).read()
    lines = [orjson.dumps(_poison(orjson.loads(line))) for line in data.splitlines()]
    target = tmp_path_factory.mktemp("spoof") / "local-spoof"
    target.write_bytes(b"\n".join(lines) + b"\n")
    return target


@pytest.mark.parametrize("fmt", ["text", "html", "markdown", "json"])
def test_spoofing_characters_are_shown_visibly_in_every_format(spoof_log: Path, fmt: str) -> None:
    analysis = api.analyze(spoof_log)
    out = api.render_report(analysis, ReportOptions(fmt=fmt, now_ms=0))  # type: ignore[arg-type]
    found = {f"U+{ord(c):04X}" for c in FORBIDDEN.findall(out)}
    if fmt == "markdown":
        # Markdown's own zero-width spaces defuse `@mentions` and autolinks; the log's are shown.
        found.discard("U+200B")
        assert "\\u200b" in out
    assert sorted(found) == []
    assert "\\u202e" in out
    assert "\\u3164" in out
    if fmt == "json":
        document = json.loads(out)
        # The same names, escaped only in the file's text.
        assert document["application"]["name"].endswith(PAYLOAD)
    else:
        assert "\\U000e0041" in out
        assert "payroll \\u202edetacifirev ton" in out


def test_spoofing_characters_in_a_diff_are_shown_visibly(spoof_log: Path) -> None:
    analysis = api.analyze(spoof_log)
    result = api.diff(analysis, analysis)
    for fmt in ("text", "html", "markdown", "json"):
        out = api.render_diff(result, ReportOptions(fmt=fmt, now_ms=0))  # type: ignore[arg-type]
        if fmt == "markdown":
            out = out.replace("\u200b", "")  # Markdown's own, see above
        assert FORBIDDEN.search(out) is None, fmt


def test_show_invisible_covers_the_default_ignorable_set() -> None:
    # DerivedCoreProperties.txt, Default_Ignorable_Code_Point, Unicode 15.1.
    ranges = [
        (0x00AD, 0x00AD), (0x034F, 0x034F), (0x061C, 0x061C), (0x115F, 0x1160),
        (0x17B4, 0x17B5), (0x180B, 0x180F), (0x200B, 0x200F), (0x202A, 0x202E),
        (0x2060, 0x206F), (0x3164, 0x3164), (0xFE00, 0xFE0F), (0xFEFF, 0xFEFF),
        (0xFFA0, 0xFFA0), (0xFFF0, 0xFFF8), (0x1BCA0, 0x1BCA3), (0x1D173, 0x1D17A),
        (0xE0000, 0xE0FFF),
    ]  # fmt: skip
    for first, last in ranges:
        for code in range(first, last + 1):
            char = chr(code)
            shown = show_invisible(f"a{char}b")
            assert char not in shown and shown.startswith("a\\") and shown.endswith("b"), code
            assert char not in neutralize(f"a{char}b")
            text = visible_json(json.dumps({"k": char}, ensure_ascii=False).encode()).decode()
            assert char not in text and json.loads(text) == {"k": char}
    # Ordinary text of every script stays as it is.
    for text in ("naïve café", "日本語のテキスト", "한국어", "עברית", "العربية", "emoji 🎉"):
        assert show_invisible(text) == text
        assert neutralize(text) == text
