"""Producer-id blocks over a real ZooKeeper: Kafka's JSON, and no overlap between brokers racing for blocks."""

from __future__ import annotations

import asyncio

import pytest

from replication.metadata.zk.client import ZooKeeperClient
from replication.metadata.zk.producer_id_block import (
    PRODUCER_ID_BLOCK_SIZE,
    ProducerIdsExhaustedError,
    allocate_producer_id_block,
    next_block,
)
from replication.metadata.zk.znodes import ProducerIdBlock
from tests.replication.metadata.zk.zk_helpers import run


def test_next_block():
    assert PRODUCER_ID_BLOCK_SIZE == 1000
    assert next_block(None, 2) == ProducerIdBlock(2, 0, 999)
    assert next_block(ProducerIdBlock(2, 0, 999), 3) == ProducerIdBlock(3, 1000, 1999)
    with pytest.raises(ProducerIdsExhaustedError):
        next_block(ProducerIdBlock(1, (1 << 63) - 1500, (1 << 63) - 501), 1)


def test_first_block_on_kafkas_empty_znode_then_the_next(zk_server, chroot):
    async def main():
        zk = ZooKeeperClient(f"{zk_server.connect}{chroot}")
        await zk.start()
        try:
            await zk.create("/latest_producer_id_block")  # as a Kafka broker leaves it at start-up
            assert await allocate_producer_id_block(zk, 1) == ProducerIdBlock(1, 0, 999)
            data, stat = await zk.get("/latest_producer_id_block")
            assert data == b'{"version":1,"broker":1,"block_start":"0","block_end":"999"}' and stat.version == 1
            assert await allocate_producer_id_block(zk, 2) == ProducerIdBlock(2, 1000, 1999)
        finally:
            await zk.close()

    run(main())


def test_brokers_racing_for_blocks_never_overlap(zk_server, chroot):
    async def main():
        brokers = [ZooKeeperClient(f"{zk_server.connect}{chroot}") for _ in range(4)]
        await asyncio.gather(*(b.start() for b in brokers))
        try:
            async def take(broker_id: int) -> list[ProducerIdBlock]:
                return [await allocate_producer_id_block(brokers[broker_id], broker_id) for _ in range(10)]

            blocks = [b for per in await asyncio.gather(*(take(i) for i in range(4))) for b in per]
            blocks.sort(key=lambda b: b.first)
            assert [b.first for b in blocks] == list(range(0, 40_000, 1000))
            assert all(b.size == 1000 for b in blocks)
            assert {b.broker_id for b in blocks} == {0, 1, 2, 3}
        finally:
            await asyncio.gather(*(b.close() for b in brokers))

    run(main())
