"""DescribeConfigs v1-4 for topics, this broker and its loggers, groups (KIP-848's GROUP resource: the group's
own configs over the broker's defaults) and client-metrics subscriptions (KIP-714), with synonyms and documentation
when asked."""

from __future__ import annotations

from collections.abc import Mapping

from coordinator.group import group_config
from pykbroker import loggers
from pykbroker.client_metrics import configs as client_metrics_configs
from pykbroker.context import RequestContext
from pykbroker.dynamic_config import (
    broker_config_synonyms,
    config_type_of,
    default_broker_config_entries,
    is_dynamic,
)
from pykbroker.registry import handler
from pykbroker.security.auth_helper import AclOperation, ResourceType, authorize, authorize_cluster
from pykbroker.topic_config import (
    ConfigEntry,
    ConfigSource,
    ConfigType,
    Layers,
    broker_config_entries,
    config_synonyms,
    topic_config_entries,
)
from pykbroker.topic_names import topic_name_error
from wire import ApiKey, ErrorCode
from wire.messages import DescribeConfigsRequest, DescribeConfigsResponse
from wire.messages.describe_configs_request import DescribeConfigsResource
from wire.messages.describe_configs_response import (
    DescribeConfigsResourceResult,
    DescribeConfigsResult,
    DescribeConfigsSynonym,
)

TOPIC = 2
BROKER = 4
BROKER_LOGGER = 8
CLIENT_METRICS = 16
GROUP = 32


def error_response(request: DescribeConfigsRequest | None, version: int, code: int) -> DescribeConfigsResponse:
    resources = [] if request is None else request.resources
    return DescribeConfigsResponse(results=[
        DescribeConfigsResult(error_code=code, resource_type=r.resource_type, resource_name=r.resource_name,
                              configs=[]) for r in resources])


def _entry(e: ConfigEntry, synonyms: bool, documentation: bool) -> DescribeConfigsResourceResult:
    return DescribeConfigsResourceResult(
        name=e.name, value=e.value, read_only=e.read_only, config_source=e.source,
        is_default=e.source == 5, is_sensitive=e.sensitive, config_type=e.config_type,
        documentation=e.documentation if documentation else None,
        synonyms=[DescribeConfigsSynonym(name=n, value=v, source=s) for n, v, s in e.synonyms] if synonyms else [])


def describe(ctx: RequestContext, r: DescribeConfigsResource) -> tuple[int, str | None, list[ConfigEntry]]:
    """(error code, message, entries) for one resource."""
    broker = ctx.broker
    if r.resource_type == TOPIC:
        message = topic_name_error(r.resource_name)
        if message is not None:
            return ErrorCode.INVALID_TOPIC_EXCEPTION, message, []
        topic = ctx.metadata.topics.get(r.resource_name)
        if topic is None:
            # Kafka's ConfigHelper sets only the code, so the message is its generated default "" (not null):
            # clients print "UnknownTopicOrPartitionException: " rather than the exception's default text.
            return ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, "", []
        return ErrorCode.NONE, None, topic_config_entries(broker.dynamic_config.layers(), topic.configs,
                                                          broker.default_log_config.to_properties())
    if r.resource_type == BROKER:
        if not r.resource_name:
            return ErrorCode.NONE, None, default_broker_config_entries(broker.dynamic_config)
        try:
            node = int(r.resource_name)
        except ValueError:
            return ErrorCode.INVALID_REQUEST, f"Broker id must be an integer, but it is: {r.resource_name}", []
        if node != broker.node_id:
            return (ErrorCode.INVALID_REQUEST, f"Unexpected broker id, expected {broker.node_id} or empty string, "
                    f"but received {r.resource_name}", [])
        return ErrorCode.NONE, None, broker_config_entries(broker.dynamic_config.layers(), is_dynamic,
                                                           broker_config_synonyms, config_type_of)
    if r.resource_type == BROKER_LOGGER:
        if not r.resource_name:
            return ErrorCode.INVALID_REQUEST, "Broker id must not be empty", []
        if r.resource_name != str(broker.node_id):
            return (ErrorCode.INVALID_REQUEST, f"Unexpected broker id, expected {broker.node_id} but received "
                    f"{r.resource_name}", [])
        return ErrorCode.NONE, None, [
            ConfigEntry(name, level, ConfigSource.DYNAMIC_BROKER_LOGGER_CONFIG, ConfigType.UNKNOWN, False, False,
                        None, ()) for name, level in loggers.current_levels().items()]
    if r.resource_type == GROUP:
        if not r.resource_name:
            return ErrorCode.INVALID_REQUEST, "Group name must not be empty", []
        return ErrorCode.NONE, None, group_config_entries(ctx.metadata.group_configs.get(r.resource_name, {}),
                                                          lambda name: broker.dynamic_config.current[name],
                                                          broker.dynamic_config.layers())
    if r.resource_type == CLIENT_METRICS:
        if not r.resource_name:
            return ErrorCode.INVALID_REQUEST, "Client metrics subscription name must not be empty", []
        return ErrorCode.NONE, None, client_metrics_configs.config_entries(
            ctx.metadata.client_metrics_configs.get(r.resource_name, {}))
    return ErrorCode.INVALID_REQUEST, f"Unsupported resource type: {r.resource_type}", []


