"""AlterConfigs v0-2 (replace a resource's configs) and IncrementalAlterConfigs v0-1 (SET, DELETE,
APPEND, SUBTRACT). Topic configs are validated as a whole, persisted, and applied to the live logs at
once; this broker has no dynamically updatable broker configs, so broker changes are refused as Kafka
refuses static ones.
"""

from __future__ import annotations

import logging

from pykbroker import loggers
from pykbroker.context import RequestContext
from pykbroker.registry import handler
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


async def alter_topic(ctx: RequestContext, name: str, new_configs: dict[str, str], validate_only: bool
                      ) -> tuple[int, str | None]:
    """Validate and (unless validate_only) store ``new_configs`` as the topic's configs."""
    message = topic_name_error(name)
    if message is not None:
        return ErrorCode.INVALID_TOPIC_EXCEPTION, message
    if name not in ctx.broker.metadata.topics:
        return ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, None
    message = topic_config_error(new_configs)  # type: ignore[arg-type]
    if message is not None:
        return ErrorCode.INVALID_CONFIG, message
    if not validate_only:
        await ctx.broker.alter_topic_configs(name, new_configs)
        log.info("configs of topic %s are now %s (%s)", name, new_configs, ctx.describe())
    return ErrorCode.NONE, None


def alter_loggers(ctx: RequestContext, resource_name: str, ops: list[tuple[str, int, str | None]],
                  validate_only: bool) -> tuple[int, str | None]:
    """IncrementalAlterConfigs on BROKER_LOGGER: log levels at runtime, checked as Kafka checks them."""
    try:
        node = int(resource_name)
    except ValueError:
        return ErrorCode.INVALID_REQUEST, f"Node id must be an integer, but it is: {resource_name}"
    if node != ctx.broker.node_id:
        return ErrorCode.INVALID_REQUEST, f"Unexpected node id. Expected {ctx.broker.node_id}, but received {node}"
    nulls = [name for name, op, value in ops if op != loggers.DELETE and value is None]
    if nulls:
        return ErrorCode.INVALID_REQUEST, "Null value not supported for : " + ", ".join(nulls)
    try:
        loggers.validate(ops)
    except loggers.LoggerChangeError as exc:
        return (ErrorCode.INVALID_CONFIG if exc.invalid_config else ErrorCode.INVALID_REQUEST), str(exc)
    if not validate_only:
        loggers.apply(ops)
        log.info("log levels changed: %s (%s)", ops, ctx.describe())
    return ErrorCode.NONE, None


def broker_refusal(ctx: RequestContext, resource_type: int, resource_name: str, names: list[str]) -> tuple[int, str]:
    """Why a broker change (or a legacy AlterConfigs on BROKER_LOGGER) is refused here."""
    if resource_type == BROKER_LOGGER:
        # As Kafka: the legacy AlterConfigs does not know BROKER_LOGGER.
        return ErrorCode.INVALID_REQUEST, f"Unknown resource type {resource_type}"
    if resource_name and resource_name != str(ctx.broker.node_id):
        return ErrorCode.INVALID_REQUEST, f"Unexpected broker id, expected {ctx.broker.node_id} or empty string, " \
            f"but received {resource_name}"
    return ErrorCode.INVALID_REQUEST, "Cannot update these configs dynamically: Set(" + ", ".join(names) + ")"


def _alter_error(request: AlterConfigsRequest | None, version: int, code: int) -> AlterConfigsResponse:
    resources = [] if request is None else request.resources
    return AlterConfigsResponse(responses=[
        AlterConfigsResourceResponse(error_code=code, resource_type=r.resource_type, resource_name=r.resource_name)
        for r in resources])


@handler(ApiKey.ALTER_CONFIGS, 0, 2, error_response=_alter_error)
async def handle_alter_configs(ctx: RequestContext, request: AlterConfigsRequest) -> AlterConfigsResponse:
    responses = []
    for r in request.resources:
        if r.resource_type == TOPIC:
            code, message = await alter_topic(ctx, r.resource_name, {c.name: c.value for c in r.configs},
                                              request.validate_only)
        elif r.resource_type in (BROKER, BROKER_LOGGER):
            code, message = broker_refusal(ctx, r.resource_type, r.resource_name, [c.name for c in r.configs])
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
    for r in request.resources:
        names = [c.name for c in r.configs]
        if len(set(names)) != len(names):
            code, message = ErrorCode.INVALID_REQUEST, "Error due to duplicate config keys"
        elif r.resource_type == TOPIC:
            topic = ctx.broker.metadata.topics.get(r.resource_name)
            current = dict(topic.configs) if topic is not None else {}
            new, message = apply_operations(current, [(c.name, c.config_operation, c.value) for c in r.configs],
                                            ctx.broker.default_log_config.to_properties())
            if message is not None:
                code = ErrorCode.INVALID_CONFIG
            else:
                code, message = await alter_topic(ctx, r.resource_name, new, request.validate_only)
        elif r.resource_type == BROKER_LOGGER:
            code, message = alter_loggers(ctx, r.resource_name, [(c.name, c.config_operation, c.value)
                                                                 for c in r.configs], request.validate_only)
        elif r.resource_type == BROKER:
            code, message = broker_refusal(ctx, r.resource_type, r.resource_name, names)
        else:
            code, message = ErrorCode.INVALID_REQUEST, f"Unsupported resource type: {r.resource_type}"
        responses.append(IncrementalResourceResponse(error_code=code, error_message=message,
                                                     resource_type=r.resource_type, resource_name=r.resource_name))
    return IncrementalAlterConfigsResponse(responses=responses)
