"""Broken and hostile event logs at the reading and replay layers: each becomes one clear
`AnalyzerError` (or, with LENIENT, a counted and recorded condition), never a crash.

The logs are real ones (sample_eventlogs/ and the public set) with one thing broken.
"""

from __future__ import annotations

import os
import shutil
import socket
import stat
from collections.abc import Callable
from pathlib import Path

import orjson
import pytest
import zstandard
from eventlog_builder import (
    application_end,
    application_start,
    job_start,
    log_start,
    stage_info,
    write_log,
)
from eventlog_samples import SAMPLES, public, sample_file
from hostile_inputs import LOG_START, MIB, deep_plan_line, lz4_of, newlines, zstd_of
from hypothesis import given, settings
from hypothesis import strategies as st

from analyzer import api
from analyzer.errors import (
    AnalyzerError,
    CorruptCompressedDataError,
    EmptyLogError,
    LineTooLongError,
    MalformedLineError,
    MissingRollingFileError,
    Strictness,
    TruncatedPartError,
)
from analyzer.eventlog import decoding
from analyzer.eventlog.codecs import MAX_CHUNK_BYTES, DecodeReport, iter_decompressed
from analyzer.eventlog.discover import discover_applications
from analyzer.eventlog.lines import Line, ReadStats, iter_lines
from analyzer.eventlog.source import resolve_log
from analyzer.report.options import ReportOptions

PLAIN_SAMPLE = "local-1795320224872"
"""A plain-text sample log: one SQL execution, 34 tasks (each with a TaskStart and a TaskEnd)."""
PUBLIC_ROLLING = "eventlog_v2_local-1623876083964"
SAMPLE_ROLLING = "eventlog_v2_local-1795320584980"


def _sample_lines() -> list[bytes]:
    path = SAMPLES / PLAIN_SAMPLE
    if not path.exists():
        pytest.skip(f"{path} not present")
    return path.read_bytes().rstrip(b"\n").split(b"\n")


def _write_log(tmp_path: Path, lines: list[bytes], name: str = "app-1") -> Path:
    path = tmp_path / name
    path.write_bytes(b"\n".join(lines) + b"\n")
    return path


def _edit_log(tmp_path: Path, edit: Callable[[list[bytes]], list[bytes]]) -> Path:
    return _write_log(tmp_path, edit(_sample_lines()))


def _index_of(lines: list[bytes], event: bytes, nth: int = 0) -> int:
    hits = [i for i, line in enumerate(lines) if line.startswith(b'{"Event":"' + event + b'"')]
    return hits[nth]


def _n_tasks(analysis: api.Analysis) -> int:
    return analysis.tasks.height


def read_all(path: Path, **options: object) -> tuple[list[Line], ReadStats]:
    stats = ReadStats()
    return list(iter_lines(resolve_log(str(path)), stats, **options)), stats  # type: ignore[arg-type]


# --- 1. decompression bombs and long lines (reading level; the CLI runs are in
# test_hostile_bombs.py) ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("codec", "build"),
    [
        ("zstd", lambda: zstd_of(newlines(64 * MIB))),
        ("lz4", lambda: lz4_of(newlines(64 * MIB))),
    ],
)
def test_decompression_bomb_chunks_are_bounded(codec: str, build: Callable[[], bytes]) -> None:
    import io

    data = build()
    report = DecodeReport(path="bomb")
    total = 0
    for chunk in iter_decompressed(io.BytesIO(data), codec, report):  # type: ignore[arg-type]
        assert len(chunk) <= MAX_CHUNK_BYTES
        total += len(chunk)
    assert total == 64 * MIB


def test_decompression_bomb_blank_runs_keep_line_numbers(tmp_path: Path) -> None:
    """Millions of blank lines between events: skipped in C, numbered exactly."""
    runs = [b"\n" * (3 * MIB), b" \n" * 100_000, b"\r\n\t\n" * 50_000, b"\n"]
    text = LOG_START + runs[0] + LOG_START + runs[1] + LOG_START + runs[2] + LOG_START + runs[3]
    path = tmp_path / "app-1.zstd"
    path.write_bytes(zstd_of([text]))
    lines, stats = read_all(path)
    expected = [(i + 1, d) for i, d in enumerate(text.split(b"\n")) if d.strip()]
    assert [(ln.line_no, ln.data) for ln in lines] == expected
    assert stats.n_lines == 4