def group_config_entries(stored: Mapping[str, str], broker_property, layers: Layers) -> list[ConfigEntry]:
    """A group's configs: its own (GROUP_CONFIG) or the broker's value, in Kafka's order; as Kafka 4.4's
    ConfigHelper, the synonyms are the group's value and then its broker property's value in each of the broker's
    ``layers`` that sets it (this broker's dynamic config, the cluster's, the static properties, the default), or
    the config's own default without one, and the source is the first synonym's."""
    defaults = group_config.defaults(broker_property)
    entries = []
    for name in group_config.describe_order():
        d = group_config.GROUP_CONFIGS[name]
        if d.broker_default:
            synonyms = config_synonyms(layers, broker_config_synonyms(d.broker_default), d.broker_default)
        else:
            synonyms = [(name, defaults[name], ConfigSource.DEFAULT_CONFIG)]
        if name in stored:
            value = stored[name]
            synonyms.insert(0, (name, value, ConfigSource.GROUP_CONFIG))
        else:
            value = defaults[name]
        source = synonyms[0][2] if synonyms else ConfigSource.DEFAULT_CONFIG
        entries.append(ConfigEntry(name, value, source, d.config_type, False, False, d.doc, tuple(synonyms)))
    return entries


@handler(ApiKey.DESCRIBE_CONFIGS, 1, 4, error_response=error_response)
async def handle_describe_configs(ctx: RequestContext, request: DescribeConfigsRequest) -> DescribeConfigsResponse:
    results = []
    refused = []  # answered after the others, as Kafka's ConfigHelper does
    for r in request.resources:
        refusal = _refusal(ctx, r)
        if refusal is not None:
            refused.append(DescribeConfigsResult(error_code=refusal[0], error_message=refusal[1], configs=[],
                                                 resource_type=r.resource_type, resource_name=r.resource_name))
            continue
        code, message, entries = describe(ctx, r)
        if r.configuration_keys:
            wanted = set(r.configuration_keys)
            entries = [e for e in entries if e.name in wanted]
        results.append(DescribeConfigsResult(
            # Kafka leaves the message of a described resource empty: "" rather than null
            error_code=code, error_message="" if message is None else message, resource_type=r.resource_type, resource_name=r.resource_name,
            configs=[_entry(e, request.include_synonyms, request.include_documentation) for e in entries]))
    return DescribeConfigsResponse(results=results + refused)


def _refusal(ctx: RequestContext, r: DescribeConfigsResource) -> tuple[int, str] | None:
    """DESCRIBE_CONFIGS on the cluster (broker, broker logger) or on the topic; the error when refused."""
    if r.resource_type == TOPIC:
        if not authorize(ctx, AclOperation.DESCRIBE_CONFIGS, ResourceType.TOPIC, r.resource_name):
            return ErrorCode.TOPIC_AUTHORIZATION_FAILED, "Topic authorization failed."
    elif r.resource_type in (BROKER, BROKER_LOGGER, CLIENT_METRICS) and not authorize_cluster(ctx, AclOperation.DESCRIBE_CONFIGS):
        return ErrorCode.CLUSTER_AUTHORIZATION_FAILED, "Cluster authorization failed."
    return None
