"""DescribeCluster v0-2.

- v0: brokers, controller id, cluster id, authorized operations when asked.
- v1+: endpoint_type: a broker answers only BROKERS (1); CONTROLLERS (2) gets MISMATCHED_ENDPOINT_TYPE.
- v2+: include_fenced_brokers and is_fenced (a single live broker is never fenced).
"""

from __future__ import annotations

from pykbroker.context import RequestContext
from pykbroker.handlers.authorized_operations import AUTHORIZED_OPERATIONS_OMITTED
from pykbroker.registry import handler
from pykbroker.security.auth_helper import (
    AclOperation,
    ResourceType,
    authorize_cluster,
    authorized_operations,
)
from replication.metadata.acl import CLUSTER_NAME
from replication.metadata.image import live_endpoints
from wire import ApiKey, ErrorCode
from wire.messages import DescribeClusterRequest, DescribeClusterResponse
from wire.messages.describe_cluster_response import DescribeClusterBroker

ENDPOINT_TYPE_BROKERS = 1


def error_response(request: DescribeClusterRequest | None, version: int, code: int) -> DescribeClusterResponse:
    return DescribeClusterResponse(error_code=code, cluster_id="")


@handler(ApiKey.DESCRIBE_CLUSTER, 0, 2, error_response=error_response)
async def handle_describe_cluster(ctx: RequestContext,
                                  request: DescribeClusterRequest) -> DescribeClusterResponse:
    broker = ctx.broker
    if ctx.api_version >= 1 and request.endpoint_type != ENDPOINT_TYPE_BROKERS:
        return DescribeClusterResponse(
            error_code=ErrorCode.MISMATCHED_ENDPOINT_TYPE,
            error_message="The request was sent to an endpoint of type BROKER, but we wanted an endpoint of "
                          "type CONTROLLER" if request.endpoint_type == 2 else "Unsupported endpoint type",
            endpoint_type=ENDPOINT_TYPE_BROKERS,
            cluster_id=broker.cluster_id,
        )
    cluster_ops = AUTHORIZED_OPERATIONS_OMITTED
    if request.include_cluster_authorized_operations:  # 0 without DESCRIBE on the cluster, as Kafka
        cluster_ops = authorized_operations(ctx, ResourceType.CLUSTER, CLUSTER_NAME) if authorize_cluster(
            ctx, AclOperation.DESCRIBE) else 0
    image = ctx.metadata
    return DescribeClusterResponse(
        error_code=ErrorCode.NONE,
        endpoint_type=ENDPOINT_TYPE_BROKERS,
        cluster_id=broker.cluster_id,
        controller_id=image.controller_id,
        brokers=[DescribeClusterBroker(broker_id=b.node_id, host=e.host, port=e.port, rack=b.rack, is_fenced=False)
                 for b, e in live_endpoints(image, ctx.listener.name)],
        cluster_authorized_operations=cluster_ops,
    )