@settings(max_examples=60, deadline=None, derandomize=True)
@given(
    segments=st.lists(
        st.sampled_from([LOG_START.rstrip(b"\n"), b"", b" ", b"\r", b"\t \t", b"{}"]),
        min_size=1,
        max_size=400,
    ),
    chunk_bytes=st.sampled_from([1, 7, 64, 4096]),
)
def test_decompression_bomb_sparse_and_dense_lines_split_alike(
    segments: list[bytes], chunk_bytes: int
) -> None:
    """Whatever the mix of blank and short lines and the chunking, lines and numbers are exact."""
    import tempfile

    text = LOG_START + b"\n".join(segments) + b"\n"
    old = decoding.READ_CHUNK_BYTES
    decoding.READ_CHUNK_BYTES = chunk_bytes
    try:
        with tempfile.TemporaryDirectory() as tmp:
            path = Path(tmp) / "app-1"
            path.write_bytes(text)
            got, _ = read_all(path)
    finally:
        decoding.READ_CHUNK_BYTES = old
    expected = [(i + 1, d) for i, d in enumerate(text.split(b"\n")) if d.strip()]
    assert [(ln.line_no, ln.data) for ln in got] == expected


def test_decompression_bomb_line_too_long_strict_names_file_and_line(tmp_path: Path) -> None:
    path = _write_log(tmp_path, [LOG_START.rstrip(), b"x" * 5000, LOG_START.rstrip()])
    with pytest.raises(LineTooLongError) as info:
        read_all(path, max_line_bytes=4096)
    assert f"{path}:2: " in str(info.value)
    assert str(info.value).endswith("[line-too-long]")


def test_decompression_bomb_line_too_long_lenient_skips_and_counts(tmp_path: Path) -> None:
    long_line = b'{"Event":"X","pad":"' + b"x" * 50_000 + b'"}'
    path = _write_log(tmp_path, [LOG_START.rstrip(), long_line, LOG_START.rstrip()])
    lines, stats = read_all(path, max_line_bytes=4096, strictness=Strictness.LENIENT)
    assert [ln.line_no for ln in lines] == [1, 3]
    assert stats.n_malformed_skipped == 1
    assert stats.malformed_examples == [f"{path}:2"]


def test_decompression_bomb_apps_head_read_is_bounded(tmp_path: Path) -> None:
    (tmp_path / "app-1.zstd").write_bytes(zstd_of(newlines(40 * MIB)))
    [info] = discover_applications(str(tmp_path))
    assert info.error is not None
    assert "first 32 MiB" in info.error


# --- 2. a cut in a part other than the last ------------------------------------------------


def _copy_rolling(tmp_path: Path, name: str, public_set: bool) -> Path:
    src = public(name) if public_set else SAMPLES / name
    if not src.exists():
        pytest.skip(f"{src} not present")
    dst = tmp_path / name
    shutil.copytree(src, dst)
    for path in dst.iterdir():
        path.chmod(stat.S_IRUSR | stat.S_IWUSR)
    return dst


def _part(log_dir: Path, index: int) -> Path:
    [path] = log_dir.glob(f"events_{index}_*")
    return path


def _cut(path: Path, n_bytes: int) -> None:
    path.write_bytes(path.read_bytes()[:n_bytes])


@pytest.mark.parametrize("fraction", [0.002, 0.5])
def test_truncated_middle_part_of_public_rolling_log_is_an_error(
    tmp_path: Path, fraction: float
) -> None:
    log_dir = _copy_rolling(tmp_path, PUBLIC_ROLLING, public_set=True)
    first = _part(log_dir, 1)
    _cut(first, int(first.stat().st_size * fraction))
    with pytest.raises(TruncatedPartError) as info:
        api.analyze(str(log_dir))
    assert str(first) in str(info.value)
    assert str(info.value).endswith("[truncated-part]")


