"""Fingerprint everything `api.analyze` builds for a set of logs, to compare two versions exactly.

A change meant only to make the analyzer faster or lighter must not change a single number. For
every log this records a digest of each part of the `Analysis` (the application model, the task,
slot and push-shuffle frames, the per-node statistics, the reading and decoding statistics) and of
the JSON, text, HTML and Markdown reports (clock fixed; text also with full metrics; all four
also redacted), or the error a log raises, strict and lenient.

usage:
  python bench/fingerprint.py OUT.json [LOG ...]      fingerprint the logs (default: every sample
                                                     and public log, and bench/logs/*_seed)
  python bench/fingerprint.py --compare A.json B.json  list every difference
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
NOW_MS = 1_700_000_000_000


def default_logs() -> list[Path]:
    """Every sample log (older Spark versions' too), the public logs (the repository's corpus and
    ../shared), the bad inputs of the tests and the benchmark's seed logs."""
    samples = REPO / "sample_eventlogs"
    roots = [samples, *sorted(p for p in samples.glob("spark-*") if p.is_dir()), samples / "public"]
    roots.append(REPO.parent / "shared" / "eventlogs" / "public")
    roots.append(REPO / "tests" / "bad_inputs")
    logs: list[Path] = []
    for root in roots:
        if root.is_dir():
            logs += sorted(
                p
                for p in root.iterdir()
                if not p.name.startswith(".")
                and p.suffix not in (".md", ".json", ".txt")
                and p.name not in ("public", "pairs")
                and not (p.is_dir() and p.name.startswith("spark-"))
            )
    logs += sorted((REPO / "bench" / "logs").glob("*_seed"))
    logs += sorted((REPO / "bench" / "logs").glob("nds_q72_dataproc_2_2"))
    return logs


def _digest(data: bytes | str) -> str:
    raw = data.encode() if isinstance(data, str) else data
    return hashlib.sha256(raw).hexdigest()[:16]


def _frame_digest(frame: Any) -> str:
    # The values as text: the same values digest the same whatever their chunks, string views
    # or categorical dictionaries (IPC bytes vary with those).
    return _digest(repr(frame.schema) + str(frame.height) + _digest(frame.write_csv().encode()))


def fingerprint(path: Path, lenient: bool) -> dict[str, str]:
    """Digest every part of the analysis of one log (or the error it raises)."""
    from analyzer import api
    from analyzer.errors import AnalyzerError, Strictness
    from analyzer.report.options import ReportOptions

    strictness = Strictness.LENIENT if lenient else Strictness.STRICT
    try:
        analysis = api.analyze(str(path), strictness)
    except AnalyzerError as error:
        return {"error": f"{type(error).__name__}: {error}"}
    out = {
        "application": _digest(analysis.application.model_dump_json(exclude_defaults=True)),
        "tasks": _frame_digest(analysis.tasks.frame()),
        "slots": _frame_digest(analysis.slots.frame()),
        "push": _frame_digest(analysis.push_shuffle_tasks),
        "node_stats": _digest(repr(sorted(analysis.node_stats.items()))),
        "read_stats": _digest(repr(analysis.read_stats)),
        "decode_stats": _digest(
            repr(
                (
                    analysis.decode_stats.n_events,
                    list(analysis.decode_stats.unknown_event_types.items()),
                    sorted((k, sorted(v)) for k, v in analysis.decode_stats.unknown_fields.items()),
                )
            )
        ),
    }
    findings = api.find_issues(analysis)
    for fmt in ("json", "text", "html", "markdown"):
        options = ReportOptions(fmt=fmt, now_ms=NOW_MS)  # type: ignore[arg-type]
        out[f"report_{fmt}"] = _digest(api.render_report(analysis, options, findings))
    # The text report's full metrics and the redacted reports show figures the defaults do not.
    full = ReportOptions(fmt="text", metrics="full", now_ms=NOW_MS)
    out["report_text_full"] = _digest(api.render_report(analysis, full, findings))
    for fmt in ("json", "text", "html", "markdown"):
        redacted = ReportOptions(fmt=fmt, redact=True, now_ms=NOW_MS)  # type: ignore[arg-type]
        out[f"report_{fmt}_redact"] = _digest(api.render_report(analysis, redacted, findings))
    return out


def main() -> None:
    """Fingerprint logs, or compare two fingerprint files."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("out", nargs="?", type=Path)
    parser.add_argument("logs", nargs="*", type=Path)
    parser.add_argument("--compare", nargs=2, type=Path, metavar=("A", "B"))
    parser.add_argument("--strict-only", action="store_true", help="skip the lenient reading")
    args = parser.parse_args()
    if args.compare:
        a, b = (json.loads(p.read_text()) for p in args.compare)
        differences = 0
        for key in sorted(set(a) | set(b)):
            if a.get(key) != b.get(key):
                differences += 1
                print(f"{key}:\n  {a.get(key)}\n  {b.get(key)}")
        print(f"{differences} of {len(set(a) | set(b))} entries differ")
        sys.exit(1 if differences else 0)
    if args.out is None:
        parser.error("give OUT.json, or --compare A B")
    results: dict[str, Any] = {}
    for log in args.logs or default_logs():
        for lenient in (False,) if args.strict_only else (False, True):
            key = f"{log}{' (lenient)' if lenient else ''}"
            results[key] = fingerprint(log, lenient)
            print(key, results[key].get("error", "ok"), flush=True)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(results, indent=1, sort_keys=True))


if __name__ == "__main__":
    main()
