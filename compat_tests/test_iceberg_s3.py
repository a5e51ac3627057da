"""Iceberg tables with their warehouse on an S3-compatible server (iceberg.warehouse=s3://..., iceberg.s3.*).

The server is versitygw (tools/s3/install.sh, make deps; tests/s3_server.py). A broker with the embedded SQLite
catalog writes a topic's data and metadata files into a bucket there; pyiceberg reads the table back through
the same FileIO settings and finds exactly the produced records, orphan files are found and deleted there,
and the secret key is in no log line nor in
DescribeConfigs; Spark reads the table through Iceberg's S3FileIO (the credentials in the environment of its
process only). PYKBROKER_ICEBERG_SLOW=1 (make test-iceberg-slow) only: about 55 s, 17 s of them without Spark.
"""

from __future__ import annotations

import json
import os
import shutil
import time
from pathlib import Path

import pytest
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, ConfigResource, NewTopic

from pykbroker.iceberg.tables import OFFSETS_PROPERTY, TableWriter, s3_properties
from pykbroker.testing import BrokerProcess
from tests.s3_server import S3Server, s3_server_available

pytest.importorskip("pyiceberg.catalog.sql")
if not s3_server_available():
    pytest.skip("versitygw is not installed (tools/s3/install.sh, make deps)", allow_module_level=True)

if os.environ.get("PYKBROKER_ICEBERG_SLOW") != "1":
    pytest.skip("PYKBROKER_ICEBERG_SLOW=1 (make test-iceberg-slow): an S3 server, a broker and Spark",
                allow_module_level=True)
BUCKET = "lake"
WAREHOUSE = f"s3://{BUCKET}/warehouse"


def broker_overrides(s3: S3Server) -> dict[str, str]:
    return {"iceberg.warehouse": WAREHOUSE, "iceberg.s3.endpoint": s3.endpoint,
            "iceberg.s3.access.key.id": s3.access_key, "iceberg.s3.secret.access.key": s3.secret_key}


def io_properties(s3: S3Server) -> dict[str, str]:
    return s3_properties(s3.endpoint, "", s3.access_key, s3.secret_key)


def load_table(data_dir: Path, s3: S3Server, topic: str):
    from pyiceberg.catalog.sql import SqlCatalog
    from pyiceberg.exceptions import NoSuchTableError

    root = data_dir / "logs" / "iceberg"
    if not (root / "catalog.db").exists():
        return None
    catalog = SqlCatalog("pykbroker", uri=f"sqlite:///{root}/catalog.db", warehouse=WAREHOUSE,
                         **io_properties(s3))
    try:
        return catalog.load_table(("kafka", topic))
    except NoSuchTableError:
        return None


def wait_offsets(data_dir: Path, s3: S3Server, topic: str, wanted: dict[int, int], timeout: float = 60):
    deadline = time.monotonic() + timeout
    offsets: dict[int, int] = {}
    while time.monotonic() < deadline:
        table = load_table(data_dir, s3, topic)
        snapshot = table.current_snapshot() if table is not None else None
        if snapshot is not None:
            offsets = {int(p): o for p, o in json.loads(snapshot.summary.additional_properties.get(
                OFFSETS_PROPERTY, "{}")).items()}
            if all(offsets.get(p, 0) >= o for p, o in wanted.items()):
                return table
        time.sleep(0.3)
    raise AssertionError(f"the table's offsets {offsets} never reached {wanted}")


def test_warehouse_on_s3_pyiceberg_and_spark_read_the_table(tmp_path):
    with S3Server(tmp_path / "s3") as s3:
        s3.object_store(BUCKET).put("README", b"the bucket of pykbroker's Iceberg tables")  # creates the bucket
        with BrokerProcess(tmp_path / "broker", overrides=broker_overrides(s3)) as broker:
            admin = AdminClient({"bootstrap.servers": broker.bootstrap})
            admin.create_topics([NewTopic("orders", 2, config={"iceberg.mode": "key_value",
                                                                "iceberg.commit.interval.ms": "200"})
                                 ])["orders"].result(timeout=10)
            producer = Producer({"bootstrap.servers": broker.bootstrap, "enable.idempotence": True})
            for i in range(200):
                producer.produce("orders", key=f"k{i}".encode(), value=f"order-{i}".encode(), partition=i % 2)
            assert producer.flush(30) == 0
            table = wait_offsets(broker.data_dir, s3, "orders", {0: 100, 1: 100})
            assert table.metadata_location.startswith(f"{WAREHOUSE}/kafka/orders/metadata/")
            rows = table.scan(selected_fields=("partition", "offset", "value")).to_arrow().to_pylist()
            assert sorted((r["partition"], r["offset"], r["value"]) for r in rows) == sorted(
                (i % 2, i // 2, f"order-{i}".encode()) for i in range(200))
            data_files = [t.file.file_path for t in table.scan().plan_files()]
            assert data_files and all(p.startswith(f"{WAREHOUSE}/kafka/orders/data/") for p in data_files)
            # The files are in the bucket, on the server's disk.
            assert list((tmp_path / "s3" / "objects" / BUCKET / "warehouse").rglob("*.parquet"))

            # Orphan files are found and deleted through the same FileIO: a file never committed goes, the
            # table's files stay (the broker is idle: everything produced is committed).
            store = s3.object_store(BUCKET)
            store.put("warehouse/kafka/orders/data/orphan.parquet", b"PAR1 never committed")
            time.sleep(0.05)
            writer = TableWriter(table.catalog, "kafka", "orders", "")
            assert writer.remove_orphan_files(1, lambda line: None) == 1
            assert not list((tmp_path / "s3" / "objects" / BUCKET).rglob("orphan.parquet"))
            assert sorted((r["partition"], r["offset"]) for r in load_table(broker.data_dir, s3, "orders").scan(
                selected_fields=("partition", "offset")).to_arrow().to_pylist()) == sorted(
                (i % 2, i // 2) for i in range(200))

            broker_config = admin.describe_configs([ConfigResource("BROKER", "1")])
            described = {e.name: e for e in next(iter(broker_config.values())).result(timeout=10).values()}
            secret = described["iceberg.s3.secret.access.key"]
            assert secret.is_sensitive and secret.value is None
            assert s3.secret_key not in broker.log()

            if shutil.which("java") is None:
                pytest.skip("java is not installed: Spark cannot run")
            from pykbroker.iceberg import spark as iceberg_spark

            root = broker.data_dir / "logs" / "iceberg"
            [spark_rows] = iceberg_spark.sql(["SELECT partition, offset, value FROM pykbroker.kafka.orders"],
                                             catalog_uri=f"sqlite:///{root}/catalog.db", warehouse=WAREHOUSE,
                                             io_properties=io_properties(s3))
            assert sorted((r["partition"], r["offset"], r["value"]) for r in spark_rows) == sorted(
                (r["partition"], r["offset"], r["value"]) for r in rows)
