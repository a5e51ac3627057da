"""The console served by the broker (``console.listener``, off by default): a workbench for topics,
messages, groups, ACLs and SCRAM users.

The web stack is the standard library and three static files (``index.html``, ``console.js``,
``console.css``: no build step, nothing fetched from elsewhere): an asyncio HTTP server
(``console.http``) on the broker's event loop answers the page and a JSON API (``console.api``). Every
API call is a Kafka request on a connection authenticated as the logged-in user (``console.kafka``,
``console.sessions``): the broker's ACLs decide what each person sees and does, exactly as for any
client. Writes are off unless ``console.write.actions.enable`` is true, and each is logged with its
principal. The overview (brokers, topics, groups with lag, throughput per topic from
``ThroughputHistory``, the last log lines from ``LogTail``) lists only what the user may describe, and what
other brokers host or coordinate as they answer the user (``console.cluster``).
"""

from __future__ import annotations

import asyncio
import logging
import ssl
import time
from collections import deque
from importlib import resources
from typing import Any

from pykbroker.config import ConfigError
from pykbroker.console.admin import list_groups
from pykbroker.console.api import ConsoleApi
from pykbroker.console.cluster import complete_overview
from pykbroker.console.http import ConsoleHttpServer, Request, Response, Route
from pykbroker.console.lag_history import LAG_INTERVAL_S, LagHistory, sampled_groups
from pykbroker.console.schemas import ValueDecoder, schema_source
from pykbroker.console.sessions import ConsoleUser, Sessions
from pykbroker.metrics import state
from pykbroker.metrics.http import parse_host_port
from pykbroker.metrics.recorder import Recorder
from pykbroker.security.tls import client_ssl_context, server_ssl_context
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
                "remote_size": _remote_size(broker, name, topic, p.partition, bool(view and view.leader)),
                "remote_records": None,  # records in remote storage, when only the leader knows the bytes (cluster.py)
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


def _remote_size(broker: Any, name: str, topic: Any, partition: int, leader_here: bool) -> int | None:
    """Bytes of the partition in remote storage (tiered storage on): the leader's segments on its leader-epoch
    lineage when this broker leads it; else what this broker's replay of the partition's __remote_log_metadata
    partition knows (the records the leader's view comes from, replayed each task interval), when it hosts it;
    None otherwise (``cluster.complete_overview`` asks the leader how many records are remote)."""
    rlm = getattr(broker, "remote_log_manager", None)
    if rlm is None:
        return None
    if leader_here:
        replica = broker.replica_manager.partitions.get((name, partition))
        if replica is None or replica.log is None or not replica.log.remote_log_enabled:
            return None
        return int(rlm.remote_size(replica.topic_id, partition, replica.log))
    if str(topic.configs.get("remote.storage.enable", "false")).lower() != "true" \
            or not rlm.metadata.hosts(topic.topic_id, partition):
        return None
    return int(rlm.remote_size(topic.topic_id, partition))


