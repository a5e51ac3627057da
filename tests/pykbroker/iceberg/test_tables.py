"""TableWriter against a real SQLite catalog: offsets in snapshots, and two writers never writing a record twice."""

from __future__ import annotations

import pytest

pytest.importorskip("pyiceberg.catalog.sql")

from pyiceberg.exceptions import CommitFailedException  # noqa: E402

from pykbroker.iceberg.config import IcebergTopicConfig  # noqa: E402
from pykbroker.iceberg.records import RecordColumns  # noqa: E402
from pykbroker.iceberg.tables import TableWriter, committed_offsets, open_catalog  # noqa: E402

CONFIG = IcebergTopicConfig(mode="key_value")


def batch(partition: int, start: int, end: int) -> RecordColumns:
    n = end - start
    return RecordColumns(partition, list(range(start, end)), [1_700_000_000_000] * n, [None] * n,
                         [str(o).encode() for o in range(start, end)], [[] for _ in range(n)])


def writer(tmp_path, topic_id: str = "id-1") -> TableWriter:
    return TableWriter(open_catalog("sql", "", "", str(tmp_path)), "kafka", "t", topic_id)


def rows(w: TableWriter) -> list[tuple[int, int]]:
    table = w.catalog.load_table(w.identifier)
    return sorted((r["partition"], r["offset"]) for r in table.scan().to_arrow().to_pylist())


def test_offsets_accumulate_across_commits_and_partitions(tmp_path):
    w = writer(tmp_path)
    assert w.offsets(CONFIG) == {}
    w.commit(CONFIG, [batch(0, 0, 3)], {0: None}, {0: 3})
    result = w.commit(CONFIG, [batch(1, 0, 2)], {1: None}, {1: 2})
    assert result.offsets == {0: 3, 1: 2} and result.rows == 2 and not result.stale
    assert w.offsets(CONFIG) == {0: 3, 1: 2}
    assert writer(tmp_path, "id-2").offsets(CONFIG) == {}  # a new topic of the same name starts over
    assert w.catalog.load_table(w.identifier).properties["commit.retry.num-retries"] == "0"


def test_a_writer_behind_the_table_writes_nothing(tmp_path):
    a, b = writer(tmp_path), writer(tmp_path)
    a.commit(CONFIG, [batch(0, 0, 5)], {0: None}, {0: 5})
    result = b.commit(CONFIG, [batch(0, 0, 5), batch(1, 0, 1)], {0: None, 1: None}, {0: 5, 1: 1})
    assert result.stale == (0,) and result.rows == 1
    assert rows(a) == [(0, o) for o in range(5)] + [(1, 0)]


class _Racing(TableWriter):
    """Another writer commits between this one's load of the table and its append."""

    def __init__(self, other: TableWriter, *args) -> None:
        super().__init__(*args)
        self.other = other

    def load_or_create(self, config):
        table = super().load_or_create(config)
        if self.other is not None:
            other, self.other = self.other, None
            other.commit(config, [batch(0, 0, 4)], {0: None}, {0: 4})
        return table


def test_a_commit_racing_another_fails_instead_of_writing_twice(tmp_path):
    a = writer(tmp_path)
    a.load_or_create(CONFIG)
    b = _Racing(a, a.catalog, "kafka", "t", "id-1")
    with pytest.raises(CommitFailedException):
        b.commit(CONFIG, [batch(0, 0, 4)], {0: None}, {0: 4})
    assert rows(a) == [(0, o) for o in range(4)]
    assert committed_offsets(a.catalog.load_table(a.identifier), "id-1") == {0: 4}


