"""Fetch requests read and answers written in one pass for the flexible versions (12-18): a consumer's long poll
pays both per message.

The generated codecs read and write each field with a Reader or Writer call (about 1,150 bytecodes to read a
request of one partition). ``decode_fetch_request`` reads the usual shape inline: one-byte array counts and string
lengths, no tagged fields. Anything else (older versions, tagged fields such as a follower's replica state or
cluster id, longer counts, bytes that do not decode) goes to the generated codec from the start, so the request and
its DecodeErrors are always the generated codec's.

The generated encoder writes each field with a Writer call and compares each partition's three tagged structs
(diverging epoch, current leader, snapshot id) with freshly built defaults: about 800 bytecodes for an answer of one
partition, on the path from an append to the consumer that waits for it. ``FetchAnswer`` is a FetchResponse whose
usual answer (partitions without tagged fields, aborted transactions null or few, no node endpoints) is packed a
partition at a time; the same bytes as the generated encoder, which writes any other.
"""

from __future__ import annotations

import struct
from typing import Any

from wire._primitives import KEEP_RECORDS_APART, Reader, Writer, decode_usual_or_generated, uuid_at
from wire.messages.fetch_request import FetchPartition, FetchRequest, FetchTopic, ForgottenTopic
from wire.messages.fetch_response import EpochEndOffset, FetchResponse, LeaderIdAndEpoch, SnapshotId

__all__ = ["FetchAnswer", "NO_DIVERGING_EPOCH", "NO_LEADER", "NO_SNAPSHOT", "decode_fetch_request"]

# A partition answer's tagged structs at their defaults (not written), for answers to share rather than build three
# per partition: never changed in place (a partition that has one is given its own).
NO_DIVERGING_EPOCH, NO_LEADER, NO_SNAPSHOT = EpochEndOffset(), LeaderIdAndEpoch(), SnapshotId()

# replica id (v12-14), max wait, min bytes, max bytes, isolation level, session id, session epoch
_REQUEST_V12 = struct.Struct(">iiiibii")
_REQUEST_V15 = struct.Struct(">iiibii")  # the same without the replica id (a tagged replica state from v15)
# partition, current leader epoch, fetch offset, last fetched epoch, log start offset, partition max bytes, no tags
_FETCH_PARTITION = struct.Struct(">iiqiqiB")
_FORGOTTEN_PARTITION = struct.Struct(">i")

_HEAD = struct.Struct(">ihi")  # throttle time, error code, session id
# index, error code, high watermark, last stable offset, log start offset
_PARTITION = struct.Struct(">ihqqq")
_INT32 = struct.Struct(">i")
_ABORTED = struct.Struct(">qqB")  # producer id, first offset, no tagged fields
_NO_TAGS = -1  # the tagged structs' fields when at their defaults (every one is -1)


def decode_fetch_request(r: Reader, version: int) -> FetchRequest:
    """FetchRequest.decode_from, inline for the usual requests of v12 and later."""
    return decode_usual_or_generated(r, version, 12, _decode_flexible, FetchRequest.decode_from)


def _topic_key(r: Reader, pos: int, by_id: bool) -> tuple[Any, int]:
    """A topic's id (v13+) or name at ``pos`` and the position after it; None for a name not of the usual shape."""
    if by_id:
        return uuid_at(r.buf, pos), pos + 16
    buf = r.buf
    n = buf[pos] - 1
    if not 0 <= n <= 126 or pos + 1 + n > r.end:
        return None, pos
    return str(buf[pos + 1:pos + 1 + n], "utf-8"), pos + 1 + n


