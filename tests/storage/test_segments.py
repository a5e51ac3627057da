"""LogSegments, the ordered map of a log's segments: the searches reads use."""

from __future__ import annotations

from types import SimpleNamespace

from storage.segments import LogSegments


def segments(*base_offsets: int) -> LogSegments:
    s = LogSegments()
    for base in base_offsets:
        s.add(SimpleNamespace(base_offset=base))  # type: ignore[arg-type]  # only the base offset is asked
    return s


def bases(found) -> list[int]:
    return [segment.base_offset for segment in found]


def test_from_floor_is_the_floor_segment_and_every_one_after_it():
    s = segments(0, 10, 20)
    assert bases(s.from_floor(0)) == [0, 10, 20]
    assert bases(s.from_floor(15)) == [10, 20]
    assert bases(s.from_floor(20)) == [20]
    assert bases(s.from_floor(99)) == [20]  # past the last base offset: the last (active) segment
    assert bases(s.from_floor(-1)) == [0, 10, 20]  # below the first: all of them, as before there was a floor
    assert bases(LogSegments().from_floor(5)) == []
    for offset in (-1, 0, 5, 10, 15, 20, 99):  # the floor, then what follows it
        floor = s.floor_segment(offset)
        expected = s.snapshot() if floor is None else [x for x in s.snapshot() if x.base_offset >= floor.base_offset]
        assert bases(s.from_floor(offset)) == bases(expected)
