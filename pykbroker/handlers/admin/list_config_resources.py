"""ListConfigResources v0-1 (KIP-1142; v0 was ListClientMetricsResources): which resources have configs.

v0 lists client-metrics resources only; v1 takes a list of resource types (empty: every supported one)
and answers topics, every live broker (BROKER and BROKER_LOGGER, by node id), groups with configs of their own
and client-metrics resources, in Kafka's order. An unsupported type fails the whole request with
UNSUPPORTED_VERSION, as in Kafka. Groups are those with GROUP configs set (sorted by id);
the client-metrics subscriptions are those of the metadata (sorted by name).
"""

from __future__ import annotations

from pykbroker.context import RequestContext
from pykbroker.registry import handler
from pykbroker.security.auth_helper import AclOperation, authorize_cluster
from wire import ApiKey, ErrorCode
from wire.messages import ListConfigResourcesRequest, ListConfigResourcesResponse
from wire.messages.list_config_resources_response import ConfigResource

TOPIC, BROKER, BROKER_LOGGER, CLIENT_METRICS, GROUP = 2, 4, 8, 16, 32
SUPPORTED_V1 = (TOPIC, BROKER, BROKER_LOGGER, CLIENT_METRICS, GROUP)


def error_response(request: ListConfigResourcesRequest | None, version: int, code: int) -> ListConfigResourcesResponse:
    return ListConfigResourcesResponse(error_code=code, config_resources=[])


@handler(ApiKey.LIST_CONFIG_RESOURCES, 0, 1, error_response=error_response)
async def handle_list_config_resources(ctx: RequestContext,
                                       request: ListConfigResourcesRequest) -> ListConfigResourcesResponse:
    if not authorize_cluster(ctx, AclOperation.DESCRIBE_CONFIGS):
        return error_response(request, ctx.api_version, ErrorCode.CLUSTER_AUTHORIZATION_FAILED)
    supported = (CLIENT_METRICS,) if ctx.api_version == 0 else SUPPORTED_V1
    wanted = set(request.resource_types if ctx.api_version >= 1 and request.resource_types else supported)
    if not wanted <= set(supported):
        return error_response(request, ctx.api_version, ErrorCode.UNSUPPORTED_VERSION)
    # Every live broker, as Kafka lists them (on a cluster, not only the one asked).
    nodes = [str(n) for n in sorted(ctx.metadata.brokers)] or [str(ctx.broker.node_id)]
    found: list[ConfigResource] = []
    # Kafka's order: groups, client metrics, broker loggers, brokers, topics.
    if GROUP in wanted:
        found += [ConfigResource(resource_name=group, resource_type=GROUP)
                  for group, configs in sorted(ctx.metadata.group_configs.items()) if configs]
    if CLIENT_METRICS in wanted:
        found += [ConfigResource(resource_name=name, resource_type=CLIENT_METRICS)
                  for name in sorted(ctx.metadata.client_metrics_configs)]
    for resource_type in (BROKER_LOGGER, BROKER):
        if resource_type in wanted:
            found += [ConfigResource(resource_name=node, resource_type=resource_type) for node in nodes]
    if TOPIC in wanted:
        found += [ConfigResource(resource_name=name, resource_type=TOPIC) for name in sorted(ctx.metadata.topics)]
    return ListConfigResourcesResponse(error_code=ErrorCode.NONE, config_resources=found)
