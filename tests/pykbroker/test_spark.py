"""pykbroker.spark without a JVM: where a load resumes, which offset ranges a batch reads, the CLI's
argument handling. compat_tests/test_spark.py runs the load itself with Spark against a real broker."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pykbroker import cli
from pykbroker.spark import OFFSETS_FILE, STAGING_DIR, BatchResult, _next_ranges, committed_offsets


def commit(output: Path, batch: int, offsets: dict) -> None:
    """A committed batch directory as load() leaves it (data files left out)."""
    folder = output / f"batch={batch:08d}"
    folder.mkdir(parents=True)
    (folder / OFFSETS_FILE).write_text(json.dumps({"batch": batch, "offsets": offsets}))


def test_committed_offsets_of_nothing(tmp_path):
    assert committed_offsets(tmp_path / "missing") == (0, {})
    assert committed_offsets(tmp_path) == (0, {})


def test_committed_offsets_are_the_last_committed_batch(tmp_path):
    commit(tmp_path, 1, {"a": {"0": 5}})
    commit(tmp_path, 2, {"a": {"0": 9, "1": 3}, "b": {"0": 1}})
    # a batch being written is not committed, whatever it holds; other names are not batches
    (tmp_path / STAGING_DIR / "batch=00000003").mkdir(parents=True)
    (tmp_path / STAGING_DIR / "batch=00000003" / OFFSETS_FILE).write_text('{"offsets": {"a": {"0": 99}}}')
    (tmp_path / "batch=7").mkdir()
    assert committed_offsets(tmp_path) == (2, {"a": {0: 9, 1: 3}, "b": {0: 1}})


def test_next_ranges_start_new_partitions_at_the_log_start_and_cap_each_batch():
    log_start = {"a": {0: 0, 1: 4}, "b": {0: 10}}
    log_end = {"a": {0: 100, 1: 6}, "b": {0: 10}}
    start, end = _next_ranges(["a", "b"], {"a": {0: 20}}, log_start, log_end, 50, True)
    # b is empty: no range for it at all
    assert (start, end) == ({"a": {0: 20, 1: 4}}, {"a": {0: 70, 1: 6}})
    assert _next_ranges(["a", "b"], {"a": {0: 100, 1: 6}}, log_start, log_end, 50, True) == ({}, {})


def test_next_ranges_leave_offsets_below_the_log_start_to_spark():
    # offsets 3-9 were deleted: Spark's failOnDataLoss decides, so the range still starts at 3
    assert _next_ranges(["a"], {"a": {0: 3}}, {"a": {0: 10}}, {"a": {0: 12}}, 50, True) == \
        ({"a": {0: 3}}, {"a": {0: 12}})


def test_next_ranges_past_the_log_end_fail_or_start_again():
    args = (["a"], {"a": {0: 30}}, {"a": {0: 0}}, {"a": {0: 5}}, 50)
    with pytest.raises(RuntimeError, match="a-0: the output is at offset 30 but the log ends at 5"):
        _next_ranges(*args, True)
    assert _next_ranges(*args, False) == ({"a": {0: 0}}, {"a": {0: 5}})


def test_batch_progress_line():
    result = BatchResult(3, Path("/out/batch=00000003"), 2, 15, {"a": {0: 0, 1: 10}}, {"a": {0: 10, 1: 16}},
                         1.25)
    assert result.describe() == ("batch 3: 15 records (16 offsets) from 2 partitions of a in 2 tasks -> "
                                 "batch=00000003, offsets committed (1.2s)")


def test_cli_spark_load_arguments(capsys):
    with pytest.raises(SystemExit) as exit_:
        cli.main(["spark-load", "--help"])
    assert exit_.value.code == 0
    assert "--max-offsets-per-partition" in capsys.readouterr().out
    # checked before Spark starts
    assert cli.main(["spark-load", "--bootstrap", "x:1", "--topics", "a", "--output", "o",
                     "--option", "isolation.level"]) == 2
    assert "is not KEY=VALUE" in capsys.readouterr().err
    with pytest.raises(SystemExit) as exit_:
        cli.main(["spark-load", "--topics", "a"])
    assert exit_.value.code == 2
