"""The planning step of a batch run, directly: a listing and a manifest in, a plan out."""

from __future__ import annotations

import json
import pickle

import pytest

from analyzer.batch.jobs import Job, JobSettings
from analyzer.batch.layout import MAX_KEY_BYTES, app_key, is_app_key
from analyzer.batch.manifest import Fingerprint, Manifest, ManifestEntry, parse_manifest
from analyzer.batch.plan import (
    BatchPlan,
    Candidate,
    Criteria,
    ListedLog,
    plan_batch,
    select_logs,
)
from analyzer.eventlog.discover import AppInfo
from analyzer.insights import Thresholds
from analyzer.report.batch_index import AppSummary
from analyzer.report.options import ReportOptions

NOW_MS = 1_700_000_000_000
SETTINGS = JobSettings(max_memory_mb=1024, timeout_s=60)
DIGEST = SETTINGS.digest()
LIMITS = SETTINGS.limits_str()


def _listed(
    name: str,
    app_id: str | None = None,
    *,
    completed: bool = True,
    error: str | None = None,
    age_ms: int = 0,
    app_name: str = "etl",
) -> ListedLog:
    info = AppInfo(
        path=f"/logs/{name}",
        app_id=app_id if app_id is not None else name,
        name=app_name,
        completed=completed,
        error=error,
    )
    return ListedLog(name, info, NOW_MS - age_ms)


def _fp(name: str, size: int = 100, version: int = 1) -> Fingerprint:
    return Fingerprint(size_bytes=size, modified_ms=version, digest=f"{name}-{version}")


def _cand(log: ListedLog, size: int = 100, version: int = 1) -> Candidate:
    return Candidate(log, log.info.path, _fp(log.log_name, size, version))


def _summary(app_id: str) -> AppSummary:
    return AppSummary(app_id, None, "etl", 0, 1, 1, "completed", 0, 0, 0, None, None)


def _entry(
    log: ListedLog,
    key: str | None,
    *,
    ok: bool = True,
    version: int = 1,
    settings: str = DIGEST,
    limits: str | None = None,
) -> ManifestEntry:
    return ManifestEntry(
        log_name=log.log_name,
        log_path=log.info.path,
        fingerprint=_fp(log.log_name, version=version),
        settings=settings,
        ok=ok,
        app_key=key if ok else None,
        error=None if ok else "bad",
        limits=limits,
        summary=_summary(log.log_name) if ok else None,
    )


def _plan(
    listed: list[ListedLog],
    candidates: list[Candidate],
    manifest: Manifest | None = None,
    reports_on_disk: set[str] | None = None,
    failed: list[tuple[str, str]] | None = None,
    settings: JobSettings = SETTINGS,
) -> BatchPlan:
    return plan_batch(
        present={log.log_name for log in listed},
        candidates=candidates,
        failed=failed or [],
        manifest=manifest or Manifest(),
        reports_on_disk=reports_on_disk or set(),
        settings=settings.digest(),
        limits=settings.limits_str(),
    )


def test_select_applies_since_match_and_completion() -> None:
    listed = [
        _listed("new", "app-1"),
        _listed("old", "app-2", age_ms=3 * 86_400_000),
        _listed("running", "app-3", completed=False),
        _listed("broken", error="line 1 is not a JSON object"),
        _listed("other", "job-4", app_name="reporting"),
    ]
    day = Criteria(now_ms=NOW_MS, max_age_ms=86_400_000)
    chosen = select_logs(listed, day)
    assert [log.log_name for log in chosen.selected] == ["new", "other"]
    assert chosen.failed == (("broken", "line 1 is not a JSON object"),)
    matched = select_logs(listed, Criteria(now_ms=NOW_MS, match="^app-", include_incomplete=True))
    assert [log.log_name for log in matched.selected] == ["new", "old", "running"]
    assert matched.failed == ()  # an unreadable log has no id to match
    by_name = select_logs(listed, Criteria(now_ms=NOW_MS, match="report"))
    assert [log.log_name for log in by_name.selected] == ["other"]


def test_first_run_analyzes_everything_biggest_first() -> None:
    listed = [_listed("a"), _listed("b"), _listed("c")]
    cands = [_cand(listed[0], 10), _cand(listed[1], 30), _cand(listed[2], 20)]
    plan = _plan(listed, cands)
    assert [j.log_name for j in plan.jobs] == ["b", "c", "a"]
    assert [j.app_key for j in plan.jobs] == ["b", "c", "a"]
    assert plan.unchanged == () and plan.failed == () and plan.kept == ()
    assert plan.jobs[0] == Job("b", "/logs/b", "b", _fp("b", 30))


def test_unchanged_logs_are_skipped_unless_their_report_is_gone() -> None:
    a, b = _listed("a"), _listed("b")
    manifest = Manifest({"a": _entry(a, "a"), "b": _entry(b, "b")})
    plan = _plan([a, b], [_cand(a), _cand(b)], manifest, reports_on_disk={"a"})
    assert [e.log_name for e in plan.unchanged] == ["a"]
    assert [(j.log_name, j.app_key) for j in plan.jobs] == [("b", "b")]


