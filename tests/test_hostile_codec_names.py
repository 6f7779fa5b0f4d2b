"""Codec by content: a log's codec is found from its first bytes (zstd and lz4 magic, xerial
snappy header, `ZV` for lzf, gzip magic, `{` for plain JSON); the file name is only a hint, and
a mismatch is a reading note, not an error. Decompressed logs named `x.json` or `x.jsonl` read."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from eventlog_samples import SAMPLES, public, sample_file
from typer.testing import CliRunner

from analyzer import api
from analyzer.cli import app
from analyzer.errors import UnknownCodecError
from analyzer.eventlog.source import resolve_log

PLAIN = SAMPLES / "local-1795320224872"
CODECS = ("zstd", "lz4", "lzf", "snappy")
NAMES = (
    *("app-1", "app-1.json", "app-1.jsonl", "app-1.zstd", "app-1.lz4", "app-1.lzf"),
    *("app-1.snappy", "app-1.gz", "app-1.zst", "app-1.inprogress", "app-1.lz4.inprogress"),
)


def _events(path: Path) -> tuple[str | None, int, int]:
    analysis = api.analyze(path)
    return (
        analysis.application.app_id,
        analysis.decode_stats.n_events,
        len(analysis.application.executions),
    )


@pytest.mark.parametrize("codec", CODECS)
def test_a_compressed_log_reads_under_any_name(tmp_path: Path, codec: str) -> None:
    original = sample_file(codec)
    expected = _events(original)
    for name in NAMES:
        path = tmp_path / name
        shutil.copy(original, path)
        assert _events(path) == expected, name
        part = resolve_log(str(path)).parts[0]
        assert part.codec == codec
        said = name.removesuffix(".inprogress").rsplit(".", 1)
        if len(said) == 2 and said[1] == codec:
            assert part.codec_note is None, name
        else:
            assert part.codec_note is not None and f"read as {codec}" in part.codec_note, name
        path.unlink()


@pytest.mark.parametrize("name", ["x.json", "x.jsonl", "x", "x.log", "x.txt", "x.ndjson"])
def test_a_plain_log_named_json_reads_without_a_note(
    runner: CliRunner, tmp_path: Path, name: str
) -> None:
    path = tmp_path / name
    shutil.copy(PLAIN, path)
    result = runner.invoke(app, ["report", str(path), "--sections", "summary"])
    assert result.exit_code == 0, result.output
    assert resolve_log(str(path)).parts[0].codec_note is None
    assert _events(path) == _events(PLAIN)


def test_a_mismatch_is_a_note_in_every_format(runner: CliRunner, tmp_path: Path) -> None:
    path = tmp_path / "app-1.zstd"
    shutil.copy(sample_file("lz4"), path)
    note = "app-1.zstd holds lz4 data but its name says zstd: read as lz4"
    for fmt in ("text", "markdown", "html", "json"):
        result = runner.invoke(app, ["report", str(path), "--format", fmt])
        assert result.exit_code == 0, result.output
        assert note in result.output, fmt


def test_plain_json_in_a_gz_named_part_of_a_databricks_log(tmp_path: Path) -> None:
    db = tmp_path / "db"
    shutil.copytree(public("db_sim_eventlog"), db)
    expected = _events(db)
    # The rotated piece decompressed but kept its name; the live file compressed.
    import gzip

    rotated = db / "eventlog-2021-06-15--15-00.gz"
    rotated.write_bytes(gzip.decompress(rotated.read_bytes()))
    live = db / "eventlog"
    live.write_bytes(gzip.compress(live.read_bytes()))
    source = resolve_log(str(db))
    assert [p.codec for p in source.parts] == ["none", "gz"]
    assert all(p.codec_note for p in source.parts)
    assert _events(db) == expected


def test_unknown_content_under_an_unknown_extension_is_still_refused(tmp_path: Path) -> None:
    path = tmp_path / "app-1.bz2"
    path.write_bytes(b"BZh91AY&SY" + bytes(100))
    with pytest.raises(UnknownCodecError):
        resolve_log(str(path))
