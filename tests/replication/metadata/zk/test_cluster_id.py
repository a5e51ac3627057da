"""/cluster/id over a real ZooKeeper: created once, read by everyone, one winner in a race."""

from __future__ import annotations

import asyncio
import base64
import re

from replication.metadata.zk.client import ZooKeeperClient
from replication.metadata.zk.cluster_id import generate_cluster_id, get_or_create_cluster_id
from tests.replication.metadata.zk.zk_helpers import run


def test_generated_ids_are_kafka_uuids():
    for _ in range(200):
        cluster_id = generate_cluster_id()
        assert re.fullmatch(r"[A-Za-z0-9_-]{22}", cluster_id) and not cluster_id.startswith("-")
        assert len(base64.urlsafe_b64decode(cluster_id + "==")) == 16


def test_first_broker_creates_the_id_and_racing_brokers_agree(zk_server, chroot):
    async def main():
        clients = [ZooKeeperClient(f"{zk_server.connect}{chroot}") for _ in range(4)]
        await asyncio.gather(*(c.start() for c in clients))
        try:
            ids = await asyncio.gather(*(get_or_create_cluster_id(c) for c in clients))
            assert len(set(ids)) == 1
            data, stat = await clients[0].get("/cluster/id")
            assert data == b'{"version":"1","id":"%s"}' % ids[0].encode() and stat.version == 0
            assert await get_or_create_cluster_id(clients[1], proposed="ignored-now") == ids[0]
        finally:
            await asyncio.gather(*(c.close() for c in clients))

    run(main())


def test_a_proposed_id_is_used_for_a_new_cluster(zk_server, chroot):
    async def main():
        zk = ZooKeeperClient(f"{zk_server.connect}{chroot}")
        await zk.start()
        try:
            assert await get_or_create_cluster_id(zk, proposed="MkU3OEVBNTcwNTJENDM2Qk") == "MkU3OEVBNTcwNTJENDM2Qk"
        finally:
            await zk.close()

    run(main())
