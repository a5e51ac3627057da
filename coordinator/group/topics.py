"""The coordinator's view of cluster topics: names, ids and partition counts (Kafka's TopicsImage).

KIP-848 groups assign partitions by topic id, so the coordinator needs to resolve names and ids and
know how many partitions each subscribed topic has. It reads them through ``TopicsImage``;
``MetadataStoreTopics`` adapts any store exposing ``topics`` (name -> topic state with ``name``,
``topic_id``, ``partitions``, ``internal``) and ``topics_by_id``, such as the broker's metadata store.
"""

from __future__ import annotations

import hashlib
import struct
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, Protocol
from uuid import UUID

__all__ = ["MetadataStoreTopics", "StaticTopics", "TopicInfo", "TopicsImage", "metadata_hash"]


@dataclass(frozen=True, slots=True)
class TopicInfo:
    name: str
    topic_id: UUID
    num_partitions: int
    internal: bool = False


class TopicsImage(Protocol):
    def by_name(self, name: str) -> TopicInfo | None: ...

    def by_id(self, topic_id: UUID) -> TopicInfo | None: ...

    def all(self) -> Iterable[TopicInfo]: ...


class StaticTopics:
    """A fixed (mutable in tests) set of topics."""

    def __init__(self, topics: Iterable[TopicInfo] = ()) -> None:
        self._by_name: dict[str, TopicInfo] = {}
        for t in topics:
            self.add(t)

    def add(self, topic: TopicInfo) -> None:
        self._by_name[topic.name] = topic

    def remove(self, name: str) -> None:
        self._by_name.pop(name, None)

    def by_name(self, name: str) -> TopicInfo | None:
        return self._by_name.get(name)

    def by_id(self, topic_id: UUID) -> TopicInfo | None:
        for t in self._by_name.values():
            if t.topic_id == topic_id:
                return t
        return None

    def all(self) -> Iterable[TopicInfo]:
        return list(self._by_name.values())


class MetadataStoreTopics:
    """Live view of a metadata store's topics (read on every call; no caching)."""

    def __init__(self, store: Any) -> None:
        self._store = store

    @staticmethod
    def _info(state: Any) -> TopicInfo:
        return TopicInfo(state.name, state.topic_id, len(state.partitions), bool(state.internal))

    def by_name(self, name: str) -> TopicInfo | None:
        state = self._store.topics.get(name)
        return None if state is None else self._info(state)

    def by_id(self, topic_id: UUID) -> TopicInfo | None:
        state = self._store.topics_by_id.get(topic_id)
        return None if state is None else self._info(state)

    def all(self) -> Iterable[TopicInfo]:
        return [self._info(s) for s in list(self._store.topics.values())]


def metadata_hash(topics: TopicsImage, names: Iterable[str]) -> int:
    """A hash of every named topic's name, id and partition count (the MetadataHash of Kafka 4.4's group
    records; 0 when none exists). A change of it is what bumps a group's epoch for a metadata change."""
    h = hashlib.blake2b(digest_size=8)
    found = False
    for name in sorted(set(names)):
        info = topics.by_name(name)
        if info is None:
            continue
        found = True
        h.update(name.encode())
        h.update(info.topic_id.bytes)
        h.update(info.num_partitions.to_bytes(4, "big"))
    return struct.unpack(">q", h.digest())[0] if found else 0
