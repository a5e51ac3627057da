"""Prometheus metrics with Kafka's names, served over HTTP (``metrics.port``, off by default).

- ``recorder``: what the request path counts (plain integers and sample windows);
- ``collector``: the scrape, turning those and the broker's state into families with Kafka's MBean
  names as the JMX exporter renders them (``jmx_names``);
- ``state``: read-only views of partitions and groups, shared with the console;
- ``http``: the small HTTP server on the event loop that serves ``/metrics`` (and the console).

``BrokerMetrics.install`` wires a Recorder into the broker's choke points (request dispatch, replica
manager appends, ISR changes, quota throttles, log flushes); with metrics and console off nothing is
installed and the request path does not pay for any of it; nor does the start: prometheus_client and the
collector (~40 ms of imports) are imported only when a BrokerMetrics is built.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from pykbroker.metrics.recorder import Recorder

if TYPE_CHECKING:
    from pykbroker.metrics.http import HttpEndpoint

__all__ = ["BrokerMetrics", "Recorder"]

log = logging.getLogger("pykbroker.metrics")

# QuotaManager keys -> Kafka's quota types (the ``type`` of kafka.server:type=Produce,user=,client-id=).
_QUOTA_TYPES = {"producer_byte_rate": "Produce", "consumer_byte_rate": "Fetch", "request_percentage": "Request"}


class BrokerMetrics:
    """One broker's recorder, Prometheus registry and (when ``metrics.port`` is set) its endpoint."""

    def __init__(self, broker: Any) -> None:
        from prometheus_client import CollectorRegistry

        from pykbroker.metrics.collector import BrokerCollector

        self.broker = broker
        self.recorder = Recorder()
        self.collector = BrokerCollector(broker, self.recorder)
        self.registry = CollectorRegistry(auto_describe=False)
        self.registry.register(self.collector)
        self.endpoint: HttpEndpoint | None = None

    @classmethod
    def install(cls, broker: Any) -> BrokerMetrics | None:
        """Record into the broker's choke points when metrics or the console are on; None when both are off."""
        config = broker.config
        if config["metrics.port"] < 0 and not config["console.listener"]:
            return None
        metrics = cls(broker)
        rec = metrics.recorder
        broker.metrics = rec
        broker.replica_manager.metrics = rec
        for quotas in (broker.produce_quota, broker.fetch_quota, broker.request_quota):
            quota_type = _QUOTA_TYPES.get(quotas.key)
            if quota_type is not None:
                quotas.on_throttle = (lambda q: lambda user, client_id, ms: rec.throttled(q, user, client_id, ms))(
                    quota_type)
        from storage import log as storage_log

        storage_log.flush_observer = rec.flushed
        return metrics

    def scrape(self) -> bytes:
        """The Prometheus text exposition of everything, now (and what clients pushed, KIP-714)."""
        from prometheus_client.exposition import generate_latest

        receiver = self.broker.telemetry_receiver
        return generate_latest(self.registry) + (receiver.exposition() if receiver is not None else b"")

    async def start(self, server: Any) -> None:
        """Serve ``/metrics`` on ``metrics.port`` (when set), and log once where."""
        self.collector.server = server
        port = self.broker.config["metrics.port"]
        if port < 0:
            return
        from prometheus_client.exposition import CONTENT_TYPE_LATEST

        from pykbroker.metrics.http import HttpEndpoint

        self.endpoint = HttpEndpoint("metrics", {"/metrics": lambda _query: (200, CONTENT_TYPE_LATEST, self.scrape())})
        bound = await self.endpoint.start("", port)
        log.info("metrics: serving Prometheus metrics at http://0.0.0.0:%d/metrics (Kafka's JMX names)", bound)

    async def close(self) -> None:
        if self.endpoint is not None:
            await self.endpoint.close()
        from storage import log as storage_log

        if storage_log.flush_observer == self.recorder.flushed:
            storage_log.flush_observer = None
