"""Client telemetry (KIP-714): the broker's side of GetTelemetrySubscriptions and PushTelemetry.

- ``configs``: CLIENT_METRICS config resources (subscriptions): their three configs, Kafka's checks and match
  patterns;
- ``manager``: ``ClientMetricsManager``, Kafka's: client instances, their subscription, push intervals and errors
  (its ids and orders from ``wire.java``'s HashSet and ConcurrentHashMap);
- ``otlp``: the pushed OpenTelemetry payload decoded, kept per client instance and rendered for Prometheus.

Kafka needs a ClientTelemetry plugin to receive the metrics; pykbroker's receiver is its own Prometheus endpoint,
switched on by ``metrics.client.telemetry.enable`` (with ``metrics.port``). As in Kafka, the two APIs are
answered either way and advertised in ApiVersions only when the receiver is on.
"""