def _decode_flexible(r: Reader, version: int) -> FetchRequest | None:
    """The request at ``r.pos`` (advancing it), or None when it is not of the usual shape. Reads past the end
    raise IndexError or struct.error (the reader ends where its buffer does)."""
    buf, pos, end = r.buf, r.pos, r.end
    if end != len(buf):
        return None
    if version <= 14:
        replica_id, max_wait_ms, min_bytes, max_bytes, isolation_level, session_id, session_epoch = \
            _REQUEST_V12.unpack_from(buf, pos)
        pos += 25
    else:
        replica_id = -1
        max_wait_ms, min_bytes, max_bytes, isolation_level, session_id, session_epoch = \
            _REQUEST_V15.unpack_from(buf, pos)
        pos += 21
    by_id = version >= 13
    unpack_partition = _FETCH_PARTITION.unpack_from
    topics = []
    count = buf[pos] - 1
    pos += 1
    if not 0 <= count <= 126:
        return None
    for _ in range(count):
        key, pos = _topic_key(r, pos, by_id)
        if key is None:
            return None
        topic = FetchTopic(topic_id=key) if by_id else FetchTopic(topic=key)
        n = buf[pos] - 1
        pos += 1
        if not 0 <= n <= 126:
            return None
        partitions = topic.partitions
        for _ in range(n):
            (partition, current_leader_epoch, fetch_offset, last_fetched_epoch, log_start_offset, max_bytes_p,
             tags) = unpack_partition(buf, pos)
            if tags:
                return None
            pos += 33
            partitions.append(FetchPartition(
                partition=partition, current_leader_epoch=current_leader_epoch, fetch_offset=fetch_offset,
                last_fetched_epoch=last_fetched_epoch, log_start_offset=log_start_offset,
                partition_max_bytes=max_bytes_p))
        if buf[pos] != 0:  # the topic's tagged fields
            return None
        pos += 1
        topics.append(topic)
    forgotten = []
    count = buf[pos] - 1
    pos += 1
    if not 0 <= count <= 126:
        return None
    for _ in range(count):
        key, pos = _topic_key(r, pos, by_id)
        if key is None:
            return None
        gone = ForgottenTopic(topic_id=key) if by_id else ForgottenTopic(topic=key)
        n = buf[pos] - 1
        pos += 1
        if not 0 <= n <= 126:
            return None
        gone.partitions = [_FORGOTTEN_PARTITION.unpack_from(buf, pos + 4 * i)[0] for i in range(n)]
        pos += 4 * n
        if buf[pos] != 0:
            return None
        pos += 1
        forgotten.append(gone)
    n = buf[pos] - 1  # the rack id
    if not 0 <= n <= 126 or pos + 1 + n > end:
        return None
    rack_id = str(buf[pos + 1:pos + 1 + n], "utf-8")
    pos += 1 + n
    if pos >= end or buf[pos] != 0:  # the request's tagged fields
        return None
    r.pos = pos + 1
    return FetchRequest(replica_id=replica_id, max_wait_ms=max_wait_ms, min_bytes=min_bytes, max_bytes=max_bytes,
                        isolation_level=isolation_level, session_id=session_id, session_epoch=session_epoch,
                        topics=topics, forgotten_topics_data=forgotten, rack_id=rack_id)


class FetchAnswer(FetchResponse):
    """A FetchResponse written in one pass when it is the usual answer (see the module docstring); equal to the
    FetchResponse of the same fields."""

    __slots__ = ()

    def encode_into(self, w: Writer, version: int) -> None:
        if version < 12 or self.node_endpoints or not self._packs():
            super().encode_into(w, version)
            return
        # Array and bytes lengths are compact (n + 1 as a varint): one byte for the usual ones, written inline.
        buf = w.buf
        buf += _HEAD.pack(self.throttle_time_ms, self.error_code, self.session_id)
        _count(w, len(self.responses))
        pack, pack_int32 = _PARTITION.pack, _INT32.pack
        for topic in self.responses:
            if version >= 13:
                buf += topic.topic_id.bytes
            else:
                w.compact_string(topic.topic)
            partitions = topic.partitions
            if (n := len(partitions)) < 127:
                buf.append(n + 1)
            else:
                w.uvarint(n + 1)
            for p in partitions:
                buf += pack(p.partition_index, p.error_code, p.high_watermark, p.last_stable_offset,
                            p.log_start_offset)
                aborted = p.aborted_transactions
                if not aborted:
                    buf.append(0 if aborted is None else 1)  # null, or empty (read_committed without aborts)
                else:
                    _count(w, len(aborted))
                    for a in aborted:
                        buf += _ABORTED.pack(a.producer_id, a.first_offset, 0)
                buf += pack_int32(p.preferred_read_replica)
                records = p.records
                if records is None:
                    buf.append(0)
                elif isinstance(records, (bytes, bytearray, memoryview)) and (n := len(records)) < KEEP_RECORDS_APART:
                    if n < 127:
                        buf.append(n + 1)
                    else:
                        w.uvarint(n + 1)
                    buf += records
                else:
                    w.records(records, True)  # a file region (or large records): a part of its own
                    buf = w.buf
                buf.append(0)  # the partition's tagged fields: none
            buf.append(0)  # the topic's
        buf.append(0)  # the answer's: no node endpoints

    def _packs(self) -> bool:
        """Whether no partition has a tagged field to write (every tagged struct at its defaults)."""
        for topic in self.responses:
            for p in topic.partitions:
                diverging, leader, snapshot = p.diverging_epoch, p.current_leader, p.snapshot_id
                if diverging is NO_DIVERGING_EPOCH and leader is NO_LEADER and snapshot is NO_SNAPSHOT:
                    continue  # the shared defaults (never changed in place)
                if diverging.epoch != _NO_TAGS or diverging.end_offset != _NO_TAGS \
                        or leader.leader_id != _NO_TAGS or leader.leader_epoch != _NO_TAGS \
                        or snapshot.end_offset != _NO_TAGS or snapshot.epoch != _NO_TAGS:
                    return False
        return True

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, FetchResponse):
            return NotImplemented
        return bool(FetchResponse._slot_values(self) == FetchResponse._slot_values(other))


FetchAnswer._slot_values = FetchResponse._slot_values  # its fields are FetchResponse's


def _count(w: Writer, n: int) -> None:
    """A compact array's or bytes' length (``n`` + 1 as a varint): one byte for the usual small ones."""
    if n < 127:
        w.buf.append(n + 1)
    else:
        w.uvarint(n + 1)
