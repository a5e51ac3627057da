"""CreateDelegationToken v1-3, RenewDelegationToken v1-2, ExpireDelegationToken v1-2, DescribeDelegationToken v1-3.

As Kafka 4.4 (KafkaApis, ControllerApis, DelegationTokenControlManager): token requests are refused
(DELEGATION_TOKEN_REQUEST_NOT_ALLOWED) on PLAINTEXT listeners, from anonymous SSL clients and from clients
that authenticated with a token. Anyone may create a token for themselves; for another owner (v3+) the
requester needs CREATE_TOKENS on that USER. Only the owner and the renewers may renew or expire a token.
Describe lists the tokens of the asked owners (all when null, none when empty) that the requester owns or
renews, may DESCRIBE (DELEGATION_TOKEN), or may DESCRIBE_TOKENS of (USER). v3+: the requester's principal.
Without ``delegation.token.secret.key``: DELEGATION_TOKEN_AUTH_DISABLED.
"""

from __future__ import annotations

from pykbroker.context import ANONYMOUS, RequestContext
from pykbroker.registry import handler
from pykbroker.security.auth_helper import AclOperation, ResourceType, authorize
from pykbroker.security.delegation_tokens import filter_token
from pykbroker.security.listeners import protocol_map
from wire import ApiKey, ErrorCode
from wire.messages import (
    CreateDelegationTokenRequest,
    CreateDelegationTokenResponse,
    DescribeDelegationTokenRequest,
    DescribeDelegationTokenResponse,
    ExpireDelegationTokenRequest,
    ExpireDelegationTokenResponse,
    RenewDelegationTokenRequest,
    RenewDelegationTokenResponse,
)
from wire.messages.describe_delegation_token_response import (
    DescribedDelegationToken,
    DescribedDelegationTokenRenewer,
)

ERROR_TIMESTAMP = -1  # Kafka's DelegationTokenManager.ErrorTimestamp


def _allow_token_requests(ctx: RequestContext) -> bool:
    """Kafka's allowTokenRequests: not over PLAINTEXT, not anonymous over SSL, not with a token."""
    protocol = protocol_map(ctx.broker.config).get(ctx.listener.name, ctx.listener.name)
    return not (ctx.token_authenticated or protocol == "PLAINTEXT"
                or (protocol == "SSL" and ctx.principal == ANONYMOUS))


def _split(principal: str) -> tuple[str, str]:
    kind, _, name = principal.partition(":")
    return kind, name


def _create_response(code: int, owner: str, requester: str, issue: int = -1, expiry: int = -1, max_ms: int = -1,
                     token_id: str = "", hmac: bytes = b"") -> CreateDelegationTokenResponse:
    (owner_type, owner_name), (requester_type, requester_name) = _split(owner), _split(requester)
    return CreateDelegationTokenResponse(
        error_code=code, principal_type=owner_type, principal_name=owner_name,
        token_requester_principal_type=requester_type, token_requester_principal_name=requester_name,
        issue_timestamp_ms=issue, expiry_timestamp_ms=expiry, max_timestamp_ms=max_ms, token_id=token_id, hmac=hmac)


def create_error(request: CreateDelegationTokenRequest | None, version: int, code: int
                 ) -> CreateDelegationTokenResponse:
    return _create_response(code, ":", ":")


@handler(ApiKey.CREATE_DELEGATION_TOKEN, 1, 3, error_response=create_error)
async def handle_create_delegation_token(ctx: RequestContext, request: CreateDelegationTokenRequest
                                         ) -> CreateDelegationTokenResponse:
    requester = ctx.principal
    owner_name = request.owner_principal_name if ctx.api_version >= 3 else None
    owner = f"{request.owner_principal_type}:{owner_name}" if owner_name else requester
    renewers = [f"{r.principal_type}:{r.principal_name}" for r in request.renewers]
    if not _allow_token_requests(ctx):
        return _create_response(ErrorCode.DELEGATION_TOKEN_REQUEST_NOT_ALLOWED, owner, requester)
    if owner != requester and not authorize(ctx, AclOperation.CREATE_TOKENS, ResourceType.USER, owner):
        return _create_response(ErrorCode.DELEGATION_TOKEN_AUTHORIZATION_FAILED, owner, requester)
    if any(not r.startswith("User:") for r in renewers):
        return _create_response(ErrorCode.INVALID_PRINCIPAL_TYPE, owner, requester)
    tokens = ctx.broker.delegation_tokens
    code, token = await tokens.create(owner, requester, renewers, request.max_lifetime_ms)
    if token is None:  # the controller's answer: its timestamps are not set
        return _create_response(code, owner, requester, 0, 0, 0)
    return _create_response(code, owner, requester, token.issue_ms, token.expiry_ms, token.max_ms, token.token_id,
                            tokens.hmac(token.token_id))


