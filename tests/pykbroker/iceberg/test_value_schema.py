"""value_schema mode on a real broker: JSON values as columns, dead letters kept, the table evolving."""

from __future__ import annotations

import json

from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, AlterConfigOpType, ConfigEntry, ConfigResource

from pykbroker.iceberg.values import decode_json_value
from pykbroker.testing import BrokerProcess
from tests.pykbroker.iceberg.test_writer import catalog, create, table_rows, wait_rows

V1 = {"type": "object", "properties": {"id": {"type": "integer"}, "name": {"type": "string"},
                                       "tags": {"type": "array"}}}
V2 = {"type": "object", "properties": {**V1["properties"], "price": {"type": "number"}, "ok": {"type": "boolean"}}}


def test_decoding_rules():
    schema = (("id", "integer"), ("price", "number"), ("meta", "object"))
    assert decode_json_value(b'{"id": 1, "price": 2, "meta": {"a": [1]}, "x": 0}', schema) == (
        {"id": 1, "price": 2.0, "meta": '{"a":[1]}'}, None)
    assert decode_json_value(b'{"id": null}', schema) == ({"id": None, "price": None, "meta": None}, None)
    assert "not of type integer" in decode_json_value(b'{"id": true}', schema)[1]
    assert "not of type integer" in decode_json_value(b'{"id": 1.5}', schema)[1]
    assert "not JSON" in decode_json_value(b"\xff", schema)[1]
    assert "not a JSON object but list" in decode_json_value(b"[1]", schema)[1]
    assert "tombstone" in decode_json_value(None, schema)[1]


def test_columns_dead_letters_and_evolution(tmp_path):
    with BrokerProcess(tmp_path) as broker:
        create(broker, "orders", 1, **{"iceberg.mode": "value_schema", "iceberg.value.schema": json.dumps(V1)})
        producer = Producer({"bootstrap.servers": broker.bootstrap})
        producer.produce("orders", key=b"a", value=json.dumps({"id": 1, "name": "one", "tags": ["x"]}).encode())
        producer.produce("orders", value=b"not json")
        producer.produce("orders", value=json.dumps({"id": "two"}).encode())
        producer.produce("orders", value=json.dumps({"id": 3}).encode())
        producer.flush(10)
        rows = wait_rows(tmp_path, "orders", 2)
        assert [(r["offset"], r["id"], r["name"], r["tags"], r["key"]) for r in rows] == [
            (0, 1, "one", '["x"]', b"a"), (3, 3, None, None, None)]
        dead = sorted(table_rows(tmp_path, "orders~dlq"), key=lambda r: r["offset"])
        assert [(r["offset"], r["value"]) for r in dead] == [(1, b"not json"), (2, b'{"id": "two"}')]
        assert "not JSON" in dead[0]["error"] and "'id'" in dead[1]["error"]

        admin = AdminClient({"bootstrap.servers": broker.bootstrap})
        resource = ConfigResource(ConfigResource.Type.TOPIC, "orders", incremental_configs=[ConfigEntry(
            "iceberg.value.schema", json.dumps(V2), incremental_operation=AlterConfigOpType.SET)])
        admin.incremental_alter_configs([resource])[resource].result(timeout=10)
        producer.produce("orders", value=json.dumps({"id": 4, "price": 9.5, "ok": True}).encode())
        producer.flush(10)
        rows = wait_rows(tmp_path, "orders", 3)
        table = catalog(tmp_path).load_table(("kafka", "orders"))
        assert [f.name for f in table.schema().fields][-3:] == ["headers", "price", "ok"]
        assert [(r["id"], r["price"], r["ok"]) for r in rows] == [(1, None, None), (3, None, None), (4, 9.5, True)]
        assert "table kafka.orders evolved: added price, ok" in broker.log()
