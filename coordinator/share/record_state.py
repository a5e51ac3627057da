"""The delivery state of one in-flight record of a share-partition (Kafka's RecordState).

- ``AVAILABLE``: may be acquired by the next ShareFetch of any member (fresh, released, or whose lock ran out).
- ``ACQUIRED``: delivered to one member and locked for it until acknowledged or the acquisition lock
  (``group.share.record.lock.duration.ms``) expires; each acquisition adds one to the delivery count.
- ``ACKNOWLEDGED``: the member accepted it; terminal.
- ``ARCHIVING``: given up on (rejected, or past the delivery count limit) and being written to the group's
  dead-letter queue (KIP-1191, share.version 2); ARCHIVED once written. Persisted, so a restart writes it again.
- ``ARCHIVED``: rejected, a gap, past the delivery count limit, or below a moved start offset; terminal.

Release (an acknowledgement of type RELEASE, a lock timeout, the member's session ending) turns ACQUIRED
back into AVAILABLE, or into ARCHIVED once the delivery count has reached the limit. The numbers are
Kafka's, also used in the persisted state batches (acquired records are persisted as available).
"""

from __future__ import annotations

from enum import IntEnum

__all__ = ["AcknowledgeType", "RecordState", "InvalidRecordStateTransition", "transition"]


class RecordState(IntEnum):
    AVAILABLE = 0
    ACQUIRED = 1
    ACKNOWLEDGED = 2
    ARCHIVING = 3
    ARCHIVED = 4


class AcknowledgeType(IntEnum):
    """The acknowledge types of ShareFetch/ShareAcknowledge (GAP marks offsets without a record)."""

    GAP = 0
    ACCEPT = 1
    RELEASE = 2
    REJECT = 3
    RENEW = 4


_LEGAL: dict[RecordState, frozenset[RecordState]] = {
    RecordState.AVAILABLE: frozenset({RecordState.ACQUIRED, RecordState.ARCHIVED}),
    RecordState.ACQUIRED: frozenset({RecordState.AVAILABLE, RecordState.ACKNOWLEDGED, RecordState.ARCHIVING,
                                     RecordState.ARCHIVED}),
    RecordState.ARCHIVING: frozenset({RecordState.ARCHIVED}),
    RecordState.ACKNOWLEDGED: frozenset(),
    RecordState.ARCHIVED: frozenset(),
}


class InvalidRecordStateTransition(ValueError):
    pass


def transition(current: int, new: RecordState) -> RecordState:
    """``new`` if the move from ``current`` is legal, else InvalidRecordStateTransition."""
    if new not in _LEGAL[RecordState(current)]:
        raise InvalidRecordStateTransition(f"{RecordState(current).name} -> {new.name}")
    return new


def is_terminal(state: int) -> bool:
    return state in (RecordState.ACKNOWLEDGED, RecordState.ARCHIVED)
