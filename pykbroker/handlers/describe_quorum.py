"""DescribeQuorum v0-2: the metadata quorum of a single-node cluster, which is this node alone.

Kafka answers for ``__cluster_metadata`` partition 0 only (anything else: UNKNOWN_TOPIC_OR_PARTITION).
This node is the only voter and the leader; the high watermark is the count of metadata changes.
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
    end_offset = ctx.metadata.offset
    now_ms = int(time.time() * 1000)
    voter = ReplicaState(replica_id=broker.node_id, log_end_offset=end_offset, last_fetch_timestamp=now_ms,
                         last_caught_up_timestamp=now_ms)
    listener = broker.advertised_listener(ctx.listener.name)
    return DescribeQuorumResponse(
        error_code=ErrorCode.NONE,
        topics=[TopicData(topic_name=METADATA_TOPIC, partitions=[PartitionData(
            partition_index=0, error_code=ErrorCode.NONE, leader_id=broker.node_id, leader_epoch=LEADER_EPOCH,
            high_watermark=end_offset, current_voters=[voter], observers=[])])],
        nodes=[Node(node_id=broker.node_id, listeners=[Listener(name=listener.name, host=listener.host,
                                                                 port=listener.port)])])
