"""Topology descriptions of streams groups (KIP-1331) in pykbroker's built-in store, with Kafka 4.4's flow.

Kafka 4.4 keeps the descriptions members push (StreamsGroupTopologyDescriptionUpdate) in a plugin
(``group.streams.topology.description.plugin.class``); pykbroker keeps them, when
``group.streams.topology.description.store.enable`` is on, as a record of the group's own __consumer_offsets
partition (pykbroker's type 1331, compacted by group), written in the same batch as the group's
StoredDescriptionTopologyEpoch. So a description is "stored" exactly when its record is committed: it survives a
restart and moves with the partition on coordinator failover, and Kafka's "uncertain" epoch (-2, between its
metadata write and the plugin's answer) never shows.

What the clients see is Kafka 4.4's StreamsGroupTopologyDescriptionManager's:

- a heartbeat (v1+, no error) asks for a push (TopologyDescriptionRequired) while the group's topology epoch is
  neither the stored nor the failed description epoch and the member is not told STALE_TOPOLOGY, at most once per
  backoff of the (group, epoch): 30 s doubling to 1 h, +-20 % jitter (Kafka's ExponentialBackoff);
- a push is checked against the group, the member and the group's topology epoch, converted as Kafka's
  StreamsGroupTopologyDescriptionConverter does (each node keeps the fields of its type, lists lose duplicates),
  then written;
- StreamsGroupDescribe v1 reports STORED with the description when the stored epoch is the topology's, else
  NOT_STORED.
"""

from __future__ import annotations

import logging
import random
from collections.abc import Callable
from dataclasses import dataclass, replace

from coordinator.group import streams_group_records as srec
from coordinator.group.streams_group import StreamsGroup, StreamsGroups
from coordinator.group.streams_topology import StatusCode
from coordinator.runtime.clock import Clock
from coordinator.runtime.errors import ApiError
from coordinator.runtime.result import CoordinatorResult
from wire import ErrorCode, Reader, Writer
from wire.messages import (
    StreamsGroupHeartbeatResponse,
    StreamsGroupTopologyDescriptionUpdateRequest,
    StreamsGroupTopologyDescriptionUpdateResponse,
    StreamsTopologyDescriptionValue,
)
from wire.messages import streams_group_describe_response as sgd
from wire.messages import streams_topology_description_value as _stored

__all__ = ["NOT_STORED", "STORED", "DescriptionBackoff", "TopologyDescriptions"]

log = logging.getLogger("pykbroker.coordinator.group")

#: StreamsGroupDescribe v1's TopologyDescriptionStatus values.
NOT_STORED, ERROR, STORED = 1, 2, 3
SOURCE, PROCESSOR, SINK = 1, 2, 3
INITIAL_DELAY_MS, MULTIPLIER, MAX_DELAY_MS, JITTER = 30_000, 2, 3_600_000, 0.2


@dataclass(frozen=True, slots=True)
class _Entry:
    topology_epoch: int
    attempts: int
    next_attempt_ms: int


class DescriptionBackoff:
    """Kafka's StreamsGroupTopologyDescriptionBackoff: by group, the epoch last asked for and when to ask again."""

    def __init__(self, now_ms: Callable[[], int], uniform: Callable[[float, float], float] = random.uniform) -> None:
        self._now_ms = now_ms
        self._uniform = uniform
        self._state: dict[str, _Entry] = {}

    def _delay_ms(self, attempts: int) -> int:
        term = INITIAL_DELAY_MS * MULTIPLIER ** attempts
        return min(int(self._uniform(1 - JITTER, 1 + JITTER) * term), MAX_DELAY_MS)

    def arm_if_not_active(self, group_id: str, epoch: int) -> bool:
        """False while a backoff of this epoch runs; else starts the next one (the first, for a new epoch)."""
        now = self._now_ms()
        e = self._state.get(group_id)
        if e is not None and e.topology_epoch == epoch and now < e.next_attempt_ms:
            return False
        attempts = e.attempts + 1 if e is not None and e.topology_epoch == epoch else 0
        self._state[group_id] = _Entry(epoch, attempts, now + self._delay_ms(attempts))
        return True

    def clear(self, group_id: str, epoch: int) -> None:
        e = self._state.get(group_id)
        if e is not None and e.topology_epoch == epoch:
            del self._state[group_id]

    def clear_group(self, group_id: str) -> None:
        self._state.pop(group_id, None)


def _invalid(message: str) -> ApiError:
    return ApiError(ErrorCode.INVALID_REQUEST, message)


def _unique(names) -> list[str]:
    return list(dict.fromkeys(names or ()))


def _node(n) -> _stored.TopologyDescriptionNode:
    """A pushed node as Kafka's converter keeps it: its name, its successors and its type's own field."""
    if n.node_type == SOURCE:
        return _stored.TopologyDescriptionNode(name=n.name, node_type=SOURCE, source_topics=_unique(n.source_topics),
                                               successors=_unique(n.successors))
    if n.node_type == PROCESSOR:
        return _stored.TopologyDescriptionNode(name=n.name, node_type=PROCESSOR, stores=_unique(n.stores),
                                               successors=_unique(n.successors))
    if n.node_type == SINK:
        return _stored.TopologyDescriptionNode(name=n.name, node_type=SINK, sink_topic=n.sink_topic,
                                               successors=_unique(n.successors))
    raise _invalid(f"Unknown topology node type: {n.node_type}")


