"""Produce requests read and answers written in one pass for the flexible versions (9-13): every batch pays both.

The generated codecs read and write each field with a Reader or Writer call (about 550 bytecodes to read a request
of one partition, 450 to write its answer). ``decode_produce_request`` reads the usual shape inline: one-byte
array counts and string lengths, records lengths of up to three bytes, no tagged fields. Anything else (older
versions, tagged fields, longer counts, bytes that do not decode) goes to the generated codec from the start, so
the request and its DecodeErrors are always the generated codec's. ``ProduceAnswer`` is a ProduceResponse whose
answers without record errors, error messages, leader hints or node endpoints are packed a partition at a time;
the same bytes as the generated encoder, which writes any other.
"""

from __future__ import annotations

import struct

from wire._primitives import MAX_COLLECTION_LENGTH, Reader, Writer, decode_usual_or_generated, uuid_at
from wire.messages.produce_request import PartitionProduceData, ProduceRequest, TopicProduceData
from wire.messages.produce_response import BatchIndexAndErrorMessage, LeaderIdAndEpoch, ProduceResponse

__all__ = ["NO_CURRENT_LEADER", "NO_RECORD_ERRORS", "ProduceAnswer", "decode_produce_request"]

# A partition answer's defaults, shared (never changed) by the answers of appended partitions: no leader hint, no
# record errors. ProduceAnswer packs a partition answer holding them without looking at their fields.
NO_CURRENT_LEADER = LeaderIdAndEpoch()
NO_RECORD_ERRORS: list[BatchIndexAndErrorMessage] = []

_ACKS_TIMEOUT = struct.Struct(">hi")
_INDEX = struct.Struct(">i")
# index, error code, base offset, log append time, log start offset; then no record errors (a compact array of
# none), a null error message and no tagged fields
_PARTITION = struct.Struct(">ihqqq")
_PARTITION_END = b"\x01\x00\x00"


def decode_produce_request(r: Reader, version: int) -> ProduceRequest:
    """ProduceRequest.decode_from, inline for the usual requests of v9 and later."""
    return decode_usual_or_generated(r, version, 9, _decode_flexible, ProduceRequest.decode_from)


def _decode_flexible(r: Reader, version: int) -> ProduceRequest | None:
    """The request at ``r.pos`` (advancing it), or None when it is not of the usual shape. Reads past the end
    raise IndexError (the reader ends where its buffer does)."""
    buf, pos, end = r.buf, r.pos, r.end
    if end != len(buf):
        return None
    n = buf[pos] - 1  # the transactional id: a compact nullable string (most producers: null)
    if n > 126:
        return None
    pos += 1
    transactional_id = None
    if n >= 0:
        if pos + n > end:
            return None
        transactional_id = str(buf[pos:pos + n], "utf-8")
        pos += n
    if pos + 7 > end:
        return None
    acks, timeout_ms = _ACKS_TIMEOUT.unpack_from(buf, pos)
    topic_count = buf[pos + 6] - 1
    pos += 7
    if not 0 <= topic_count <= end - pos or topic_count > 126:
        return None
    topics = []
    for _ in range(topic_count):
        if version >= 13:
            topic = TopicProduceData(topic_id=uuid_at(buf, pos))
            pos += 16
        else:
            n = buf[pos] - 1
            if not 0 <= n <= 126 or pos + 1 + n > end:
                return None
            topic = TopicProduceData(name=str(buf[pos + 1:pos + 1 + n], "utf-8"))
            pos += 1 + n
        count = buf[pos] - 1
        pos += 1
        if not 0 <= count <= end - pos or count > 126:
            return None
        partitions = topic.partition_data
        for _ in range(count):
            index = _INDEX.unpack_from(buf, pos)[0]
            b = buf[pos + 4]  # the records' compact length, plus one (0: null)
            pos += 5
            if b >= 0x80:
                c = buf[pos]
                if c < 0x80:
                    b = (b & 0x7F) | (c << 7)
                    pos += 1
                else:
                    d = buf[pos + 1]
                    if d >= 0x80:
                        return None
                    b = (b & 0x7F) | ((c & 0x7F) << 7) | (d << 14)
                    pos += 2
            n = b - 1
            if n < 0:
                records = None
            elif n > end - pos or n > MAX_COLLECTION_LENGTH:
                return None
            else:
                records = buf[pos:pos + n]
                pos += n
            if buf[pos] != 0:  # the partition's tagged fields
                return None
            pos += 1
            partitions.append(PartitionProduceData(index=index, records=records))
        if buf[pos] != 0:  # the topic's
            return None
        pos += 1
        topics.append(topic)
    if pos >= end or buf[pos] != 0:  # the request's
        return None
    r.pos = pos + 1
    return ProduceRequest(transactional_id=transactional_id, acks=acks, timeout_ms=timeout_ms, topic_data=topics)


class ProduceAnswer(ProduceResponse):
    """A ProduceResponse written in one pass when it is the usual answer (see the module docstring); equal to the
    ProduceResponse of the same fields."""

    __slots__ = ()

    def encode_into(self, w: Writer, version: int) -> None:
        if version < 9 or self.node_endpoints:
            super().encode_into(w, version)
            return
        buf = w.buf
        start = len(buf)  # a partition answer that does not pack: written again from here by the generated encoder
        count = len(self.responses) + 1  # a compact array's length: one byte up to 127 (the usual), else a varint
        if count < 0x80:
            buf.append(count)
        else:
            w.uvarint(count)
        pack, end = _PARTITION.pack, _PARTITION_END
        for topic in self.responses:
            if version >= 13:
                buf += topic.topic_id.bytes
            else:
                w.compact_string(topic.name)
            partitions = topic.partition_responses
            count = len(partitions) + 1
            if count < 0x80:
                buf.append(count)
            else:
                w.uvarint(count)
            for p in partitions:
                leader = p.current_leader
                if p.record_errors or p.error_message is not None or leader is not NO_CURRENT_LEADER and (
                        leader.leader_id != -1 or leader.leader_epoch != -1):
                    del buf[start:]
                    super().encode_into(w, version)
                    return
                buf += pack(p.index, p.error_code, p.base_offset, p.log_append_time_ms, p.log_start_offset)
                buf += end
            buf.append(0)  # the topic's tagged fields
        buf += _INDEX.pack(self.throttle_time_ms)
        buf.append(0)  # no tagged fields: no node endpoints

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, ProduceResponse):
            return NotImplemented
        return bool(ProduceResponse._slot_values(self) == ProduceResponse._slot_values(other))


ProduceAnswer._slot_values = ProduceResponse._slot_values  # its fields are ProduceResponse's
