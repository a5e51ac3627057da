"""ClientMetricsManager on a fake clock: subscriptions matched, ids, intervals, throttling and Kafka's errors."""

from __future__ import annotations

import itertools
import uuid

import pytest

from pykbroker.client_metrics.manager import ClientInstance, ClientMetricsManager, subscription_id
from wire import DecompressedSizeError, ErrorCode
from wire.java import hash_set_order, string_hash, uuid_hash
from wire.messages import GetTelemetrySubscriptionsRequest, PushTelemetryRequest

INSTANCE = uuid.UUID("0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0")


class Clock:
    def __init__(self) -> None:
        self.now = 1_000_000

    def __call__(self) -> int:
        return self.now


class Exporter:
    def __init__(self) -> None:
        self.pushed: list[bytes] = []
        self.forgotten: list[tuple[uuid.UUID, int]] = []
        self.fail: Exception | None = None

    def export(self, instance: ClientInstance, compression_type: int, metrics: bytes, max_bytes: int) -> None:
        if self.fail is not None:
            raise self.fail
        self.pushed.append(metrics)

    def forget(self, client_instance_id: uuid.UUID, after_ms: int = 0) -> None:
        self.forgotten.append((client_instance_id, after_ms))


def attributes(client_id: str = "app", software: str = "apache-kafka-java"):
    return lambda i: {"client_instance_id": str(i), "client_id": client_id, "client_software_name": software,
                      "client_software_version": "4.4.0", "client_source_address": "127.0.0.1",
                      "client_source_port": "5555"}


@pytest.fixture
def world():
    configs: dict[str, dict[str, str]] = {}
    clock, exporter = Clock(), Exporter()
    holder = {"configs": configs}
    manager = ClientMetricsManager(lambda: holder["configs"], 1024, clock, exporter)
    return manager, holder, clock, exporter


def get(manager, instance=INSTANCE, attrs=None, connection="127.0.0.1:5555"):
    return manager.get_telemetry_subscriptions(GetTelemetrySubscriptionsRequest(client_instance_id=instance),
                                               attrs or attributes(), connection)


def push(manager, subscription: int, metrics: bytes = b"m", terminating: bool = False, compression: int = 0,
         instance=INSTANCE):
    return manager.push_telemetry(PushTelemetryRequest(client_instance_id=instance, subscription_id=subscription,
                                                       terminating=terminating, compression_type=compression,
                                                       metrics=metrics), attributes())


def test_java_hashes():
    assert string_hash("") == 0 and string_hash("a") == 97 and string_hash("hello") == 99162322
    assert string_hash("org.apache.kafka.producer.") == int.from_bytes(
        (sum(ord(c) * 31 ** i for i, c in enumerate(reversed("org.apache.kafka.producer."))) & 0xFFFFFFFF)
        .to_bytes(4, "big"), "big", signed=True)
    assert uuid_hash(uuid.UUID(int=(5 << 64) | 3)) == 6
    # A HashSet iterates by bucket: "b" (98) before "c" (99) whatever the insertion order.
    assert hash_set_order(["c", "b", "c"]) == ["b", "c"]


def test_no_subscription_gives_default_interval_and_no_metrics(world):
    manager, _, _, _ = world
    r = get(manager)
    assert (r.error_code, r.client_instance_id, r.requested_metrics, r.push_interval_ms) == (
        ErrorCode.NONE, INSTANCE, [], 300_000)
    assert r.accepted_compression_types == [4, 3, 1, 2] and r.telemetry_max_bytes == 1024 and r.delta_temporality
    assert r.subscription_id == subscription_id([], 300_000, INSTANCE)


def test_new_instance_id_when_zero(world):
    manager, _, _, _ = world
    r = get(manager, uuid.UUID(int=0))
    assert r.error_code == ErrorCode.NONE and r.client_instance_id.int > 1


def test_matching_subscriptions_merge_and_take_smallest_interval(world):
    manager, holder, _, _ = world
    holder["configs"] = {
        "producers": {"metrics": "org.apache.kafka.producer.", "interval.ms": "5000",
                      "match": "client_software_name=apache-kafka-java"},
        "everyone": {"metrics": "org.apache.kafka.consumer.", "interval.ms": "20000"},
        "others": {"metrics": "*", "interval.ms": "100", "match": "client_id=other.*"},
    }
    r = get(manager)
    assert sorted(r.requested_metrics) == ["org.apache.kafka.consumer.", "org.apache.kafka.producer."]
    assert r.push_interval_ms == 5000
    other = get(manager, uuid.UUID(int=99), attributes(client_id="other-1"))
    assert (other.requested_metrics, other.push_interval_ms) == (["*"], 100)


