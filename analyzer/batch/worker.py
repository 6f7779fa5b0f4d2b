"""The per-application step of a batch run, the same on both engines: analyze once, render thrice.

`process_application` takes and returns plain dicts (picklable everywhere, also back from Spark
executors). It either writes the reports into the output directory itself, atomically, or returns
their text for the caller to write (a Spark executor that cannot see the output directory).
"""

from __future__ import annotations

import time
import traceback
from dataclasses import asdict
from pathlib import Path
from typing import Any

from analyzer import api
from analyzer.errors import AnalyzerError, LogNotFoundError, RemoteStorageError, Strictness
from analyzer.insights import Finding
from analyzer.report.batch_index import summarize
from analyzer.report.options import ReportFormat, ReportOptions

REPORT_FILES: dict[ReportFormat, str] = {
    "html": "report.html",
    "text": "report.txt",
    "json": "report.json",
}
"""Report format → file name inside an application's report directory."""


def _one_line(error: BaseException) -> str:
    lines = str(error).strip().splitlines()
    first = lines[0] if lines else ""
    return first if isinstance(error, AnalyzerError) else f"{type(error).__name__}: {first}"


def process_application(job: dict[str, Any]) -> dict[str, Any]:
    """Analyze one log and render its three reports; never raises for a bad log.

    `job` holds `log_path`, `log_name`, `report_dir` (the directory name under the output
    directory) and `out_dir`: write the reports there, or when it is None return their text in
    `files`. The result holds `ok`, `error`, `deterministic` (the error comes from the log, not
    from a bug), `summary`, `format_errors`, `files` and `elapsed_ms`.
    """
    started = time.monotonic()
    result: dict[str, Any] = {
        "log_name": job["log_name"],
        "ok": False,
        "error": None,
        "deterministic": False,
        "summary": None,
        "format_errors": {},
        "files": {},
        "elapsed_ms": 0,
    }
    try:
        analysis = api.analyze(job["log_path"], Strictness.STRICT)
        findings: list[Finding] | None
        try:
            findings = api.find_issues(analysis)
        except Exception as error:  # a bug in a rule must not cost the application its reports
            result["format_errors"]["insights"] = f"internal error: {_one_line(error)}"
            result["traceback"] = traceback.format_exc()
            findings = None
        result["summary"] = asdict(summarize(analysis, findings))
        rendered: dict[str, str] = {}
        for fmt, file_name in REPORT_FILES.items():
            options = ReportOptions(fmt=fmt)
            rendered[file_name] = api.render_report(analysis, options, findings or [])
        del analysis
        if "report.json" not in rendered:
            raise RuntimeError("the JSON report could not be rendered")
        out_dir = job.get("out_dir")
        if out_dir is None:
            result["files"] = rendered
        else:
            report_dir = Path(out_dir) / job["report_dir"]
            for file_name in REPORT_FILES.values():
                if file_name in rendered:
                    api.write_atomic(report_dir / file_name, rendered[file_name])
                else:  # a report of an older analysis would now be out of step with the others
                    (report_dir / file_name).unlink(missing_ok=True)
        result["ok"] = True
    except AnalyzerError as error:
        result["error"] = _one_line(error)
        # A log that cannot be reached from here (moved, unmounted, a remote outage) may be fine
        # next time; anything else is a property of the log's bytes.
        result["deterministic"] = not isinstance(error, LogNotFoundError | RemoteStorageError)
    except Exception as error:
        result["error"] = f"internal error: {_one_line(error)}"
        result["traceback"] = traceback.format_exc()
    result["elapsed_ms"] = int((time.monotonic() - started) * 1000)
    return result
