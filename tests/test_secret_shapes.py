"""`--redact` hides secrets written in free text: passwords, tokens and keys outside configuration.

A corpus of secret shapes checks the scrubber one shape at a time, with the plan text and our own
text it must leave alone. Then a real log (the public Python UDF log) gets the secrets a user
could put into an application name, a SQL description, a plan, a job description, a job group
and job tags, and none of them may survive in any format, nor in batch's index, Parquet tables
and job history.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson
import pytest
from eventlog_samples import PUBLIC, public_logs, sample_logs
from typer.testing import CliRunner

from analyzer import api
from analyzer.eventlog.lines import ReadStats, iter_lines
from analyzer.eventlog.source import resolve_log
from analyzer.redact import Redactor, scrub_secrets
from analyzer.report.options import ReportOptions

R = "*********(redacted)"

CAUGHT = [
    # key=value and key: value pairs whose key names a secret
    ("etl password=hunter2", f"etl password={R}"),
    ("login passwd=hunter2 pwd=hunter3", f"login passwd={R} pwd={R}"),
    ("spark.hadoop.fs.s3a.secret.key=abc/DEF", f"spark.hadoop.fs.s3a.secret.key={R}"),
    ("fs.s3a.access.key=AKIDxyz", f"fs.s3a.access.key={R}"),
    ("api_key: abcd1234 next", f"api_key: {R} next"),
    ("X-Auth-Token: 8f14e45fceea", f"X-Auth-Token: {R}"),
    ("client_secret = 's3 cr3t'", f"client_secret = '{R}'"),
    ("credentials=eyJ0eXAi", f"credentials={R}"),
    ("key=abc123", f"key={R}"),
    ('{"password": "hunter2", "user": "etl"}', f'{{"password": "{R}", "user": "etl"}}'),
    ("Map(path -> /x, password -> hunter2)", f"Map(path -> /x, password -> {R})"),
    ("spark-submit --password hunter2 --user etl", f"spark-submit --password {R} --user etl"),
    # URLs: user-info and query parameters
    (
        "jdbc:postgresql://db:5432/sales?user=etl&password=pgPw1&ssl=true",
        f"jdbc:postgresql://db:5432/sales?user=etl&password={R}&ssl=true",
    ),
    (
        "jdbc:sqlserver://h:1433;databaseName=x;user=sa;password=S3cret!;",
        f"jdbc:sqlserver://h:1433;databaseName=x;user=sa;password={R};",
    ),
    ("mysql://etl:hunter2@db/x", f"mysql://etl:{R}@db/x"),
    ("jdbc:oracle:thin:scott/tiger@db:1521/orcl", f"jdbc:oracle:thin:scott/{R}@db:1521/orcl"),
    (
        "https://acct.blob.core.windows.net/c?sv=2022&sig=Zm9vYmFy%2Bx",
        f"https://acct.blob.core.windows.net/c?sv=2022&sig={R}",
    ),
    # Authorization headers
    ("Authorization: Bearer abc.def-123", f"Authorization: Bearer {R}"),
    ("curl -H 'Authorization: Basic dXNlcjpwYXNz' u", f"curl -H 'Authorization: Basic {R}' u"),
    ("proxy-authorization=Negotiate YIIGhgYJKoZI", f"proxy-authorization=Negotiate {R}"),
    ("sent bearer 9a8b7c6d5e4f to the API", f"sent bearer {R} to the API"),
    ("sent Basic dXNlcjpwYXNz", f"sent Basic {R}"),
    # token shapes
    (
        "jwt eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxIn0.abc123def then",
        f"jwt {R} then",
    ),
    ("stripe sk_live_4eC39HqLyjWDarjtT1zdp7dc", f"stripe {R}"),
    ("rk_test_4eC39HqLyjWDarjt", R),
    ("gh ghp_abcdefghijklmnopqrstuvwxyz0123456789", f"gh {R}"),
    ("github_pat_11ABCDEFG0abcdefghijklmnopqrstuvwxyz", R),
    ("glpat-abcdefghij0123456789", R),
    ("slack xoxb-123456789012-abcdefghij", f"slack {R}"),
    ("AIzaSyA1234567890abcdefghijklmnopqrstuv", R),
    ("AWS key AKIAIOSFODNN7EXAMPLE in use", f"AWS key {R} in use"),
    ("session ASIAIOSFODNN7EXAMPLE", f"session {R}"),
    ("-----BEGIN RSA PRIVATE KEY-----\nMIIEabc\n-----END RSA PRIVATE KEY-----", R),
    # long base64 or hex runs next to a secret word
    ("aws secret wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY", f"aws secret {R}"),
    ("the token 3f2a9c1e7b4d4e5f9a0b1c2d is set", f"the token {R} is set"),
]

KEPT = [
    "HashAggregate(keys=[key#12], functions=[count(1)])",
    "SELECT key, count(*) FROM t GROUP BY key",
    "SELECT * FROM t WHERE key = 5",
    "Exchange hashpartitioning(key#3, 200), ENSURE_REQUIREMENTS, [plan_id=50]",
    "ReadSchema: struct<key:int,password:string,token:string>",
    "Spread the hot key: for joins enable spark.sql.adaptive.skewJoin.enabled (AQE)",
    "Filter (isnotnull(token#5) AND (token#5 = abc))",
    "author=Bob monkey=1 keyspace=ks",
    "key.serializer=org.apache.kafka.common.serialization.StringSerializer",
    "basic statistics with a bearer token",
    "spark.authenticate=true",
    "partition key: dt",
    "Sort [key#1 ASC NULLS FIRST], true, 0",
    "secret=*********(redacted)",
    '[{"key":"Vendor","value":"Databricks"},{"key":"ClusterName","value":"etl"}]',
    "Map(key -> k1, value -> v1)",
    "hdfs://nn:8020/warehouse/tokens/part-0001.parquet",
    "task 3 passed in 12 ms",
]


@pytest.mark.parametrize(("raw", "expected"), CAUGHT, ids=[c[0][:30] for c in CAUGHT])
def test_secret_shapes_are_redacted(raw: str, expected: str) -> None:
    assert scrub_secrets(raw) == expected


@pytest.mark.parametrize("text", KEPT)
def test_plan_text_and_our_words_are_kept(text: str) -> None:
    assert scrub_secrets(text) == text


def _strings(value: Any) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for key, item in value.items():
            yield key
            yield from _strings(item)
    elif isinstance(value, list):
        for item in value:
            yield from _strings(item)


@pytest.mark.slow
@pytest.mark.parametrize("log", [*public_logs(), *sample_logs()], ids=lambda p: p.name)
def test_no_false_positive_in_any_string_of_a_real_log(log: Path) -> None:
    """Real logs hold no secret shapes: every string of every event (names, plans, metric names,
    configuration, call sites) comes through unchanged."""
    seen: set[str] = set()
    for line in iter_lines(resolve_log(str(log)), ReadStats()):
        try:
            event = orjson.loads(line.data)
        except orjson.JSONDecodeError:
            continue  # the public log with a malformed line
        seen.update(_strings(event))
    changed = [s[:200] for s in seen if scrub_secrets(s) != s]
    assert changed == []


def test_the_redactor_hides_secrets_inside_other_tokens() -> None:
    r = Redactor()
    # A URL holding a password is still one path token: nothing of it is left.
    url = r.text("read jdbc:postgresql://db.corp.internal:5432/sales?user=etl&password=pgPw1")
    assert "pgPw1" not in url and "sales" not in url and "path-1" in url
    assert r.free_text("note password='hunter2' done") == f"note password='{R}' done"
    assert r.text("Authorization: Bearer abc.def-123") == f"Authorization: Bearer {R}"


# --- a real log with secrets where users put them -------------------------------------------------

SECRETS = {
    "app": "pw-in-app-name-7731",
    "jdbc": "jdbcPw-4412",
    "user_info": "userinfoPw-9921",
    "bearer": "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJldGwifQ.c2lnbmF0dXJlMTIz",
    "stripe": "sk_live_4eC39HqLyjWDarjtT1zdp7dc",
    "github": "ghp_0123456789abcdefghijABCDEFGHIJ012345",
    "aws": "AKIAIOSFODNN7EXAMPLE",
    "plan": "planTok-5531",
    "node": "nodeSecret-8812",
}
"""Each secret, its name telling where it was put."""


def _with_secrets(event: dict[str, Any]) -> dict[str, Any]:
    kind = event["Event"]
    s = SECRETS
    if kind == "SparkListenerApplicationStart":
        event["App Name"] = f"nightly etl password={s['app']}"
    elif kind.endswith("SQLExecutionStart"):
        event["description"] = (
            f"load from jdbc:postgresql://db:5432/sales?user=etl&password={s['jdbc']} "
            f"and https://etl:{s['user_info']}@api.corp.internal/v1 "
            f"with header Authorization: Bearer {s['bearer']}"
        )
        event["physicalPlanDescription"] += f"\nOptions: Map(url -> x, token -> {s['plan']})\n"
        info = event["sparkPlanInfo"]
        info["simpleString"] += f" [secret={s['node']}]"
    elif kind == "SparkListenerJobStart":
        props = event.setdefault("Properties", {})
        props["spark.job.description"] = f"upload with {s['stripe']}"
        props["spark.jobGroup.id"] = f"group {s['github']}"
        props["spark.job.tags"] = f"aws-{s['aws']}"
    return event


@pytest.fixture(scope="module")
def secret_log(tmp_path_factory: pytest.TempPathFactory) -> Path:
    source = PUBLIC / "python_udf_eventlog"
    if not source.exists():
        pytest.skip(f"{source} not present")
    out = tmp_path_factory.mktemp("secrets") / "logs" / "app-with-secrets"
    out.parent.mkdir()
    lines = [
        orjson.dumps(_with_secrets(orjson.loads(line.data))).decode()
        for line in iter_lines(resolve_log(str(source)), ReadStats())
    ]
    out.write_text("\n".join(lines) + "\n")
    return out


def _leaked(text: str) -> list[str]:
    return [name for name, secret in SECRETS.items() if secret in text]


def test_the_log_carries_its_secrets_into_plain_reports(secret_log: Path) -> None:
    analysis = api.analyze(secret_log)
    shown = "\n".join(
        api.render_report(analysis, ReportOptions(fmt=fmt, metrics="full", now_ms=0))  # type: ignore[arg-type]
        for fmt in ("text", "html", "json", "markdown")
    )
    # Without --redact every secret reaches some format: the check below proves something.
    assert sorted(set(SECRETS) - set(_leaked(shown))) == []


@pytest.mark.parametrize("fmt", ["text", "html", "json", "markdown"])
def test_no_secret_survives_redaction_in_any_format(secret_log: Path, fmt: str) -> None:
    analysis = api.analyze(secret_log)
    options = ReportOptions(fmt=fmt, metrics="full", redact=True, now_ms=0)  # type: ignore[arg-type]
    text = api.render_report(analysis, options)
    assert _leaked(text) == []
    assert R in text


def test_no_secret_survives_a_redacted_batch(
    runner: CliRunner, secret_log: Path, tmp_path: Path
) -> None:
    import polars as pl

    from analyzer.cli import app

    out = tmp_path / "out"
    args = ["batch", str(secret_log.parent), "-o", str(out), "-j", "1", "--redact"]
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output
    written = [out / "index.html", *sorted((out / "apps").rglob("report.*"))]
    assert len(written) == 4
    for path in written:
        assert _leaked(path.read_text()) == [], path.name
    tables = sorted((out / "tables").rglob("*.parquet"))
    assert any("history" in p.parts for p in tables)
    for table in tables:
        frame = pl.read_parquet(table)
        cells = "\n".join(
            str(v) for name in frame.columns if frame[name].dtype == pl.String for v in frame[name]
        )
        assert _leaked(cells) == [], table
    runs = pl.concat(pl.read_parquet(p) for p in tables if "runs" in p.parts)
    assert runs["job_key"].to_list() == [f"nightly etl password={R}"]
    manifest = json.loads((out / "manifest.json").read_text())
    assert _leaked(json.dumps(manifest)) == []