def renew_error(request: RenewDelegationTokenRequest | None, version: int, code: int) -> RenewDelegationTokenResponse:
    return RenewDelegationTokenResponse(error_code=code, expiry_timestamp_ms=ERROR_TIMESTAMP)


@handler(ApiKey.RENEW_DELEGATION_TOKEN, 1, 2, error_response=renew_error)
async def handle_renew_delegation_token(ctx: RequestContext, request: RenewDelegationTokenRequest
                                        ) -> RenewDelegationTokenResponse:
    if not _allow_token_requests(ctx):
        return renew_error(request, ctx.api_version, ErrorCode.DELEGATION_TOKEN_REQUEST_NOT_ALLOWED)
    code, expiry = await ctx.broker.delegation_tokens.renew(ctx.principal, bytes(request.hmac), request.renew_period_ms)
    return RenewDelegationTokenResponse(error_code=code, expiry_timestamp_ms=expiry)


def expire_error(request: ExpireDelegationTokenRequest | None, version: int, code: int
                 ) -> ExpireDelegationTokenResponse:
    return ExpireDelegationTokenResponse(error_code=code, expiry_timestamp_ms=ERROR_TIMESTAMP)


@handler(ApiKey.EXPIRE_DELEGATION_TOKEN, 1, 2, error_response=expire_error)
async def handle_expire_delegation_token(ctx: RequestContext, request: ExpireDelegationTokenRequest
                                         ) -> ExpireDelegationTokenResponse:
    if not _allow_token_requests(ctx):
        return expire_error(request, ctx.api_version, ErrorCode.DELEGATION_TOKEN_REQUEST_NOT_ALLOWED)
    code, expiry = await ctx.broker.delegation_tokens.expire(ctx.principal, bytes(request.hmac),
                                                       request.expiry_time_period_ms)
    return ExpireDelegationTokenResponse(error_code=code, expiry_timestamp_ms=expiry)


def describe_error(request: DescribeDelegationTokenRequest | None, version: int, code: int
                   ) -> DescribeDelegationTokenResponse:
    return DescribeDelegationTokenResponse(error_code=code, tokens=[])


@handler(ApiKey.DESCRIBE_DELEGATION_TOKEN, 1, 3, error_response=describe_error)
async def handle_describe_delegation_token(ctx: RequestContext, request: DescribeDelegationTokenRequest
                                           ) -> DescribeDelegationTokenResponse:
    tokens = ctx.broker.delegation_tokens
    if not _allow_token_requests(ctx):
        return describe_error(request, ctx.api_version, ErrorCode.DELEGATION_TOKEN_REQUEST_NOT_ALLOWED)
    if not tokens.enabled:
        return describe_error(request, ctx.api_version, ErrorCode.DELEGATION_TOKEN_AUTH_DISABLED)
    if request.owners is not None and not request.owners:
        return describe_error(request, ctx.api_version, ErrorCode.NONE)
    owners = None if request.owners is None else [f"{o.principal_type}:{o.principal_name}" for o in request.owners]
    found = await tokens.tokens(lambda t: filter_token(
        ctx.principal, owners, t,
        lambda token_id: authorize(ctx, AclOperation.DESCRIBE, ResourceType.DELEGATION_TOKEN, token_id),
        lambda owner: authorize(ctx, AclOperation.DESCRIBE_TOKENS, ResourceType.USER, owner)))
    described = []
    for token, hmac in found:
        (owner_type, owner_name), (requester_type, requester_name) = _split(token.owner), _split(token.requester)
        described.append(DescribedDelegationToken(
            principal_type=owner_type, principal_name=owner_name, token_requester_principal_type=requester_type,
            token_requester_principal_name=requester_name, issue_timestamp=token.issue_ms,
            expiry_timestamp=token.expiry_ms, max_timestamp=token.max_ms, token_id=token.token_id, hmac=hmac,
            renewers=[DescribedDelegationTokenRenewer(principal_type=_split(r)[0], principal_name=_split(r)[1])
                      for r in token.renewers]))
    return DescribeDelegationTokenResponse(error_code=ErrorCode.NONE, tokens=described)
