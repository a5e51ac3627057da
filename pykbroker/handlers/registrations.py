"""UnregisterBroker v0, UnregisterController v0, AddRaftVoter v0-1, RemoveRaftVoter v0: the registration and
quorum-membership admin APIs, answered as a Kafka 4.4 broker answers them for its controller.

pykbroker's controller is a broker elected through the metadata store, not a KRaft quorum, so:

- UnregisterBroker: a registered broker (a live one: registrations here are the live brokers' own) is
  acknowledged and, being alive, stays registered, as a live Kafka broker re-registers at once; any other id
  is BROKER_ID_NOT_REGISTERED with Kafka's message.
- UnregisterController: there are no KRaft controllers to unregister. The active controller's id is
  INVALID_REQUEST ("cannot unregister itself while it is active"), every other id
  CONTROLLER_ID_NOT_REGISTERED, both with Kafka's messages.
- AddRaftVoter / RemoveRaftVoter: the quorum is static, as a Kafka quorum whose kraft.version is 0: another
  cluster id is INCONSISTENT_CLUSTER_ID, anything else UNSUPPORTED_VERSION, with Kafka's messages.

All four need ALTER on the cluster (CLUSTER_AUTHORIZATION_FAILED otherwise), as in Kafka.
"""

from __future__ import annotations

from pykbroker.context import RequestContext
from pykbroker.registry import handler
from pykbroker.security.auth_helper import AclOperation, authorize_cluster
from wire import ApiKey, ErrorCode
from wire.messages import (
    AddRaftVoterRequest,
    AddRaftVoterResponse,
    RemoveRaftVoterRequest,
    RemoveRaftVoterResponse,
    UnregisterBrokerRequest,
    UnregisterBrokerResponse,
    UnregisterControllerRequest,
    UnregisterControllerResponse,
)


def _unregister_broker_error(request: UnregisterBrokerRequest | None, version: int,
                             code: int) -> UnregisterBrokerResponse:
    return UnregisterBrokerResponse(error_code=code, error_message=None)


@handler(ApiKey.UNREGISTER_BROKER, 0, 0, error_response=_unregister_broker_error)
async def handle_unregister_broker(ctx: RequestContext, request: UnregisterBrokerRequest) -> UnregisterBrokerResponse:
    if not authorize_cluster(ctx, AclOperation.ALTER):
        return _unregister_broker_error(request, ctx.api_version, ErrorCode.CLUSTER_AUTHORIZATION_FAILED)
    if request.broker_id not in ctx.metadata.brokers:
        return UnregisterBrokerResponse(error_code=ErrorCode.BROKER_ID_NOT_REGISTERED,
                                        error_message=f"Broker ID {request.broker_id} is not currently registered")
    return UnregisterBrokerResponse(error_code=ErrorCode.NONE, error_message="")


def _unregister_controller_error(request: UnregisterControllerRequest | None, version: int,
                                 code: int) -> UnregisterControllerResponse:
    return UnregisterControllerResponse(error_code=code, error_message=None)


@handler(ApiKey.UNREGISTER_CONTROLLER, 0, 0, error_response=_unregister_controller_error)
async def handle_unregister_controller(ctx: RequestContext,
                                       request: UnregisterControllerRequest) -> UnregisterControllerResponse:
    if not authorize_cluster(ctx, AclOperation.ALTER):
        return _unregister_controller_error(request, ctx.api_version, ErrorCode.CLUSTER_AUTHORIZATION_FAILED)
    if request.controller_id == ctx.metadata.controller_id:
        return UnregisterControllerResponse(error_code=ErrorCode.INVALID_REQUEST,
                                            error_message="Controller cannot unregister itself while it is active.")
    return UnregisterControllerResponse(
        error_code=ErrorCode.CONTROLLER_ID_NOT_REGISTERED,
        error_message=f"Controller ID {request.controller_id} is not currently registered.")


def _static_quorum_answer(ctx: RequestContext, cluster_id: str, verb: str) -> tuple[int, str]:
    """(error code, message) for a voter change: another cluster, else a static quorum (kraft.version 0)."""
    if cluster_id != ctx.broker.cluster_id:
        return (ErrorCode.INCONSISTENT_CLUSTER_ID,
                f'The given id "{cluster_id}" doesn\'t match the cluster id "{ctx.broker.cluster_id}"')
    return ErrorCode.UNSUPPORTED_VERSION, f"Cluster doesn't support {verb} voter because the kraft.version feature is 0"


def _add_voter_error(request: AddRaftVoterRequest | None, version: int, code: int) -> AddRaftVoterResponse:
    return AddRaftVoterResponse(error_code=code, error_message=None)


@handler(ApiKey.ADD_RAFT_VOTER, 0, 1, error_response=_add_voter_error)
async def handle_add_raft_voter(ctx: RequestContext, request: AddRaftVoterRequest) -> AddRaftVoterResponse:
    if not authorize_cluster(ctx, AclOperation.ALTER):
        return _add_voter_error(request, ctx.api_version, ErrorCode.CLUSTER_AUTHORIZATION_FAILED)
    code, message = _static_quorum_answer(ctx, request.cluster_id or "", "adding")
    return AddRaftVoterResponse(error_code=code, error_message=message)


def _remove_voter_error(request: RemoveRaftVoterRequest | None, version: int, code: int) -> RemoveRaftVoterResponse:
    return RemoveRaftVoterResponse(error_code=code, error_message=None)


@handler(ApiKey.REMOVE_RAFT_VOTER, 0, 0, error_response=_remove_voter_error)
async def handle_remove_raft_voter(ctx: RequestContext, request: RemoveRaftVoterRequest) -> RemoveRaftVoterResponse:
    if not authorize_cluster(ctx, AclOperation.ALTER):
        return _remove_voter_error(request, ctx.api_version, ErrorCode.CLUSTER_AUTHORIZATION_FAILED)
    code, message = _static_quorum_answer(ctx, request.cluster_id or "", "removing")
    return RemoveRaftVoterResponse(error_code=code, error_message=message)
