"""The sample manifests: root-cause labels are well-formed, and labelled and paired logs exist.

`sample_eventlogs/.manifest.json` labels some applications with the findings they were built to
show (`expect`) or marks them as clean controls; `sample_eventlogs/pairs/.manifest.json` lists
pairs of runs of one job; `sample_eventlogs/spark-<X.Y>/.manifest.json` lists the logs an older
Spark version wrote. All are written by `scripts/make_sample_eventlogs.py`.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from eventlog_samples import PAIRS, SAMPLES, sample_logs, version_dirs
from oracle.saved import answers_path

from analyzer.eventlog.discover import discover_applications

MANIFEST = SAMPLES / ".manifest.json"
PAIRS_MANIFEST = PAIRS / ".manifest.json"
RULE_ID = re.compile(r"^[a-z]+(-[a-z]+)*$")
PAIR_CAUSES = {"more-input", "plan-change", "partitions", "skew", "fewer-cores", "faster"}


def _entries() -> list[dict[str, Any]]:
    if not MANIFEST.exists():
        pytest.skip(f"no {MANIFEST}; it is written by scripts/make_sample_eventlogs.py")
    return list(json.loads(MANIFEST.read_text())["logs"])


def _pairs() -> list[dict[str, Any]]:
    if not PAIRS_MANIFEST.exists():
        pytest.skip(f"no {PAIRS_MANIFEST}; it is written by scripts/make_sample_eventlogs.py")
    return list(json.loads(PAIRS_MANIFEST.read_text())["pairs"])


def test_every_manifest_entry_has_its_log() -> None:
    for entry in _entries():
        assert (SAMPLES / entry["file"]).exists(), entry["file"]


def test_labels_are_well_formed() -> None:
    labelled = [e for e in _entries() if "expect" in e]
    assert len([e for e in labelled if e["expect"]]) >= 11
    for entry in labelled:
        assert isinstance(entry["expect"], list), entry["workload"]
        for label in entry["expect"]:
            where = f"{entry['workload']}: {label}"
            assert RULE_ID.match(label["rule"]), where
            assert isinstance(label["node"], str) and label["node"].strip() == label["node"], where
            assert label["node"], where
            assert isinstance(label["execution"], (str, int)) and label["execution"] != "", where
            assert isinstance(label["execution_id"], int), where
            assert isinstance(label.get("note", ""), str), where
            if label["rule"] == "failed-query":
                message = label["message"]
                assert message and "\n" not in message, where
                assert not message.startswith("Traceback"), where


def test_clean_controls_expect_nothing() -> None:
    clean = [e for e in _entries() if e.get("clean")]
    assert len(clean) >= 2
    for entry in clean:
        assert entry["expect"] == [], entry["workload"]
    for entry in _entries():
        if entry.get("expect") == []:
            assert entry.get("clean") is True, entry["workload"]


def test_every_pair_has_its_two_logs() -> None:
    pairs = _pairs()
    assert {p["expect_cause"] for p in pairs} == PAIR_CAUSES
    for pair in pairs:
        directory = SAMPLES / pair["directory"]
        baseline = directory / pair["baseline"]["file"]
        candidate = directory / pair["candidate"]["file"]
        assert baseline.is_file() and candidate.is_file(), pair["pair"]
        assert baseline != candidate
        assert pair["change"], pair["pair"]
        infos = discover_applications(str(directory))
        assert sorted(Path(i.path).name for i in infos) == sorted([baseline.name, candidate.name])
        assert {i.name for i in infos} == {pair["app_name"]}
        assert all(i.completed and i.error is None for i in infos)


def test_pair_logs_are_not_listed_with_the_samples() -> None:
    if not PAIRS.is_dir():
        pytest.skip("no run pairs under sample_eventlogs/")
    listed = {Path(i.path).resolve() for i in discover_applications(str(SAMPLES))}
    assert not [p for p in listed if PAIRS.resolve() in p.parents]


def test_every_older_version_log_is_listed_and_has_its_history_server_answers() -> None:
    """Each `spark-<X.Y>/` holds logs of that version only, each in the manifest and README,
    each with the saved answers of that version's History Server beside it."""
    if not version_dirs():
        pytest.skip("no older-version samples under sample_eventlogs/")
    for directory in version_dirs():
        version = directory.name.removeprefix("spark-")
        entries = json.loads((directory / ".manifest.json").read_text())["logs"]
        readme = (directory / "README.md").read_text()
        listed = {e["file"] for e in entries}
        assert listed == {p.name for p in sample_logs() if p.parent == directory}
        for entry in entries:
            where = f"{directory.name}/{entry['file']}"
            assert entry["spark_version"].startswith(f"{version}."), where
            assert f"`{entry['file']}" in readme, where
            assert answers_path(directory / entry["file"]).is_file(), where
        assert sum(e["size_bytes"] for e in entries) < 2 * 1024 * 1024
