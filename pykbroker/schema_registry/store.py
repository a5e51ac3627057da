"""The ``_schemas`` topic as the registry's store: one compacted partition, read and written with Kafka's Fetch
and Produce (acks=all) sent to the partition's leader over the inter-broker connections, as Confluent's registry
is a Kafka client of its cluster. So every broker serves reads (each read first catches up to the leader's high
watermark: what any broker answered, every broker answers) and writes are ordered by the log (``state.py``:
a record carries the offset it expects, and one that lands elsewhere lost a race and is written again).
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
from collections.abc import Callable
from typing import Any

from pykbroker.schema_registry.state import RegistryState, encode_key
from replication.broker_client import BrokerConnectionError
from wire import ErrorCode, build_simple_batch, decode_records, iter_batch_headers
from wire.messages import RESPONSES, FetchRequest, ProduceRequest
from wire.messages.fetch_request import FetchPartition, FetchTopic
from wire.messages.produce_request import PartitionProduceData, TopicProduceData

__all__ = ["RegistryStoreError", "SchemasTopic", "WriteConflict"]

log = logging.getLogger("pykbroker.schema_registry")

FETCH_VERSION = 12
PRODUCE_VERSION = 9
# Bytes asked per Fetch while catching up.
FETCH_MAX_BYTES = 1024 * 1024
# How long a read or write keeps trying through a leader change or the topic's creation.
STORE_TIMEOUT_S = 15.0
# How often a write is tried again after losing its offset to another broker's write.
WRITE_ATTEMPTS = 20
# Errors that pass when the metadata catches up (a new leader, the topic still being created).
_RETRIABLE = {ErrorCode.NOT_LEADER_OR_FOLLOWER, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, ErrorCode.LEADER_NOT_AVAILABLE,
              ErrorCode.FENCED_LEADER_EPOCH, ErrorCode.NOT_ENOUGH_REPLICAS, ErrorCode.REQUEST_TIMED_OUT,
              ErrorCode.NOT_ENOUGH_REPLICAS_AFTER_APPEND, ErrorCode.UNKNOWN_LEADER_EPOCH}


class RegistryStoreError(Exception):
    """The ``_schemas`` topic cannot be read or written now (Confluent's 50001/50002)."""


class WriteConflict(Exception):
    """A write lost its expected offset to another writer."""


Record = tuple[dict[str, Any], dict[str, Any] | None]  # key, value (None: a tombstone)
Build = Callable[[RegistryState], tuple[list[Record], Any]]


class SchemasTopic:
    """Reads and writes ``topic`` (partition 0) for ``broker``; ``state`` is the replay so far."""

    def __init__(self, broker: Any, topic: str) -> None:
        self.broker = broker
        self.topic = topic
        self.state = RegistryState()
        self.high_watermark = 0
        self._read_lock = asyncio.Lock()
        self._write_lock = asyncio.Lock()

    def _leader(self) -> int | None:
        topic = self.broker.metadata.image.topics.get(self.topic)
        if topic is None or not topic.partitions:
            return None
        leader = topic.partitions[0].leader
        return leader if leader is not None and leader >= 0 else None

    async def _ensure_topic(self) -> int:
        """The leader of the topic, creating it (compacted, one partition) on first use."""
        deadline = time.monotonic() + STORE_TIMEOUT_S
        while True:
            if self.topic not in self.broker.metadata.image.topics:
                try:
                    await self._create()
                except Exception as exc:  # noqa: BLE001 - too few brokers yet, or created meanwhile
                    log.info("schema registry: %s not created yet (%s); trying again", self.topic, exc)
            leader = self._leader()
            if leader is not None:
                return leader
            if time.monotonic() > deadline:
                raise RegistryStoreError(f"{self.topic} has no leader after {STORE_TIMEOUT_S:.0f} s")
            await asyncio.sleep(0.1)

    async def _create(self) -> None:
        internal = self.broker.internal_topics
        # replicated as __consumer_offsets is (Confluent's kafkastore.topic.replication.factor is 3 too)
        replication = self.broker.config["offsets.topic.replication.factor"] if internal.cluster_mode else 1
        live = len(self.broker.metadata.image.live_broker_ids() or [0])
        await internal.ensure_topic(self.topic, 1, min(replication, max(live, 1)), lambda _assignment: {
            "cleanup.policy": "compact", "compression.type": "producer"})
        log.info("schema registry: created %s (compacted, one partition)", self.topic)

    async def _send(self, request: Any, version: int) -> Any:
        leader = await self._ensure_topic()
        client = self.broker.broker_clients.get(leader)
        return await client.request(request, version, RESPONSES[request.API_KEY])

    async def catch_up(self) -> RegistryState:
        """Replay the topic up to the leader's high watermark; the state then."""
        async with self._read_lock:
            deadline = time.monotonic() + STORE_TIMEOUT_S
            while True:
                try:
                    if not await self._fetch_once():
                        return self.state
                except (BrokerConnectionError, _Retriable) as exc:
                    if time.monotonic() > deadline:
                        raise RegistryStoreError(f"reading {self.topic}: {exc}") from exc
                    await asyncio.sleep(0.1)

    async def _fetch_once(self) -> bool:
        """One Fetch from the state's next offset; True while more is to read."""
        state = self.state
        request = FetchRequest(replica_id=-1, max_wait_ms=0, min_bytes=0, max_bytes=FETCH_MAX_BYTES, isolation_level=0,
                               session_id=0, session_epoch=-1, topics=[FetchTopic(topic=self.topic, partitions=[
                                   FetchPartition(partition=0, current_leader_epoch=-1, fetch_offset=state.next_offset,
                                                  log_start_offset=-1, partition_max_bytes=FETCH_MAX_BYTES)])],
                               forgotten_topics_data=[], rack_id="")
        answer = await self._send(request, FETCH_VERSION)
        [p] = answer.responses[0].partitions
        if p.error_code == ErrorCode.OFFSET_OUT_OF_RANGE and state.next_offset > p.high_watermark:
            raise RegistryStoreError(f"{self.topic} ends at {p.high_watermark}, before the {state.next_offset} "
                                     "records this broker has read: the topic was deleted or truncated")
        if p.error_code == ErrorCode.OFFSET_OUT_OF_RANGE:
            state.next_offset = max(state.next_offset, p.log_start_offset)
            return True
        if p.error_code != ErrorCode.NONE:
            raise _Retriable(ErrorCode(p.error_code).name)
        self.high_watermark = p.high_watermark
        data = bytes(p.records or b"")
        before = state.next_offset
        for pos, header in iter_batch_headers(data):
            if header.next_offset <= state.next_offset:
                continue
            if header.is_control:
                state.next_offset = header.next_offset
                continue
            header, records = decode_records(data, pos)
            for r in records:
                offset = header.offset_of(r)
                if offset >= state.next_offset:
                    state.apply(offset, r.key, r.value)
            state.next_offset = max(state.next_offset, header.next_offset)
        return state.next_offset < p.high_watermark and state.next_offset > before

    async def write(self, build: Build, node_id: int) -> Any:
        """Run ``build`` on the caught-up state and append the records it returns, as one batch at the offset
        expected; again on the newer state when another writer took that offset. ``build``'s result."""
        async with self._write_lock:
            for _ in range(WRITE_ATTEMPTS):
                state = await self.catch_up()
                records, result = build(state)
                if not records:
                    return result
                expected = self.high_watermark
                keys, values = [], []
                for i, (key, value) in enumerate(records):
                    if value is not None:
                        key = {**key, "seq": expected + i, "node": node_id}
                    keys.append(key if isinstance(key, bytes) else encode_key(key))
                    values.append(None if value is None else json.dumps(value, separators=(",", ":")).encode())
                base = await self._produce(keys, values)
                await self._read_through(base + len(records) - 1)
                if base == expected:
                    return result
                log.info("schema registry: a write expected offset %d and landed at %d (another broker wrote "
                         "first); writing again", expected, base)
            raise RegistryStoreError(f"{WRITE_ATTEMPTS} writes to {self.topic} in a row lost their offset")

    async def _produce(self, keys: list[bytes], values: list[bytes | None]) -> int:
        batch = build_simple_batch(values, keys=keys, timestamp=int(time.time() * 1000))
        request = ProduceRequest(transactional_id=None, acks=-1, timeout_ms=10_000, topic_data=[
            TopicProduceData(name=self.topic, partition_data=[PartitionProduceData(index=0, records=batch)])])
        deadline = time.monotonic() + STORE_TIMEOUT_S
        while True:
            try:
                answer = await self._send(request, PRODUCE_VERSION)
                [result] = answer.responses[0].partition_responses
                if result.error_code == ErrorCode.NONE:
                    return int(result.base_offset)
                if result.error_code not in _RETRIABLE:
                    raise RegistryStoreError(f"writing {self.topic}: {ErrorCode(result.error_code).name} "
                                             f"{result.error_message or ''}".strip())
                error: Exception = _Retriable(ErrorCode(result.error_code).name)
            except BrokerConnectionError as exc:
                error = exc  # the write may have landed: the replay tells (its seq is checked either way)
            if time.monotonic() > deadline:
                raise RegistryStoreError(f"writing {self.topic}: {error}")
            await asyncio.sleep(0.1)

    async def _read_through(self, offset: int) -> None:
        deadline = time.monotonic() + STORE_TIMEOUT_S
        while (await self.catch_up()).next_offset <= offset:
            if time.monotonic() > deadline:
                raise RegistryStoreError(f"{self.topic} did not reach offset {offset} after writing it")
            await asyncio.sleep(0.05)


class _Retriable(Exception):
    pass
