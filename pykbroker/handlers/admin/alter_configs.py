"""AlterConfigs v0-2 (replace a resource's configs) and IncrementalAlterConfigs v0-1 (SET, DELETE,
APPEND, SUBTRACT). Topic configs are validated as a whole, persisted, and applied to the live logs at
once. Dynamic broker configs (BROKER "" for the cluster default, "<node.id>" for this broker) are checked
as Kafka's ConfigAdminManager and controller check them (pykbroker.dynamic_config), stored in the
metadata store, and applied at once. Group configs (KIP-848's GROUP resource) are checked against the broker's
group.* bounds (coordinator.group.group_config) and stored with the group's metadata; the coordinator reads them.
CLIENT_METRICS resources (KIP-714 subscriptions) are checked as Kafka's ClientMetricsConfigs and stored in the
metadata; the broker's ClientMetricsManager reads them.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping

from coordinator.group import group_config
from pykbroker import dynamic_config, loggers
from pykbroker.client_metrics import configs as client_metrics_configs
from pykbroker.context import RequestContext
from pykbroker.registry import handler
from pykbroker.security.auth_helper import AclOperation, ResourceType, authorize, authorize_cluster
from pykbroker.topic_config import TOPIC_CONFIGS, ConfigType, topic_config_error
from pykbroker.topic_names import topic_name_error
from wire import ApiKey, ErrorCode
from wire.messages import (
    AlterConfigsRequest,
    AlterConfigsResponse,
    IncrementalAlterConfigsRequest,
    IncrementalAlterConfigsResponse,
)
from wire.messages.alter_configs_response import AlterConfigsResourceResponse
from wire.messages.incremental_alter_configs_response import (
    AlterConfigsResourceResponse as IncrementalResourceResponse,
)

log = logging.getLogger("pykbroker.handlers.alter_configs")

TOPIC = 2
BROKER = 4
BROKER_LOGGER = 8
CLIENT_METRICS = 16
GROUP = 32
SET, DELETE, APPEND, SUBTRACT = 0, 1, 2, 3


def apply_operations(current: dict[str, str], ops: list[tuple[str, int, str | None]], defaults: dict[str, str]
                     ) -> tuple[dict[str, str], str | None]:
    """The configs after incremental ``ops`` (name, operation, value), or an INVALID_CONFIG message.

    APPEND and SUBTRACT start from the topic's value or, when it has none, the default (as Kafka does).
    """
    result = dict(current)
    for name, op, value in ops:
        spec = TOPIC_CONFIGS.get(name)
        if op == SET:
            if value is None:
                return result, f"Null value not supported for : {name}"
            result[name] = value
        elif op == DELETE:
            result.pop(name, None)
        elif op in (APPEND, SUBTRACT):
            if spec is None or spec.config_type != ConfigType.LIST:  # Kafka's wording, "SUBTRACT to" included
                verb = "APPEND" if op == APPEND else "SUBTRACT"
                return result, f"Can't {verb} to key {name} because its type is not LIST."
            items = [v for v in result.get(name, defaults.get(name, "")).split(",") if v]
            given = [v for v in (value or "").split(",") if v]
            if op == APPEND:
                items += [v for v in given if v not in items]
            else:
                items = [v for v in items if v not in given]
            result[name] = ",".join(items)
        else:
            return result, f"Unknown operation type {op}"
    return result, None


async def alter_topic(ctx: RequestContext, name: str, new_configs: Mapping[str, str | None], validate_only: bool,
                      base: Mapping[str, str] | None = None) -> tuple[int, str | None]:
    """Validate and (unless validate_only) store ``new_configs`` as the topic's configs (``base``: the configs an
    incremental alteration made them from; the store then changes only the keys it changed)."""
    message = topic_name_error(name)
    if message is not None:
        return ErrorCode.INVALID_TOPIC_EXCEPTION, message
    if name not in ctx.metadata.topics:
        return ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"The topic '{name}' does not exist."  # Kafka 4.4's words
    message = topic_config_error(new_configs, defaults=ctx.broker.default_log_config,
                                 remote_storage_system_enable=ctx.broker.config["remote.log.storage.system.enable"],
                                 existing=ctx.metadata.topics[name].configs)
    if message is not None:
        return ErrorCode.INVALID_CONFIG, message
    if not validate_only:
        await ctx.broker.admin.alter_topic_configs(name, {k: v for k, v in new_configs.items() if v is not None},
                                                   base)
        log.info("configs of topic %s are now %s (%s)", name, new_configs, ctx.describe())
    return ErrorCode.NONE, None


def alter_loggers(ctx: RequestContext, resource_name: str, ops: list[tuple[str, int, str | None]],
                  validate_only: bool) -> tuple[int, str | None]:
    """IncrementalAlterConfigs on BROKER_LOGGER: log levels at runtime, checked as Kafka checks them."""
    nulls = [name for name, op, value in ops if op != loggers.DELETE and value is None]
    if nulls:
        return ErrorCode.INVALID_REQUEST, "Null value not supported for : " + ", ".join(nulls)
    if not authorize_cluster(ctx, AclOperation.ALTER_CONFIGS):
        return ErrorCode.CLUSTER_AUTHORIZATION_FAILED, None
    try:
        node = int(resource_name)
    except ValueError:
        return ErrorCode.INVALID_REQUEST, f"Node id must be an integer, but it is: {resource_name}"
    if node != ctx.broker.node_id:
        return ErrorCode.INVALID_REQUEST, f"Unexpected node id. Expected {ctx.broker.node_id}, but received {node}"
    try:
        loggers.validate(ops)
    except loggers.LoggerChangeError as exc:
        return (ErrorCode.INVALID_CONFIG if exc.invalid_config else ErrorCode.INVALID_REQUEST), str(exc)
    if not validate_only:
        loggers.apply(ops)
        log.info("log levels changed: %s (%s)", ops, ctx.describe())
    return ErrorCode.NONE, None


async def alter_broker(ctx: RequestContext, resource_name: str, configs: list[tuple[str, int, str | None]] | None,
                       legacy: dict[str, str | None] | None, validate_only: bool) -> tuple[int, str | None]:
    """One BROKER resource: incremental ``configs`` (name, operation, value) or the ``legacy`` whole set.

    The order of checks is Kafka's: null values, the broker id, the forwarding broker's checks of the new set
    (ConfigAdminManager.preprocess), the controller's (ELR's min.insync.replicas rules), then whether this
    broker can run with the result (DynamicBrokerConfig.processReconfiguration).
    """
    broker = ctx.broker
    names = [c[0] for c in configs] if configs is not None else list(legacy or {})
    nulls = [c[0] for c in configs if c[1] != dynamic_config.DELETE and c[2] is None] if configs is not None \
        else [k for k, v in (legacy or {}).items() if v is None]
    if nulls:
        return ErrorCode.INVALID_REQUEST, "Null value not supported for : " + ", ".join(nulls)
    if resource_name:
        try:
            node = int(resource_name)
        except ValueError:
            return ErrorCode.INVALID_REQUEST, f"Node id must be an integer, but it is: {resource_name}"
        if node != broker.node_id:
            return (ErrorCode.INVALID_REQUEST,
                    f"Unexpected broker id, expected {broker.node_id}, but received {resource_name}")
    per_broker = bool(resource_name)
    resource_name = str(broker.node_id) if per_broker else ""
    stored = dict(ctx.metadata.broker_configs.get(resource_name, {}))
    try:
        if configs is not None:
            new = dynamic_config.apply_incremental(stored, configs)
            checked = dynamic_config.apply_incremental(dynamic_config.valid_subset(stored, per_broker), configs)
        else:
            new = checked = dict(legacy or {})  # type: ignore[arg-type]
        dynamic_config.validate(checked, per_broker)
        if not authorize_cluster(ctx, AclOperation.ALTER_CONFIGS):  # the controller's check, after the broker's
            return ErrorCode.CLUSTER_AUTHORIZATION_FAILED, None  # Kafka 4.4: no message
        dynamic_config.controller_check(resource_name, stored, new, names, broker.admin.elr_enabled)
        default = new if not per_broker else ctx.metadata.broker_configs.get("", {})
        mine = new if per_broker else ctx.metadata.broker_configs.get(str(broker.node_id), {})
        broker.dynamic_config.check_applicable(default, mine)
    except dynamic_config.DynamicConfigError as exc:
        return exc.code, exc.message
    if not validate_only:
        await broker.admin.alter_broker_configs(resource_name, new, stored if configs is not None else None)
        log.info("dynamic configs of broker resource '%s' are now %s (%s)", resource_name,
                 {k: v if dynamic_config.config_type_of(k) != ConfigType.PASSWORD else "[hidden]"
                  for k, v in new.items()}, ctx.describe())
    return ErrorCode.NONE, None


async def alter_group_incremental(ctx: RequestContext, group_id: str, ops: list[tuple[str, int, str | None]],
                                  validate_only: bool) -> tuple[int, str | None]:
    """IncrementalAlterConfigs of one GROUP resource (Kafka's ConfigAdminManager.prepareIncrementalConfigs)."""
    nulls = [name for name, op, value in ops if op != DELETE and value is None]
    if nulls:
        return ErrorCode.INVALID_REQUEST, "Null value not supported for : " + ", ".join(nulls)
    if any(op not in (SET, DELETE, APPEND, SUBTRACT) for _, op, _ in ops):
        return ErrorCode.INVALID_REQUEST, f"Unknown operations type {next(op for _, op, _ in ops if op > 3)}"
    configs = dict(ctx.metadata.group_configs.get(group_id, {}))
    for name, op, value in ops:
        if op == SET:
            configs[name] = value  # type: ignore[assignment]
        elif op == DELETE:
            configs.pop(name, None)
        elif name not in group_config.GROUP_CONFIGS:
            return ErrorCode.INVALID_CONFIG, f"Unknown group config name: {name}"
        elif group_config.GROUP_CONFIGS[name].config_type != group_config.LIST:
            verb = "APPEND" if op == APPEND else "SUBTRACT"
            return ErrorCode.INVALID_CONFIG, f"Can't {verb} to key {name} because its type is not LIST."
        else:  # streams.rack.aware.assignment.tags
            current = [v for v in configs.get(name, "").split(",") if v]
            given = [v for v in (value or "").split(",") if v]
            kept = current + [v for v in given if v not in current] if op == APPEND else \
                [v for v in current if v not in given]
            configs[name] = ",".join(kept)
    return await alter_group(ctx, group_id, configs, validate_only, ctx.metadata.group_configs.get(group_id, {}))


async def alter_group(ctx: RequestContext, group_id: str, configs: Mapping[str, str | None], validate_only: bool,
                      base: Mapping[str, str] | None = None) -> tuple[int, str | None]:
    """A GROUP resource's whole new set of configs: checked against the broker's group.* bounds, stored with the
    group's metadata (the coordinator reads them from there), as Kafka's controller does."""
    if not group_id:
        return ErrorCode.INVALID_REQUEST, "Default group resources are not allowed."
    nulls = [k for k, v in configs.items() if v is None]
    if nulls:
        return ErrorCode.INVALID_REQUEST, "Null value not supported for : " + ", ".join(nulls)
    values = {k: v for k, v in configs.items() if v is not None}
    broker = ctx.broker
    try:
        group_config.validate(values, lambda name: broker.dynamic_config.current[name])
    except group_config.GroupConfigError as exc:
        return exc.code, exc.message
    if not validate_only:
        await broker.metadata.set_group_configs(group_id, values, base)
        log.info("configs of group %s are now %s (%s)", group_id, configs, ctx.describe())
    return ErrorCode.NONE, None


async def alter_client_metrics(ctx: RequestContext, name: str, ops: list[tuple[str, int, str | None]],
                               validate_only: bool, whole: bool = False) -> tuple[int, str | None]:
    """A CLIENT_METRICS resource (a KIP-714 subscription): SET and DELETE (the legacy AlterConfigs: SETs of a whole
    new set), checked as Kafka's ClientMetricsConfigs.validate, stored in the metadata. Kafka 4.4 refuses APPEND and
    SUBTRACT even on its two LIST configs (its controller knows no client-metrics config types): so do we."""
    if not authorize_cluster(ctx, AclOperation.ALTER_CONFIGS):
        return ErrorCode.CLUSTER_AUTHORIZATION_FAILED, None
    nulls = [n for n, op, value in ops if op != DELETE and value is None]
    if nulls:
        return ErrorCode.INVALID_REQUEST, "Null value not supported for : " + ", ".join(nulls)
    base = dict(ctx.metadata.client_metrics_configs.get(name, {}))
    configs = dict(base)
    for key, op, value in ops:
        if op == SET:
            configs[key] = value  # type: ignore[assignment]
        elif op == DELETE:
            configs.pop(key, None)
        elif op in (APPEND, SUBTRACT):
            verb = "APPEND" if op == APPEND else "SUBTRACT"
            return ErrorCode.INVALID_CONFIG, f"Can't {verb} to key {key} because its type is not LIST."
        else:
            return ErrorCode.INVALID_REQUEST, f"Unknown operations type {op}"
    try:
        client_metrics_configs.validate(name, configs)
    except client_metrics_configs.ClientMetricsConfigError as exc:
        return exc.code, exc.message
    if not validate_only:
        await ctx.broker.metadata.set_client_metrics_configs(name, configs, None if whole else base)
        log.info("configs of client metrics subscription %s are now %s (%s)", name, configs, ctx.describe())
    return ErrorCode.NONE, None


def _alter_error(request: AlterConfigsRequest | None, version: int, code: int) -> AlterConfigsResponse:
    resources = [] if request is None else request.resources
    return AlterConfigsResponse(responses=[
        AlterConfigsResourceResponse(error_code=code, resource_type=r.resource_type, resource_name=r.resource_name)
        for r in resources])


@handler(ApiKey.ALTER_CONFIGS, 0, 2, error_response=_alter_error)
async def handle_alter_configs(ctx: RequestContext, request: AlterConfigsRequest) -> AlterConfigsResponse:
    responses = []
    await ctx.broker.admin.catch_up([r.resource_name for r in request.resources if r.resource_type == TOPIC])
    for r in request.resources:
        code: int
        message: str | None
        if r.resource_type == TOPIC and not authorize(ctx, AclOperation.ALTER_CONFIGS, ResourceType.TOPIC,
                                                      r.resource_name):
            code, message = ErrorCode.TOPIC_AUTHORIZATION_FAILED, "Topic authorization failed."
        elif r.resource_type == TOPIC:
            code, message = await alter_topic(ctx, r.resource_name, {c.name: c.value for c in r.configs},
                                              request.validate_only)
        elif r.resource_type == BROKER:
            names = [c.name for c in r.configs]
            if len(set(names)) != len(names):
                code, message = ErrorCode.INVALID_REQUEST, "Error due to duplicate config keys"
            else:
                code, message = await alter_broker(ctx, r.resource_name, None, {c.name: c.value for c in r.configs},
                                                   request.validate_only)
        elif r.resource_type == GROUP:
            code, message = await alter_group(ctx, r.resource_name, {c.name: c.value for c in r.configs},
                                              request.validate_only)
        elif r.resource_type == CLIENT_METRICS:
            code, message = await alter_client_metrics(ctx, r.resource_name, [
                (k, DELETE, None) for k in ctx.metadata.client_metrics_configs.get(r.resource_name, {})] + [
                (c.name, SET, c.value) for c in r.configs], request.validate_only, whole=True)
        elif r.resource_type == BROKER_LOGGER:  # as Kafka: the legacy AlterConfigs does not know BROKER_LOGGER
            code, message = ErrorCode.INVALID_REQUEST, f"Unknown resource type {r.resource_type}"
        else:
            code, message = ErrorCode.INVALID_REQUEST, f"Unsupported resource type: {r.resource_type}"
        responses.append(AlterConfigsResourceResponse(error_code=code, error_message=message,
                                                      resource_type=r.resource_type, resource_name=r.resource_name))
    return AlterConfigsResponse(responses=responses)


def _incremental_error(request: IncrementalAlterConfigsRequest | None, version: int, code: int
                       ) -> IncrementalAlterConfigsResponse:
    resources = [] if request is None else request.resources
    return IncrementalAlterConfigsResponse(responses=[
        IncrementalResourceResponse(error_code=code, resource_type=r.resource_type, resource_name=r.resource_name)
        for r in resources])


@handler(ApiKey.INCREMENTAL_ALTER_CONFIGS, 0, 1, error_response=_incremental_error)
async def handle_incremental_alter_configs(ctx: RequestContext, request: IncrementalAlterConfigsRequest
                                           ) -> IncrementalAlterConfigsResponse:
    responses = []
    # Kafka's controller applies the operations to the configs it has: a topic altered through another broker a
    # moment ago is altered from that, not from this broker's image of before (which would undo it)
    await ctx.broker.admin.catch_up([r.resource_name for r in request.resources if r.resource_type == TOPIC])
    for r in request.resources:
        code: int
        message: str | None
        names = [c.name for c in r.configs]
        if len(set(names)) != len(names):
            code, message = ErrorCode.INVALID_REQUEST, "Error due to duplicate config keys"
        elif r.resource_type == TOPIC and not authorize(ctx, AclOperation.ALTER_CONFIGS, ResourceType.TOPIC,
                                                        r.resource_name):
            code, message = ErrorCode.TOPIC_AUTHORIZATION_FAILED, "Topic authorization failed."
        elif r.resource_type == TOPIC:
            topic = ctx.metadata.topics.get(r.resource_name)
            current = dict(topic.configs) if topic is not None else {}
            new, message = apply_operations(current, [(c.name, c.config_operation, c.value) for c in r.configs],
                                            ctx.broker.default_log_config.to_properties())
            if message is not None:
                code = ErrorCode.INVALID_CONFIG
            else:
                code, message = await alter_topic(ctx, r.resource_name, new, request.validate_only, current)
        elif r.resource_type == GROUP:
            code, message = await alter_group_incremental(ctx, r.resource_name, [
                (c.name, c.config_operation, c.value) for c in r.configs], request.validate_only)
        elif r.resource_type == CLIENT_METRICS:
            code, message = await alter_client_metrics(ctx, r.resource_name, [
                (c.name, c.config_operation, c.value) for c in r.configs], request.validate_only)
        elif r.resource_type == BROKER_LOGGER:
            code, message = alter_loggers(ctx, r.resource_name, [(c.name, c.config_operation, c.value)
                                                                 for c in r.configs], request.validate_only)
        elif r.resource_type == BROKER:
            code, message = await alter_broker(ctx, r.resource_name, [(c.name, c.config_operation, c.value)
                                                                      for c in r.configs], None, request.validate_only)
        else:
            code, message = ErrorCode.INVALID_REQUEST, f"Unsupported resource type: {r.resource_type}"
        responses.append(IncrementalResourceResponse(error_code=code, error_message=message,
                                                     resource_type=r.resource_type, resource_name=r.resource_name))
    return IncrementalAlterConfigsResponse(responses=responses)