class Console:
    """The console: its HTTP server (page, static files, JSON API), throughput sampler and log tail."""

    def __init__(self, broker: Any, recorder: Recorder) -> None:
        self.broker = broker
        self.history = ThroughputHistory(recorder)
        self.lag_history = LagHistory()
        self.tail = LogTail()
        self.sessions = Sessions(*kafka_listener(broker))
        source = schema_source(broker)
        decoder = ValueDecoder(source) if source is not None else None
        self.api = ConsoleApi(self.sessions, bool(broker.config["console.write.actions.enable"]), self._overview,
                              lambda: {"cluster_id": broker.cluster_id, "node_id": broker.node_id},
                              self.lag_history.to_json, decoder)
        routes = self.api.routes()
        for path, (name, ctype) in STATIC.items():
            routes[("GET", path)] = _static(name, ctype)
        self.server = ConsoleHttpServer(routes)
        self._sampler: asyncio.Task | None = None

    async def _overview(self, user: ConsoleUser) -> dict[str, Any]:
        """The overview with only the topics and groups ``user`` may describe (Metadata and ListGroups
        answered as that user)."""
        data = overview(self.broker, self.history, self.tail)
        visible = {t.name for t in (await user.kafka.metadata(None)).topics if t.error_code == 0}
        data["topics"] = [t for t in data["topics"] if t["name"] in visible]
        data["iceberg"] = [t for t in data.get("iceberg", []) if t["topic"] in visible]
        unavailable: list[int] = []  # brokers not answering (down, or still loading their groups)
        listed = await list_groups(user.kafka, unavailable, retries=1)
        groups = {g["group_id"] for g in listed}
        data["groups"] = [g for g in data["groups"] if g["group_id"] in groups]
        await complete_overview(user.kafka, data, self.broker.node_id, listed)
        data["principal"] = user.principal
        data["unavailable"] = sorted(unavailable)
        return data

    async def start(self) -> None:
        value: str = self.broker.config["console.listener"]
        tls = value.startswith("https://")
        host, port = parse_host_port("console.listener", value.removeprefix("https://"))
        context = page_ssl_context(self.broker.config) if tls else None
        self.api.secure_cookie = tls
        logging.getLogger().addHandler(self.tail)
        try:
            bound = await self.server.start(host, port, context)
        except OSError as exc:
            raise ConfigError(f"console.listener: {host or '0.0.0.0'}:{port} cannot be bound ({exc.strerror or exc}); "
                              "pick another port, e.g. --override console.listener=127.0.0.1:0 (any free one)") from exc
        self.history.sample()
        self._sampler = asyncio.get_running_loop().create_task(self._sample_forever())
        log.info("console: serving the console at %s://%s:%d/ (%s, %s; Kafka requests to %s:%d%s)",
                 "https" if tls else "http", host or "0.0.0.0", bound, "login with the broker's SASL users" if self.sessions.login_required
                 else "no login: a PLAINTEXT listener", "write actions on" if self.api.writes_enabled
                 else "read-only: console.write.actions.enable=false", self.sessions.host, self.sessions.port,
                 " over TLS" if self.sessions.ssl_context is not None else "")

    async def _sample_forever(self) -> None:
        every = max(1, round(LAG_INTERVAL_S / SAMPLE_INTERVAL_S))
        ticks = 0
        while True:
            await asyncio.sleep(SAMPLE_INTERVAL_S)
            self.history.sample()
            if ticks % every == 0:
                try:
                    self.lag_history.sample(await sampled_groups(self.broker))
                except Exception:  # noqa: BLE001 - a coordinator changing under the read: the next sample
                    log.debug("console: lag sample failed", exc_info=True)
            ticks += 1

    async def close(self) -> None:
        if self._sampler is not None:
            self._sampler.cancel()
        await self.server.close()
        self.sessions.close()
        logging.getLogger().removeHandler(self.tail)


# Static files of the page: path -> (file in this package, content type).
STATIC = {"/": ("index.html", "text/html; charset=utf-8"), "/index.html": ("index.html", "text/html; charset=utf-8"),
          "/console.js": ("console.js", "text/javascript; charset=utf-8"),
          "/console.css": ("console.css", "text/css; charset=utf-8")}


def _static(name: str, ctype: str) -> Route:
    async def route(_request: Request) -> Response:
        return Response(200, ctype, resources.files("pykbroker.console").joinpath(name).read_bytes())
    return route


def page_ssl_context(config: Any, prop: str = "console.listener") -> ssl.SSLContext:
    """The TLS server context of an ``https://`` console.listener (or schema.registry.listeners): the
    broker-wide ``ssl.keystore.*`` (no client certificate is asked for: people log in with their SASL user)."""
    if config["ssl.keystore.location"] is None and config["ssl.keystore.key"] is None:
        raise ConfigError(f"{prop}: https:// needs the broker-wide ssl.keystore.location (or "
                          "ssl.keystore.key and ssl.keystore.certificate.chain) for its certificate")
    context = server_ssl_context(config, "CONSOLE", "SSL")
    context.verify_mode = ssl.CERT_NONE
    return context


def kafka_listener(broker: Any) -> tuple[str, int, tuple[str, ...], ssl.SSLContext | None]:
    """(host, port, SASL mechanisms, TLS client context) of the listener the console talks Kafka to: the
    first SASL_PLAINTEXT one, else SASL_SSL (so people log in), else PLAINTEXT. An SSL listener's principal is
    the client certificate's, which the console cannot have for each person, so it is not used. ConfigError
    when there is none of them."""
    security = broker.listener_security
    for wanted in ("SASL_PLAINTEXT", "SASL_SSL", "PLAINTEXT"):
        for name, listener in broker.bound_listeners.items():
            sec = security.get(name)
            if sec is not None and sec.protocol == wanted:
                context = client_ssl_context(broker.config, name) if wanted == "SASL_SSL" else None
                return (listener.host or "127.0.0.1"), listener.port, tuple(sec.mechanisms), context
    raise ConfigError("console.listener: the console talks to the broker over a SASL_PLAINTEXT, SASL_SSL or "
                      "PLAINTEXT listener and this broker has none; add one to listeners (e.g. "
                      "CONSOLE://127.0.0.1:0 with listener.security.protocol.map CONSOLE:SASL_PLAINTEXT)")
