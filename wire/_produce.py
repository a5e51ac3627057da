"""Produce requests of the flexible versions (9-13) read in one pass over the buffer, what every produced batch costs.

The generated ProduceRequest.decode_from reads each field with a Reader call (about 550 bytecodes for a request
of one partition). ``decode_produce_request`` reads the usual shape inline: one-byte array counts and string
lengths, records lengths of up to three bytes, no tagged fields. Anything else (older versions, tagged fields,
longer counts, bytes that do not decode) goes to the generated codec from the start, so the request and its
DecodeErrors are always the generated codec's.
"""

from __future__ import annotations

import struct

from wire._primitives import MAX_COLLECTION_LENGTH, DecodeError, Reader
from wire.messages.produce_request import PartitionProduceData, ProduceRequest, TopicProduceData

__all__ = ["decode_produce_request"]

_ACKS_TIMEOUT = struct.Struct(">hi")
_INDEX = struct.Struct(">i")


def decode_produce_request(r: Reader, version: int) -> ProduceRequest:
    """ProduceRequest.decode_from, inline for the usual requests of v9 and later."""
    if version >= 9:
        start = r.pos
        try:
            request = _decode_flexible(r, version)
        except (IndexError, UnicodeDecodeError, DecodeError, struct.error):  # the generated codec is to tell
            request = None
        if request is not None:
            return request
        r.pos = start
    return ProduceRequest.decode_from(r, version)


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
            r.pos = pos
            topic = TopicProduceData(topic_id=r.uuid())
            pos = r.pos
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
