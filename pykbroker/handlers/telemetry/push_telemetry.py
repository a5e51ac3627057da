"""PushTelemetry v0 (KIP-714): a client instance's metrics, OTLP-encoded and compressed.

Checked as Kafka checks it (reserved instance id: INVALID_REQUEST; then terminated, throttled, unknown
subscription id, unknown compression, over telemetry.max.bytes) and handed to the Prometheus receiver when
``metrics.client.telemetry.enable`` is on; a payload it cannot read is INVALID_RECORD, never a broker error.
"""

from __future__ import annotations

from pykbroker.context import RequestContext
from pykbroker.handlers.telemetry._common import client_attributes
from pykbroker.registry import handler
from wire import ApiKey
from wire.messages import PushTelemetryRequest, PushTelemetryResponse


def error_response(request: PushTelemetryRequest | None, version: int, code: int) -> PushTelemetryResponse:
    return PushTelemetryResponse(error_code=code)


@handler(ApiKey.PUSH_TELEMETRY, 0, 0, error_response=error_response)
async def handle_push_telemetry(ctx: RequestContext, request: PushTelemetryRequest) -> PushTelemetryResponse:
    return ctx.broker.client_metrics.push_telemetry(request, client_attributes(ctx), ctx.client_address)
