"""ApiVersions v0-5.

- v0-v5: the API ranges computed from the handler registry.
- v1+: throttle_time_ms.
- v3+: flexible; the client's software name and version must match Kafka's pattern, else INVALID_REQUEST;
  supported and finalized features (``replication.metadata.features``).
- v5 (KIP-1242): the client may name the cluster id and node id it means to reach. As Kafka 4.4: naming only
  one of them is INVALID_REQUEST; naming another cluster or another node is REBOOTSTRAP_REQUIRED (no key
  list), so a client whose bootstrap address now reaches another broker starts over from its bootstrap list.
- A request newer than v5 never reaches here: the connection answers it in v0 format with
  UNSUPPORTED_VERSION and, as Kafka, a key list holding ApiVersions' own range alone, so the client can
  retry with a version we serve.
"""

from __future__ import annotations

import re

from pykbroker.context import RequestContext
from pykbroker.registry import handler
from replication.metadata.features import finalized_features, supported_features
from wire import ApiKey, ErrorCode
from wire.messages import ApiVersionsRequest, ApiVersionsResponse

# Kafka's ApiVersionsRequest#isValid pattern for client_software_name / client_software_version.
_SOFTWARE_PATTERN = re.compile(r"[a-zA-Z0-9](?:[a-zA-Z0-9\-.]*[a-zA-Z0-9])?")


def error_response(request: ApiVersionsRequest | None, version: int, code: int) -> ApiVersionsResponse:
    return ApiVersionsResponse(error_code=code)


#: v5's NodeId when the client names no node.
_NO_NODE_ID = -1


def _intended_broker_error(ctx: RequestContext, request: ApiVersionsRequest) -> int:
    """v5: NONE when the request names no broker or names this one (KIP-1242)."""
    named_cluster, named_node = request.cluster_id is not None, request.node_id != _NO_NODE_ID
    if not named_cluster and not named_node:
        return ErrorCode.NONE
    if named_cluster != named_node:
        return ErrorCode.INVALID_REQUEST
    if request.cluster_id != ctx.broker.cluster_id or request.node_id != ctx.broker.node_id:
        return ErrorCode.REBOOTSTRAP_REQUIRED
    return ErrorCode.NONE


@handler(ApiKey.API_VERSIONS, 0, 5, error_response=error_response)
async def handle_api_versions(ctx: RequestContext, request: ApiVersionsRequest) -> ApiVersionsResponse:
    if ctx.api_version >= 3 and not (
        _SOFTWARE_PATTERN.fullmatch(request.client_software_name)
        and _SOFTWARE_PATTERN.fullmatch(request.client_software_version)
    ):
        return ApiVersionsResponse(error_code=ErrorCode.INVALID_REQUEST)
    if ctx.api_version >= 3:  # as Kafka's SocketServer: the connection's client software, for client telemetry
        ctx.client_information.software_name = request.client_software_name or "unknown"
        ctx.client_information.software_version = request.client_software_version or "unknown"
    if ctx.api_version >= 5 and (code := _intended_broker_error(ctx, request)) != ErrorCode.NONE:
        return ApiVersionsResponse(error_code=code)
    response = ApiVersionsResponse(error_code=ErrorCode.NONE, api_keys=ctx.broker.api_versions())
    if ctx.api_version >= 3:
        response.supported_features = supported_features(ctx.api_version)
        store = ctx.metadata
        response.finalized_features_epoch = store.features_epoch
        response.finalized_features = finalized_features(store.finalized_features)
    return response
