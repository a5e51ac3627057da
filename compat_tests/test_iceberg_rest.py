"""Iceberg tables in a real REST catalog: Project Nessie (tests/nessie_server.py), its warehouse a bucket of an
S3 server (versitygw). The broker (iceberg.catalog.type=rest, iceberg.s3.*) commits a topic written by a
transactional producer that aborts some transactions; pyiceberg and Spark (Iceberg's REST catalog and
S3FileIO) read exactly a read_committed consumer's records through Nessie, and the snapshot's offsets match.
PYKBROKER_ICEBERG_SLOW=1 (make test-iceberg-slow): Nessie alone takes ~20 s to start here.
"""

from __future__ import annotations

import json
import os
import shutil
import time

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from pykbroker.iceberg.tables import OFFSETS_PROPERTY, s3_properties
from pykbroker.testing import BrokerProcess
from tests.nessie_server import NESSIE_JAR, NessieServer, nessie_java
from tests.s3_server import S3Server, s3_server_available

pytest.importorskip("pyiceberg.catalog.rest")
if os.environ.get("PYKBROKER_ICEBERG_SLOW") != "1":
    pytest.skip("PYKBROKER_ICEBERG_SLOW=1 (make test-iceberg-slow): Nessie, an S3 server, a broker and Spark",
                allow_module_level=True)
if not s3_server_available():
    pytest.skip("versitygw is not installed (tools/s3/install.sh, make deps)", allow_module_level=True)
if not NESSIE_JAR.is_file() or nessie_java() is None:
    pytest.skip(f"Nessie needs {NESSIE_JAR} (tools/nessie/fetch_jar.sh, make deps) and a Java 21+",
                allow_module_level=True)

BUCKET = "lake"


def read_committed(bootstrap: str, topic: str, partitions: int) -> set[tuple[int, int, bytes]]:
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "judge", "isolation.level": "read_committed",
                         "enable.auto.commit": False})
    ends = {p: consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=10)[1] for p in range(partitions)}
    consumer.assign([TopicPartition(topic, p, 0) for p in range(partitions)])
    seen: set[tuple[int, int, bytes]] = set()
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        for m in consumer.consume(500, timeout=0.5):
            if m.error() is None:
                seen.add((m.partition(), m.offset(), m.value()))
        positions = {tp.partition: tp.offset for tp in consumer.position(
            [TopicPartition(topic, p) for p in range(partitions)])}
        if all(positions[p] >= ends[p] for p in ends):
            break
    consumer.close()
    return seen


def test_nessie_rest_catalog_with_an_s3_warehouse(tmp_path):
    with S3Server(tmp_path / "s3") as s3:
        s3.object_store(BUCKET).put("README", b"the bucket of Nessie's warehouse")  # creates the bucket
        with NessieServer(tmp_path / "nessie", s3_endpoint=s3.endpoint, bucket=BUCKET, access_key=s3.access_key,
                          secret_key=s3.secret_key) as nessie:
            io = s3_properties(s3.endpoint, "", s3.access_key, s3.secret_key)
            overrides = {"iceberg.catalog.type": "rest", "iceberg.catalog.uri": nessie.iceberg_uri,
                         "iceberg.s3.endpoint": s3.endpoint, "iceberg.s3.access.key.id": s3.access_key,
                         "iceberg.s3.secret.access.key": s3.secret_key}
            with BrokerProcess(tmp_path / "broker", overrides=overrides) as broker:
                admin = AdminClient({"bootstrap.servers": broker.bootstrap})
                admin.create_topics([NewTopic("orders", 2, config={"iceberg.mode": "key_value",
                                                                    "iceberg.commit.interval.ms": "200"})
                                     ])["orders"].result(timeout=10)
                producer = Producer({"bootstrap.servers": broker.bootstrap, "transactional.id": "rest-tx"})
                producer.init_transactions(30)
                for n in range(6):
                    producer.begin_transaction()
                    for i in range(25):
                        producer.produce("orders", value=f"tx-{n}-{i}".encode(), partition=i % 2)
                    if n % 3 == 1:
                        producer.abort_transaction(30)
                    else:
                        producer.commit_transaction(30)
                expected = read_committed(broker.bootstrap, "orders", 2)
                assert len(expected) == 100 and not any(v.startswith(b"tx-1-") for _, _, v in expected)
                ends = {p: Consumer({"bootstrap.servers": broker.bootstrap, "group.id": "ends"}
                                    ).get_watermark_offsets(TopicPartition("orders", p), timeout=10)[1]
                        for p in range(2)}

                from pyiceberg.catalog.rest import RestCatalog
                from pyiceberg.exceptions import NoSuchTableError

                catalog = RestCatalog("nessie", uri=nessie.iceberg_uri, **io)
                deadline = time.monotonic() + 90
                offsets: dict[int, int] = {}
                while time.monotonic() < deadline:
                    try:
                        table = catalog.load_table(("kafka", "orders"))
                    except NoSuchTableError:
                        time.sleep(0.5)
                        continue
                    snapshot = table.current_snapshot()
                    if snapshot is not None:
                        offsets = {int(p): o for p, o in json.loads(
                            snapshot.summary.additional_properties.get(OFFSETS_PROPERTY, "{}")).items()}
                        if all(offsets.get(p, 0) >= end for p, end in ends.items()):
                            break
                    time.sleep(0.5)
                assert offsets == ends, f"the table's offsets {offsets} never reached {ends}"
                assert table.metadata_location.startswith(f"s3://{BUCKET}/warehouse/")
                rows = table.scan(selected_fields=("partition", "offset", "value")).to_arrow().to_pylist()
                got = [(r["partition"], r["offset"], r["value"]) for r in rows]
                assert len(got) == len(set(got)) and set(got) == expected
                assert s3.secret_key not in broker.log()

                if shutil.which("java") is None:
                    pytest.skip("java is not installed: Spark cannot run")
                from pykbroker.iceberg import spark as iceberg_spark

                [spark_rows] = iceberg_spark.sql(["SELECT partition, offset, value FROM pykbroker.kafka.orders"],
                                                 catalog_uri=nessie.iceberg_uri, warehouse="", io_properties=io)
                assert sorted((r["partition"], r["offset"], r["value"]) for r in spark_rows) == sorted(got)