def convert(description) -> _stored.TopologyDescription:
    """The request's TopologyDescription as the store keeps it; INVALID_REQUEST as Kafka's converter refuses."""
    subtopologies = [_stored.TopologyDescriptionSubtopology(subtopology_id=s.subtopology_id,
                                                            nodes=[_node(n) for n in s.nodes])
                     for s in description.subtopologies]
    stores = []
    for g in description.global_stores:
        source, processor = _node(g.source), _node(g.processor)
        if source.node_type != SOURCE or processor.node_type != PROCESSOR:
            raise _invalid("Global store must be composed of a source and a processor node.")
        stores.append(_stored.TopologyDescriptionGlobalStore(source=source, processor=processor))
    return _stored.TopologyDescription(subtopologies=subtopologies, global_stores=stores)


def described(description: _stored.TopologyDescription) -> sgd.TopologyDescription:
    """The stored description as StreamsGroupDescribe v1 carries it (the same fields, so the same bytes)."""
    w = Writer()
    description.encode_into(w, 0)
    return sgd.TopologyDescription.decode_from(Reader(w.getvalue()), 1)


class TopologyDescriptions:
    """A shard's topology descriptions: the heartbeat's request for a push, the push, describe and deletion."""

    def __init__(self, streams: StreamsGroups, clock: Clock, enabled: bool,
                 other_group: Callable[[str], bool] = lambda _: False) -> None:
        """``enabled``: group.streams.topology.description.store.enable; ``other_group(group_id)``: a group of
        another type (or of offsets alone) has that id."""
        self.streams = streams
        self.enabled = enabled
        self.other_group = other_group
        self.backoff = DescriptionBackoff(clock.now_ms)

    # -- heartbeat ---------------------------------------------------------------------------------------
    def maybe_require(self, api_version: int, member_epoch: int, group_id: str, topology_epoch: int,
                      response: StreamsGroupHeartbeatResponse) -> None:
        """Set TopologyDescriptionRequired as Kafka's maybeSetTopologyDescriptionRequired does (``member_epoch``:
        the request's, ``topology_epoch``: the group's after the heartbeat)."""
        if api_version < 1 or not self.enabled or member_epoch < 0 or response.error_code != ErrorCode.NONE:
            return
        group = self.streams.groups.get(group_id)
        stored, failed = ((group.metadata.stored_description_topology_epoch,
                           group.metadata.failed_description_topology_epoch) if group is not None else (-1, -1))
        if group is not None and stored >= 0 and (group.description is None
                                                  or group.description.topology_epoch != stored):
            stored = -1  # an epoch stored elsewhere (a log Kafka's plugin wrote), not in this store: ask again
        if topology_epoch < 0 or topology_epoch in (stored, failed):
            return
        if any(s.status_code == StatusCode.STABLE_TOPOLOGY for s in response.status or ()):
            return
        if self.backoff.arm_if_not_active(group_id, topology_epoch):
            response.topology_description_required = True
            log.info("[GroupId %s] Requested topology description push at topology epoch %d.", group_id,
                     topology_epoch)

    # -- push ----------------------------------------------------------------------------------------------
    def _group(self, group_id: str) -> StreamsGroup:
        group = self.streams.groups.get(group_id)
        if group is None:
            message = (f"Group {group_id} is not a streams group." if self.other_group(group_id)
                       else f"Group {group_id} not found.")
            raise ApiError(ErrorCode.GROUP_ID_NOT_FOUND, message)
        return group

    def update(self, r: StreamsGroupTopologyDescriptionUpdateRequest) -> CoordinatorResult:
        """Kafka's validateStreamsGroupTopologyDescriptionUpdate, conversion and stored epoch, in one write."""
        g = r.group_id
        group = self._group(g)
        if r.member_id not in group.members:
            raise ApiError(ErrorCode.UNKNOWN_MEMBER_ID, f"Member {r.member_id} is not a member of group {g}.")
        current = group.topology.epoch if group.topology is not None else -1
        if r.topology_epoch != current:
            raise _invalid(f"Topology epoch {r.topology_epoch} does not match the group's current topology epoch "
                           f"{current}.")
        value = StreamsTopologyDescriptionValue(topology_epoch=r.topology_epoch,
                                                              topology_description=convert(r.topology_description))
        self.backoff.clear(g, r.topology_epoch)
        log.info("streams group %s: stored the topology description of topology epoch %d", g, r.topology_epoch)
        return CoordinatorResult([
            srec.description_record(g, value),
            srec.epoch_record(g, replace(group.metadata, stored_description_topology_epoch=r.topology_epoch))],
            StreamsGroupTopologyDescriptionUpdateResponse(error_code=ErrorCode.NONE))

    # -- describe ------------------------------------------------------------------------------------------
    def describe(self, group: StreamsGroup, d: sgd.DescribedGroup) -> None:
        """Kafka's maybeAttachOne: STORED with the description whose epoch is stored and the topology's."""
        d.topology_description_status = NOT_STORED
        stored = group.metadata.stored_description_topology_epoch
        if (self.enabled and group.topology is not None and stored >= 0 and stored == group.topology.epoch
                and group.description is not None and group.description.topology_epoch == stored):
            d.topology_description = described(group.description.topology_description)
            d.topology_description_status = STORED

    # -- deletion ------------------------------------------------------------------------------------------
    def cleanup_records(self, group: StreamsGroup) -> list:
        """The records deleting a group's stored description (Kafka's cleanup cycle and its delete before a
        conversion): the description's tombstone and the group's stored epoch back to -1."""
        self.backoff.clear_group(group.group_id)
        out = [srec.description_tombstone(group.group_id)] if group.description is not None else []
        if group.metadata.stored_description_topology_epoch != -1:
            out.append(srec.epoch_record(group.group_id,
                                         replace(group.metadata, stored_description_topology_epoch=-1)))
        return out
