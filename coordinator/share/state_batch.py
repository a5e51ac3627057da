"""Persisted share-partition state: the start offset and ranges of offsets with a state and delivery count.

A ``StateBatch`` is Kafka's PersisterStateBatch: offsets ``first_offset..last_offset`` (inclusive) share
one delivery state (0 available, 2 acknowledged, 4 archived — acquired records are persisted as available,
an acquisition lock does not survive the broker) and delivery count. ``merge`` applies a ShareUpdate's
batches over the ones stored: newer wins where ranges overlap, ranges below the start offset are dropped,
and adjacent ranges with the same state and count are combined, so the list stays sorted and disjoint.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["StateBatch", "merge", "combine"]


@dataclass(frozen=True, slots=True)
class StateBatch:
    first_offset: int
    last_offset: int
    delivery_state: int
    delivery_count: int


def _trim(batches: list[StateBatch], start_offset: int) -> list[StateBatch]:
    out = []
    for b in batches:
        if b.last_offset < start_offset:
            continue
        if b.first_offset < start_offset:
            b = StateBatch(start_offset, b.last_offset, b.delivery_state, b.delivery_count)
        out.append(b)
    return out


def combine(batches: list[StateBatch]) -> list[StateBatch]:
    """Sorted by offset, adjacent equal ranges joined (input must be disjoint)."""
    out: list[StateBatch] = []
    for b in sorted(batches, key=lambda b: b.first_offset):
        if out and out[-1].last_offset + 1 == b.first_offset and out[-1].delivery_state == b.delivery_state \
                and out[-1].delivery_count == b.delivery_count:
            prev = out[-1]
            out[-1] = StateBatch(prev.first_offset, b.last_offset, prev.delivery_state, prev.delivery_count)
        else:
            out.append(b)
    return out


def merge(current: list[StateBatch], updates: list[StateBatch], start_offset: int) -> list[StateBatch]:
    """``current`` overlaid with ``updates`` (later updates win), trimmed below ``start_offset``."""
    result = _trim(current, start_offset)
    for u in _trim(updates, start_offset):
        kept: list[StateBatch] = []
        for b in result:
            if b.last_offset < u.first_offset or b.first_offset > u.last_offset:
                kept.append(b)
                continue
            if b.first_offset < u.first_offset:
                kept.append(StateBatch(b.first_offset, u.first_offset - 1, b.delivery_state, b.delivery_count))
            if b.last_offset > u.last_offset:
                kept.append(StateBatch(u.last_offset + 1, b.last_offset, b.delivery_state, b.delivery_count))
        kept.append(u)
        result = kept
    return combine(result)
