"""Reading remote segments: records from an offset, through a bounded cache of fetched chunks.

``RemoteLogReader.read`` finds the position of an offset with the segment's remote offset index (fetched once
and cached), then reads the ``.log`` object in fixed-size chunks (``CHUNK_SIZE``) kept in a ``ChunkCache`` of
at most ``max_bytes`` (least recently used out first), and returns whole batches: those holding offsets at or
after the fetch offset and below ``max_offset``, at most ``max_bytes`` of them (the first one whole anyway
with ``min_one_message``). Batches found in one cached chunk are returned as a view of it (no copy); only a range
spanning chunks is joined. Blocking (object-store I/O): called from threads; the cache has its own lock.
"""

from __future__ import annotations

import struct
import threading
import uuid
from bisect import bisect_right
from collections import OrderedDict
from collections.abc import Callable
from functools import partial
from typing import NamedTuple

from storage.remote.metadata import RemoteLogSegmentMetadata
from storage.remote.storage_manager import RemoteStorageManager
from storage.segment import TimestampAndOffset, search_batch
from storage.transaction_index import AbortedTxn, TxnIndexSearchResult, collect_aborted_txns, parse_entries
from wire import iter_batch_headers

__all__ = ["CHUNK_SIZE", "ChunkCache", "RemoteLogReader", "RemoteRead"]

CHUNK_SIZE = 4 << 20  # one ranged GET per 4 MiB read: most 1 MiB fetches are then a view of one chunk
_HEADER = struct.Struct(">qi")  # base offset, batch length (the 12 bytes of LOG_OVERHEAD)
_LAST_OFFSET_DELTA = struct.Struct(">i")  # at byte 23 of a v2 batch
_INDEX_ENTRY = struct.Struct(">ii")  # relative offset, position
_TIME_ENTRY = struct.Struct(">qi")  # timestamp, relative offset


class ChunkCache:
    """Fetched bytes by key, least recently used evicted once the total passes ``max_bytes``."""

    def __init__(self, max_bytes: int) -> None:
        self.max_bytes = max_bytes
        self._entries: OrderedDict[tuple, bytes] = OrderedDict()
        self._size = 0
        self._lock = threading.Lock()
        self.hits = 0
        self.misses = 0

    @property
    def size_in_bytes(self) -> int:
        return self._size

    def get(self, key: tuple, load: Callable[[], bytes]) -> bytes:
        with self._lock:
            data = self._entries.get(key)
            if data is not None:
                self._entries.move_to_end(key)
                self.hits += 1
                return data
            self.misses += 1
        data = load()  # outside the lock: two threads may load the same chunk, the second one is dropped
        with self._lock:
            if key not in self._entries:
                self._entries[key] = data
                self._size += len(data)
                while self._size > self.max_bytes and len(self._entries) > 1:
                    _, old = self._entries.popitem(last=False)
                    self._size -= len(old)
        return data

    def invalidate(self, segment_id: uuid.UUID) -> None:
        with self._lock:
            for key in [k for k in self._entries if k[0] == segment_id]:
                self._size -= len(self._entries.pop(key))


class RemoteRead(NamedTuple):
    records: bytes | memoryview  # a view of one cached chunk when the records lie in one (no copy)
    next_offset: int  # the offset after the last record returned (the fetch offset when none)


