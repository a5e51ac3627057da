"""A real broker writes topics into Iceberg tables; pyiceberg reads back exactly the committed records."""

from __future__ import annotations

import json
import os
import re
import time
import urllib.request
from pathlib import Path

import pytest
from confluent_kafka import KafkaException, Producer
from confluent_kafka.admin import AdminClient, ConfigResource, NewTopic

from pykbroker.testing import BrokerProcess, free_port

pyiceberg_sql = pytest.importorskip("pyiceberg.catalog.sql")

FAST = {"iceberg.mode": "key_value", "iceberg.commit.interval.ms": "200"}


def catalog(data_dir: Path):
    """The broker's SQLite catalog, opened as the broker opens it (tolerating the broker creating its tables
    at the same moment)."""
    from pykbroker.iceberg.tables import open_catalog

    return open_catalog("sql", "", "", os.fspath(data_dir / "logs"))


def create(broker: BrokerProcess, name: str, partitions: int = 1, **configs: str) -> None:
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    admin.create_topics([NewTopic(name, partitions, config={**FAST, **configs})])[name].result(timeout=10)


def table_rows(data_dir: Path, name: str) -> list[dict]:
    from pyiceberg.exceptions import NoSuchTableError

    if not (data_dir / "logs" / "iceberg" / "catalog.db").exists():
        return []
    try:
        table = catalog(data_dir).load_table(("kafka", name))
    except NoSuchTableError:
        return []
    return sorted(table.scan().to_arrow().to_pylist(), key=lambda r: (r["partition"], r["offset"]))


def wait_rows(data_dir: Path, name: str, count: int, timeout: float = 60) -> list[dict]:
    deadline = time.monotonic() + timeout
    while True:
        rows = table_rows(data_dir, name)
        if len(rows) >= count or time.monotonic() > deadline:
            return rows
        time.sleep(0.2)


@pytest.fixture(scope="module")
def shared(tmp_path_factory):
    """One broker for the tests that neither restart nor reconfigure it (each uses topics of its own)."""
    data_dir = tmp_path_factory.mktemp("iceberg")
    with BrokerProcess(data_dir, overrides={"metrics.port": str(free_port()),
                                            "schema.registry.listeners": "http://127.0.0.1:0"}) as broker:
        broker.registry_url = broker.schema_registry_url  # type: ignore[attr-defined]
        yield broker
        assert broker.alive, f"the broker died during the tests; its log:\n{broker.log()}"


def test_key_value_table_has_every_column(shared):
    broker, tmp_path = shared, shared.data_dir
    create(broker, "kv", partitions=2)
    producer = Producer({"bootstrap.servers": broker.bootstrap, "linger.ms": 5})
    for i in range(100):
        producer.produce("kv", key=f"k{i}".encode(), value=f"v{i}".encode(), partition=i % 2,
                         headers=[("h", f"{i}".encode())], timestamp=1_700_000_000_000 + i)
    producer.produce("kv", key=b"tomb", value=None, partition=0, timestamp=1_700_000_000_500)
    assert producer.flush(10) == 0
    rows = wait_rows(tmp_path, "kv", 101)
    assert len(rows) == 101
    table = catalog(tmp_path).load_table(("kafka", "kv"))
    assert [f.name for f in table.schema().fields] == ["partition", "offset", "timestamp", "key", "value",
                                                       "headers"]
    assert str(table.spec().fields[0].transform) == "day"
    by_key = {r["key"]: r for r in rows}
    r7 = by_key[b"k7"]
    assert (r7["partition"], r7["offset"], r7["value"], r7["headers"]) == (1, 3, b"v7", [{"key": "h", "value": b"7"}])
    assert r7["timestamp"].timestamp() == pytest.approx(1_700_000_000.007)
    assert by_key[b"tomb"]["value"] is None and by_key[b"tomb"]["offset"] == 50
    assert sorted(r["offset"] for r in rows if r["partition"] == 1) == list(range(50))
    summary = table.current_snapshot().summary.additional_properties
    assert json.loads(summary["pykbroker.offsets"]) == {"0": 51, "1": 50}
    assert "iceberg: committed" in broker.log()
    metrics = urllib.request.urlopen(f"http://127.0.0.1:{broker.overrides['metrics.port']}/metrics", timeout=10) \
        .read().decode()
    assert 'pykbroker_iceberg_lag_records{partition="1",topic="kv"} 0.0' in metrics
    assert re.search(r'pykbroker_iceberg_commits_total\{topic="kv"\} [1-9]', metrics)


