"""The registry on a three-broker cluster: every broker serves it, registrations sent to different brokers at
once get distinct ids and versions that all brokers answer alike (writes are ordered through _schemas), and
it goes on after a kill -9 of the _schemas leader. PYKBROKER_ICEBERG_SLOW=1 (make test-iceberg-slow)."""

from __future__ import annotations

import json
import os
import shutil
import threading
import urllib.request

import pytest
from confluent_kafka.admin import AdminClient
from confluent_kafka.schema_registry import Schema, SchemaRegistryClient

from pykbroker.testing import ClusterProcesses
from tests.pykbroker.schema_registry.test_serializers import wait_http

pytestmark = [pytest.mark.skipif(shutil.which("java") is None, reason="ZooKeeper needs java"),
              pytest.mark.skipif(os.environ.get("PYKBROKER_ICEBERG_SLOW") != "1",
                                 reason="PYKBROKER_ICEBERG_SLOW=1 (make test-iceberg-slow): a 3-broker cluster")]


def schema(i: int) -> str:
    return json.dumps({"type": "record", "name": f"R{i}", "fields": [{"name": "f", "type": "int"}]})


def get(url: str) -> object:
    with urllib.request.urlopen(url, timeout=30) as answer:
        return json.load(answer)


def view(url: str) -> dict:
    """Everything a broker's registry says about the subjects and ids."""
    out: dict = {}
    for subject in get(f"{url}/subjects"):
        for version in get(f"{url}/subjects/{subject}/versions"):
            s = get(f"{url}/subjects/{subject}/versions/{version}")
            out[(subject, version)] = (s["id"], s["schema"])
    return out


def test_every_broker_serves_one_registry_through_a_killed_leader(tmp_path):
    with ClusterProcesses(tmp_path / "cluster", size=0) as cluster:
        urls = {}
        for node in (1, 2, 3):
            broker = cluster.add_broker(node, {"schema.registry.listeners": "http://127.0.0.1:0"})  # any free port
            urls[node] = broker.schema_registry_url
        cluster.wait_for_brokers(3)
        for url in urls.values():
            wait_http(url)
        clients = {n: SchemaRegistryClient({"url": u}) for n, u in urls.items()}
        clients[1].set_compatibility(level="NONE")
        ids: dict[int, int] = {}
        errors: list[BaseException] = []

        def register(node: int) -> None:
            try:
                for i in range(node * 100, node * 100 + 8):
                    # Each broker adds to its own subject and to one they all share.
                    ids[i] = clients[node].register_schema(f"own-{node}", Schema(schema(i), "AVRO"))
                    assert clients[node].register_schema("shared", Schema(schema(i), "AVRO")) == ids[i]
            except BaseException as exc:  # noqa: BLE001 - reported below
                errors.append(exc)

        threads = [threading.Thread(target=register, args=(n,)) for n in urls]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert not errors, errors
        assert len(set(ids.values())) == 24  # one id per distinct schema
        views = [view(u) for u in urls.values()]
        assert views[0] == views[1] == views[2]
        assert sorted(v for (s, v) in views[0] if s == "shared") == list(range(1, 25))
        for i, schema_id in ids.items():
            assert json.loads(get(f"{urls[(i // 100) % 3 + 1]}/schemas/ids/{schema_id}")["schema"]) == \
                json.loads(schema(i))

        admin = AdminClient({"bootstrap.servers": cluster.bootstrap})
        leader = admin.list_topics("_schemas", timeout=10).topics["_schemas"].partitions[0].leader
        cluster.broker(leader).kill()
        survivor = next(n for n in urls if n != leader)
        after = clients[survivor].register_schema("after-kill", Schema(schema(999), "AVRO"))
        assert after not in ids.values()
        for n in urls:
            if n != leader:
                assert json.loads(get(f"{urls[n]}/schemas/ids/{after}")["schema"]) == json.loads(schema(999))
                assert view(urls[n]) == {**views[0], ("after-kill", 1): (after, schema(999))}