def test_truncated_middle_part_says_where_the_cut_is(tmp_path: Path) -> None:
    """The public log's first part is one zstd frame: the message locates the cut (the part's
    last byte), not the frame's start, which is byte 0."""
    log_dir = _copy_rolling(tmp_path, PUBLIC_ROLLING, public_set=True)
    first = _part(log_dir, 1)
    _cut(first, 200_000)
    with pytest.raises(TruncatedPartError) as info:
        api.analyze(str(log_dir))
    message = str(info.value)
    assert message.startswith(f"{first} (byte 200000): this part is cut off mid-frame")
    assert "(the frame or block starts at byte 0)" in message
    assert "\n" not in message


def test_truncated_middle_part_lenient_is_recorded(tmp_path: Path) -> None:
    log_dir = _copy_rolling(tmp_path, PUBLIC_ROLLING, public_set=True)
    full = api.analyze(str(log_dir))
    first = _part(log_dir, 1)
    _cut(first, first.stat().st_size // 2)
    analysis = api.analyze(str(log_dir), Strictness.LENIENT)
    assert analysis.read_stats.truncated_parts == (str(first),)
    assert _n_tasks(analysis) < _n_tasks(full)
    assert full.read_stats.truncated_parts == ()


def test_truncated_middle_part_of_sample_rolling_log(tmp_path: Path) -> None:
    log_dir = _copy_rolling(tmp_path, SAMPLE_ROLLING, public_set=False)
    third = _part(log_dir, 3)
    _cut(third, third.stat().st_size - 100)
    with pytest.raises(TruncatedPartError, match=r"events_3_.*mid-frame"):
        api.analyze(str(log_dir))
    analysis = api.analyze(str(log_dir), Strictness.LENIENT)
    assert analysis.read_stats.truncated_parts == (str(third),)
    assert analysis.read_stats.incomplete_block_path is None


def test_truncated_middle_part_mid_line_in_plain_parts(tmp_path: Path) -> None:
    """Plain-text parts: a part that stops mid-line (not at a frame) is caught too."""
    log_dir = _copy_rolling(tmp_path, SAMPLE_ROLLING, public_set=False)
    for path in sorted(log_dir.glob("events_*.zstd")):
        with path.open("rb") as f:
            text = zstandard.ZstdDecompressor().stream_reader(f, read_across_frames=True).read()
        path.with_suffix("").write_bytes(text)
        path.unlink()
    second = _part(log_dir, 2)
    text = second.read_bytes()
    second.write_bytes(text[: text.index(b"\n", len(text) // 2) + 40])
    with pytest.raises(TruncatedPartError, match=r"events_2_.*:\d+: .*mid-line"):
        api.analyze(str(log_dir))
    analysis = api.analyze(str(log_dir), Strictness.LENIENT)
    assert analysis.read_stats.truncated_parts == (str(second),)


def test_truncated_last_part_is_tolerated(tmp_path: Path) -> None:
    log_dir = _copy_rolling(tmp_path, SAMPLE_ROLLING, public_set=False)
    last = _part(log_dir, 5)
    _cut(last, last.stat().st_size // 2)
    analysis = api.analyze(str(log_dir))
    assert analysis.read_stats.truncated_parts == ()
    assert analysis.read_stats.incomplete_block_path == str(last)


# --- 3. lines the reader skips are still checked --------------------------------------------


def test_glued_lines_are_malformed(tmp_path: Path) -> None:
    """A lost newline glues a TaskStart to the next line: that line is an error, not dropped."""

    def glue(lines: list[bytes]) -> list[bytes]:
        i = _index_of(lines, b"SparkListenerTaskStart")
        return [*lines[:i], lines[i] + lines[i + 1], *lines[i + 2 :]]

    path = _edit_log(tmp_path, glue)
    with pytest.raises(MalformedLineError, match=r"trailing characters"):
        api.analyze(str(path))
    analysis = api.analyze(str(path), Strictness.LENIENT)
    assert analysis.read_stats.n_malformed_skipped == 1


def test_nul_in_event_name_is_malformed(tmp_path: Path) -> None:
    def nul(lines: list[bytes]) -> list[bytes]:
        i = _index_of(lines, b"SparkListenerTaskEnd", 3)
        lines[i] = lines[i].replace(b"SparkListenerTaskEnd", b"SparkListenerTask\x00End", 1)
        return lines

    path = _edit_log(tmp_path, nul)
    with pytest.raises(MalformedLineError) as info:
        api.analyze(str(path))
    assert f"{path}:" in str(info.value)


def test_unknown_event_that_is_not_json_is_malformed(tmp_path: Path) -> None:
    def broken(lines: list[bytes]) -> list[bytes]:
        return [*lines[:5], b'{"Event":"com.example.MyEvent","x":}', *lines[5:]]

    path = _edit_log(tmp_path, broken)
    with pytest.raises(MalformedLineError, match=r":6: "):
        api.analyze(str(path))


def test_escaped_event_name_is_still_decoded(tmp_path: Path) -> None:
    """`\\u0054askEnd` is `TaskEnd` to a JSON parser (and to Spark): it must not be skipped."""

    def escape(lines: list[bytes]) -> list[bytes]:
        i = _index_of(lines, b"SparkListenerTaskEnd")
        lines[i] = lines[i].replace(b"SparkListenerTaskEnd", b"SparkListener\\u0054askEnd", 1)
        return lines

    full = api.analyze(str(SAMPLES / PLAIN_SAMPLE))
    analysis = api.analyze(str(_edit_log(tmp_path, escape)))
    assert _n_tasks(analysis) == _n_tasks(full) == 34


# --- 4. crashes that become one line (or are tolerated as Spark tolerates them) ------------


def _replace_in(
    event: bytes, old: bytes, new: bytes, nth: int = 0
) -> Callable[[list[bytes]], list[bytes]]:
    def edit(lines: list[bytes]) -> list[bytes]:
        i = _index_of(lines, event, nth)
        assert old in lines[i], (event, old)
        lines[i] = lines[i].replace(old, new, 1)
        return lines

    return edit


@pytest.mark.parametrize(
    ("where", "edit"),
    [
        (
            "a decoded field",
            _replace_in(b"SparkListenerApplicationStart", b'"App Name":"', b'"App Name":"\xff\xfe'),
        ),
        ("a skipped field", _replace_in(b"SparkListenerTaskEnd", b'"Host":"', b'"Host":"\xc3\x28')),
        (
            "a skipped event",
            _replace_in(b"SparkListenerTaskStart", b'"Host":"', b'"Host":"\xed\xa0\x80'),
        ),
    ],
)
def test_invalid_utf8_is_malformed(
    tmp_path: Path, where: str, edit: Callable[[list[bytes]], list[bytes]]
) -> None:
    path = _edit_log(tmp_path, edit)
    with pytest.raises(MalformedLineError, match=r"UTF-8"):
        api.analyze(str(path))
    analysis = api.analyze(str(path), Strictness.LENIENT)
    assert analysis.read_stats.n_malformed_skipped == 1, where


@pytest.mark.parametrize(
    "value", [b"9223372036854775808", b"-9223372036854775809", b"1" * 40, b"1e400"]
)
def test_out_of_range_task_metric_is_malformed(tmp_path: Path, value: bytes) -> None:
    path = _edit_log(
        tmp_path,
        _replace_in(
            b"SparkListenerTaskEnd",
            b'"Executor Run Time":',
            b'"Executor Run Time":' + value + b',"x":',
        ),
    )
    with pytest.raises(MalformedLineError, match=r"Executor Run Time"):
        api.analyze(str(path))
    analysis = api.analyze(str(path), Strictness.LENIENT)
    assert _n_tasks(analysis) == 33


def test_extreme_task_metrics_in_range_do_not_overflow(tmp_path: Path) -> None:
    """Java's extremes are valid; sums and differences computed from them must not crash."""
    longest = b"9223372036854775807"
    edits = [
        _replace_in(
            b"SparkListenerTaskEnd", b'"Launch Time":', b'"Launch Time":-' + longest + b',"x":'
        ),
        _replace_in(
            b"SparkListenerTaskEnd", b'"Finish Time":', b'"Finish Time":' + longest + b',"x":'
        ),
        _replace_in(
            b"SparkListenerTaskEnd",
            b'"Remote Bytes Read":',
            b'"Remote Bytes Read":' + longest + b',"x":',
            1,
        ),
        _replace_in(
            b"SparkListenerTaskEnd",
            b'"Local Bytes Read":',
            b'"Local Bytes Read":' + longest + b',"x":',
            1,
        ),
    ]

    def edit(lines: list[bytes]) -> list[bytes]:
        for one in edits:
            lines = one(lines)
        return lines

    analysis = api.analyze(str(_edit_log(tmp_path, edit)))
    assert _n_tasks(analysis) == 34


@pytest.mark.parametrize(
    "update", [b'"' + b"1" * 40 + b'"', b'"-' + b"9" * 30 + b'"', b"1" + b"0" * 30]
)
def test_huge_sql_metric_update_is_not_a_crash(tmp_path: Path, update: bytes) -> None:
    def edit(lines: list[bytes]) -> list[bytes]:
        for i, line in enumerate(lines):
            if line.startswith(b'{"Event":"SparkListenerTaskEnd"'):
                event = orjson.loads(line)
                for acc in event["Task Info"]["Accumulables"]:
                    if not str(acc.get("Name", "")).startswith("internal."):
                        key = b'"ID":%d,' % acc["ID"]
                        start = line.index(key)
                        at = line.index(b'"Update":', start) + len(b'"Update":')
                        end = line.index(b",", at)
                        lines[i] = line[:at] + update + line[end:]
                        return lines
        raise AssertionError("no SQL metric update found")

    analysis = api.analyze(str(_edit_log(tmp_path, edit)))
    assert _n_tasks(analysis) == 34


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        (b'"abc"', None),
        (b'"1180591620717411303424"', None),  # 2^70
        (b'" 0"', None),
        (b'"0_0"', None),
        (b'""', None),
        (b'"+0"', 0),
        (b'"0"', 0),
    ],
)
def test_execution_id_property_that_is_not_a_long(
    tmp_path: Path, raw: bytes, expected: int | None
) -> None:
    """Spark's SQL listener parses the property with `toLong`; a job whose id does not parse
    belongs to no SQL execution."""
    path = _edit_log(
        tmp_path,
        _replace_in(
            b"SparkListenerJobStart",
            b'"spark.sql.execution.id":"0"',
            b'"spark.sql.execution.id":' + raw,
        ),
    )
    analysis = api.analyze(str(path))
    job = analysis.application.jobs[0]
    assert job.execution_id == expected
    if expected is None:
        assert job.job_id not in analysis.application.executions[0].job_ids


@pytest.mark.parametrize("value", [b"-9223372036854775808", b"9223372036854775807"])
def test_out_of_range_timestamps_do_not_crash_below_the_report(
    tmp_path: Path, value: bytes
) -> None:
    def edit(lines: list[bytes]) -> list[bytes]:
        out = []
        for line in lines:
            for key in (b'"Timestamp":', b'"time":', b'"Submission Time":', b'"Completion Time":'):
                if key in line:
                    at = line.index(key) + len(key)
                    end = min(i for i in (line.find(b",", at), line.find(b"}", at)) if i >= 0)
                    line = line[:at] + value + line[end:]
            out.append(line)
        return out

    analysis = api.analyze(str(_edit_log(tmp_path, edit)))
    assert analysis.application.start_ms == int(value)
    findings = api.find_issues(analysis)
    for fmt in ("text", "html", "json"):
        report = api.render_report(analysis, ReportOptions(fmt=fmt, now_ms=0), findings)
        assert report  # worded as out of range, never a crash


@pytest.mark.parametrize("depth", [2000, 100_000])
def test_deeply_nested_plan_is_malformed(tmp_path: Path, depth: int) -> None:
    path = _edit_log(tmp_path, lambda lines: [*lines[:6], deep_plan_line(depth), *lines[6:]])
    with pytest.raises(MalformedLineError, match=r":7: .*nested"):
        api.analyze(str(path))
    analysis = api.analyze(str(path), Strictness.LENIENT)
    assert analysis.read_stats.n_malformed_skipped == 1


def test_nested_plan_within_the_decoder_limit_is_analyzed(tmp_path: Path) -> None:
    path = _edit_log(tmp_path, lambda lines: [*lines[:6], deep_plan_line(400), *lines[6:]])
    analysis = api.analyze(str(path))
    deep = [e for e in analysis.application.executions if e.execution_id == 99]
    assert len(deep[0].plans[0].graph.nodes) == 401


_DEEP_SCOPE = '{"a":' + "[" * 100_000 + "]" * 100_000 + ',"name":"Deep"}'


@pytest.mark.parametrize(
    ("scope", "names"),
    [
        (_DEEP_SCOPE, ()),  # nested too deep to read: no name, never a crash
        ('{"id":"1","name":" Odd ","v":NaN}', ("Odd",)),  # not strict JSON, read as Python does
        ('{"name":"Exchange","name":"Sort"}', ("Sort",)),  # a repeated key: its last value
        ('["Exchange"]', ()),  # not an object
        ("{not json", ()),
    ],
    ids=["deep", "nan", "repeated-key", "not-an-object", "not-json"],
)
def test_odd_rdd_scopes_give_names_or_none(
    tmp_path: Path, scope: str, names: tuple[str, ...]
) -> None:
    # Each RDD's operation scope is a JSON object written as a string inside the event.
    value = orjson.dumps(scope)

    def edit(lines: list[bytes]) -> list[bytes]:
        out = []
        for line in lines:
            if b'"Scope":' in line:
                event = orjson.loads(line)
                for info in [event.get("Stage Info"), *event.get("Stage Infos", [])]:
                    for rdd in (info or {}).get("RDD Info", []):
                        if "Scope" in rdd:
                            rdd["Scope"] = "@scope@"
                line = orjson.dumps(event).replace(b'"@scope@"', value)
            out.append(line)
        return out

    analysis = api.analyze(str(_edit_log(tmp_path, edit)))
    scoped = {stage.rdd_scope_names for stage in analysis.application.stages}
    assert scoped == {names}
    assert api.render_report(analysis, ReportOptions(fmt="text", now_ms=0))


# --- 5. clear messages ----------------------------------------------------------------------


def test_lz4_data_in_a_zstd_file_is_read_by_content_with_a_note(tmp_path: Path) -> None:
    # The content decides the codec; the name is a hint, and a mismatch a note, not an error.
    path = tmp_path / "app-1.zstd"
    shutil.copy(sample_file("lz4"), path)
    analysis = api.analyze(str(path))
    assert analysis.source.parts[0].codec == "lz4"
    note = analysis.source.parts[0].codec_note
    assert note == "app-1.zstd holds lz4 data but its name says zstd: read as lz4"
    assert analysis.application.app_id == api.analyze(sample_file("lz4")).application.app_id


def test_plain_json_in_a_compressed_file_is_read_with_a_note(tmp_path: Path) -> None:
    path = tmp_path / "app-1.lz4"
    shutil.copy(SAMPLES / PLAIN_SAMPLE, path)
    analysis = api.analyze(str(path))
    assert analysis.source.parts[0].codec == "none"
    assert "holds plain JSON lines data but its name says lz4" in str(
        analysis.source.parts[0].codec_note
    )


def test_utf8_bom_at_the_start_is_accepted(tmp_path: Path) -> None:
    path = tmp_path / "app-1"
    path.write_bytes(b"\xef\xbb\xbf" + (SAMPLES / PLAIN_SAMPLE).read_bytes())
    assert _n_tasks(api.analyze(str(path))) == 34
    zpath = tmp_path / "app-2.zstd"
    zpath.write_bytes(zstd_of([path.read_bytes()]))
    assert _n_tasks(api.analyze(str(zpath))) == 34


@pytest.mark.parametrize("ext", ["lz4", "lzf", "snappy"])
def test_file_cut_in_its_first_block_says_truncated(tmp_path: Path, ext: str) -> None:
    src = sample_file(ext)
    path = tmp_path / f"app-1.{ext}"
    path.write_bytes(src.read_bytes()[:30])
    with pytest.raises(EmptyLogError, match=r"ends inside its first compressed block.*truncated"):
        api.analyze(str(path))


def _log_dir_with_bad_entries(tmp_path: Path) -> Path:
    log_dir = tmp_path / "logs"
    log_dir.mkdir()
    shutil.copy(SAMPLES / PLAIN_SAMPLE, log_dir / PLAIN_SAMPLE)
    (log_dir / "app-dangling").symlink_to(log_dir / "no-such-file")
    (log_dir / "app-loop-a").symlink_to(log_dir / "app-loop-b")
    (log_dir / "app-loop-b").symlink_to(log_dir / "app-loop-a")
    (log_dir / "eventlog_v2_local-1").symlink_to(log_dir)  # a directory that contains itself
    os.mkfifo(log_dir / "app-fifo")
    sock = socket.socket(socket.AF_UNIX)
    sock.bind(str(log_dir / "app-socket"))
    sock.close()
    return log_dir


def test_dangling_symlinks_and_loops_are_listed_as_unreadable(tmp_path: Path) -> None:
    log_dir = _log_dir_with_bad_entries(tmp_path)
    infos = {Path(i.path).name: i for i in discover_applications(str(log_dir))}
    assert infos[PLAIN_SAMPLE].error is None
    assert "dangling" in (infos["app-dangling"].error or "")
    assert "symbolic links" in (infos["app-loop-a"].error or "")
    assert "symbolic links" in (infos["app-loop-b"].error or "")
    assert "not a regular file" in (infos["app-fifo"].error or "")
    assert "not a regular file" in (infos["app-socket"].error or "")
    assert "eventlog_v2_local-1" in infos


def test_report_on_a_fifo_is_refused_not_hung(tmp_path: Path) -> None:
    log_dir = _log_dir_with_bad_entries(tmp_path)
    with pytest.raises(AnalyzerError, match=r"not a regular file"):
        api.analyze(str(log_dir / "app-fifo"))


def test_corrupt_data_still_says_corrupt(tmp_path: Path) -> None:
    data = bytearray(zstd_of([(SAMPLES / PLAIN_SAMPLE).read_bytes()]))
    data[40:80] = bytes(40)
    path = tmp_path / "app-1.zstd"
    path.write_bytes(bytes(data))
    with pytest.raises(CorruptCompressedDataError):
        api.analyze(str(path))


def test_stage_declaring_billions_of_tasks_is_malformed(tmp_path: Path) -> None:
    """A stage that declares 2³¹ tasks would size per-task arrays of gigabytes: malformed."""
    events = [
        log_start("3.5.0"),
        application_start("local-huge", "huge", 1700000000000),
        job_start(0, 1700000000002, [stage_info(0, n_tasks=2147483647)]),
        application_end(),
    ]
    log = write_log(tmp_path / "local-huge", events)
    with pytest.raises(MalformedLineError, match="Number of Tasks"):
        api.analyze(str(log))


def test_two_rolling_files_of_one_index_are_named(tmp_path: Path) -> None:
    # events_01 reads as index 1, as Java's parseLong reads it: two files claim index 1, and the
    # error names them instead of calling the present events_2 missing.
    source = SAMPLES / "eventlog_v2_local-1795320584980"
    rolling = tmp_path / source.name
    shutil.copytree(source, rolling)
    shutil.copy(
        rolling / "events_1_local-1795320584980.zstd",
        rolling / "events_01_local-1795320584980.zstd",
    )
    with pytest.raises(MissingRollingFileError) as raised:
        resolve_log(str(rolling))
    assert "events_1 is there 2 times (events_01_local-1795320584980.zstd, " in str(raised.value)
    assert "missing" not in raised.value.message
