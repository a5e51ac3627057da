"""DescribeClientQuotas v0-1 and AlterClientQuotas v0-1 (kafka-configs --entity-type users/clients/ips).

Quotas live durably in the metadata store; alterations are checked entity by entity as Kafka's
controller checks them (``pykbroker.quotas``), so one bad entity does not stop the others.
v1+: flexible.
"""

from __future__ import annotations

import logging

from pykbroker.context import RequestContext
from pykbroker.quotas import QuotaError, describe, validate_alteration
from pykbroker.registry import handler
from pykbroker.security.auth_helper import AclOperation, authorize_cluster
from wire import ApiKey, ErrorCode
from wire.messages import (
    AlterClientQuotasRequest,
    AlterClientQuotasResponse,
    DescribeClientQuotasRequest,
    DescribeClientQuotasResponse,
)
from wire.messages.alter_client_quotas_response import EntityData as AlterEntity
from wire.messages.alter_client_quotas_response import EntryData as AlterEntry
from wire.messages.describe_client_quotas_response import EntityData, EntryData, ValueData

log = logging.getLogger("pykbroker.handlers.client_quotas")


def describe_error(request: DescribeClientQuotasRequest | None, version: int, code: int
                   ) -> DescribeClientQuotasResponse:
    return DescribeClientQuotasResponse(error_code=code, error_message=None, entries=None)


@handler(ApiKey.DESCRIBE_CLIENT_QUOTAS, 0, 1, error_response=describe_error)
async def handle_describe_client_quotas(ctx: RequestContext, request: DescribeClientQuotasRequest
                                        ) -> DescribeClientQuotasResponse:
    if not authorize_cluster(ctx, AclOperation.DESCRIBE_CONFIGS):
        return describe_error(request, ctx.api_version, ErrorCode.CLUSTER_AUTHORIZATION_FAILED)
    try:
        found = describe(ctx.metadata.client_quotas,
                         [(c.entity_type, c.match_type, c.match) for c in request.components], request.strict)
    except QuotaError as exc:
        return DescribeClientQuotasResponse(error_code=exc.error_code, error_message=str(exc), entries=None)
    # Kafka leaves the message at its default, "", on success.
    return DescribeClientQuotasResponse(error_code=ErrorCode.NONE, error_message="", entries=[
        EntryData(entity=[EntityData(entity_type=t, entity_name=n) for t, n in sorted(entity, key=lambda e: e[0])],
                  values=[ValueData(key=k, value=v) for k, v in sorted(values.items())])
        for entity, values in found])


def alter_error(request: AlterClientQuotasRequest | None, version: int, code: int) -> AlterClientQuotasResponse:
    entries = [] if request is None else request.entries
    return AlterClientQuotasResponse(entries=[
        AlterEntry(error_code=code, error_message=None,
                   entity=[AlterEntity(entity_type=e.entity_type, entity_name=e.entity_name) for e in entry.entity])
        for entry in entries])


@handler(ApiKey.ALTER_CLIENT_QUOTAS, 0, 1, error_response=alter_error)
async def handle_alter_client_quotas(ctx: RequestContext, request: AlterClientQuotasRequest
                                     ) -> AlterClientQuotasResponse:
    if not authorize_cluster(ctx, AclOperation.ALTER_CONFIGS):  # answered by Kafka's controller
        response = alter_error(request, ctx.api_version, ErrorCode.CLUSTER_AUTHORIZATION_FAILED)
        for answered in response.entries:
            answered.error_message = "Cluster authorization failed."
        return response
    results = []
    accepted = []
    seen: set[frozenset] = set()
    for entry in request.entries:
        pairs = [(e.entity_type, e.entity_name) for e in entry.entity]
        entity = frozenset(pairs)
        message = validate_alteration(pairs, [(op.key, None if op.remove else op.value) for op in entry.ops])
        if message is None and entity in seen:
            message = f"Ignoring duplicate entity {entity}"
        seen.add(entity)
        if message is None:
            accepted.append((entity, {op.key: None if op.remove else op.value for op in entry.ops}))
        results.append(AlterEntry(error_code=ErrorCode.INVALID_REQUEST if message else ErrorCode.NONE,
                                  error_message=message,
                                  entity=[AlterEntity(entity_type=t, entity_name=n) for t, n in pairs]))
    if accepted and not request.validate_only:
        await ctx.broker.metadata.alter_client_quotas(accepted)
        log.info("client quotas altered: %s (%s)", [(sorted(e, key=lambda p: p[0]), c) for e, c in accepted],
                 ctx.describe())
    return AlterClientQuotasResponse(entries=results)
