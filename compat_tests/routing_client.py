"""The differential scenarios' client on a cluster: a RawClient that sends each request where a Kafka client
would — produce, fetch and the other partition requests to the partitions' leaders (from Metadata; a request
whose partitions have several leaders split among them and the answers merged, compat_tests/leader_split.py), group
requests (the share-group ones too) to the group coordinator, ShareFetch and ShareAcknowledge to their first
partition's leader, ReadShareGroupStateSummary and Read/WriteShareGroupState to their first share-partition's
share coordinator, and
transaction requests to the transaction coordinator (FindCoordinator),
ListGroups and ListTransactions to every broker (as the admin client lists them), the rest to the bootstrap
broker. On one node every route is that node, so the single mode keeps the plain RawClient."""

from __future__ import annotations

import time
from collections.abc import Callable

from compat_tests import leader_split
from pykbroker.testing import RawClient
from storage.checkpoints import topic_id_to_string
from wire import ErrorCode
from wire.messages import (
    AddOffsetsToTxnRequest,
    AddPartitionsToTxnRequest,
    AlterShareGroupOffsetsRequest,
    ConsumerGroupDescribeRequest,
    ConsumerGroupHeartbeatRequest,
    DeleteGroupsRequest,
    DeleteShareGroupOffsetsRequest,
    DescribeGroupsRequest,
    DescribeLogDirsRequest,
    DescribeShareGroupOffsetsRequest,
    DescribeTransactionsRequest,
    EndTxnRequest,
    FetchRequest,
    FindCoordinatorRequest,
    HeartbeatRequest,
    InitProducerIdRequest,
    JoinGroupRequest,
    LeaveGroupRequest,
    ListGroupsRequest,
    ListTransactionsRequest,
    MetadataRequest,
    OffsetCommitRequest,
    OffsetDeleteRequest,
    OffsetFetchRequest,
    ReadShareGroupStateRequest,
    ReadShareGroupStateSummaryRequest,
    ShareAcknowledgeRequest,
    ShareFetchRequest,
    ShareGroupDescribeRequest,
    ShareGroupHeartbeatRequest,
    StreamsGroupDescribeRequest,
    StreamsGroupHeartbeatRequest,
    SyncGroupRequest,
    TxnOffsetCommitRequest,
    WriteShareGroupStateRequest,
)
from wire.messages.metadata_request import MetadataRequestTopic

GROUP, TRANSACTION, SHARE = 0, 1, 2
_COORDINATOR_LOADING = (ErrorCode.COORDINATOR_NOT_AVAILABLE, ErrorCode.COORDINATOR_LOAD_IN_PROGRESS)


def _first_partition(request) -> tuple[object, int] | None:
    """(topic name or id, partition) of a partition request's first partition; None when it names none."""
    if type(request) in leader_split.KEYED:
        named = leader_split.partitions_of(request)
        return named[0] if named else None
    if isinstance(request, (ShareFetchRequest, ShareAcknowledgeRequest)):  # by topic id, to the leader
        topics = request.topics
        if not topics or not topics[0].partitions:
            return None
        return topics[0].topic_id, topics[0].partitions[0].partition_index
    if isinstance(request, DescribeLogDirsRequest):  # the admin client asks the replicas' brokers
        topics = request.topics
        if not topics or not topics[0].partitions:
            return None
        return topics[0].topic, topics[0].partitions[0]
    return None


