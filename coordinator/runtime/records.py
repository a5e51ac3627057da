"""The one codec of coordinator records, as Kafka's CoordinatorRecordSerde: every coordinator topic
(__consumer_offsets, __share_group_state, __transaction_state) frames its records the same way.

- key   = int16 record type + key struct encoded at version 0
- value = int16 value version + value struct encoded at that version, or null for a tombstone

Each coordinator names its record types with a table: record type -> (key class, value class).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from coordinator.runtime.errors import UnknownRecordTypeError
from wire import DecodeError, Reader, Writer

__all__ = ["CoordinatorRecord", "RecordClasses", "decode_coordinator_record"]

RecordClasses = Mapping[int, tuple[Any, Any]]  # record type -> (key class, value class)


@dataclass(frozen=True, slots=True)
class CoordinatorRecord:
    """A key struct and a value struct (None for a tombstone) with the version the value is written at.

    Key and value are generated structs of one of the record types (``RecordType``): which fields they
    have depends on ``record_type``, a union no checker follows, so they are typed ``Any``.
    """

    key: Any
    value: Any
    value_version: int = 0

    @property
    def record_type(self) -> int:
        return self.key.API_KEY

    def encode(self) -> tuple[bytes, bytes | None]:
        """The record's key and value bytes as they go into the log."""
        kw = Writer()
        kw.int16(self.key.API_KEY)
        self.key.encode_into(kw, 0)
        if self.value is None:
            return kw.getvalue(), None
        vw = Writer()
        vw.int16(self.value_version)
        self.value.encode_into(vw, self.value_version)
        return kw.getvalue(), vw.getvalue()


def decode_coordinator_record(key: bytes | None, value: bytes | None, classes: RecordClasses,
                              topic: str) -> CoordinatorRecord:
    """Parse a record of ``topic`` whose types ``classes`` names; raises UnknownRecordTypeError or DecodeError.

    As Kafka does, bytes after a known struct are ignored, so records written by newer versions that
    only append fields still load; a newer value version is read with the newest schema known.
    """
    if key is None or len(key) < 2:
        raise DecodeError(f"{topic} record without a key")
    r = Reader(key)
    record_type = r.int16()
    found = classes.get(record_type)
    if found is None:
        raise UnknownRecordTypeError(record_type)
    key_class, value_class = found
    key_message = key_class.decode_from(r, 0)
    if value is None:
        return CoordinatorRecord(key_message, None)
    vr = Reader(value)
    version = vr.int16()
    if version < value_class.LOWEST_VERSION:
        raise DecodeError(f"{value_class.NAME} version {version} is unknown")
    read_version = min(version, value_class.HIGHEST_VERSION)
    return CoordinatorRecord(key_message, value_class.decode_from(vr, read_version), read_version)
