"""Client telemetry (KIP-714): GetTelemetrySubscriptions and PushTelemetry (pykbroker.client_metrics)."""
