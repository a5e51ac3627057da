"""ClientMetricsManager, as Kafka 4.4's: client instances, their subscriptions, push intervals and errors.

A client asks GetTelemetrySubscriptions (with no instance id the first time: the broker makes one) and gets the
metrics prefixes and the push interval of every subscription matching it (the smallest interval; ``*`` when one
of them wants all), a subscription id (CRC32C of the metric set and interval XOR the instance id's hash), the
compression types accepted and ``telemetry.max.bytes``. It then sends PushTelemetry every interval. Asking
again or pushing before the interval is up is THROTTLING_QUOTA_EXCEEDED (a push right after a get is let
through: clients add jitter); a push naming an old subscription id is UNKNOWN_SUBSCRIPTION_ID (a subscription
changed: the instance was re-evaluated), and nothing is accepted after a terminating push. Instances live in an
LRU cache of 16,384, each forgotten max(60 s, 3 push intervals) after its last request or when the connection it
was made on closes (Kafka's ClientConnectionDisconnectListener: a client that reconnects starts afresh).
Subscriptions are the CLIENT_METRICS configs of the metadata image, taken change by change into Kafka's
ConcurrentHashMap (``wire.java.JavaConcurrentHashMap``): a client's metrics are gathered, into a HashSet, in that
map's order. A changed subscription re-evaluates every instance at its next request.

The receiver (``exporter``) gets each accepted push with metrics; a payload too large once decompressed is
TELEMETRY_TOO_LARGE, any other failure of it INVALID_RECORD. Runs on the event loop: no locks.
"""

from __future__ import annotations

import logging
import uuid
from collections import OrderedDict
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Protocol

from pykbroker.client_metrics import configs as cm
from wire import ZERO_UUID, DecompressedSizeError, ErrorCode
from wire.java import JavaConcurrentHashMap, hash_set_capacity, hash_set_order, int32, uuid_hash
from wire.messages import (
    GetTelemetrySubscriptionsRequest,
    GetTelemetrySubscriptionsResponse,
    PushTelemetryRequest,
    PushTelemetryResponse,
)

__all__ = ["ClientInstance", "ClientMetricsManager", "INSTANCE_COUNT_NAMES", "TelemetryExporter",
           "SUPPORTED_COMPRESSION_TYPES"]

log = logging.getLogger("pykbroker.client_metrics")

#: Kafka's order of preference (zstd, lz4, gzip, snappy): clients take the first they support.
SUPPORTED_COMPRESSION_TYPES = (4, 3, 1, 2)
_KNOWN_COMPRESSION_TYPES = frozenset((0, 1, 2, 3, 4))
CACHE_MAX_SIZE = 16384
DEFAULT_CACHE_EXPIRY_MS = 60_000
_RESERVED_IDS = frozenset((ZERO_UUID, uuid.UUID(int=1)))
# The per-instance counts (ClientMetricsManager.instance_counts), in Kafka's metric names' order.
INSTANCE_COUNT_NAMES = ("throttle-count", "plugin-export-count", "plugin-error-count")
_THROTTLE, _PLUGIN_EXPORT, _PLUGIN_ERROR = range(3)
# How often expired instances are looked for.
_PURGE_INTERVAL_MS = 1000


@dataclass
class ClientInstance:
    """One client instance as Kafka's ClientMetricsInstance: what it is subscribed to and when it last asked."""

    client_instance_id: uuid.UUID
    attributes: Mapping[str, str | None]  # the match attributes (client_id, client_software_name, ...)
    subscription_id: int
    subscription_version: int
    metrics: tuple[str, ...]
    push_interval_ms: int
    last_get_ms: int = 0
    last_push_ms: int = 0
    terminating: bool = False
    last_known_error: int = ErrorCode.NONE
    expires_ms: int = field(default=0)

    def may_get(self, now_ms: int) -> bool:
        """A get is due once an interval passed since the last get or push (then it counts as the last get)."""
        if now_ms - max(self.last_get_ms, self.last_push_ms) >= self.push_interval_ms:
            self.last_get_ms = now_ms
            return True
        return False

    def may_push(self, now_ms: int) -> bool:
        """The first push after a get, or one an interval after the last push (then it counts as the last)."""
        if self.last_get_ms > self.last_push_ms or now_ms - self.last_push_ms >= self.push_interval_ms:
            self.last_push_ms = now_ms
            return True
        return False


