"""The records of __share_group_state, byte-compatible with Apache Kafka 4.2.

Each record is a plain key/value record in a v2 record batch, framed as in __consumer_offsets
(``coordinator.group.records.CoordinatorRecord``): key = int16 record type + key struct at version 0,
value = int16 version + value struct (v0, flexible), or null for a tombstone.

==== ============================== ===========================================================
type key / value                     meaning
==== ============================== ===========================================================
0    ShareSnapshotKey / ...Value     the whole state of one share-partition (replaces what was there)
1    ShareUpdateKey / ...Value       a delta: a new start offset (or -1) and the state batches that changed
==== ============================== ===========================================================

Both keys are (group id, topic id, partition); a tombstone of the snapshot key deletes the state.
"""

from __future__ import annotations

from enum import IntEnum
from typing import Any

from coordinator.runtime.records import CoordinatorRecord, decode_coordinator_record
from wire.messages import ShareSnapshotKey, ShareSnapshotValue, ShareUpdateKey, ShareUpdateValue

__all__ = ["CoordinatorRecord", "RecordType", "SHARE_GROUP_STATE_TOPIC_NAME", "decode_record"]

SHARE_GROUP_STATE_TOPIC_NAME = "__share_group_state"


class RecordType(IntEnum):
    """The int16 prefix of a __share_group_state record key."""

    SHARE_SNAPSHOT = 0
    SHARE_UPDATE = 1


_CLASSES: dict[int, tuple[Any, Any]] = {
    RecordType.SHARE_SNAPSHOT: (ShareSnapshotKey, ShareSnapshotValue),
    RecordType.SHARE_UPDATE: (ShareUpdateKey, ShareUpdateValue),
}


def decode_record(key: bytes | None, value: bytes | None) -> CoordinatorRecord:
    """Parse a __share_group_state record; raises UnknownRecordTypeError or DecodeError."""
    return decode_coordinator_record(key, value, _CLASSES, SHARE_GROUP_STATE_TOPIC_NAME)
