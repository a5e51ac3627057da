"""DescribeAcls, CreateAcls and DeleteAcls v1-3, as Kafka 4.4's AclApis.

DescribeAcls needs DESCRIBE on the cluster, CreateAcls and DeleteAcls ALTER (else every entry gets
CLUSTER_AUTHORIZATION_FAILED). Without ``authorizer.class.name`` they answer SECURITY_DISABLED. A request
with an UNKNOWN code in a filter or creation (resource type, pattern type, operation, permission type)
does not parse in Kafka, which closes the connection; so do we. Creations are checked as AclApis
(the CLUSTER resource's one name, no empty names), then as the controller's AclControlManager; an ACL
that exists already is created successfully again. Describe answers one entry per resource pattern.
"""

from __future__ import annotations

import logging

from pykbroker.connection import CloseConnection
from pykbroker.context import RequestContext
from pykbroker.registry import handler
from pykbroker.security.acl_hosts import host_error
from pykbroker.security.auth_helper import authorize_cluster, not_authorized_message
from pykbroker.security.authorizer import cluster_name_error
from replication.metadata.acl import (
    AclBinding,
    AclBindingFilter,
    AclOperation,
    AclPermissionType,
    PatternType,
    ResourcePattern,
    ResourceType,
)
from wire import ApiKey, ErrorCode
from wire.messages import (
    CreateAclsRequest,
    CreateAclsResponse,
    DeleteAclsRequest,
    DeleteAclsResponse,
    DescribeAclsRequest,
    DescribeAclsResponse,
)
from wire.messages.create_acls_response import AclCreationResult
from wire.messages.delete_acls_response import DeleteAclsFilterResult, DeleteAclsMatchingAcl
from wire.messages.describe_acls_response import AclDescription, DescribeAclsResource

NO_AUTHORIZER = "No Authorizer is configured."
NO_AUTHORIZER_DESCRIBE = "No Authorizer is configured on the broker"

log = logging.getLogger("pykbroker.handlers.acls")


def _filter(resource_type: int, name: str | None, pattern_type: int, principal: str | None, host: str | None,
            operation: int, permission_type: int) -> AclBindingFilter:
    f = AclBindingFilter(ResourceType.from_code(resource_type), name, PatternType.from_code(pattern_type), principal,
                         host, AclOperation.from_code(operation), AclPermissionType.from_code(permission_type))
    if f.unknown:
        raise CloseConnection  # Kafka cannot parse the request ("contains UNKNOWN elements")
    return f


def describe_error(request: DescribeAclsRequest | None, version: int, code: int,
                   message: str | None = None) -> DescribeAclsResponse:
    if code == ErrorCode.SECURITY_DISABLED:
        message = NO_AUTHORIZER_DESCRIBE
    return DescribeAclsResponse(error_code=code, error_message=message, resources=[])


@handler(ApiKey.DESCRIBE_ACLS, 1, 3, error_response=describe_error)
async def handle_describe_acls(ctx: RequestContext, request: DescribeAclsRequest) -> DescribeAclsResponse:
    acl_filter = _filter(request.resource_type_filter, request.resource_name_filter, request.pattern_type_filter,
                         request.principal_filter, request.host_filter, request.operation, request.permission_type)
    if not authorize_cluster(ctx, AclOperation.DESCRIBE):
        return describe_error(request, ctx.api_version, ErrorCode.CLUSTER_AUTHORIZATION_FAILED,
                              not_authorized_message(ctx, AclOperation.DESCRIBE))
    authorizer = ctx.broker.authorizer
    if authorizer is None:
        return describe_error(request, ctx.api_version, ErrorCode.SECURITY_DISABLED)
    by_pattern: dict[ResourcePattern, list[AclBinding]] = {}
    for acl in authorizer.acls(acl_filter):
        by_pattern.setdefault(acl.pattern, []).append(acl)
    return DescribeAclsResponse(error_code=ErrorCode.NONE, resources=[
        DescribeAclsResource(resource_type=p.resource_type, resource_name=p.name, pattern_type=p.pattern_type,
                             acls=[AclDescription(principal=a.principal, host=a.host, operation=a.operation,
                                                  permission_type=a.permission_type) for a in acls])
        for p, acls in by_pattern.items()])


