"""A read-only console page served by the broker (``console.listener``, off by default).

``/`` is one plain HTML page with its script inline (no build step, nothing fetched from elsewhere);
it polls ``/api/overview`` every two seconds: the cluster and its brokers, topics with partitions
(leader, replicas, ISR, size, offsets, message counts) and their configs, consumer groups with members,
state and lag per partition, live throughput per topic (``ThroughputHistory``), and the broker's last
log lines (``LogTail``). Nothing on it changes the broker: every route is a GET that reads.
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
from collections import deque
from importlib import resources
from typing import Any

from pykbroker.metrics import state
from pykbroker.metrics.http import HttpEndpoint, parse_host_port
from pykbroker.metrics.recorder import Recorder
from replication.metadata.embedded_store import uuid_to_kafka_string

__all__ = ["Console", "LogTail", "ThroughputHistory"]

log = logging.getLogger("pykbroker.console")

# How often throughput is sampled, and how many samples the charts show (two minutes).
SAMPLE_INTERVAL_S = 2.0
SAMPLES = 60
# Log lines kept for the page.
LOG_LINES = 200


class LogTail(logging.Handler):
    """The broker's last LOG_LINES log lines, formatted as its log file has them."""

    def __init__(self, capacity: int = LOG_LINES) -> None:
        super().__init__(logging.INFO)
        self.lines: deque[str] = deque(maxlen=capacity)
        root_handlers = logging.getLogger().handlers
        if root_handlers and root_handlers[0].formatter is not None:
            self.setFormatter(root_handlers[0].formatter)

    def emit(self, record: logging.LogRecord) -> None:
        try:
            self.lines.append(self.format(record))
        except Exception:  # noqa: BLE001 - a line that cannot be formatted is not worth failing a request
            self.handleError(record)


class ThroughputHistory:
    """Per-topic bytes in/out and messages in per second, from the recorder's running totals every
    SAMPLE_INTERVAL_S (the last SAMPLES of them)."""

    def __init__(self, recorder: Recorder) -> None:
        self.recorder = recorder
        self.times: deque[float] = deque(maxlen=SAMPLES)
        self.rates: dict[str, deque[tuple[float, float, float]]] = {}
        self._last: tuple[float, dict[str, tuple[int, int, int]]] | None = None

    def sample(self, now: float | None = None) -> None:
        now = time.time() if now is None else now
        totals = {t: (s.bytes_in, s.bytes_out, s.messages_in) for t, s in list(self.recorder.topics.items())}
        if self._last is not None:
            then, before = self._last
            span = max(now - then, 1e-6)
            self.times.append(now)
            for topic, (bi, bo, mi) in totals.items():
                b = before.get(topic, (0, 0, 0))
                rates = self.rates.setdefault(topic, deque(maxlen=SAMPLES))
                while len(rates) < len(self.times) - 1:  # a topic new since: zeros before it
                    rates.append((0.0, 0.0, 0.0))
                rates.append(((bi - b[0]) / span, (bo - b[1]) / span, (mi - b[2]) / span))
            for topic in [t for t in self.rates if t not in totals]:
                del self.rates[topic]
        self._last = (now, totals)

    def to_json(self) -> dict[str, Any]:
        return {"times": list(self.times),
                "topics": {t: {"bytes_in": [r[0] for r in rates], "bytes_out": [r[1] for r in rates],
                               "messages_in": [r[2] for r in rates]} for t, rates in self.rates.items()}}


