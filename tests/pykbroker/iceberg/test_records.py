"""committed_records: what a read_committed consumer would see of a read, as columns."""

from __future__ import annotations

from pykbroker.iceberg.records import committed_records
from storage.transaction_index import AbortedTxn
from wire import (
    CompressionType,
    ControlRecordType,
    Record,
    build_batch,
    build_control_batch,
    build_simple_batch,
)

T = 1_700_000_000_000


def plain(base: int, *values: bytes, **kw) -> bytes:
    return build_simple_batch(list(values), timestamp=T + base, base_offset=base, **kw)


def txn(base: int, pid: int, *values: bytes) -> bytes:
    return plain(base, *values, producer_id=pid, producer_epoch=0, base_sequence=0, is_transactional=True)


def marker(base: int, pid: int, kind: ControlRecordType) -> bytes:
    return build_control_batch(kind, producer_id=pid, producer_epoch=0, base_offset=base, timestamp=T,
                               partition_leader_epoch=0, coordinator_epoch=0)


def test_aborted_batches_and_markers_are_left_out():
    data = (plain(0, b"a", b"b") + txn(2, 7, b"aborted1") + txn(3, 8, b"kept") + txn(4, 7, b"aborted2")
            + marker(5, 7, ControlRecordType.ABORT) + marker(6, 8, ControlRecordType.COMMIT) + txn(7, 7, b"later"))
    columns, next_offset = committed_records(3, data, 0, [AbortedTxn(7, 2, 5, 2)])
    assert columns.values == [b"a", b"b", b"kept", b"later"]
    assert columns.offsets == [0, 1, 3, 7] and next_offset == 8
    assert columns.partition == 3 and columns.timestamps[:2] == [T, T] and columns.size_bytes == len(data)


def test_start_inside_a_batch_and_compressed_records_with_headers():
    batch = build_batch([Record(0, 0, b"k0", b"v0"), Record(1, 5, b"k1", b"v1", [("h", b"x"), ("n", None)])],
                        base_offset=10, base_timestamp=T, compression=CompressionType.ZSTD)
    columns, next_offset = committed_records(0, batch, 11, [])
    assert (columns.offsets, columns.keys, columns.timestamps, next_offset) == ([11], [b"k1"], [T + 5], 12)
    assert columns.headers == [[("h", b"x"), ("n", None)]]


def test_nothing_read_keeps_the_offset():
    columns, next_offset = committed_records(0, b"", 42, [])
    assert len(columns) == 0 and next_offset == 42