def _coordinator_key(request, version: int) -> tuple[int, str] | None:
    """(key type, key) of the coordinator a request goes to; None for a request no coordinator answers."""
    if isinstance(request, (JoinGroupRequest, SyncGroupRequest, HeartbeatRequest, LeaveGroupRequest,
                            OffsetCommitRequest, OffsetDeleteRequest, ConsumerGroupHeartbeatRequest,
                            TxnOffsetCommitRequest, StreamsGroupHeartbeatRequest, ShareGroupHeartbeatRequest,
                            AlterShareGroupOffsetsRequest, DeleteShareGroupOffsetsRequest)):
        return GROUP, request.group_id
    if isinstance(request, OffsetFetchRequest):
        return GROUP, request.group_id if version < 8 else (request.groups[0].group_id if request.groups else None)
    if isinstance(request, DescribeGroupsRequest):
        return (GROUP, request.groups[0]) if request.groups else None
    if isinstance(request, DeleteGroupsRequest):
        return (GROUP, request.groups_names[0]) if request.groups_names else None
    if isinstance(request, (ConsumerGroupDescribeRequest, StreamsGroupDescribeRequest, ShareGroupDescribeRequest)):
        return (GROUP, request.group_ids[0]) if request.group_ids else None
    if isinstance(request, DescribeShareGroupOffsetsRequest):
        return (GROUP, request.groups[0].group_id) if request.groups else None
    if isinstance(request, (ReadShareGroupStateSummaryRequest, ReadShareGroupStateRequest,
                            WriteShareGroupStateRequest)):  # the share coordinator of its first partition
        if not request.topics or not request.topics[0].partitions or request.topics[0].partitions[0].partition < 0:
            return None
        first = request.topics[0]
        return SHARE, f"{request.group_id}:{topic_id_to_string(first.topic_id)}:{first.partitions[0].partition}"
    if isinstance(request, (InitProducerIdRequest, AddOffsetsToTxnRequest, EndTxnRequest)):
        return (TRANSACTION, request.transactional_id) if request.transactional_id else None
    if isinstance(request, AddPartitionsToTxnRequest):
        tid = request.v3_and_below_transactional_id if version <= 3 else (
            request.transactions[0].transactional_id if request.transactions else None)
        return (TRANSACTION, tid) if tid else None
    if isinstance(request, DescribeTransactionsRequest):
        return (TRANSACTION, request.transactional_ids[0]) if request.transactional_ids else None
    return None


# Requests that name several groups: (the groups' field, the results' field).
_MULTI_GROUP = {DeleteGroupsRequest: ("groups_names", "results"), DescribeGroupsRequest: ("groups", "groups"),
                ConsumerGroupDescribeRequest: ("group_ids", "groups"), StreamsGroupDescribeRequest: ("group_ids", "groups"),
                ShareGroupDescribeRequest: ("group_ids", "groups")}