def test_aborted_transactions_never_reach_the_table(shared):
    broker, tmp_path = shared, shared.data_dir
    create(broker, "txn")
    producer = Producer({"bootstrap.servers": broker.bootstrap, "transactional.id": "ice-txn"})
    producer.init_transactions(30)
    expected = []
    for n in range(6):
        producer.begin_transaction()
        for i in range(5):
            producer.produce("txn", value=f"{n}-{i}".encode())
        if n % 2:
            producer.abort_transaction(30)
        else:
            producer.commit_transaction(30)
            expected += [f"{n}-{i}".encode() for i in range(5)]
    plain = Producer({"bootstrap.servers": broker.bootstrap})
    plain.produce("txn", value=b"plain")
    plain.flush(10)
    expected.append(b"plain")
    rows = wait_rows(tmp_path, "txn", len(expected))
    time.sleep(1)  # a few more commit intervals: nothing else may arrive
    rows = table_rows(tmp_path, "txn")
    assert [r["value"] for r in rows] == expected


def test_open_transaction_waits_below_the_last_stable_offset(shared):
    broker, tmp_path = shared, shared.data_dir
    create(broker, "open")
    plain = Producer({"bootstrap.servers": broker.bootstrap})
    plain.produce("open", value=b"before")
    plain.flush(10)
    producer = Producer({"bootstrap.servers": broker.bootstrap, "transactional.id": "ice-open"})
    producer.init_transactions(30)
    producer.begin_transaction()
    producer.produce("open", value=b"inside")
    producer.flush(10)
    plain.produce("open", value=b"after")
    plain.flush(10)
    assert [r["value"] for r in wait_rows(tmp_path, "open", 1)] == [b"before"]
    time.sleep(1)
    assert [r["value"] for r in table_rows(tmp_path, "open")] == [b"before"]
    producer.commit_transaction(30)
    assert [r["value"] for r in wait_rows(tmp_path, "open", 3)] == [b"before", b"inside", b"after"]


@pytest.mark.skipif(os.environ.get("PYKBROKER_ICEBERG_SLOW") != "1",
                    reason="PYKBROKER_ICEBERG_SLOW=1 (make test-iceberg-slow); make test's Spark test kills the broker")
