"""FindCoordinator v0-6.

- v0: one group id in ``key``; v1+: ``key_type`` (0 group, 1 transaction, 2 share) and an error message.
- v3+: flexible. v4+: batched ``coordinator_keys``, answered one entry per key (KIP-699).
- Groups: the coordinator is the leader of the group's __consumer_offsets partition (the coordinator
  decides; today this node), created on first use as Kafka does. Transactions: the leader of the
  transactional id's __transaction_state partition, also created on first use. Share (v6+, key
  ``groupId:topicId:partition``, CLUSTER_ACTION): the leader of the share-partition's __share_group_state
  partition; INVALID_REQUEST while share groups are off, as Kafka with share groups off.
"""

from __future__ import annotations

import logging

from coordinator.group import ApiError
from pykbroker.context import RequestContext
from pykbroker.handlers.group._common import coordinator
from pykbroker.registry import handler
from pykbroker.security.auth_helper import AclOperation, ResourceType, authorize, authorize_cluster
from wire import ApiKey, ErrorCode
from wire.messages import FindCoordinatorRequest, FindCoordinatorResponse
from wire.messages.find_coordinator_response import Coordinator

log = logging.getLogger("pykbroker.handlers.find_coordinator")

KEY_TYPE_GROUP = 0
KEY_TYPE_TRANSACTION = 1
KEY_TYPE_SHARE = 2


def error_response(request: FindCoordinatorRequest | None, version: int, code: int) -> FindCoordinatorResponse:
    if version >= 4 and request is not None:
        return FindCoordinatorResponse(coordinators=[
            Coordinator(key=k, node_id=-1, host="", port=-1, error_code=code, error_message=None)
            for k in request.coordinator_keys])
    return FindCoordinatorResponse(error_code=code, error_message=None, node_id=-1, host="", port=-1)


async def _find(ctx: RequestContext, key_type: int, key: str) -> tuple[int, str | None, int, str, int]:
    """(error code, message, node id, host, port) of the coordinator of ``key``."""
    old = ctx.api_version < 4  # v0-3 errors carry the error's message, v4+ an empty one
    if key_type == KEY_TYPE_GROUP and not authorize(ctx, AclOperation.DESCRIBE, ResourceType.GROUP, key):
        return ErrorCode.GROUP_AUTHORIZATION_FAILED, "Group authorization failed." if old else "", -1, "", -1
    if key_type == KEY_TYPE_TRANSACTION and not authorize(ctx, AclOperation.DESCRIBE, ResourceType.TRANSACTIONAL_ID,
                                                          key):
        return (ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED, "Transactional Id authorization failed." if old
                else "", -1, "", -1)
    if key_type == KEY_TYPE_GROUP:
        gc = coordinator(ctx)
        try:
            await gc.ensure_offsets_topic()
        except ApiError as exc:
            return exc.error_code, None, -1, "", -1
        node = gc.coordinator_for(key)
    elif key_type == KEY_TYPE_TRANSACTION:
        tc = ctx.broker.transaction_coordinator
        try:
            await tc.start()  # creates __transaction_state on first use, as Kafka does
        except ApiError as exc:
            return exc.error_code, None, -1, "", -1
        except Exception:
            log.exception("creating %s failed", "__transaction_state")
            return ErrorCode.COORDINATOR_NOT_AVAILABLE, None, -1, "", -1
        node = tc.coordinator_for(key)
    elif key_type == KEY_TYPE_SHARE:
        if not ctx.broker.share_groups_enabled or ctx.api_version < 6:
            return ErrorCode.INVALID_REQUEST, "Share groups are not enabled.", -1, "", -1
        if not authorize_cluster(ctx, AclOperation.CLUSTER_ACTION):
            return ErrorCode.CLUSTER_AUTHORIZATION_FAILED, None, -1, "", -1
        share_key = _share_partition_key(key)
        if share_key is None:
            return ErrorCode.INVALID_REQUEST, None, -1, "", -1
        sc = ctx.broker.share_groups.coordinator
        try:
            await sc.ready()  # creates __share_group_state on first use
        except ApiError as exc:
            return exc.error_code, None, -1, "", -1
        node = sc.leader_of(share_key)
    else:
        return ErrorCode.INVALID_REQUEST, f"Unknown coordinator type {key_type}.", -1, "", -1
    registered = ctx.metadata.brokers.get(node) if node is not None else None
    endpoint = registered.endpoint(ctx.listener.name) if registered is not None else None
    if node is None or endpoint is None:  # no leader, or a leader not registered (or not on this listener)
        return ErrorCode.COORDINATOR_NOT_AVAILABLE, None, -1, "", -1
    return ErrorCode.NONE, None, node, endpoint.host, endpoint.port


def _share_partition_key(key: str):
    """Kafka's SharePartitionKey.getInstance: ``groupId:topicId:partition`` (None when malformed)."""
    from storage.checkpoints import topic_id_from_string

    parts = key.rsplit(":", 2)
    if len(parts) != 3 or not parts[0]:
        return None
    try:
        return parts[0], topic_id_from_string(parts[1]), int(parts[2])
    except ValueError:
        return None


@handler(ApiKey.FIND_COORDINATOR, 0, 6, error_response=error_response)
async def handle_find_coordinator(ctx: RequestContext, request: FindCoordinatorRequest) -> FindCoordinatorResponse:
    version = ctx.api_version
    key_type = request.key_type if version >= 1 else KEY_TYPE_GROUP
    if version >= 4:
        coordinators = []
        for key in request.coordinator_keys:
            code, message, node, host, port = await _find(ctx, key_type, key)
            coordinators.append(Coordinator(key=key, node_id=node, host=host, port=port, error_code=code,
                                            error_message=message if message is not None or code else ""))
        return FindCoordinatorResponse(coordinators=coordinators)
    code, message, node, host, port = await _find(ctx, key_type, request.key)
    return FindCoordinatorResponse(error_code=code, error_message=message, node_id=node, host=host, port=port)
