"""DescribeQuorum v0-2: who decides the cluster's metadata, as Kafka's metadata quorum.

Kafka answers for ``__cluster_metadata`` partition 0 only (anything else: UNKNOWN_TOPIC_OR_PARTITION). On a
single node this node is the only voter and the leader. On a cluster every broker gives the same answer, as
a cluster of combined broker+controller KRaft nodes does: every broker that ever registered is a voter (any
of them can become the controller), the controller (whoever holds ZooKeeper's ``/controller``) is the
leader, the others its followers, and there are no observers. A voter that is down stays listed, as in a
KRaft quorum's static voter set, with the state a KRaft leader shows for a voter it has not heard from (log
end offset and fetch times -1: its lag is the whole log) and the address it last registered. The high
watermark is the count of metadata changes this broker has seen.
"""

from __future__ import annotations

import time

from pykbroker.context import RequestContext
from pykbroker.registry import handler
from pykbroker.security.auth_helper import AclOperation, authorize_cluster
from wire import ApiKey, ErrorCode
from wire.messages import DescribeQuorumRequest, DescribeQuorumResponse
from wire.messages.describe_quorum_response import Listener, Node, PartitionData, ReplicaState, TopicData

METADATA_TOPIC = "__cluster_metadata"
LEADER_EPOCH = 1


def error_response(request: DescribeQuorumRequest | None, version: int, code: int) -> DescribeQuorumResponse:
    return DescribeQuorumResponse(error_code=code, topics=[], nodes=[])


def _partition_error(topic: str, partition: int) -> DescribeQuorumResponse:
    return DescribeQuorumResponse(error_code=ErrorCode.NONE, topics=[TopicData(topic_name=topic, partitions=[
        PartitionData(partition_index=partition, error_code=ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
                      current_voters=[], observers=[])])], nodes=[])


@handler(ApiKey.DESCRIBE_QUORUM, 0, 2, error_response=error_response)
async def handle_describe_quorum(ctx: RequestContext, request: DescribeQuorumRequest) -> DescribeQuorumResponse:
    if not authorize_cluster(ctx, AclOperation.DESCRIBE):  # answered by Kafka's controller
        return error_response(request, ctx.api_version, ErrorCode.CLUSTER_AUTHORIZATION_FAILED)
    wanted = [(t.topic_name, p.partition_index) for t in request.topics for p in t.partitions]
    if wanted != [(METADATA_TOPIC, 0)]:
        topic, partition = wanted[0] if wanted else (METADATA_TOPIC, 0)
        return _partition_error(topic, partition)
    broker = ctx.broker
    image = ctx.metadata
    end_offset = image.offset
    now_ms = int(time.time() * 1000)
    leader = image.controller_id if image.controller_id >= 0 else broker.node_id

    live = set(image.brokers) | {broker.node_id}

    def state(node_id: int) -> ReplicaState:
        if node_id not in live:
            return ReplicaState(replica_id=node_id, log_end_offset=-1, last_fetch_timestamp=-1,
                                last_caught_up_timestamp=-1)
        return ReplicaState(replica_id=node_id, log_end_offset=end_offset, last_fetch_timestamp=now_ms,
                            last_caught_up_timestamp=now_ms)

    listener = broker.advertised_listener(ctx.listener.name)

    def endpoint(node_id: int) -> tuple[str, int]:
        """The node's address on the listener asked through (this broker's own where it is not registered)."""
        registered = image.brokers.get(node_id) or image.voters.get(node_id)
        if node_id != broker.node_id and registered is not None:
            found = [(e.host, e.port) for e in registered.endpoints if e.listener == listener.name]
            if found:
                return found[0]
        return listener.host, listener.port

    voters = [leader, *(n for n in sorted(live | set(image.voters)) if n != leader)]
    return DescribeQuorumResponse(
        error_code=ErrorCode.NONE,
        topics=[TopicData(topic_name=METADATA_TOPIC, partitions=[PartitionData(
            partition_index=0, error_code=ErrorCode.NONE, leader_id=leader, leader_epoch=LEADER_EPOCH,
            high_watermark=end_offset, current_voters=[state(n) for n in voters], observers=[])])],
        nodes=[Node(node_id=n, listeners=[Listener(name=listener.name, host=host, port=port)])
               for n in voters for host, port in [endpoint(n)]])
