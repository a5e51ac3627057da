"""The committer's side of a cluster's Iceberg topics without brokers: files leaders wrote for overlapping
offset ranges (a failover re-read them) are committed once each, in a chain from the table's offsets."""

from __future__ import annotations

import pytest

pytest.importorskip("pyiceberg.catalog.sql")

from pykbroker.iceberg.commits import CommitterShard, FilesRecord, chain, commits_partition  # noqa: E402
from tests.pykbroker.iceberg.test_tables import CONFIG, batch, rows, writer  # noqa: E402


def files(w, partition: int, start: int, end: int) -> FilesRecord:
    [record], dead = w.write_files(CONFIG, [batch(partition, start, end)], {partition: (start, end)})
    assert dead == 0 and record.rows == end - start and record.paths
    return record


def test_files_of_offsets_in_the_table_are_never_added(tmp_path):
    w = writer(tmp_path)
    shard = CommitterShard(0)
    old_leader = [files(w, 0, 0, 4), files(w, 0, 4, 8)]
    new_leader = [files(w, 0, 4, 6), files(w, 0, 6, 10), files(w, 1, 0, 3)]
    for offset, record in enumerate([old_leader[0], *new_leader, old_leader[1]]):
        shard.replay(offset, FilesRecord.decode(*record.encode()))
    assert shard.next_offset == 5 and shard.dirty == {("t", "id-1")}
    pending = shard.pending[("t", "id-1")]
    assert [(r.start, r.end) for r in chain(pending[0], None)] == [(0, 4), (4, 8)]  # the longer of two at 4
    result = w.commit_files(CONFIG, pending)
    assert result.offsets == {0: 8, 1: 3}
    shard.prune("t", "id-1", result.offsets)
    # What is left (6..10 from the new leader) no longer continues the table: nothing is added twice.
    assert w.commit_files(CONFIG, shard.pending.get(("t", "id-1"), {})).snapshot_id is None
    assert rows(w) == [(0, o) for o in range(8)] + [(1, o) for o in range(3)]
    # The leader that re-reads from the table's offset continues the chain.
    shard.replay(5, files(w, 0, 8, 10))
    assert w.commit_files(CONFIG, shard.pending[("t", "id-1")]).offsets == {0: 10, 1: 3}
    assert rows(w) == [(0, o) for o in range(10)] + [(1, o) for o in range(3)]


def test_commits_partition_is_stable():
    assert commits_partition("orders") == commits_partition("orders") and 0 <= commits_partition("orders") < 5
