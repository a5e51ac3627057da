"""Partition-keyed requests split by leader, as Kafka's Java clients send them, and their answers merged.

A producer sends one Produce per broker with the partitions that broker leads; the admin client and the
consumer do the same with ListOffsets, DeleteRecords, OffsetForLeaderEpoch and DescribeProducers, and a
sessionless Fetch goes to each leader with its partitions. ``split`` cuts a request's topics into one list per
leader; ``merge`` joins the leaders' answers into one answer with the topics and partitions in the request's
order (the order a scenario observes; a partition no leader answered for is left out).
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Hashable
from dataclasses import dataclass

from wire import ZERO_UUID, ErrorCode
from wire.messages import (
    DeleteRecordsRequest,
    DescribeProducersRequest,
    FetchRequest,
    ListOffsetsRequest,
    OffsetForLeaderEpochRequest,
    ProduceRequest,
)

FINAL_EPOCH = -1  # a Fetch with this session epoch opens no fetch session


@dataclass(frozen=True)
class Shape:
    """Where a partition-keyed message keeps its topics: the list, a topic's name, its partitions and a
    partition's index (None: the partitions are the indexes themselves)."""

    topics: str
    name: str
    partitions: str
    index: str | None


# request type -> (the request's shape, its response's shape)
KEYED: dict[type, tuple[Shape, Shape]] = {
    ProduceRequest: (Shape("topic_data", "name", "partition_data", "index"),
                     Shape("responses", "name", "partition_responses", "index")),
    ListOffsetsRequest: (Shape("topics", "name", "partitions", "partition_index"),
                         Shape("topics", "name", "partitions", "partition_index")),
    DeleteRecordsRequest: (Shape("topics", "name", "partitions", "partition_index"),
                           Shape("topics", "name", "partitions", "partition_index")),
    OffsetForLeaderEpochRequest: (Shape("topics", "topic", "partitions", "partition"),
                                  Shape("topics", "topic", "partitions", "partition")),
    DescribeProducersRequest: (Shape("topics", "name", "partition_indexes", None),
                               Shape("topics", "name", "partitions", "partition_index")),
    FetchRequest: (Shape("topics", "topic", "partitions", "partition"),
                   Shape("responses", "topic", "partitions", "partition_index")),
}

TopicKey = Hashable  # a topic's name, or its id where the version names topics by id


def splittable(request, version: int) -> bool:
    """Whether ``request`` is partition-keyed and may go to several brokers (a Fetch only without a session:
    a session lives on one broker)."""
    if type(request) not in KEYED:
        return False
    return not isinstance(request, FetchRequest) or version < 7 or request.session_epoch == FINAL_EPOCH


def topic_key(topic, shape: Shape) -> TopicKey:
    """A topic entry's name, or its id when the version names it by id (the name is then empty)."""
    return topic_keys(topic, shape)[0]


def topic_keys(topic, shape: Shape) -> list[TopicKey]:
    """Every key a topic entry has: its name and its id, each when set (a request object may carry both
    whatever the version, its answer only the one the version encodes)."""
    name, topic_id = getattr(topic, shape.name, None), getattr(topic, "topic_id", ZERO_UUID)
    return [k for k, given in ((name, bool(name)), (topic_id, topic_id != ZERO_UUID)) if given] or [name]


def partitions_of(request) -> list[tuple[TopicKey, int]]:
    """(topic, partition) of every partition ``request`` names, in order."""
    shape = KEYED[type(request)][0]
    return [(topic_key(t, shape), p if shape.index is None else getattr(p, shape.index))
            for t in getattr(request, shape.topics) for p in getattr(t, shape.partitions)]


def split(request, leader: Callable[[TopicKey, int], str]) -> dict[str, list]:
    """``request``'s topic entries per leader address (``leader`` of each partition), each topic keeping only
    the partitions that leader leads; the addresses in the order of their first partition."""
    shape = KEYED[type(request)][0]
    out: dict[str, list] = {}
    for t in getattr(request, shape.topics):
        mine: dict[str, list] = {}
        for p in getattr(t, shape.partitions):
            index = p if shape.index is None else getattr(p, shape.index)
            mine.setdefault(leader(topic_key(t, shape), index), []).append(p)
        for address, partitions in mine.items():
            part = copy.copy(t)
            setattr(part, shape.partitions, partitions)
            out.setdefault(address, []).append(part)
    return out


def merge(request, responses: list):
    """One answer to ``request`` from the answers of the leaders it was split among: every topic and partition
    in the request's order, the longest throttle, the first top-level error, every node endpoint once."""
    asked, answered = KEYED[type(request)]
    found: dict[tuple[TopicKey, int], object] = {}
    topics: dict[TopicKey, object] = {}
    for response in responses:
        for t in getattr(response, answered.topics):
            for key in topic_keys(t, answered):
                topics.setdefault(key, t)
                for p in getattr(t, answered.partitions):
                    found[(key, getattr(p, answered.index))] = p
    merged_topics = []
    for t in getattr(request, asked.topics):
        key = next((k for k in topic_keys(t, asked) if k in topics), None)
        if key is None:
            continue
        indexes = getattr(t, asked.partitions) if asked.index is None else \
            [getattr(p, asked.index) for p in getattr(t, asked.partitions)]
        entry = copy.copy(topics[key])
        setattr(entry, answered.partitions, [found[(key, i)] for i in indexes if (key, i) in found])
        merged_topics.append(entry)
    merged = copy.copy(responses[0])
    setattr(merged, answered.topics, merged_topics)
    merged.throttle_time_ms = max(r.throttle_time_ms for r in responses)
    if hasattr(merged, "error_code"):
        merged.error_code = next((r.error_code for r in responses if r.error_code), ErrorCode.NONE)
    if hasattr(merged, "node_endpoints"):
        endpoints = {e.node_id: e for r in responses for e in r.node_endpoints}
        merged.node_endpoints = [endpoints[n] for n in sorted(endpoints)]
    return merged
