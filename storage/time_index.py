"""The time index (``.timeindex``): sparse map from timestamps to offsets within a segment.

On disk (Kafka's TimeIndex): 12-byte entries, ``timestamp int64`` then ``relative_offset int32``,
big-endian, preallocated and trimmed as AbstractIndex says. An entry (timestamp, offset) means: the
largest timestamp in the segment up to ``offset`` is ``timestamp``, and ``offset`` is the last offset of
the batch holding it; any record with a larger timestamp comes after ``offset``. When a segment becomes
inactive or is closed, its largest timestamp is appended (so retention reads the segment's age from the
last entry), which is why the index counts as full one entry early.

Invariants: timestamps strictly increase, offsets never decrease. Serialized by the owning log's lock.
"""

from __future__ import annotations

import struct
from bisect import bisect_right
from typing import NamedTuple

from storage.errors import CorruptIndexError
from storage.index import INT32_MAX, AbstractIndex

__all__ = ["TimeIndex", "TimestampOffset", "NO_TIMESTAMP"]

NO_TIMESTAMP = -1
_ENTRY = struct.Struct(">qi")


class TimestampOffset(NamedTuple):
    timestamp: int
    offset: int


class TimeIndex(AbstractIndex):
    """``<base_offset>.timeindex`` (see the module docstring)."""

    ENTRY_SIZE = 12

    def _parse(self, data: bytes, n: int) -> tuple[int, int, int]:
        timestamp, relative = _ENTRY.unpack_from(data, n * 12)
        return timestamp, self.base_offset + relative, relative

    def _check_order(self, key: int, value: int, prev_key: int, prev_value: int) -> bool:
        return key > prev_key and value >= prev_value

    def is_full(self) -> bool:
        # The last slot is kept for the entry appended when the segment is rolled or closed.
        return len(self.keys) >= self.max_entries - 1

    @property
    def last_entry(self) -> TimestampOffset:
        if not self.keys:
            return TimestampOffset(NO_TIMESTAMP, self.base_offset)
        return TimestampOffset(self.keys[-1], self.values[-1])

    def entry(self, n: int) -> TimestampOffset:
        return TimestampOffset(self.keys[n], self.values[n])

    def lookup(self, target_timestamp: int) -> TimestampOffset:
        """The last entry whose timestamp is <= ``target_timestamp``; (-1, base_offset) when none."""
        slot = bisect_right(self.keys, target_timestamp) - 1
        if slot < 0:
            return TimestampOffset(NO_TIMESTAMP, self.base_offset)
        return TimestampOffset(self.keys[slot], self.values[slot])

    def maybe_append(self, timestamp: int, offset: int, skip_full_check: bool = False) -> None:
        """Append (timestamp, offset) if ``timestamp`` is larger than the last entry's."""
        if not skip_full_check and self.is_full():
            raise ValueError(f"Attempt to append to a full time index (size = {self.entries}).")
        keys = self.keys
        if keys:
            if offset < self.values[-1]:
                raise ValueError(f"Attempt to append an offset ({offset}) to slot {self.entries} no larger than "
                                 f"the last offset appended ({self.values[-1]}) to {self.path}.")
            last = keys[-1]  # the last entry's timestamp (no tuple built)
            if timestamp < last:
                raise ValueError(f"Attempt to append a timestamp ({timestamp}) to slot {self.entries} no larger "
                                 f"than the last timestamp appended ({last}) to {self.path}.")
        else:
            last = NO_TIMESTAMP
        if timestamp > last:
            if len(keys) >= self.max_entries:
                self.resize((len(keys) + 1) * self.ENTRY_SIZE)  # the reserved slot of a trimmed index
            relative = offset - self.base_offset
            if not 0 <= relative <= INT32_MAX:
                self.relative_offset(offset)  # raises
            self._write_entry(timestamp, offset, _ENTRY.pack(timestamp, relative))

    def truncate_to(self, offset: int) -> None:
        """Remove every entry whose offset is >= ``offset``."""
        slot = bisect_right(self.values, offset) - 1
        if slot < 0:
            keep = 0
        elif self.values[slot] == offset:
            keep = slot
            while keep > 0 and self.values[keep - 1] == offset:
                keep -= 1
        else:
            keep = slot + 1
        self.truncate_to_entries(keep)

    def sanity_check(self) -> None:
        super().sanity_check()
        if self.entries and self.last_entry.timestamp < self.keys[0]:
            raise CorruptIndexError(f"Corrupt time index found, time index file ({self.path}) has non-zero size "
                                    f"but the last timestamp is {self.last_entry.timestamp} which is less than the "
                                    f"first timestamp {self.keys[0]}")
        if self.entries and self.last_entry.offset < self.base_offset:
            raise CorruptIndexError(f"Corrupt time index found, time index file ({self.path}) has non-zero size "
                                    f"but the last offset is {self.last_entry.offset} which is less than the first "
                                    f"offset {self.base_offset}")
        if self.length % self.ENTRY_SIZE:
            raise CorruptIndexError(f"Time index file {self.path} is corrupt, found {self.length} bytes which is "
                                    f"neither positive nor a multiple of {self.ENTRY_SIZE}")