def test_compaction_rewrites_small_files_keeping_rows_and_offsets(tmp_path):
    from pykbroker.iceberg.config import PartitionField

    config = IcebergTopicConfig(mode="key_value", partition_spec=(PartitionField("day", "timestamp"),
                                                                  PartitionField("identity", "partition")))
    w = writer(tmp_path)
    day = 86_400_000
    for i in range(6):  # six commits: per commit one file in each of (day 0, p0), (day 1, p0), (day 0, p1)
        a, b, c = batch(0, 2 * i, 2 * i + 1), batch(0, 2 * i + 1, 2 * i + 2), batch(1, i, i + 1)
        b.timestamps = [1_700_000_000_000 + day]
        w.commit(config, [RecordColumns(0, a.offsets + b.offsets, a.timestamps + b.timestamps, a.keys + b.keys,
                                        a.values + b.values, a.headers + b.headers), c],
                 {0: 2 * i or None, 1: i or None}, {0: 2 * i + 2, 1: i + 1})
    before = rows(w)
    table = w.catalog.load_table(w.identifier)
    assert len(list(table.scan().plan_files())) == 18
    lines: list[str] = []
    assert w.compact(config, 5, lines.append) == 18
    table = w.catalog.load_table(w.identifier)
    assert len(list(table.scan().plan_files())) == 3
    assert rows(w) == before and len(before) == 18
    assert committed_offsets(table, "id-1") == {0: 12, 1: 6}
    assert table.current_snapshot().summary.additional_properties["pykbroker.offsets"] == '{"0": 12, "1": 6}'
    assert lines[0] == "iceberg: compacting kafka.t: 3 table partitions of 5 or more small files"
    assert "compacting kafka.t 1/3: partition timestamp_day=" in lines[1] and "6 files" in lines[1]
    assert w.compact(config, 5, lines.append) == 0


def test_time_ranges_of_partition_values():
    from pykbroker.iceberg.tables import _time_range

    assert _time_range("day", 1) == ("1970-01-02T00:00:00+00:00", "1970-01-03T00:00:00+00:00")
    assert _time_range("hour", 25) == ("1970-01-02T01:00:00+00:00", "1970-01-02T02:00:00+00:00")
    assert _time_range("month", 23) == ("1971-12-01T00:00:00+00:00", "1972-01-01T00:00:00+00:00")
    assert _time_range("year", 56) == ("2026-01-01T00:00:00+00:00", "2027-01-01T00:00:00+00:00")


def test_switching_the_mode_of_an_existing_table_adds_columns(tmp_path):
    import json as json_

    schema_mode = IcebergTopicConfig(mode="value_schema", value_schema=(("id", "integer"),))
    w = writer(tmp_path)
    w.commit(CONFIG, [batch(0, 0, 2)], {0: None}, {0: 2})
    one = batch(0, 2, 3)
    one.values = [json_.dumps({"id": 7}).encode()]
    w.commit(schema_mode, [one], {0: 2}, {0: 3})
    w.commit(CONFIG, [batch(0, 3, 4)], {0: 3}, {0: 4})
    table = w.catalog.load_table(w.identifier)
    got = sorted(table.scan().to_arrow().to_pylist(), key=lambda r: r["offset"])
    assert [(r["offset"], r["value"], r["id"]) for r in got] == [(0, b"0", None), (1, b"1", None), (2, None, 7),
                                                                 (3, b"3", None)]


def test_dead_letters_are_written_once_when_the_table_commit_is_retried(tmp_path):
    schema_mode = IcebergTopicConfig(mode="value_schema", value_schema=(("id", "integer"),))
    w = writer(tmp_path)
    bad = batch(0, 0, 3)
    bad.values = [b"nope", b'{"id": 1}', b"[]"]

    class Crash(Exception):
        pass

    original = w.catalog.load_table

    def crash_after_dead_letters(identifier):  # the dead letters are in; the table commit dies
        if identifier == w.identifier and w.catalog.table_exists(w.dlq_identifier):
            raise Crash()
        return original(identifier)

    w.load_or_create(schema_mode)
    w.catalog.load_table = crash_after_dead_letters
    with pytest.raises(Crash):
        w.commit(schema_mode, [bad], {0: None}, {0: 3})
    w.catalog.load_table = original
    result = w.commit(schema_mode, [bad], {0: None}, {0: 3})
    assert (result.rows, result.dead_letters) == (1, 2)
    dead = w.catalog.load_table(w.dlq_identifier).scan().to_arrow().to_pylist()
    assert sorted(r["offset"] for r in dead) == [0, 2]
