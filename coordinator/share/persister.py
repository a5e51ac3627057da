"""Where a share-partition leader keeps its state: Kafka's DefaultStatePersister.

The state of share-partition ``(group, topic id, partition)`` lives with the share coordinator of its
__share_group_state partition, which may be another broker. ``SharePersister`` calls the local
``ShareCoordinator`` when this node leads that partition, and otherwise sends the broker-to-broker RPCs
(InitializeShareGroupState, ReadShareGroupState, WriteShareGroupState, DeleteShareGroupState,
ReadShareGroupStateSummary) to its leader. NOT_COORDINATOR, COORDINATOR_NOT_AVAILABLE,
COORDINATOR_LOAD_IN_PROGRESS and a broken connection are retried (the coordinator is moving: metadata
names the new leader soon) with a growing backoff until ``timeout_ms``, each try bounded by
``ATTEMPT_TIMEOUT_MS``; other errors are raised as
``ApiError`` at once (FENCED_LEADER_EPOCH, FENCED_STATE_EPOCH: this leader is out of date).

The transport is injected (``send(node_id, request, version, response_class)``), so nothing here does I/O
of its own.
"""

from __future__ import annotations

import asyncio
import logging
import time
import uuid
from collections.abc import Awaitable, Callable, Iterable
from typing import Any

from coordinator.runtime.errors import ApiError
from coordinator.share.coordinator import ShareCoordinator
from coordinator.share.shard import ShareGroupOffset, SharePartitionKey, uninitialized
from coordinator.share.state_batch import StateBatch
from wire import ErrorCode
from wire.messages import (
    DeleteShareGroupStateRequest,
    DeleteShareGroupStateResponse,
    InitializeShareGroupStateRequest,
    InitializeShareGroupStateResponse,
    ReadShareGroupStateRequest,
    ReadShareGroupStateResponse,
    ReadShareGroupStateSummaryRequest,
    ReadShareGroupStateSummaryResponse,
    WriteShareGroupStateRequest,
    WriteShareGroupStateResponse,
)
from wire.messages import delete_share_group_state_request as dreq
from wire.messages import initialize_share_group_state_request as ireq
from wire.messages import read_share_group_state_request as rreq
from wire.messages import read_share_group_state_summary_request as sreq
from wire.messages import write_share_group_state_request as wreq

__all__ = ["SharePersister", "summary_has_state"]

log = logging.getLogger("pykbroker.coordinator.share")

Send = Callable[[int, Any, int, Any], Awaitable[Any]]
RETRIABLE = frozenset({ErrorCode.NOT_COORDINATOR, ErrorCode.COORDINATOR_NOT_AVAILABLE,
                       ErrorCode.COORDINATOR_LOAD_IN_PROGRESS, ErrorCode.REQUEST_TIMED_OUT})
ATTEMPT_TIMEOUT_MS = 10_000  # one try (an acks=all append waits for the ISR); a coordinator that is going away
WRITE_VERSION = 1  # WriteShareGroupState v1 carries DeliveryCompleteCount (Kafka 4.2)
SUMMARY_VERSION = 1