def test_subscriptions_are_evaluated_in_kafkas_concurrent_hash_map_order(world):
    """Metrics of one hash, one per subscription: their HashSet's order is the order subscriptions were evaluated
    in, Kafka's ConcurrentHashMap's after the subscriptions' history (a resize at the 12th, one deleted and made again)."""
    manager, holder, _, _ = world
    names = [f"diff-sub-{i}" for i in range(12)]
    metric = dict(zip(names, ("".join(p) + "." for p in itertools.product(["Aa", "BB"], repeat=4)), strict=False))
    for name in names + ["diff-sub-0"]:  # one at a time, as the broker sees images; diff-sub-0 deleted, made again
        configs = dict(holder["configs"])
        if name in configs:
            del configs[name]
            holder["configs"] = configs
            manager.refresh()
        holder["configs"] = {**configs, name: {"metrics": metric[name], "interval.ms": "1000"}}
        manager.refresh()
    java_order = ["diff-sub-7", "diff-sub-8", "diff-sub-5", "diff-sub-6", "diff-sub-9", "diff-sub-11", "diff-sub-10",
                  "diff-sub-0", "diff-sub-3", "diff-sub-4", "diff-sub-1", "diff-sub-2"]  # Java 17's
    got = get(manager).requested_metrics
    assert got == hash_set_order(metric[n] for n in java_order)
    assert got != hash_set_order(metric[n] for n in hash_set_order(names))  # a HashSet of the names: not Kafka's


def test_get_before_interval_is_throttled_unless_subscription_changed(world):
    manager, holder, clock, _ = world
    holder["configs"] = {"s": {"metrics": "a.", "interval.ms": "1000"}}
    assert get(manager).error_code == ErrorCode.NONE
    clock.now += 500
    assert get(manager).error_code == ErrorCode.THROTTLING_QUOTA_EXCEEDED
    holder["configs"] = {"s": {"metrics": "b.", "interval.ms": "1000"}}  # a new image: re-evaluated
    r = get(manager)
    assert (r.error_code, r.requested_metrics) == (ErrorCode.NONE, ["b."])


def test_push_rules(world):
    manager, holder, clock, exporter = world
    holder["configs"] = {"s": {"metrics": "a.", "interval.ms": "1000"}}
    sub = get(manager).subscription_id
    assert push(manager, sub).error_code == ErrorCode.NONE  # right after a get
    assert exporter.pushed == [b"m"]
    clock.now += 10
    assert push(manager, sub).error_code == ErrorCode.THROTTLING_QUOTA_EXCEEDED
    clock.now += 1000
    assert push(manager, sub + 1).error_code == ErrorCode.UNKNOWN_SUBSCRIPTION_ID
    clock.now += 1000
    assert push(manager, sub, compression=7).error_code == ErrorCode.UNSUPPORTED_COMPRESSION_TYPE
    clock.now += 1000
    assert push(manager, sub, metrics=b"x" * 1025).error_code == ErrorCode.TELEMETRY_TOO_LARGE
    clock.now += 1000
    exporter.fail = DecompressedSizeError("too big")
    assert push(manager, sub).error_code == ErrorCode.TELEMETRY_TOO_LARGE
    clock.now += 1000
    exporter.fail = ValueError("garbage")
    assert push(manager, sub).error_code == ErrorCode.INVALID_RECORD
    exporter.fail = None
    clock.now += 1000
    assert push(manager, sub, terminating=True).error_code == ErrorCode.NONE
    assert push(manager, sub, terminating=True).error_code == ErrorCode.INVALID_REQUEST  # nothing after that
    assert push(manager, sub, instance=uuid.UUID(int=0)).error_code == ErrorCode.INVALID_REQUEST


def test_instances_expire_and_their_metrics_go(world):
    manager, _, clock, exporter = world
    get(manager)
    assert manager.instance_count() == 1
    clock.now += 300_000 * 3 + 1
    assert manager.instance_count() == 0 and exporter.forgotten == [(INSTANCE, 0)]


def test_the_connection_an_instance_was_made_on_closing_forgets_it(world):
    manager, _, clock, exporter = world
    assert get(manager).error_code == ErrorCode.NONE
    assert get(manager, connection="127.0.0.1:6666").error_code == ErrorCode.THROTTLING_QUOTA_EXCEEDED
    manager.connection_closed("127.0.0.1:6666")  # not the one it was made on
    assert manager.instance_count() == 1
    manager.connection_closed("127.0.0.1:5555")
    assert manager.instance_count() == 0 and exporter.forgotten == [(INSTANCE, 900_000)]
    assert get(manager, connection="127.0.0.1:7777").error_code == ErrorCode.NONE  # afresh


def test_a_stored_subscription_that_does_not_parse_is_ignored(world):
    """Configs written around the admin APIs' checks (straight into ZooKeeper): Kafka's validate refuses them."""
    manager, holder, _, _ = world
    holder["configs"] = {"bad": {"metrics": "a.", "match": "client_id=("}, "good": {"metrics": "b."}}
    manager.refresh()
    assert get(manager).requested_metrics == ["b."]
