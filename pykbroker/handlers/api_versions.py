"""ApiVersions v0-4.

- v0-v4: the API ranges computed from the handler registry.
- v1+: throttle_time_ms.
- v3+: flexible; the client's software name and version must match Kafka's pattern, else INVALID_REQUEST;
  supported and finalized features (``replication.metadata.features``).
- A request newer than v4 never reaches here: the connection answers it in v0 format with
  UNSUPPORTED_VERSION and, as Kafka 4.1, a key list holding ApiVersions' own range alone, so the client can
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


@handler(ApiKey.API_VERSIONS, 0, 4, error_response=error_response)
async def handle_api_versions(ctx: RequestContext, request: ApiVersionsRequest) -> ApiVersionsResponse:
    if ctx.api_version >= 3 and not (
        _SOFTWARE_PATTERN.fullmatch(request.client_software_name)
        and _SOFTWARE_PATTERN.fullmatch(request.client_software_version)
    ):
        return ApiVersionsResponse(error_code=ErrorCode.INVALID_REQUEST)
    response = ApiVersionsResponse(error_code=ErrorCode.NONE, api_keys=ctx.broker.api_versions())
    if ctx.api_version >= 3:
        response.supported_features = supported_features(ctx.api_version)
        store = ctx.metadata
        response.finalized_features_epoch = store.features_epoch
        response.finalized_features = finalized_features(store.finalized_features)
    return response
