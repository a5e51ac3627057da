"""The cost of client telemetry (KIP-714): broker CPU with 100 clients pushing every 5 s, against the same 100
clients connected and silent.

    python -m bench telemetry                       # 60 s per phase (TELEMETRY_BENCH_SECONDS)

One pykbroker with ``metrics.client.telemetry.enable`` and a subscription of every client to
``org.apache.kafka.`` at 5 s. 100 client connections (one thread, requests spread evenly over the interval) each
send ApiVersions and GetTelemetrySubscriptions, then: phase "idle", nothing for a phase's length; phase "pushing",
one PushTelemetry every 5 s each, a zstd-compressed OTLP payload shaped like a Java producer's (100 metrics: 60
gauges and 40 delta sums with node and topic attributes; resource attributes). Reported: the broker's CPU seconds
per minute in each phase, the difference per push, the errors the pushes got, and what a Prometheus scrape of the
resulting series costs.
"""

from __future__ import annotations

import os
import time
import urllib.request

from bench.broker_bench import cpu_seconds
from pykbroker.testing import BrokerProcess, RawClient, free_port
from wire import compress
from wire.messages import ApiVersionsRequest, GetTelemetrySubscriptionsRequest, PushTelemetryRequest

CLIENTS = 100
INTERVAL_S = 5.0
ZSTD = 4


def java_like_payload(seq: int) -> bytes:
    """An OTLP MetricsData like a Java producer's push, zstd-compressed."""
    from opentelemetry.proto.common.v1.common_pb2 import AnyValue, KeyValue
    from opentelemetry.proto.metrics.v1 import metrics_pb2

    def kv(key: str, value: str) -> KeyValue:
        return KeyValue(key=key, value=AnyValue(string_value=value))

    data = metrics_pb2.MetricsData()
    rm = data.resource_metrics.add()
    rm.resource.attributes.extend([kv("client_rack", "r1"), kv("application", "bench"), kv("host", "h1")])
    scope = rm.scope_metrics.add()
    now = time.time_ns()
    for i in range(100):
        attributes = [kv("node_id", str(i % 3)), kv("topic", f"topic-{i % 5}")]
        if i < 60:
            m = scope.metrics.add(name=f"org.apache.kafka.producer.gauge.metric.{i}.avg")
            m.gauge.data_points.add(as_double=seq + i * 0.5, time_unix_nano=now, attributes=attributes)
        else:
            m = scope.metrics.add(name=f"org.apache.kafka.producer.sum.metric.{i}.total")
            m.sum.aggregation_temporality = metrics_pb2.AGGREGATION_TEMPORALITY_DELTA
            m.sum.is_monotonic = True
            m.sum.data_points.add(as_double=float(i), time_unix_nano=now, start_time_unix_nano=now - 5_000_000_000,
                                  attributes=attributes)
    return compress(ZSTD, data.SerializeToString())


def main() -> None:
    seconds = float(os.environ.get("TELEMETRY_BENCH_SECONDS", "60"))
    port = free_port()
    with BrokerProcess(overrides={"metrics.port": str(port), "metrics.client.telemetry.enable": "true"}) as broker:
        broker.start()
        assert broker.proc is not None
        pid = broker.proc.pid
        with RawClient(broker.bootstrap) as admin:
            admin.set_client_metrics("everyone", metrics="org.apache.kafka.", interval_ms=str(int(INTERVAL_S * 1000)))
        clients, subscriptions = [], []
        for i in range(CLIENTS):
            c = RawClient(broker.bootstrap, timeout=30, client_id=f"bench-{i}")
            c.request(ApiVersionsRequest(client_software_name="apache-kafka-java", client_software_version="4.4.0"), 3)
            clients.append(c)
            subscriptions.append(c.request(GetTelemetrySubscriptionsRequest(), 0))
        payload = java_like_payload(0)
        print(f"{CLIENTS} clients, a push every {INTERVAL_S:.0f} s each, payload {len(payload)} bytes (zstd); "
              f"{seconds:.0f} s per phase; load average {os.getloadavg()[0]:.1f}", flush=True)
        try:
            idle_started, idle_cpu = time.monotonic(), cpu_seconds(pid)
            time.sleep(seconds)
            idle = (cpu_seconds(pid) - idle_cpu) / (time.monotonic() - idle_started) * 60
            errors: dict[int, int] = {}
            pushes = 0
            started, cpu = time.monotonic(), cpu_seconds(pid)
            # Client i first pushes i * (interval / clients) into the phase, then an interval after its previous push
            # was answered, as a client schedules its next push.
            due = [started + i * INTERVAL_S / CLIENTS for i in range(CLIENTS)]
            while time.monotonic() - started < seconds:
                i = min(range(CLIENTS), key=due.__getitem__)
                delay = due[i] - time.monotonic()
                if delay > 0:
                    time.sleep(delay)
                code = clients[i].request(PushTelemetryRequest(
                    client_instance_id=subscriptions[i].client_instance_id,
                    subscription_id=subscriptions[i].subscription_id, compression_type=ZSTD, metrics=payload),
                    0).error_code
                errors[code] = errors.get(code, 0) + 1
                pushes += 1
                due[i] = time.monotonic() + INTERVAL_S
            elapsed = time.monotonic() - started
            pushing = (cpu_seconds(pid) - cpu) / elapsed * 60
            scrape_cpu = cpu_seconds(pid)
            scrape_started = time.perf_counter()
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=60) as r:
                body = r.read()
            scrape_s = time.perf_counter() - scrape_started
            scrape_cpu = cpu_seconds(pid) - scrape_cpu
            series = sum(1 for line in body.decode().splitlines() if line.startswith("org_apache_kafka_"))
        finally:
            for c in clients:
                c.close()
        per_push_ms = (pushing - idle) / 60 / (pushes / elapsed) * 1000
        print(f"broker CPU, idle clients:    {idle:6.2f} s per minute")
        print(f"broker CPU, pushing clients: {pushing:6.2f} s per minute ({pushes / elapsed:.1f} pushes/s)")
        print(f"telemetry's cost: {pushing - idle:.2f} CPU s per minute, {per_push_ms:.2f} ms per push; "
              f"answers {errors}")
        print(f"a scrape with {series} pushed series: {scrape_s * 1000:.0f} ms, {scrape_cpu * 1000:.0f} ms of broker "
              f"CPU, {len(body) / 1e6:.1f} MB; load average {os.getloadavg()[0]:.1f}")
