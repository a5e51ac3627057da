"""The offset index (``.index``): sparse map from offsets to positions in the segment's ``.log``.

On disk (Kafka's OffsetIndex): 8-byte entries, ``relative_offset int32`` (offset − base_offset) then
``position int32``, big-endian, preallocated and trimmed as AbstractIndex says. An entry (offset,
position) means: the batch starting at ``position`` has ``offset`` as its last offset, so every offset
above it is at or after ``position``. One entry is written per ``index.interval.bytes`` of log.

Invariants: offsets strictly increase, positions strictly increase. Serialized by the owning log's lock.
"""

from __future__ import annotations

import struct
from bisect import bisect_right
from typing import NamedTuple

from storage.errors import CorruptIndexError
from storage.index import INT32_MAX, AbstractIndex

__all__ = ["OffsetIndex", "OffsetPosition"]

_ENTRY = struct.Struct(">ii")


class OffsetPosition(NamedTuple):
    offset: int
    position: int


class OffsetIndex(AbstractIndex):
    """``<base_offset>.index`` (see the module docstring)."""

    ENTRY_SIZE = 8

    def _parse(self, data: bytes, n: int) -> tuple[int, int, int]:
        relative, position = _ENTRY.unpack_from(data, n * 8)
        return self.base_offset + relative, position, relative

    def _check_order(self, key: int, value: int, prev_key: int, prev_value: int) -> bool:
        return key > prev_key and value > prev_value

    @property
    def last_offset(self) -> int:
        return self.keys[-1] if self.keys else self.base_offset

    def entry(self, n: int) -> OffsetPosition:
        return OffsetPosition(self.keys[n], self.values[n])

    def lookup(self, target_offset: int) -> OffsetPosition:
        """The last entry whose offset is <= ``target_offset``; (base_offset, 0) when there is none."""
        slot = bisect_right(self.keys, target_offset) - 1
        if slot < 0:
            return OffsetPosition(self.base_offset, 0)
        return OffsetPosition(self.keys[slot], self.values[slot])

    def append(self, offset: int, position: int) -> None:
        """Add (offset, position); offsets must increase and the index must not be full."""
        keys = self.keys
        if len(keys) >= self.max_entries:  # is_full(), on every produce that adds an entry
            raise ValueError(f"Attempt to append to a full index (size = {self.entries}).")
        if keys and offset <= keys[-1]:
            raise ValueError(f"Attempt to append an offset ({offset}) to position {self.entries} no larger "
                             f"than the last offset appended ({keys[-1]}) to {self.path}.")
        relative = offset - self.base_offset
        if not 0 <= relative <= INT32_MAX:
            self.relative_offset(offset)  # raises
        self._write_entry(offset, position, _ENTRY.pack(relative, position))

    def truncate_to(self, offset: int) -> None:
        """Remove every entry whose offset is >= ``offset``."""
        slot = bisect_right(self.keys, offset) - 1
        if slot < 0:
            keep = 0
        elif self.keys[slot] == offset:
            keep = slot
        else:
            keep = slot + 1
        self.truncate_to_entries(keep)

    def sanity_check(self) -> None:
        super().sanity_check()
        if self.entries and self.last_offset < self.base_offset:
            raise CorruptIndexError(f"Corrupt index found, index file ({self.path}) has non-zero size but the "
                                    f"last offset is {self.last_offset} which is less than the base offset "
                                    f"{self.base_offset}.")
        if self.length % self.ENTRY_SIZE:
            raise CorruptIndexError(f"Index file {self.path} is corrupt, found {self.length} bytes which is "
                                    f"neither positive nor a multiple of {self.ENTRY_SIZE}.")