def overview(broker: Any, history: ThroughputHistory | None, tail: LogTail | None) -> dict[str, Any]:
    """Everything the page shows, as JSON-able data (read on the event loop)."""
    image = broker.metadata.image
    hosted = {(p.topic, p.partition): p for p in state.partitions(broker)}
    brokers = [{"node_id": b.node_id, "rack": b.rack,
                "endpoints": [f"{e.listener}://{e.host}:{e.port}" for e in b.endpoints],
                "controller": b.node_id == image.controller_id, "this": b.node_id == broker.node_id}
               for b in sorted(image.brokers.values(), key=lambda b: b.node_id)]
    topics = []
    for name in sorted(image.topics):
        topic = image.topics[name]
        partitions = []
        for p in sorted(topic.partitions, key=lambda p: p.partition):
            view = hosted.get((name, p.partition))
            partitions.append({
                "partition": p.partition, "leader": p.leader, "leader_epoch": p.leader_epoch,
                "replicas": list(p.replicas), "isr": list(p.isr),
                "size": view.size if view else None,
                "log_start_offset": view.log_start_offset if view else None,
                "log_end_offset": view.log_end_offset if view else None,
                "high_watermark": view.high_watermark if view else None,
            })
        known = [p for p in partitions if p["log_end_offset"] is not None]
        topics.append({
            "name": name, "topic_id": uuid_to_kafka_string(topic.topic_id), "internal": name.startswith("__"),
            "partitions": partitions, "configs": dict(sorted(topic.configs.items())),
            "size": sum(p["size"] for p in known),
            "messages": sum(p["log_end_offset"] - p["log_start_offset"] for p in known),
        })
    groups = []
    for g in sorted(state.groups(broker), key=lambda g: g.group_id):
        groups.append({
            "group_id": g.group_id, "type": g.type, "state": g.state, "protocol_type": g.protocol_type,
            "members": [{"member_id": m.member_id, "client_id": m.client_id, "client_host": m.client_host,
                         "instance_id": m.instance_id} for m in g.members],
            "offsets": [{"topic": t, "partition": p, "committed": c, "lag": lag}
                        for (t, p), (c, lag) in sorted(g.offsets.items())],
            "lag": sum(lag for _, lag in g.offsets.values() if lag is not None),
        })
    tables = []
    service: Any = getattr(broker, "iceberg", None)
    lags = service.lag() if service is not None else {}
    for name, translator in sorted(service.translators.items() if service is not None else []):
        parts = [{"partition": p, "lag_records": lag.records, "lag_seconds": round(lag.seconds, 3)}
                 for (t, p), lag in sorted(lags.items()) if t == name]
        tables.append({"topic": name, "table": f"{service.settings.namespace}.{name}", "mode": translator.config.mode,
                       "commits": translator.commits, "partitions": parts,
                       "lag_records": sum(p["lag_records"] for p in parts),
                       "lag_seconds": max((p["lag_seconds"] for p in parts), default=0.0)})
    return {
        "cluster_id": broker.cluster_id, "node_id": broker.node_id, "controller_id": image.controller_id,
        "mode": "ZooKeeper cluster" if getattr(broker, "cluster_mode", False) else "single node",
        "brokers": brokers, "topics": topics, "groups": groups, "iceberg": tables,
        "throughput": history.to_json() if history is not None else {"times": [], "topics": {}},
        "log": list(tail.lines) if tail is not None else [],
        "now": time.time(),
    }


class Console:
    """The console's HTTP endpoint, throughput sampler and log tail."""

    def __init__(self, broker: Any, recorder: Recorder) -> None:
        self.broker = broker
        self.history = ThroughputHistory(recorder)
        self.tail = LogTail()
        self.endpoint = HttpEndpoint("console", {
            "/": lambda _q: (200, "text/html; charset=utf-8", _page()),
            "/index.html": lambda _q: (200, "text/html; charset=utf-8", _page()),
            "/api/overview": lambda _q: (200, "application/json",
                                         json.dumps(overview(self.broker, self.history, self.tail)).encode()),
        })
        self._sampler: asyncio.Task | None = None

    async def start(self) -> None:
        host, port = parse_host_port("console.listener", self.broker.config["console.listener"])
        logging.getLogger().addHandler(self.tail)
        bound = await self.endpoint.start(host, port)
        self.history.sample()
        self._sampler = asyncio.get_running_loop().create_task(self._sample_forever())
        log.info("console: serving the read-only console at http://%s:%d/", host or "0.0.0.0", bound)

    async def _sample_forever(self) -> None:
        while True:
            await asyncio.sleep(SAMPLE_INTERVAL_S)
            self.history.sample()

    async def close(self) -> None:
        if self._sampler is not None:
            self._sampler.cancel()
        await self.endpoint.close()
        logging.getLogger().removeHandler(self.tail)


def _page() -> bytes:
    return resources.files("pykbroker.console").joinpath("index.html").read_bytes()