class RemoteLogReader:
    """Records of remote segments (see the module docstring)."""

    def __init__(self, rsm: RemoteStorageManager, cache: ChunkCache, chunk_size: int = CHUNK_SIZE) -> None:
        self.rsm = rsm
        self.cache = cache
        self.chunk_size = chunk_size

    def _index(self, m: RemoteLogSegmentMetadata) -> tuple[list[int], list[int]]:
        data = self.cache.get((m.segment_id, "index"), lambda: self.rsm.fetch_index(m, "index"))
        offsets, positions = [], []
        for i in range(0, len(data) - len(data) % 8, 8):
            rel, pos = _INDEX_ENTRY.unpack_from(data, i)
            if i and rel == 0 and pos == 0:
                break  # preallocated tail
            offsets.append(m.start_offset + rel)
            positions.append(pos)
        return offsets, positions

    def find_offset_by_timestamp(self, m: RemoteLogSegmentMetadata, timestamp: int,
                                 starting_offset: int) -> TimestampAndOffset | None:
        """The first record of the segment at or after ``starting_offset`` whose timestamp is >= ``timestamp``
        (the remote time index narrows where to start, as LogSegment.findOffsetByTimestamp does locally)."""
        index = self.cache.get((m.segment_id, "timeindex"), partial(self.rsm.fetch_index, m, "timeindex"))
        from_offset = m.start_offset
        for i in range(0, len(index) - len(index) % 12, 12):
            ts, rel = _TIME_ENTRY.unpack_from(index, i)
            if ts >= timestamp or (i and ts == 0 and rel == 0):
                break
            from_offset = m.start_offset + rel
        offsets, positions = self._index(m)
        j = bisect_right(offsets, max(from_offset, starting_offset)) - 1
        position = positions[j] if j >= 0 else 0
        while position < m.segment_size_in_bytes:
            head = self._bytes(m, position, 12)
            if len(head) < 12:
                return None
            size = _HEADER.unpack_from(head)[1] + 12
            data = self._bytes(m, position, size)
            for _, header in iter_batch_headers(data):
                if header.max_timestamp >= timestamp:
                    found = search_batch(data, header, timestamp, starting_offset)
                    if found is not None:
                        return found
            position += size
        return None

    def aborted_transactions(self, segments: list[RemoteLogSegmentMetadata], fetch_offset: int,
                             upper_bound_offset: int) -> TxnIndexSearchResult:
        """Aborted transactions overlapping [fetch_offset, upper_bound_offset) in the transaction indexes of
        ``segments`` (in offset order, from the one holding ``fetch_offset``); complete when one entry's last stable
        offset reached the upper bound, else later (local) segments must be searched too."""
        found: list[AbortedTxn] = []
        for m in segments:
            if m.end_offset < fetch_offset or m.txn_index_empty:
                continue
            data = self.cache.get((m.segment_id, "txnindex"), partial(self.rsm.fetch_index, m, "txnindex"))
            result = collect_aborted_txns(parse_entries(data)[0], fetch_offset, upper_bound_offset)
            found += result.aborted_transactions
            if result.is_complete:
                return TxnIndexSearchResult(found, True)
        return TxnIndexSearchResult(found, False)

    def _chunk(self, m: RemoteLogSegmentMetadata, n: int, held: dict[int, bytes] | None = None) -> bytes:
        """Chunk ``n`` of the segment's data, through the cache (and ``held``: the chunks one read already has)."""
        if held is not None and n in held:
            return held[n]
        chunk_start = n * self.chunk_size
        chunk = self.cache.get((m.segment_id, n), partial(
            self.rsm.fetch_log_segment, m, chunk_start, min(chunk_start + self.chunk_size, m.segment_size_in_bytes)))
        if held is not None:
            held[n] = chunk
        return chunk

    def _view(self, m: RemoteLogSegmentMetadata, start: int, length: int,
              held: dict[int, bytes] | None = None) -> bytes | memoryview:
        """Bytes [start, start + length) of the segment (cut at its end): a view of the cached chunk when they lie in
        one, else one join of the chunks' views (the only copy)."""
        end = min(start + length, m.segment_size_in_bytes)
        if start >= end:
            return b""
        n = start // self.chunk_size
        chunk_start = n * self.chunk_size
        chunk = self._chunk(m, n, held)
        if end <= chunk_start + len(chunk):
            return memoryview(chunk)[start - chunk_start:end - chunk_start]
        parts = [memoryview(chunk)[start - chunk_start:]]
        pos = chunk_start + len(chunk)
        while pos < end:
            n = pos // self.chunk_size
            chunk_start = n * self.chunk_size
            chunk = self._chunk(m, n, held)
            if not chunk:
                break
            parts.append(memoryview(chunk)[pos - chunk_start:end - chunk_start])
            pos = chunk_start + len(chunk)
        return b"".join(parts)

    def _bytes(self, m: RemoteLogSegmentMetadata, start: int, length: int) -> bytes:
        return bytes(self._view(m, start, length))

    def read(self, m: RemoteLogSegmentMetadata, fetch_offset: int, max_bytes: int, max_offset: int,
             min_one_message: bool) -> RemoteRead:
        offsets, positions = self._index(m)
        i = bisect_right(offsets, fetch_offset) - 1
        position = positions[i] if i >= 0 else 0
        # Batch headers are walked from the indexed position (views of the cached chunks, no copies) to find the
        # range of whole batches to return; the answer is one view of it (one join when it spans two chunks).
        held: dict[int, bytes] = {}
        first = end = -1
        next_offset = fetch_offset
        pos = position
        size_limit = m.segment_size_in_bytes
        while pos + 27 <= size_limit:
            head = self._view(m, pos, 27, held)
            if len(head) < 27:
                break
            base_offset, batch_length = _HEADER.unpack_from(head)
            size = batch_length + 12
            if base_offset >= max_offset or pos + size > size_limit:
                break
            last_offset = base_offset + _LAST_OFFSET_DELTA.unpack_from(head, 23)[0]
            if last_offset >= fetch_offset:
                taken = 0 if first < 0 else end - first
                if taken + size > max_bytes and (taken or not min_one_message):
                    break
                first = pos if first < 0 else first
                end = pos + size
                next_offset = last_offset + 1
            pos += size
        return RemoteRead(self._view(m, first, end - first, held) if first >= 0 else b"", next_offset)