class TelemetryExporter(Protocol):
    """Where accepted pushes go (Kafka's ClientTelemetryExporter plugin)."""

    def export(self, instance: ClientInstance, compression_type: int, metrics: bytes, max_bytes: int) -> None:
        """Take one push's payload; raise DecompressedSizeError when it is too large, anything else if bad."""

    def forget(self, client_instance_id: uuid.UUID, after_ms: int = 0) -> None:
        """The instance is gone: drop what it pushed, ``after_ms`` from now (unless it pushes again)."""


def _matches(subscription: cm.Subscription, attributes: Mapping[str, str | None]) -> bool:
    for name, pattern in subscription.match.items():
        value = attributes.get(name)
        if value is None or pattern.fullmatch(value) is None:
            return False
    return True


def subscription_id(metrics: list[str], push_interval_ms: int, client_instance_id: uuid.UUID) -> int:
    """Kafka's: CRC32C of the metric set's text and the interval, XORed with the instance id's hash code."""
    import crc32c  # here, not at the top: importing it costs ~20 ms of start-up (see wire._records)

    text = "[" + ", ".join(metrics) + "]" + str(push_interval_ms)
    return int32(crc32c.crc32c(text.encode())) ^ uuid_hash(client_instance_id)


class ClientMetricsManager:
    """The client instances of this broker and their subscriptions (see the module docstring)."""

    def __init__(self, subscriptions: Callable[[], Mapping[str, Mapping[str, str]]], telemetry_max_bytes: int,
                 clock_ms: Callable[[], int], exporter: TelemetryExporter | None = None,
                 cache_expiry_ms: int = DEFAULT_CACHE_EXPIRY_MS) -> None:
        self._configs = subscriptions
        self.telemetry_max_bytes = telemetry_max_bytes
        self._clock_ms = clock_ms
        self.exporter = exporter
        self._cache_expiry_ms = cache_expiry_ms
        self._instances: OrderedDict[uuid.UUID, ClientInstance] = OrderedDict()
        # The connection (peer address) each instance was made on: its close drops the instance.
        self._connections: dict[str, uuid.UUID] = {}
        self._seen: Mapping[str, Mapping[str, str]] = {}
        # Kafka's subscriptionMap, a ConcurrentHashMap: a client's subscriptions are evaluated in its order.
        self._subscription_names = JavaConcurrentHashMap()
        self._subscriptions: dict[str, cm.Subscription] = {}
        self._version = 0
        self._next_purge_ms = 0
        # Kafka's client-metrics broker metrics: unknown-subscription-request-count, and per live instance the
        # throttle-count, plugin-export-count and plugin-error-count.
        self.unknown_subscription_requests = 0
        self.instance_counts: dict[uuid.UUID, list[int]] = {}

    # -- subscriptions ----------------------------------------------------------------------------------
    def refresh(self) -> None:
        """Take the image's subscriptions when they changed, as Kafka's updateSubscription takes each: a deleted
        one removed, a new or altered one put (a new version re-evaluates every instance). The broker calls this on
        every new image, so changes arrive one by one; changes seen together are applied removals first, then in
        the image's order (Kafka applies one metadata delta's resources in the order of a HashMap keyed by an
        identity hash: no order to reproduce there)."""
        current = self._configs()
        old = self._seen
        if current is old:
            return
        self._seen = current
        changed = False
        for name in old:
            if not current.get(name) and self._subscription_names.remove(name):
                del self._subscriptions[name]
                changed = True
        for name, configs in current.items():
            if configs and (name not in self._subscriptions or old.get(name) != configs):
                try:
                    parsed = cm.subscription(name, configs)
                except Exception as exc:  # written around the admin APIs' checks: Kafka's validate refuses it too
                    log.warning("client metrics subscription %s ignored: %s", name, exc)
                    continue
                self._subscription_names.put(name)
                self._subscriptions[name] = parsed
                changed = True
        if changed:
            self._version += 1

    def _new_instance(self, client_instance_id: uuid.UUID, attributes: Mapping[str, str | None]) -> ClientInstance:
        interval = cm.INTERVAL_MS_DEFAULT
        metrics: list[str] = []
        everything = False
        for name in self._subscription_names:
            s = self._subscriptions[name]
            if _matches(s, attributes):
                everything = everything or cm.ALL_SUBSCRIBED_METRICS in s.metrics
                metrics += hash_set_order(s.metrics, hash_set_capacity(len(s.metrics)))
                interval = min(interval, s.interval_ms)
        ordered = [cm.ALL_SUBSCRIBED_METRICS] if everything else hash_set_order(metrics)
        return ClientInstance(client_instance_id, attributes, subscription_id(ordered, interval, client_instance_id),
                              self._version, tuple(ordered), interval)

    def _instance(self, client_instance_id: uuid.UUID, attributes: Mapping[str, str | None], now_ms: int,
                  connection: str) -> ClientInstance:
        self._purge(now_ms)
        instance = self._instances.get(client_instance_id)
        if instance is None or instance.subscription_version < self._version:
            old = instance
            instance = self._new_instance(client_instance_id, old.attributes if old is not None else attributes)
            self._instances[client_instance_id] = instance
            self._connections[connection] = client_instance_id
            self.instance_counts.setdefault(client_instance_id, [0, 0, 0])
            while len(self._instances) > CACHE_MAX_SIZE:
                self._drop(next(iter(self._instances)))
        self._instances.move_to_end(client_instance_id)
        instance.expires_ms = now_ms + max(self._cache_expiry_ms, instance.push_interval_ms * 3)
        return instance

    def _purge(self, now_ms: int) -> None:
        if now_ms < self._next_purge_ms:
            return
        self._next_purge_ms = now_ms + _PURGE_INTERVAL_MS
        for expired in [i for i, inst in self._instances.items() if inst.expires_ms <= now_ms]:
            self._drop(expired)
        live = set(self._instances)
        self._connections = {c: i for c, i in self._connections.items() if i in live}

    def _drop(self, client_instance_id: uuid.UUID, linger_ms: int = 0) -> None:
        self._instances.pop(client_instance_id, None)
        self.instance_counts.pop(client_instance_id, None)
        if self.exporter is not None:
            self.exporter.forget(client_instance_id, linger_ms)

    def connection_closed(self, connection: str) -> None:
        """As Kafka: the instance made on this connection is forgotten (its pushed series stay on the scrape for
        max(60 s, 3 intervals), so a client's last push is still seen after it closes)."""
        client_instance_id = self._connections.pop(connection, None)
        instance = self._instances.get(client_instance_id) if client_instance_id is not None else None
        if instance is not None:
            self._drop(instance.client_instance_id, max(self._cache_expiry_ms, instance.push_interval_ms * 3))

    def instance_count(self) -> int:
        """Kafka's client-metrics instance-count."""
        self._purge(self._clock_ms())
        return len(self._instances)

    # -- the two APIs -----------------------------------------------------------------------------------
    def get_telemetry_subscriptions(self, request: GetTelemetrySubscriptionsRequest,
                                    attributes: Callable[[uuid.UUID], dict[str, str | None]], connection: str = ""
                                    ) -> GetTelemetrySubscriptionsResponse:
        """GetTelemetrySubscriptions for a client whose match attributes are ``attributes(instance id)``, asked on
        ``connection`` (its peer address)."""
        self.refresh()
        now = self._clock_ms()
        client_instance_id = request.client_instance_id
        if client_instance_id == ZERO_UUID:
            client_instance_id = self._new_client_instance_id()
        instance = self._instance(client_instance_id, attributes(client_instance_id), now, connection)
        if not instance.may_get(now) and instance.last_known_error not in (
                ErrorCode.UNKNOWN_SUBSCRIPTION_ID, ErrorCode.UNSUPPORTED_COMPRESSION_TYPE):
            self._count(client_instance_id, _THROTTLE)
            return GetTelemetrySubscriptionsResponse(error_code=ErrorCode.THROTTLING_QUOTA_EXCEEDED)
        instance.last_known_error = ErrorCode.NONE
        return GetTelemetrySubscriptionsResponse(
            error_code=ErrorCode.NONE, client_instance_id=client_instance_id,
            subscription_id=instance.subscription_id, accepted_compression_types=list(SUPPORTED_COMPRESSION_TYPES),
            push_interval_ms=instance.push_interval_ms, telemetry_max_bytes=self.telemetry_max_bytes,
            delta_temporality=True, requested_metrics=list(instance.metrics))

    def push_telemetry(self, request: PushTelemetryRequest, attributes: Callable[[uuid.UUID], dict[str, str | None]],
                       connection: str = "") -> PushTelemetryResponse:
        """PushTelemetry: checked as Kafka checks it, then handed to the exporter."""
        client_instance_id = request.client_instance_id
        if client_instance_id in _RESERVED_IDS:
            return PushTelemetryResponse(error_code=ErrorCode.INVALID_REQUEST)
        self.refresh()
        now = self._clock_ms()
        instance = self._instance(client_instance_id, attributes(client_instance_id), now, connection)
        code = self._push_error(request, instance, now)
        instance.terminating = request.terminating
        if code != ErrorCode.NONE:
            instance.last_known_error = code
            return PushTelemetryResponse(error_code=code)
        if request.metrics and self.exporter is not None:
            try:
                self.exporter.export(instance, request.compression_type, bytes(request.metrics),
                                     self.telemetry_max_bytes)
                self._count(client_instance_id, _PLUGIN_EXPORT)
            except DecompressedSizeError:
                self._count(client_instance_id, _PLUGIN_ERROR)
                instance.last_known_error = ErrorCode.TELEMETRY_TOO_LARGE
                return PushTelemetryResponse(error_code=ErrorCode.TELEMETRY_TOO_LARGE)
            except Exception as exc:  # a bad payload: the client stops pushing, the broker goes on
                log.warning("client metrics of instance %s could not be read: %s", client_instance_id, exc)
                self._count(client_instance_id, _PLUGIN_ERROR)
                instance.last_known_error = ErrorCode.INVALID_RECORD
                return PushTelemetryResponse(error_code=ErrorCode.INVALID_RECORD)
        instance.last_known_error = ErrorCode.NONE
        return PushTelemetryResponse(error_code=ErrorCode.NONE)

    def _push_error(self, request: PushTelemetryRequest, instance: ClientInstance, now: int) -> int:
        if instance.terminating:
            return ErrorCode.INVALID_REQUEST
        if not instance.may_push(now) and not request.terminating:
            self._count(instance.client_instance_id, _THROTTLE)
            return ErrorCode.THROTTLING_QUOTA_EXCEEDED
        if request.subscription_id != instance.subscription_id:
            self.unknown_subscription_requests += 1
            return ErrorCode.UNKNOWN_SUBSCRIPTION_ID
        if request.compression_type not in _KNOWN_COMPRESSION_TYPES:
            return ErrorCode.UNSUPPORTED_COMPRESSION_TYPE
        if request.metrics is not None and len(request.metrics) > self.telemetry_max_bytes:
            return ErrorCode.TELEMETRY_TOO_LARGE
        return ErrorCode.NONE

    def _count(self, client_instance_id: uuid.UUID, which: int) -> None:
        counts = self.instance_counts.get(client_instance_id)
        if counts is not None:
            counts[which] += 1

    def _new_client_instance_id(self) -> uuid.UUID:
        """Kafka's Uuid.randomUuid: not reserved, not starting with '-' in base64, not in use."""
        while True:
            u = uuid.uuid4()
            if u not in _RESERVED_IDS and u.bytes[0] >> 2 != 62 and u not in self._instances:
                return u