def test_changed_log_new_settings_and_other_limits_analyze_again() -> None:
    a, b, c = _listed("a"), _listed("b"), _listed("c")
    manifest = Manifest(
        {
            "a": _entry(a, "a", version=1),
            "b": _entry(b, "b", settings="another-digest"),
            "c": _entry(c, None, ok=False, limits="512 MiB, 60 s"),
        }
    )
    plan = _plan([a, b, c], [_cand(a, version=2), _cand(b), _cand(c)], manifest, {"a", "b"})
    assert sorted(j.log_name for j in plan.jobs) == ["a", "b", "c"]
    same_limits = Manifest({"c": _entry(c, None, ok=False, limits=LIMITS)})
    again = _plan([c], [_cand(c)], same_limits)
    assert again.jobs == () and again.n_failed_unchanged == 1


def test_thresholds_change_the_settings_digest() -> None:
    tuned = JobSettings(report=ReportOptions(thresholds=Thresholds(skew_min_tasks=9)))
    assert tuned.digest() != JobSettings().digest()
    assert JobSettings(max_memory_mb=9999).digest() == JobSettings().digest()


def test_gone_and_unreadable_logs_leave_the_manifest() -> None:
    a, b, gone = _listed("a"), _listed("b"), _listed("gone")
    manifest = Manifest({n: _entry(log, n) for n, log in (("a", a), ("b", b), ("gone", gone))})
    plan = _plan([a, b], [_cand(a)], manifest, {"a", "b"}, failed=[("b", "cannot read")])
    assert [e.log_name for e in plan.kept] == ["a"]
    assert plan.failed == (("b", "cannot read"),)


def test_logs_outside_the_selection_stay_in_the_manifest() -> None:
    a, b = _listed("a"), _listed("b")
    manifest = Manifest({"a": _entry(a, "a"), "b": _entry(b, "b")})
    plan = _plan([a, b], [_cand(a)], manifest, {"a", "b"})
    assert [e.log_name for e in plan.kept] == ["a", "b"]
    assert plan.jobs == ()


def test_two_logs_of_one_application_get_distinct_keys_kept_across_runs() -> None:
    first, copy = _listed("app-1.zstd", "app-1"), _listed("app-1-copy", "app-1")
    plan = _plan([first, copy], [_cand(first), _cand(copy)])
    keys = {j.log_name: j.app_key for j in plan.jobs}
    assert keys["app-1-copy"] == "app-1"  # the first by log name
    assert keys["app-1.zstd"].startswith("app-1~") and is_app_key(keys["app-1.zstd"])
    # Next run, the log that had the plain key changed: both keep their keys.
    manifest = Manifest({n: _entry(log, keys[n]) for n, log in (("app-1.zstd", first),)})
    manifest.entries["app-1-copy"] = _entry(copy, "app-1")
    again = _plan(
        [first, copy], [_cand(first), _cand(copy, version=2)], manifest, set(keys.values())
    )
    assert {j.log_name: j.app_key for j in again.jobs} == {"app-1-copy": "app-1"}


def test_keys_differing_only_in_case_do_not_share_a_directory() -> None:
    upper, lower = _listed("l1", "App-1"), _listed("l2", "app-1")
    plan = _plan([upper, lower], [_cand(upper), _cand(lower)])
    keys = [j.app_key.casefold() for j in plan.jobs]
    assert len(set(keys)) == 2


def test_a_hand_edited_key_in_the_manifest_is_not_trusted() -> None:
    a = _listed("a", "app-a")
    manifest = Manifest({"a": _entry(a, "../../etc", version=0)})
    plan = _plan([a], [_cand(a)], manifest)
    assert [j.app_key for j in plan.jobs] == ["app-a"]


@pytest.mark.parametrize(
    "app_id",
    [
        "index.html",
        "manifest.json",
        "tables",
        "apps",
        ".batch.lock",
        "..",
        ".",
        "a/b",
        "x" * 300,
        "evil\x1b]0;owned\x07\r\nid",
        "-rf",
        "",
        "ü" * 100,
        "CON",
        "a" * 100,
    ],
)
def test_app_keys_are_safe_bounded_names(app_id: str) -> None:
    key = app_key(app_id, None, "log-1")
    assert is_app_key(key)
    assert len(key.encode()) <= MAX_KEY_BYTES < 255
    assert key not in (".", "..") and not key.startswith((".", "-")) and "/" not in key
    assert app_key(app_id, "2", "log-1") != key


def test_plan_records_pickle() -> None:
    a = _listed("a")
    plan = _plan([a], [_cand(a)])
    assert pickle.loads(pickle.dumps(plan)) == plan
    assert pickle.loads(pickle.dumps(SETTINGS)) == SETTINGS


def test_manifest_of_the_old_layout_names_its_report_dirs() -> None:
    old = json.dumps(
        {"format_version": 1, "entries": {"x": {"report_dir": "app-1"}, "y": {"report_dir": None}}}
    )
    loaded = parse_manifest(old)
    assert loaded.legacy_report_dirs == ("app-1",) and not loaded.manifest.entries
    assert parse_manifest('{"Event": "SparkListenerLogStart"}\n{"Event": "x"}').foreign
    a = _listed("a")
    manifest = Manifest({"a": _entry(a, "a")})
    assert parse_manifest(manifest.to_json()).manifest == manifest