def test_restart_and_kill_continue_without_gap_or_duplicate(tmp_path):
    broker = BrokerProcess(tmp_path).start()
    try:
        create(broker, "kill", partitions=2)
        sent = 0
        for round_ in range(2):
            producer = Producer({"bootstrap.servers": broker.bootstrap, "linger.ms": 2, "acks": "all"})
            for _ in range(300):
                producer.produce("kill", value=str(sent).encode(), partition=sent % 2)
                sent += 1
            assert producer.flush(10) == 0
            wait_rows(tmp_path, "kill", sent // 2)  # some, maybe not all, committed: then the kill
            broker.restart(hard=round_ == 0)  # kill -9, then SIGTERM
        rows = wait_rows(tmp_path, "kill", sent)
        time.sleep(1)
        rows = table_rows(tmp_path, "kill")
        assert sorted(int(r["value"]) for r in rows) == list(range(sent))
        for p in (0, 1):
            assert [r["offset"] for r in rows if r["partition"] == p] == list(range(sent // 2))
    finally:
        broker.close()


def test_size_bound_commits_before_the_interval_and_deleting_the_topic(shared):
    broker, tmp_path = shared, shared.data_dir
    create(broker, "big", **{"iceberg.commit.interval.ms": "3600000", "iceberg.target.file.size.bytes": "20000",
                             "iceberg.delete.table.on.topic.delete": "true"})
    create(broker, "kept")
    producer = Producer({"bootstrap.servers": broker.bootstrap})
    for _ in range(100):
        producer.produce("big", value=b"x" * 1000)
        producer.produce("kept", value=b"y")
    producer.flush(10)
    assert len(wait_rows(tmp_path, "big", 20)) >= 20  # an hour's interval, yet committed by size
    assert len(wait_rows(tmp_path, "kept", 100)) == 100
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    for name in ("big", "kept"):
        admin.delete_topics([name])[name].result(timeout=10)
    deadline = time.monotonic() + 30
    while catalog(tmp_path).table_exists(("kafka", "big")) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not catalog(tmp_path).table_exists(("kafka", "big"))
    assert catalog(tmp_path).table_exists(("kafka", "kept"))  # the default keeps the table


def test_turning_the_mode_on_later_translates_the_history(shared):
    broker, tmp_path = shared, shared.data_dir
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    admin.create_topics([NewTopic("late", 1)])["late"].result(timeout=10)
    producer = Producer({"bootstrap.servers": broker.bootstrap})
    for i in range(10):
        producer.produce("late", value=str(i).encode())
    producer.flush(10)
    resource = ConfigResource(ConfigResource.Type.TOPIC, "late", set_config=FAST)
    admin.alter_configs([resource])[resource].result(timeout=10)
    assert [r["value"] for r in wait_rows(tmp_path, "late", 10)] == [str(i).encode() for i in range(10)]


def test_without_iceberg_topics_nothing_is_imported(tmp_path):
    with BrokerProcess(tmp_path) as broker:
        producer = Producer({"bootstrap.servers": broker.bootstrap})
        producer.produce("plain", value=b"x")
        try:
            producer.flush(10)
        except KafkaException:
            pass
        assert not (tmp_path / "logs" / "iceberg").exists()


def test_small_files_are_compacted_and_old_snapshots_and_orphans_cleaned_up_in_the_background(shared):
    broker, tmp_path = shared, shared.data_dir
    create(broker, "compact", **{"iceberg.compaction.min.files": "4", "iceberg.snapshot.max.age.ms": "1",
                                 "iceberg.orphan.file.min.age.ms": "60000"})
    producer = Producer({"bootstrap.servers": broker.bootstrap})
    for i in range(10):  # ten commits of a file each: the tenth looks for small files
        producer.produce("compact", value=str(i).encode())
        producer.flush(10)
        wait_rows(tmp_path, "compact", i + 1)
        if i == 0:  # a file written long ago and never committed (as by a broker killed mid-commit)
            orphan = tmp_path / "logs" / "iceberg" / "warehouse" / "kafka" / "compact" / "data" / "orphan.parquet"
            orphan.write_bytes(b"PAR1 never committed")
            os.utime(orphan, (time.time() - 3600, time.time() - 3600))
    deadline = time.monotonic() + 30
    while "compacting kafka.compact 1/1" not in broker.log() and time.monotonic() < deadline:
        time.sleep(0.1)
    assert "iceberg: compacting kafka.compact: 1 table partitions of 4 or more small files" in broker.log()
    table = catalog(tmp_path).load_table(("kafka", "compact"))
    assert len(list(table.scan().plan_files())) == 1
    assert [r["value"] for r in table_rows(tmp_path, "compact")] == [str(i).encode() for i in range(10)]
    deadline = time.monotonic() + 30
    while (orphan.exists() or "of kafka.compact older than 1 ms; 1 kept" not in broker.log()) \
            and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not orphan.exists()
    assert re.search(r"iceberg: removed 1 orphan files \(20 bytes\) of kafka.compact, unreferenced and older than "
                     r"60000 ms", broker.log())
    assert re.search(r"iceberg: expired \d+ snapshots of kafka.compact older than 1 ms; 1 kept", broker.log())
    deadline = time.monotonic() + 30
    while len(catalog(tmp_path).load_table(("kafka", "compact")).snapshots()) > 1 and time.monotonic() < deadline:
        time.sleep(0.1)
    assert [r["value"] for r in table_rows(tmp_path, "compact")] == [str(i).encode() for i in range(10)]


REGISTRY_MODE = {"iceberg.mode": "value_schema_id_prefix", "iceberg.commit.interval.ms": "200"}


def test_avro_and_protobuf_values_become_columns_through_the_schema_registry(shared):
    """value_schema_id_prefix: values Confluent's Avro and Protobuf serializers wrote become the columns of their
    schema, a second schema version adds a column, and what does not decode goes to the dead-letter table."""
    from confluent_kafka.schema_registry import SchemaRegistryClient
    from confluent_kafka.schema_registry.avro import AvroSerializer
    from confluent_kafka.schema_registry.protobuf import ProtobufSerializer
    from confluent_kafka.serialization import MessageField, SerializationContext

    from tests.pykbroker.schema_registry.test_serializers import (
        USER_V1,
        USER_V2,
        _person_message_class,
        wait_http,
    )

    broker, tmp_path = shared, shared.data_dir
    url = broker.registry_url
    wait_http(url)
    client = SchemaRegistryClient({"url": url})
    create(broker, "reg-users", 1, **REGISTRY_MODE)
    create(broker, "reg-people", 1, **REGISTRY_MODE)
    ctx = SerializationContext("reg-users", MessageField.VALUE)
    producer = Producer({"bootstrap.servers": broker.bootstrap, "linger.ms": 0})
    producer.produce("reg-users", AvroSerializer(client, USER_V1)({"name": "ada", "age": 36}, ctx))
    producer.produce("reg-users", b"\x00\x00\x00\x03\xe7 no such schema id")
    producer.produce("reg-users", b"plain text")
    producer.flush(10)
    rows = wait_rows(tmp_path, "reg-users", 1)
    assert [(r["offset"], r["name"], r["age"]) for r in rows] == [(0, "ada", 36)]
    # The second version (a field added, int promoted to long) adds a column.
    producer.produce("reg-users", AvroSerializer(client, USER_V2)({"name": "bob", "age": 40, "email": "b@x"}, ctx))
    Person = _person_message_class()
    serializer = ProtobufSerializer(Person, client, {"use.deprecated.format": False})
    producer.produce("reg-people", serializer(Person(name="cy", id=2**40, tags=["t"], address=Person.Address(
        city="Oslo")), SerializationContext("reg-people", MessageField.VALUE)))
    producer.flush(10)
    rows = wait_rows(tmp_path, "reg-users", 2)
    assert [(r["offset"], r["name"], r["age"], r["email"]) for r in rows] == [
        (0, "ada", 36, None), (3, "bob", 40, "b@x")]
    assert [f.name for f in catalog(tmp_path).load_table(("kafka", "reg-users")).schema().fields] == [
        "partition", "offset", "timestamp", "key", "headers", "name", "age", "email"]
    dead = sorted(table_rows(tmp_path, "reg-users~dlq"), key=lambda r: r["offset"])
    assert [r["offset"] for r in dead] == [1, 2]
    assert "schema id 999 is not registered" in dead[0]["error"]
    assert "not Confluent's wire format" in dead[1]["error"]
    people = wait_rows(tmp_path, "reg-people", 1)
    assert [(r["name"], r["id"], r["tags"], r["address"]) for r in people] == [
        ("cy", 2**40, '["t"]', '{"city":"Oslo"}')]
    assert "table kafka.reg-users evolved: added email" in broker.log()


def test_value_schema_latest_decodes_unprefixed_avro_and_json_schema_values(shared):
    """value_schema_latest (Redpanda's): values without the wire format's prefix decode with the latest schema of
    <topic>-value (or the subject the mode names); a newer version decodes later records and adds its columns;
    what does not decode goes to the dead-letter table."""
    import io

    import fastavro
    from confluent_kafka.schema_registry import Schema, SchemaRegistryClient

    from tests.pykbroker.schema_registry.test_serializers import USER_V1, USER_V2, wait_http

    broker, tmp_path = shared, shared.data_dir
    wait_http(broker.registry_url)
    client = SchemaRegistryClient({"url": broker.registry_url})
    client.register_schema("latest-users-value", Schema(USER_V1, "AVRO"))
    client.register_schema("orders-json", Schema(json.dumps({"type": "object", "properties": {
        "id": {"type": "integer"}, "item": {"type": "string"}, "lines": {"type": "array"}}}), "JSON"))
    create(broker, "latest-users", 1, **{"iceberg.mode": "value_schema_latest"})
    create(broker, "latest-orders", 1, **{"iceberg.mode": "value_schema_latest:subject=orders-json"})

    def avro(schema: str, record: dict) -> bytes:
        out = io.BytesIO()
        fastavro.schemaless_writer(out, fastavro.parse_schema(json.loads(schema)), record)
        return out.getvalue()

    producer = Producer({"bootstrap.servers": broker.bootstrap, "linger.ms": 0})
    producer.produce("latest-users", avro(USER_V1, {"name": "ada", "age": 36}))
    producer.produce("latest-users", b"")  # no bytes for the string: a dead letter
    producer.produce("latest-orders", json.dumps({"id": 7, "item": "tea", "lines": [1, 2]}).encode())
    producer.produce("latest-orders", b"{not json")
    producer.produce("latest-orders", json.dumps({"id": "seven"}).encode())
    producer.flush(10)
    assert [(r["offset"], r["name"], r["age"]) for r in wait_rows(tmp_path, "latest-users", 1)] == [(0, "ada", 36)]
    client.register_schema("latest-users-value", Schema(USER_V2, "AVRO"))
    producer.produce("latest-users", avro(USER_V2, {"name": "bob", "age": 40, "email": "b@x"}))
    producer.flush(10)
    rows = wait_rows(tmp_path, "latest-users", 2)
    assert [(r["offset"], r["name"], r["age"], r["email"]) for r in rows] == [(0, "ada", 36, None),
                                                                              (2, "bob", 40, "b@x")]
    orders = wait_rows(tmp_path, "latest-orders", 1)
    assert [(r["id"], r["item"], r["lines"]) for r in orders] == [(7, "tea", "[1,2]")]
    dead = sorted(table_rows(tmp_path, "latest-users~dlq"), key=lambda r: r["offset"])
    assert [r["offset"] for r in dead] == [1] and "does not decode with schema" in dead[0]["error"]
    dead = sorted(table_rows(tmp_path, "latest-orders~dlq"), key=lambda r: r["offset"])
    assert [r["offset"] for r in dead] == [1, 2]
    assert "JSONDecodeError" in dead[0]["error"] and "field 'id'" in dead[1]["error"]
