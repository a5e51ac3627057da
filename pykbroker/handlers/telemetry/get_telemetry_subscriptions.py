"""GetTelemetrySubscriptions v0 (KIP-714): the metrics, interval and subscription id of a client instance.

A zero instance id gets a new one. Answered whether or not a receiver is configured (as Kafka: only ApiVersions
hides the API without one). See pykbroker.client_metrics.manager for the throttling rules.
"""

from __future__ import annotations

from pykbroker.context import RequestContext
from pykbroker.handlers.telemetry._common import client_attributes
from pykbroker.registry import handler
from wire import ApiKey
from wire.messages import GetTelemetrySubscriptionsRequest, GetTelemetrySubscriptionsResponse


def error_response(request: GetTelemetrySubscriptionsRequest | None, version: int,
                   code: int) -> GetTelemetrySubscriptionsResponse:
    return GetTelemetrySubscriptionsResponse(error_code=code)


@handler(ApiKey.GET_TELEMETRY_SUBSCRIPTIONS, 0, 0, error_response=error_response)
async def handle_get_telemetry_subscriptions(ctx: RequestContext, request: GetTelemetrySubscriptionsRequest
                                             ) -> GetTelemetrySubscriptionsResponse:
    return ctx.broker.client_metrics.get_telemetry_subscriptions(request, client_attributes(ctx), ctx.client_address)