class SharePersister:
    def __init__(self, node_id: int, coordinator: ShareCoordinator, send: Send | None = None, *,
                 timeout_ms: int = 30_000, backoff_ms: int = 50, max_backoff_ms: int = 1_000) -> None:
        self.node_id = node_id
        self.coordinator = coordinator
        self._send = send
        self.timeout_ms = timeout_ms
        self.backoff_ms = backoff_ms
        self.max_backoff_ms = max_backoff_ms

    # -- the operations ---------------------------------------------------------------------------------
    async def read_state(self, key: SharePartitionKey, leader_epoch: int = -1) -> ShareGroupOffset | None:
        async def remote(node: int) -> ShareGroupOffset | None:
            response = await self._request(node, ReadShareGroupStateRequest(group_id=key[0], topics=[
                rreq.ReadStateData(topic_id=key[1], partitions=[
                    rreq.PartitionData(partition=key[2], leader_epoch=leader_epoch)])]), 0,
                ReadShareGroupStateResponse)
            p = _only(response.results, key)
            try:
                _raise_for(p)
            except ApiError as exc:
                if uninitialized(exc):  # Kafka 4.4's answer for no state
                    return None
                raise
            if p.state_epoch < 0 and p.start_offset < 0 and not p.state_batches:
                return None  # no state (older pykbrokers answered epoch -1, offset -1)
            return ShareGroupOffset(-1, p.state_epoch, leader_epoch, p.start_offset, [
                StateBatch(b.first_offset, b.last_offset, b.delivery_state, b.delivery_count) for b in p.state_batches])
        return await self._call(key, lambda: self.coordinator.read_state(key, leader_epoch), remote)

    async def initialize_state(self, key: SharePartitionKey, state_epoch: int, start_offset: int) -> None:
        async def remote(node: int) -> None:
            response = await self._request(node, InitializeShareGroupStateRequest(group_id=key[0], topics=[
                ireq.InitializeStateData(topic_id=key[1], partitions=[
                    ireq.PartitionData(partition=key[2], state_epoch=state_epoch, start_offset=start_offset)])]), 0,
                InitializeShareGroupStateResponse)
            _raise_for(_only(response.results, key))
        await self._call(key, lambda: self.coordinator.initialize_state(key, state_epoch, start_offset), remote)

    async def write_state(self, key: SharePartitionKey, state_epoch: int, leader_epoch: int, start_offset: int,
                          batches: list[StateBatch], delivery_complete_count: int = -1) -> None:
        async def remote(node: int) -> None:
            response = await self._request(node, WriteShareGroupStateRequest(group_id=key[0], topics=[
                wreq.WriteStateData(topic_id=key[1], partitions=[wreq.PartitionData(
                    partition=key[2], state_epoch=state_epoch, leader_epoch=leader_epoch, start_offset=start_offset,
                    delivery_complete_count=delivery_complete_count,
                    state_batches=[wreq.StateBatch(first_offset=b.first_offset, last_offset=b.last_offset,
                                                   delivery_state=b.delivery_state, delivery_count=b.delivery_count)
                                   for b in batches])])]), WRITE_VERSION, WriteShareGroupStateResponse)
            _raise_for(_only(response.results, key))
        await self._call(key, lambda: self.coordinator.write_state(key, state_epoch, leader_epoch, start_offset,
                                                                   batches, delivery_complete_count), remote)

    async def delete_state(self, key: SharePartitionKey) -> None:
        async def remote(node: int) -> None:
            response = await self._request(node, DeleteShareGroupStateRequest(group_id=key[0], topics=[
                dreq.DeleteStateData(topic_id=key[1], partitions=[dreq.PartitionData(partition=key[2])])]), 0,
                DeleteShareGroupStateResponse)
            _raise_for(_only(response.results, key))
        await self._call(key, lambda: self.coordinator.delete_state(key), remote)

    async def read_summary(self, key: SharePartitionKey) -> ShareGroupOffset | None:
        """Start offset and epochs (no batches; ``delivery_complete_count`` = offsets done above the start)."""
        async def remote(node: int) -> ShareGroupOffset | None:
            response = await self._request(node, ReadShareGroupStateSummaryRequest(group_id=key[0], topics=[
                sreq.ReadStateSummaryData(topic_id=key[1], partitions=[
                    sreq.PartitionData(partition=key[2], leader_epoch=-1)])]), SUMMARY_VERSION,
                ReadShareGroupStateSummaryResponse)
            p = _only(response.results, key)
            _raise_for(p)
            if not summary_has_state(p):
                return None
            return ShareGroupOffset(-1, p.state_epoch, p.leader_epoch, p.start_offset, [], p.delivery_complete_count)
        return await self._call(key, lambda: self.coordinator.read_summary(key), remote)

    async def states(self, group_id: str, candidates: Iterable[tuple[uuid.UUID, int]]
                     ) -> dict[SharePartitionKey, ShareGroupOffset]:
        """The persisted state of ``group_id`` on every share-partition: the local coordinator's in full, and
        the summaries of the ``candidates`` (topic id, partition) coordinated elsewhere — one
        ReadShareGroupStateSummary per coordinator, a coordinator that does not answer is left out."""
        out = dict(await self.coordinator.all_states(group_id))
        if self._send is None:
            return out
        by_node: dict[int, list[SharePartitionKey]] = {}
        for topic_id, partition in candidates:
            key = (group_id, topic_id, partition)
            node = self.coordinator.leader_of(key)
            if key not in out and node is not None and node >= 0 and node != self.node_id:
                by_node.setdefault(node, []).append(key)
        for node, keys in by_node.items():
            topics: dict[uuid.UUID, list[int]] = {}
            for _, topic_id, partition in keys:
                topics.setdefault(topic_id, []).append(partition)
            request = ReadShareGroupStateSummaryRequest(group_id=group_id, topics=[
                sreq.ReadStateSummaryData(topic_id=t, partitions=[sreq.PartitionData(partition=p, leader_epoch=-1)
                                                                 for p in ps]) for t, ps in topics.items()])
            try:
                response = await self._request(node, request, SUMMARY_VERSION, ReadShareGroupStateSummaryResponse)
            except (ConnectionError, ApiError) as exc:
                log.warning("share group %s: the state summaries from node %d failed: %s", group_id, node, exc)
                continue
            for t in response.results:
                for p in t.partitions:
                    if p.error_code == ErrorCode.NONE and summary_has_state(p):
                        out[(group_id, t.topic_id, p.partition)] = ShareGroupOffset(
                            -1, p.state_epoch, p.leader_epoch, p.start_offset, [], p.delivery_complete_count)
        return out

    # -- routing and retries ----------------------------------------------------------------------------
    async def _call(self, key: SharePartitionKey, local: Callable[[], Awaitable[Any]],
                    remote: Callable[[int], Awaitable[Any]]) -> Any:
        deadline = time.monotonic() + self.timeout_ms / 1000
        backoff = self.backoff_ms
        while True:
            node = self.coordinator.leader_of(key)
            attempt_s = max(0.001, min(ATTEMPT_TIMEOUT_MS / 1000, deadline - time.monotonic()))
            try:
                async with asyncio.timeout(attempt_s):
                    if node is None or node == self.node_id or self._send is None:
                        # creates __share_group_state on first use; NOT_COORDINATOR once the partition moved
                        return await local()
                    if node < 0:
                        raise ApiError(ErrorCode.COORDINATOR_NOT_AVAILABLE, "no leader")
                    return await remote(node)
            except TimeoutError:
                if time.monotonic() >= deadline:
                    raise ApiError(ErrorCode.COORDINATOR_NOT_AVAILABLE, "the share coordinator did not answer") from None
                why = "no answer"
            except ApiError as exc:
                if exc.error_code not in RETRIABLE or time.monotonic() >= deadline:
                    raise
                why = ErrorCode(exc.error_code).name
            except ConnectionError as exc:
                if time.monotonic() >= deadline:
                    raise ApiError(ErrorCode.COORDINATOR_NOT_AVAILABLE, str(exc)) from exc
                why = str(exc)
            log.debug("share state of %s on node %s: %s; retrying in %d ms", key, node, why, backoff)
            await asyncio.sleep(backoff / 1000)
            backoff = min(backoff * 2, self.max_backoff_ms)

    async def _request(self, node: int, request: Any, version: int, response_class: Any) -> Any:
        assert self._send is not None
        return await self._send(node, request, version, response_class)


def summary_has_state(p) -> bool:
    """Whether a ReadShareGroupStateSummary partition result describes persisted state. Without state Kafka 4.4
    answers state and leader epoch 0 with start offset and delivery complete count -1 (older pykbrokers: epochs
    -1); state initialized without an offset looks the same but for its state epoch, the group epoch (>= 1)."""
    return p.start_offset >= 0 or p.delivery_complete_count >= 0 or p.state_epoch > 0 or p.leader_epoch > 0


def _only(results, key: SharePartitionKey):
    for topic in results:
        for p in topic.partitions:
            if topic.topic_id == key[1] and p.partition == key[2]:
                return p
    raise ApiError(ErrorCode.UNKNOWN_SERVER_ERROR, f"no result for {key} in the answer")


def _raise_for(p) -> None:
    if p.error_code != ErrorCode.NONE:
        try:
            code: Any = ErrorCode(p.error_code)
        except ValueError:
            code = p.error_code
        raise ApiError(code, p.error_message or "")
