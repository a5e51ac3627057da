"""ZkAclStore over a real ZooKeeper: Kafka 3.9.1's ACL znodes and change notifications (golden dump), another
broker following through the notifications, and concurrent writers merging."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

from replication.zk.acl_store import ResourcePattern, ZkAclStore
from replication.zk.client import ZooKeeperClient
from replication.zk.znodes import AclEntry
from tests.replication.zk.zk_helpers import run

GOLDEN = {n["path"]: n for n in json.loads(
    (Path(__file__).parent / "golden" / "kafka_3_9_1_znodes.json").read_text())["znodes"]}
READ = AclEntry("User:alice", "Allow", "*", "Read")


async def eventually(predicate, timeout: float = 30.0) -> None:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while not predicate():
        assert loop.time() < deadline, "condition not met"
        await asyncio.sleep(0.02)


async def stores(connect: str, n: int = 2):
    out = []
    for _ in range(n):
        zk = ZooKeeperClient(connect)
        await zk.start()
        store = ZkAclStore(zk)
        await store.start()
        out.append(store)
    return out


def test_acls_are_kafkas_znodes_and_other_brokers_follow(zk_server, chroot):
    async def main():
        a, b = await stores(f"{zk_server.connect}{chroot}")
        try:
            # the znodes Kafka's authorizer creates at start-up
            for path in [p for p in GOLDEN if p.startswith("/kafka-acl") and GOLDEN[p]["data"] is None]:
                assert await a.zk.exists(path) is not None, path
            group = ResourcePattern("Group", "g1")
            await a.add(group, [READ])
            assert (await a.zk.get("/kafka-acl/Group/g1"))[0].decode() == GOLDEN["/kafka-acl/Group/g1"]["data"]
            changes = await a.zk.get_children("/kafka-acl-changes")
            assert (await a.zk.get(f"/kafka-acl-changes/{changes[0]}"))[0] == b"GROUP:g1"

            prefixed = ResourcePattern("Topic", "logs-", "PREFIXED")
            write = AclEntry("User:alice", "Allow", "*", "Write")
            await a.add(prefixed, [write])
            assert (await a.zk.get("/kafka-acl-extended/prefixed/Topic/logs-"))[0].decode() == \
                GOLDEN["/kafka-acl-extended/prefixed/Topic/logs-"]["data"]
            extended = (await a.zk.get("/kafka-acl-extended-changes/acl_changes_0000000000"))[0].decode()
            assert extended == GOLDEN["/kafka-acl-extended-changes/acl_changes_0000000000"]["data"]

            await eventually(lambda: b.acls.get(group) == {READ} and b.acls.get(prefixed) == {write})
            await a.remove(group)
            assert await a.zk.exists("/kafka-acl/Group/g1") is None  # the last ACL takes its znode along
            await eventually(lambda: group not in b.acls)
        finally:
            for s in (a, b):
                await s.zk.close()

    run(main())


def test_concurrent_writers_merge_through_conditional_writes(zk_server, chroot):
    async def main():
        writers = await stores(f"{zk_server.connect}{chroot}", 3)
        topic = ResourcePattern("Topic", "orders")
        try:
            entries = [AclEntry(f"User:u{i}", "Allow", "*", "Read") for i in range(12)]
            await asyncio.gather(*(writers[i % 3].add(topic, [e]) for i, e in enumerate(entries)))
            data, stat = await writers[0].zk.get("/kafka-acl/Topic/orders")
            assert len(json.loads(data)["acls"]) == 12
            for s in writers:
                await eventually(lambda s=s: s.acls.get(topic) == frozenset(entries))
        finally:
            for s in writers:
                await s.zk.close()

    run(main())