def create_error(request: CreateAclsRequest | None, version: int, code: int,
                 message: str | None = None) -> CreateAclsResponse:
    creations = [] if request is None else request.creations
    if code == ErrorCode.SECURITY_DISABLED:
        message = NO_AUTHORIZER
    return CreateAclsResponse(results=[AclCreationResult(error_code=code, error_message=message) for _ in creations])


@handler(ApiKey.CREATE_ACLS, 1, 3, error_response=create_error)
async def handle_create_acls(ctx: RequestContext, request: CreateAclsRequest) -> CreateAclsResponse:
    bindings = []
    for c in request.creations:
        kinds = (ResourceType.from_code(c.resource_type), PatternType.from_code(c.resource_pattern_type),
                 AclOperation.from_code(c.operation), AclPermissionType.from_code(c.permission_type))
        if any(kind == 0 for kind in kinds):
            raise CloseConnection  # Kafka cannot parse the request ("CreatableAcls contain unknown elements")
        bindings.append(AclBinding(ResourcePattern(kinds[0], c.resource_name, kinds[1]), c.principal, c.host,
                                   kinds[2], kinds[3]))
    if not authorize_cluster(ctx, AclOperation.ALTER):
        return create_error(request, ctx.api_version, ErrorCode.CLUSTER_AUTHORIZATION_FAILED,
                            not_authorized_message(ctx, AclOperation.ALTER))
    authorizer = ctx.broker.authorizer
    if authorizer is None:
        return create_error(request, ctx.api_version, ErrorCode.SECURITY_DISABLED)
    errors = {i: cluster_name_error(b) or host_error(b.host) for i, b in enumerate(bindings)}
    valid = [b for i, b in enumerate(bindings) if errors[i] is None]
    created = iter(await authorizer.create_acls(valid))
    results = []
    for i in range(len(bindings)):
        if errors[i] is not None:
            results.append(AclCreationResult(error_code=ErrorCode.INVALID_REQUEST, error_message=errors[i]))
        else:
            r = next(created)
            results.append(AclCreationResult(error_code=r.error_code, error_message=r.error_message))
    log.info("CreateAcls from %s: %d created or present, %d refused", ctx.describe(),
             sum(r.error_code == ErrorCode.NONE for r in results), sum(r.error_code != ErrorCode.NONE for r in results))
    return CreateAclsResponse(results=results)


def delete_error(request: DeleteAclsRequest | None, version: int, code: int,
                 message: str | None = None) -> DeleteAclsResponse:
    filters = [] if request is None else request.filters
    if code == ErrorCode.SECURITY_DISABLED:
        message = NO_AUTHORIZER
    return DeleteAclsResponse(filter_results=[DeleteAclsFilterResult(error_code=code, error_message=message,
                                                                     matching_acls=[]) for _ in filters])


@handler(ApiKey.DELETE_ACLS, 1, 3, error_response=delete_error)
async def handle_delete_acls(ctx: RequestContext, request: DeleteAclsRequest) -> DeleteAclsResponse:
    filters = [_filter(f.resource_type_filter, f.resource_name_filter, f.pattern_type_filter, f.principal_filter,
                       f.host_filter, f.operation, f.permission_type) for f in request.filters]
    if not authorize_cluster(ctx, AclOperation.ALTER):
        return delete_error(request, ctx.api_version, ErrorCode.CLUSTER_AUTHORIZATION_FAILED,
                            not_authorized_message(ctx, AclOperation.ALTER))
    authorizer = ctx.broker.authorizer
    if authorizer is None:
        return delete_error(request, ctx.api_version, ErrorCode.SECURITY_DISABLED)
    results = await authorizer.delete_acls(filters)
    log.info("DeleteAcls from %s: %d acl(s) removed", ctx.describe(), sum(len(r.matching) for r in results))
    return DeleteAclsResponse(filter_results=[DeleteAclsFilterResult(
        error_code=r.error_code, error_message=r.error_message,
        matching_acls=[DeleteAclsMatchingAcl(error_code=ErrorCode.NONE, error_message=None,
                                             resource_type=a.pattern.resource_type, resource_name=a.pattern.name,
                                             pattern_type=a.pattern.pattern_type, principal=a.principal, host=a.host,
                                             operation=a.operation, permission_type=a.permission_type)
                       for a in r.matching]) for r in results])
