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
