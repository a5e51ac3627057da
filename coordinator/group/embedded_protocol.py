"""The consumer protocol embedded in classic JoinGroup/SyncGroup bytes (Kafka's ConsumerProtocol).

A subscription or assignment is int16 version + ``ConsumerProtocolSubscription`` /
``ConsumerProtocolAssignment`` at that version. Newer versions only append fields, so a version above
the newest known is read with the newest schema and trailing bytes are ignored, as Kafka does.
"""

from __future__ import annotations

from collections.abc import Mapping
from uuid import UUID

from coordinator.group.topics import TopicsImage
from wire import DecodeError, Reader, Writer
from wire.messages import ConsumerProtocolAssignment, ConsumerProtocolSubscription
from wire.messages import consumer_protocol_assignment as _assignment

__all__ = ["PROTOCOL_TYPE", "EmbeddedProtocolError", "parse_assignment", "parse_subscription", "parse_version",
           "serialize_assignment"]

# The protocol type of Kafka consumers in classic groups.
PROTOCOL_TYPE = "consumer"


class EmbeddedProtocolError(ValueError):
    """The bytes are not a consumer protocol subscription/assignment (Kafka's SchemaException)."""


def parse_version(data: bytes | None) -> int:
    if data is None or len(data) < 2:
        raise EmbeddedProtocolError("missing consumer protocol version")
    version = Reader(data).int16()
    if version < 0:
        raise EmbeddedProtocolError(f"negative consumer protocol version {version}")
    return version


def parse_subscription(data: bytes | None) -> ConsumerProtocolSubscription:
    version = parse_version(data)
    assert data is not None  # parse_version refused it
    r = Reader(data)
    r.int16()
    try:
        return ConsumerProtocolSubscription.decode_from(r, min(version, ConsumerProtocolSubscription.HIGHEST_VERSION))
    except DecodeError as exc:
        raise EmbeddedProtocolError(str(exc)) from None


def parse_assignment(data: bytes | None) -> ConsumerProtocolAssignment:
    if not data:
        return ConsumerProtocolAssignment()
    version = parse_version(data)
    r = Reader(data)
    r.int16()
    try:
        return ConsumerProtocolAssignment.decode_from(r, min(version, ConsumerProtocolAssignment.HIGHEST_VERSION))
    except DecodeError as exc:
        raise EmbeddedProtocolError(str(exc)) from None


def serialize_assignment(partitions: Mapping[UUID, frozenset[int]], topics: TopicsImage, version: int) -> bytes:
    """A member's partitions (by topic id) as classic assignment bytes at ``version`` (topics by name)."""
    version = min(max(version, 0), ConsumerProtocolAssignment.HIGHEST_VERSION)
    assigned = []
    for topic_id, parts in partitions.items():
        info = topics.by_id(topic_id)
        if info is not None and parts:
            assigned.append(_assignment.TopicPartition(topic=info.name, partitions=sorted(parts)))
    assigned.sort(key=lambda tp: tp.topic)
    w = Writer()
    w.int16(version)
    ConsumerProtocolAssignment(assigned_partitions=assigned).encode_into(w, version)
    return w.getvalue()


def to_topic_id_partitions(topic_partitions, topics: TopicsImage) -> dict[UUID, frozenset[int]]:
    """``[{topic, partitions}]`` by name -> topic id -> partitions (unknown topics dropped)."""
    out: dict[UUID, frozenset[int]] = {}
    for tp in topic_partitions:
        info = topics.by_name(tp.topic)
        if info is not None and tp.partitions:
            out[info.topic_id] = out.get(info.topic_id, frozenset()) | frozenset(tp.partitions)
    return out
