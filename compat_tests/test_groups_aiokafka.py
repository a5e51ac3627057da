"""aiokafka consumer groups against pykbroker: joining, sharing partitions, commits, admin group APIs."""

from __future__ import annotations

import asyncio
import time

import pytest

from pykbroker.testing import BrokerProcess

GROUP_BROKER_OVERRIDES = {
    "group.initial.rebalance.delay.ms": "0",
    "group.min.session.timeout.ms": "1000",
    "num.partitions": "4",
}


@pytest.fixture(scope="module")
def gbroker(tmp_path_factory):
    with BrokerProcess(tmp_path_factory.mktemp("groups-aio"), overrides=GROUP_BROKER_OVERRIDES) as b:
        yield b
        assert b.alive, f"the broker died during the tests; its log:\n{b.log()}"


def create_topic(broker, name: str) -> None:
    """Through Metadata auto-creation (num.partitions=4 on this broker), asking until the topic appears."""
    from pykbroker.testing import RawClient
    with RawClient(broker.bootstrap) as client:
        client.wait_for_topics(name, auto_create=True)


def consumer(broker, group: str, *topics: str):
    from aiokafka import AIOKafkaConsumer
    return AIOKafkaConsumer(*topics, bootstrap_servers=broker.bootstrap, group_id=group, enable_auto_commit=False,
                            session_timeout_ms=6000, heartbeat_interval_ms=300)


async def wait_for(consumers, predicate, timeout: float = 20.0) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, [c.assignment() for c in consumers]
        await asyncio.sleep(0.05)


def covers(consumers, n: int = 4) -> bool:
    got = sorted(tp.partition for c in consumers for tp in c.assignment())
    return got == list(range(n)) and all(c.assignment() for c in consumers)


def test_group_shares_partitions_and_commits(gbroker):
    from aiokafka.structs import OffsetAndMetadata, TopicPartition
    create_topic(gbroker, "aio-share")

    async def main():
        cs = [consumer(gbroker, "aio-share-g", "aio-share") for _ in range(2)]
        for c in cs:
            await c.start()
        try:
            await wait_for(cs, lambda: covers(cs))
            tp = next(iter(cs[0].assignment()))
            await cs[0].commit({tp: OffsetAndMetadata(9, "aio")})
            assert await cs[0].committed(tp) == 9
            await cs[1].stop()
            await wait_for(cs[:1], lambda: covers(cs[:1]))
            uncommitted = next(p for p in range(4) if p != tp.partition)
            assert await cs[0].committed(tp) == 9  # the commit outlives the rebalance
            assert await cs[0].committed(TopicPartition("aio-share", uncommitted)) is None
        finally:
            for c in cs:
                await c.stop()

    asyncio.run(main())


def test_admin_lists_and_describes_groups(gbroker):
    from aiokafka.admin import AIOKafkaAdminClient
    create_topic(gbroker, "aio-admin")

    async def main():
        c = consumer(gbroker, "aio-admin-g", "aio-admin")
        await c.start()
        admin = AIOKafkaAdminClient(bootstrap_servers=gbroker.bootstrap)
        await admin.start()
        try:
            await wait_for([c], lambda: covers([c]))
            groups = await admin.list_consumer_groups()
            assert ("aio-admin-g", "consumer") in [(g[0], g[1]) for g in groups]
            described = await admin.describe_consumer_groups(["aio-admin-g"])
            group = described[0].groups[0]
            assert group[0] == 0 and group[1] == "aio-admin-g" and group[2] == "Stable"
            tp = next(iter(c.assignment()))
            await c.commit({tp: 5})
            offsets = await admin.list_consumer_group_offsets("aio-admin-g")
            assert offsets[tp].offset == 5
        finally:
            await admin.close()
            await c.stop()

    asyncio.run(main())
