"""DescribeUserScramCredentials v0 and AlterUserScramCredentials v0, as Kafka's controller answers them.

Credentials (iterations, salt, salted password) are kept durably in the metadata store; SASL listeners
with SCRAM-SHA-256/512 authenticate against them (pykbroker.security.scram).

AlterUserScramCredentials checks as Kafka's ScramControlManager: deletions, then upsertions, one user at a
time. A user's first error sticks; a user named a second time in the request, even for another mechanism,
gets DUPLICATE_RESOURCE and none of its alterations apply (so kafka-configs setting SCRAM-SHA-256 and
SCRAM-SHA-512 in one --add-config is refused, as by Kafka 4.4). Successes carry a null error message.
"""

from __future__ import annotations

import logging

from pykbroker.context import RequestContext
from pykbroker.registry import handler
from pykbroker.security.auth_helper import AclOperation, authorize_cluster, not_authorized_message
from wire import ApiKey, ErrorCode
from wire.messages import (
    AlterUserScramCredentialsRequest,
    AlterUserScramCredentialsResponse,
    DescribeUserScramCredentialsRequest,
    DescribeUserScramCredentialsResponse,
)
from wire.messages.alter_user_scram_credentials_response import AlterUserScramCredentialsResult
from wire.messages.describe_user_scram_credentials_response import (
    CredentialInfo,
    DescribeUserScramCredentialsResult,
)

log = logging.getLogger("pykbroker.handlers.scram_credentials")

MECHANISMS = {1: "SCRAM-SHA-256", 2: "SCRAM-SHA-512"}
MIN_ITERATIONS = 4096
MAX_ITERATIONS = 16384
DUPLICATE_ALTER = "A user credential cannot be altered twice in the same request"


def describe_error(request, version: int, code: int) -> DescribeUserScramCredentialsResponse:
    return DescribeUserScramCredentialsResponse(error_code=code, error_message=None, results=[])


@handler(ApiKey.DESCRIBE_USER_SCRAM_CREDENTIALS, 0, 0, error_response=describe_error)
async def handle_describe(ctx: RequestContext, request: DescribeUserScramCredentialsRequest
                          ) -> DescribeUserScramCredentialsResponse:
    if not authorize_cluster(ctx, AclOperation.DESCRIBE):
        return describe_error(request, ctx.api_version, ErrorCode.CLUSTER_AUTHORIZATION_FAILED)
    stored = ctx.metadata.scram_credentials
    duplicated: dict[str, bool] = {}
    if not request.users:
        duplicated = {user: False for user in stored}
    else:
        for u in request.users:
            duplicated[u.name] = u.name in duplicated
    results = []
    for user, twice in duplicated.items():
        if twice:
            results.append(DescribeUserScramCredentialsResult(
                user=user, error_code=ErrorCode.DUPLICATE_RESOURCE,
                error_message=f"Cannot describe SCRAM credentials for the same user twice in a single request: {user}",
                credential_infos=[]))
        elif user in stored:
            results.append(DescribeUserScramCredentialsResult(user=user, error_code=ErrorCode.NONE, credential_infos=[
                CredentialInfo(mechanism=m, iterations=v[0]) for m, v in sorted(stored[user].items())]))
        else:
            results.append(DescribeUserScramCredentialsResult(
                user=user, error_code=ErrorCode.RESOURCE_NOT_FOUND,
                error_message=f"Attempt to describe a user credential that does not exist: {user}",
                credential_infos=[]))
    return DescribeUserScramCredentialsResponse(error_code=ErrorCode.NONE, results=results)


def _check_user_and_mechanism(user: str, mechanism: int) -> tuple[int, str] | None:
    if not user:
        return ErrorCode.UNACCEPTABLE_CREDENTIAL, "Username must not be empty"
    if mechanism not in MECHANISMS:
        return ErrorCode.UNSUPPORTED_SASL_MECHANISM, "Unknown SCRAM mechanism"
    return None


def alter_error(request, version: int, code: int) -> AlterUserScramCredentialsResponse:
    users = [] if request is None else [d.name for d in request.deletions] + [u.name for u in request.upsertions]
    return AlterUserScramCredentialsResponse(results=[AlterUserScramCredentialsResult(user=u, error_code=code)
                                                      for u in dict.fromkeys(users)])


@handler(ApiKey.ALTER_USER_SCRAM_CREDENTIALS, 0, 0, error_response=alter_error)
async def handle_alter(ctx: RequestContext, request: AlterUserScramCredentialsRequest
                       ) -> AlterUserScramCredentialsResponse:
    if not authorize_cluster(ctx, AclOperation.ALTER):  # answered by Kafka's controller, users sorted
        users = sorted({d.name for d in request.deletions} | {u.name for u in request.upsertions})
        return AlterUserScramCredentialsResponse(results=[AlterUserScramCredentialsResult(
            user=u, error_code=ErrorCode.CLUSTER_AUTHORIZATION_FAILED, error_message=not_authorized_message(ctx, AclOperation.ALTER))
            for u in users])
    stored = ctx.metadata.scram_credentials
    deletions: dict[str, tuple[str, int]] = {}
    upsertions: dict[str, tuple[str, int, int, bytes, bytes]] = {}
    errors: dict[str, tuple[int, str]] = {}
    for d in request.deletions:
        if d.name in errors:
            continue
        if deletions.pop(d.name, None) is not None:
            errors[d.name] = (ErrorCode.DUPLICATE_RESOURCE, DUPLICATE_ALTER)
            continue
        problem = _check_user_and_mechanism(d.name, d.mechanism)
        if problem is None and d.mechanism not in stored.get(d.name, {}):
            problem = ErrorCode.RESOURCE_NOT_FOUND, "Attempt to delete a user credential that does not exist"
        if problem is not None:
            errors[d.name] = problem
        else:
            deletions[d.name] = (d.name, d.mechanism)
    for u in request.upsertions:
        if u.name in errors:
            continue
        if deletions.pop(u.name, None) is not None or upsertions.pop(u.name, None) is not None:
            errors[u.name] = (ErrorCode.DUPLICATE_RESOURCE, DUPLICATE_ALTER)
            continue
        problem = _check_user_and_mechanism(u.name, u.mechanism)
        if problem is None and u.iterations < MIN_ITERATIONS:
            problem = ErrorCode.UNACCEPTABLE_CREDENTIAL, "Too few iterations"
        elif problem is None and u.iterations > MAX_ITERATIONS:
            problem = ErrorCode.UNACCEPTABLE_CREDENTIAL, "Too many iterations"
        if problem is not None:
            errors[u.name] = problem
        else:
            upsertions[u.name] = (u.name, u.mechanism, u.iterations, bytes(u.salt), bytes(u.salted_password))
    if deletions or upsertions:
        await ctx.broker.metadata.alter_scram_credentials(list(deletions.values()), list(upsertions.values()))
        log.info("SCRAM credentials deleted for %s, set for %s (%s)", sorted(deletions), sorted(upsertions),
                 ctx.describe())
    results = [AlterUserScramCredentialsResult(user=user, error_code=ErrorCode.NONE, error_message=None)
               for user in [*deletions, *upsertions]]
    results += [AlterUserScramCredentialsResult(user=user, error_code=code, error_message=message)
                for user, (code, message) in errors.items()]
    return AlterUserScramCredentialsResponse(results=results)
