"""Committed records out of a read_committed read: what a table gets, as plain columns.

``committed_records`` walks the batches of one read (bytes below the last stable offset) the way a
read_committed consumer does (Kafka's Fetcher with its aborted-transactions list): a transactional batch
whose producer has an aborted transaction starting at or before it is skipped until that producer's
ABORT marker; control batches (markers) are never records. What remains are ``RecordColumns``: one list
per column, in offset order, ready for pyarrow. Pure functions over bytes; the caller does the I/O.
"""

from __future__ import annotations

import heapq
from collections.abc import Iterable
from dataclasses import dataclass, field

from storage.transaction_index import AbortedTxn
from wire import ControlRecordType, decode_records, iter_batch_headers, parse_control_record

__all__ = ["RecordColumns", "committed_records"]


@dataclass
class RecordColumns:
    """The records of one partition read for a table, column by column (``timestamp`` in ms, -1 for none)."""

    partition: int
    offsets: list[int] = field(default_factory=list)
    timestamps: list[int] = field(default_factory=list)
    keys: list[bytes | None] = field(default_factory=list)
    values: list[bytes | None] = field(default_factory=list)
    headers: list[list[tuple[str, bytes | None]]] = field(default_factory=list)
    size_bytes: int = 0  # batch bytes read for these records: what iceberg.target.file.size.bytes bounds

    def __len__(self) -> int:
        return len(self.offsets)

    def extend(self, other: RecordColumns) -> None:
        self.offsets += other.offsets
        self.timestamps += other.timestamps
        self.keys += other.keys
        self.values += other.values
        self.headers += other.headers
        self.size_bytes += other.size_bytes


def committed_records(partition: int, data: bytes, start_offset: int, aborted: Iterable[AbortedTxn]
                      ) -> tuple[RecordColumns, int]:
    """(the committed records of ``data`` at or after ``start_offset``, the offset after its last batch).

    ``data`` holds whole batches as the log returns them; ``aborted`` the aborted transactions overlapping
    them. The next offset is ``start_offset`` when ``data`` holds no batch. Raises RecordError for a batch
    that does not decode (a corrupt log): the caller stops translating that partition.
    """
    out = RecordColumns(partition)
    pending = [(a.first_offset, a.producer_id) for a in aborted]
    heapq.heapify(pending)
    aborted_producers: set[int] = set()
    next_offset = start_offset
    for pos, header in iter_batch_headers(data):
        next_offset = max(next_offset, header.next_offset)
        out.size_bytes += header.total_size
        while pending and pending[0][0] <= header.last_offset:
            aborted_producers.add(heapq.heappop(pending)[1])
        if header.is_control:
            if header.is_transactional and header.producer_id in aborted_producers:
                _, markers = decode_records(data, pos)
                if markers and parse_control_record(markers[0])[0] == ControlRecordType.ABORT:
                    aborted_producers.discard(header.producer_id)
            continue
        if header.is_transactional and header.producer_id in aborted_producers:
            continue
        if header.next_offset <= start_offset:
            continue
        _, records = decode_records(data, pos)
        for record in records:
            offset = header.base_offset + record.offset_delta
            if offset < start_offset:
                continue
            out.offsets.append(offset)
            out.timestamps.append(header.timestamp_of(record))
            out.keys.append(record.key)
            out.values.append(record.value)
            out.headers.append(record.headers)
    return out, next_offset