class RoutingClient(RawClient):
    """A RawClient routing each request to the broker a Kafka client sends it to (see the module docstring).

    ``send``/``recv`` and raw bytes stay on the bootstrap connection; ``coordinator`` gives the address of a
    group's coordinator for scenarios that open their own connections to it."""

    def __init__(self, bootstrap: str, timeout: float = 10.0, client_id: str | None = "raw-test", ssl_context=None,
                 authenticate: Callable[[RawClient], object] | None = None) -> None:
        """``ssl_context``: TLS to every broker; ``authenticate``: run on each connection the client opens to
        another broker (a SASL login, as the bootstrap connection's caller made)."""
        super().__init__(bootstrap, timeout, client_id, ssl_context)
        self._authenticate = authenticate
        self._connections: dict[str, RawClient] = {}
        self._coordinators: dict[tuple[int, str], str] = {}
        self._sessions: dict[int, str] = {}

    def request(self, request, version: int):
        if isinstance(request, (ListGroupsRequest, ListTransactionsRequest)):
            return self._from_every_broker(request, version)
        if isinstance(request, FetchRequest) and request.session_id in self._sessions:
            address = self._sessions[request.session_id]  # a fetch session lives on the broker that opened it
        elif (split := _MULTI_GROUP.get(type(request))) and len(getattr(request, split[0])) > 1:
            return self._per_coordinator(request, version, *split)
        elif leader_split.splittable(request, version):
            return self._per_leader(request, version)
        else:
            address = self.route(request, version)
        response = self._connection(address).request(request, version)
        if isinstance(request, FetchRequest) and getattr(response, "session_id", 0):
            self._sessions[response.session_id] = address
        return response

    def _per_coordinator(self, request, version: int, keys: str, results: str):
        """A request naming several groups, sent to each group's coordinator with its groups (as the admin
        client does); the answers joined in the request's order."""
        by_address: dict[str, list[str]] = {}
        for group in getattr(request, keys):
            by_address.setdefault(self.coordinator(group), []).append(group)
        joined = None
        answered = []
        for address, groups in by_address.items():
            setattr(request, keys, groups)
            response = self._connection(address).request(request, version)
            answered += getattr(response, results)
            joined = joined or response
        setattr(request, keys, [g for gs in by_address.values() for g in gs])
        setattr(joined, results, answered)
        return joined

    def _per_leader(self, request, version: int):
        """A partition request sent to each partition's leader with that leader's partitions (all of it, as it
        is, when one broker leads them all); the answers merged in the request's order."""
        leaders = self.leaders(leader_split.partitions_of(request))
        by_address = leader_split.split(request, lambda topic, partition: leaders.get((topic, partition),
                                                                                      self.bootstrap))
        if len(by_address) <= 1:
            return self._connection(next(iter(by_address), self.bootstrap)).request(request, version)
        field = leader_split.KEYED[type(request)][0].topics
        whole = getattr(request, field)
        responses = []
        try:
            for address, topics in by_address.items():
                setattr(request, field, topics)
                responses.append(self._connection(address).request(request, version))
        finally:
            setattr(request, field, whole)
        return leader_split.merge(request, responses)

    def leaders(self, partitions: list[tuple[object, int]]) -> dict[tuple[object, int], str]:
        """The leader's address of each (topic name or id, partition) that has a leader, from one Metadata."""
        names = sorted({t for t, _ in partitions if isinstance(t, str)})
        by_id = any(not isinstance(t, str) for t, _ in partitions)
        topics = None if by_id or not names else [MetadataRequestTopic(name=n) for n in names]
        meta = super().request(MetadataRequest(topics=topics, allow_auto_topic_creation=False), 12)
        addresses = {b.node_id: f"{b.host}:{b.port}" for b in meta.brokers}
        return {(key, p.partition_index): addresses[p.leader_id] for t in meta.topics
                for key in (t.name, t.topic_id) for p in t.partitions if p.leader_id in addresses}

    def route(self, request, version: int) -> str:
        """The address ``request`` goes to."""
        partition = _first_partition(request)
        if partition is not None:
            return self._leader(*partition)
        key = _coordinator_key(request, version)
        if key is not None and key[1]:
            return self.coordinator(key[1], key[0])
        return self.bootstrap

    def coordinator(self, key: str, key_type: int = GROUP) -> str:
        """The address of ``key``'s coordinator, asking FindCoordinator again while it loads; the bootstrap
        broker when none is found (which then answers the request with the error a client would see)."""
        if (key_type, key) in self._coordinators:
            return self._coordinators[(key_type, key)]
        deadline = time.monotonic() + 20
        while True:
            found = super().request(FindCoordinatorRequest(key_type=key_type, coordinator_keys=[key]),
                                    6 if key_type == SHARE else 4)  # share keys: v6 (KIP-932)
            c = found.coordinators[0]
            if c.error_code == ErrorCode.NONE:
                self._coordinators[(key_type, key)] = address = f"{c.host}:{c.port}"
                return address
            if c.error_code not in _COORDINATOR_LOADING or time.monotonic() > deadline:
                return self.bootstrap
            time.sleep(0.1)

    def leader(self, name: str, partition: int = 0) -> str:
        """The address of the leader of ``name``'s ``partition`` (the bootstrap broker when it has none)."""
        return self._leader(name, partition)

    def _leader(self, topic: object, partition: int) -> str:
        """The address of the partition's leader per Metadata; the bootstrap broker when it has none."""
        return self.leaders([(topic, partition)]).get((topic, partition), self.bootstrap)

    def _from_every_broker(self, request, version: int):
        """Ask every broker, as the admin client lists groups and transactions, and join the answers."""
        meta = super().request(MetadataRequest(topics=[], allow_auto_topic_creation=False), 12)
        answers = [self._connection(f"{b.host}:{b.port}").request(request, version)
                   for b in sorted(meta.brokers, key=lambda b: b.node_id)]
        joined = answers[0]
        joined.error_code = next((a.error_code for a in answers if a.error_code), ErrorCode.NONE)
        if isinstance(request, ListGroupsRequest):
            joined.groups = [g for a in answers for g in a.groups]
        else:
            joined.transaction_states = [s for a in answers for s in a.transaction_states]
        return joined

    def _connection(self, address: str) -> RawClient:
        if address == self.bootstrap:
            return _Bootstrap(self)
        if address not in self._connections:
            self._connections[address] = c = RawClient(address, self.timeout, self.client_id, self.ssl_context)
            if self._authenticate is not None:
                self._authenticate(c)
        return self._connections[address]

    def close(self) -> None:
        for c in self._connections.values():
            c.close()
        super().close()


class _Bootstrap:
    """The routing client's own connection, asked without routing."""

    def __init__(self, client: RoutingClient) -> None:
        self.client = client

    def request(self, request, version: int):
        return RawClient.request(self.client, request, version)
