"""OffsetDelete v0: remove committed offsets of a group (KIP-496).

Refused with NON_EMPTY_GROUP for a live classic group not using the consumer protocol; per partition,
GROUP_SUBSCRIBED_TO_TOPIC while a member subscribes to the topic and UNKNOWN_TOPIC_OR_PARTITION for
partitions that do not exist. Unknown groups get GROUP_ID_NOT_FOUND.
"""

from __future__ import annotations

from pykbroker.context import RequestContext
from pykbroker.handlers.group._common import coordinator, request_info
from pykbroker.registry import handler
from wire import ApiKey
from wire.messages import OffsetDeleteRequest, OffsetDeleteResponse


def error_response(request: OffsetDeleteRequest | None, version: int, code: int) -> OffsetDeleteResponse:
    return OffsetDeleteResponse(error_code=code)


@handler(ApiKey.OFFSET_DELETE, 0, 0, error_response=error_response)
async def handle_offset_delete(ctx: RequestContext, request: OffsetDeleteRequest) -> OffsetDeleteResponse:
    return await coordinator(ctx).delete_offsets(request_info(ctx), request)
