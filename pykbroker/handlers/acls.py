"""DescribeAcls, CreateAcls and DeleteAcls v1-3, answered as Kafka answers them without an authorizer.

Kafka serves these APIs on every broker; with no ``authorizer.class.name`` configured every request gets
SECURITY_DISABLED with "No Authorizer is configured." (and so do we: there are no ACLs to keep).
"""

from __future__ import annotations

from pykbroker.context import RequestContext
from pykbroker.registry import handler
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
from wire.messages.delete_acls_response import DeleteAclsFilterResult

NO_AUTHORIZER = "No Authorizer is configured."


def describe_error(request: DescribeAclsRequest | None, version: int, code: int) -> DescribeAclsResponse:
    return DescribeAclsResponse(error_code=code, error_message=NO_AUTHORIZER if code == ErrorCode.SECURITY_DISABLED
                                else None, resources=[])


@handler(ApiKey.DESCRIBE_ACLS, 1, 3, error_response=describe_error)
async def handle_describe_acls(ctx: RequestContext, request: DescribeAclsRequest) -> DescribeAclsResponse:
    return describe_error(request, ctx.api_version, ErrorCode.SECURITY_DISABLED)


def create_error(request: CreateAclsRequest | None, version: int, code: int) -> CreateAclsResponse:
    creations = [] if request is None else request.creations
    message = NO_AUTHORIZER if code == ErrorCode.SECURITY_DISABLED else None
    return CreateAclsResponse(results=[AclCreationResult(error_code=code, error_message=message) for _ in creations])


@handler(ApiKey.CREATE_ACLS, 1, 3, error_response=create_error)
async def handle_create_acls(ctx: RequestContext, request: CreateAclsRequest) -> CreateAclsResponse:
    return create_error(request, ctx.api_version, ErrorCode.SECURITY_DISABLED)


def delete_error(request: DeleteAclsRequest | None, version: int, code: int) -> DeleteAclsResponse:
    filters = [] if request is None else request.filters
    message = NO_AUTHORIZER if code == ErrorCode.SECURITY_DISABLED else None
    return DeleteAclsResponse(filter_results=[DeleteAclsFilterResult(error_code=code, error_message=message,
                                                                     matching_acls=[]) for _ in filters])


@handler(ApiKey.DELETE_ACLS, 1, 3, error_response=delete_error)
async def handle_delete_acls(ctx: RequestContext, request: DeleteAclsRequest) -> DeleteAclsResponse:
    return delete_error(request, ctx.api_version, ErrorCode.SECURITY_DISABLED)
