"""The ordered map of a log's segments by base offset (Kafka's LogSegments).

No file of its own. Invariants: base offsets are unique and sorted; the last segment is the active one.
Mutated only under the owning log's lock; readers on other threads take ``snapshot()`` (a list copy).
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from collections.abc import Iterator

from storage.segment import LogSegment

__all__ = ["LogSegments"]


class LogSegments:
    """Segments of one log by base offset: the sorted base offsets and, at the same index, their segments."""

    def __init__(self) -> None:
        self._offsets: list[int] = []
        self._ordered: list[LogSegment] = []  # the segment of each base offset in ``_offsets``, at its index
        self._segments: dict[int, LogSegment] = {}

    def __len__(self) -> int:
        return len(self._offsets)

    def __iter__(self) -> Iterator[LogSegment]:
        return iter(self.snapshot())

    def __contains__(self, base_offset: int) -> bool:
        return base_offset in self._segments

    def snapshot(self) -> list[LogSegment]:
        return self._ordered.copy()

    def add(self, segment: LogSegment) -> LogSegment | None:
        """Insert (or replace the segment with the same base offset); returns the one replaced."""
        base = segment.base_offset
        previous = self._segments.get(base)
        i = bisect_left(self._offsets, base)
        if previous is None:
            self._offsets.insert(i, base)
            self._ordered.insert(i, segment)
        else:
            self._ordered[i] = segment
        self._segments[base] = segment
        return previous

    def remove(self, base_offset: int) -> LogSegment | None:
        segment = self._segments.pop(base_offset, None)
        if segment is not None:
            i = bisect_left(self._offsets, base_offset)
            del self._offsets[i]
            del self._ordered[i]
        return segment

    def clear(self) -> None:
        self._offsets.clear()
        self._ordered.clear()
        self._segments.clear()

    def get(self, base_offset: int) -> LogSegment | None:
        return self._segments.get(base_offset)

    @property
    def base_offsets(self) -> list[int]:
        return list(self._offsets)

    def first_segment(self) -> LogSegment | None:
        return self._ordered[0] if self._ordered else None

    def last_segment(self) -> LogSegment | None:
        return self._ordered[-1] if self._ordered else None

    @property
    def active_segment(self) -> LogSegment:
        return self._ordered[-1]

    def floor_segment(self, offset: int) -> LogSegment | None:
        """The segment with the largest base offset <= ``offset``."""
        i = bisect_right(self._offsets, offset) - 1
        return self._ordered[i] if i >= 0 else None

    def floor_and_higher_segment(self, offset: int) -> tuple[LogSegment | None, LogSegment | None]:
        """``floor_segment(offset)`` and the segment after it (``higher_segment`` of its base offset), one search."""
        ordered = self._ordered
        i = bisect_right(self._offsets, offset)
        return ordered[i - 1] if i > 0 else None, ordered[i] if 0 < i < len(ordered) else None

    def from_floor(self, offset: int) -> list[LogSegment]:
        """``floor_segment(offset)`` and every segment after it (all of them when none is at or below ``offset``):
        a read at the log's tail looks at the last segment only."""
        return self._ordered[max(0, bisect_right(self._offsets, offset) - 1):]

    def lower_segment(self, offset: int) -> LogSegment | None:
        """The segment with the largest base offset < ``offset``."""
        i = bisect_left(self._offsets, offset) - 1
        return self._ordered[i] if i >= 0 else None

    def higher_segment(self, offset: int) -> LogSegment | None:
        """The segment with the smallest base offset > ``offset``."""
        i = bisect_right(self._offsets, offset)
        return self._ordered[i] if i < len(self._ordered) else None

    def values_between(self, from_offset: int, to_offset: int) -> list[LogSegment]:
        """Segments that may hold offsets in [from_offset, to_offset): the floor of from_offset onwards,
        with base offset < to_offset."""
        if from_offset == to_offset:
            return []
        start = max(0, bisect_right(self._offsets, from_offset) - 1)
        end = bisect_left(self._offsets, to_offset)
        return self._ordered[start:end]

    def higher_segments(self, offset: int) -> list[LogSegment]:
        """Every segment whose base offset is > ``offset``."""
        return self._ordered[bisect_right(self._offsets, offset):]

    def size_in_bytes(self) -> int:
        return sum(s.size for s in self._segments.values())
