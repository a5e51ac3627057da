"""Producer-id blocks from ``/latest_producer_id_block``, as Kafka's ``ZkProducerIdManager``.

A broker that runs out of producer ids reads the znode (data and version), computes the next block of
``PRODUCER_ID_BLOCK_SIZE`` ids after the last one handed out (the first block is 0-999), and writes it back
*conditionally on the version it read*. If another broker wrote in between, the write fails with
BadVersion and the broker reads again, so two brokers never get overlapping blocks. Kafka creates the znode
empty at start-up; empty means "no block yet".
"""

from __future__ import annotations

import asyncio
import logging

from replication.metadata.zk.client import BadVersionError, NodeExistsError, ZooKeeperClient
from replication.metadata.zk.znodes import ProducerIdBlock, ProducerIdBlockZNode

log = logging.getLogger("pykbroker.zk.producer_ids")

__all__ = ["PRODUCER_ID_BLOCK_SIZE", "ProducerIdsExhaustedError", "allocate_producer_id_block", "next_block", "ZkProducerIdManager"]

PRODUCER_ID_BLOCK_SIZE = 1000  # Kafka's ProducerIdsBlock.PRODUCER_ID_BLOCK_SIZE
_MAX_PRODUCER_ID = (1 << 63) - 1


class ProducerIdsExhaustedError(RuntimeError):
    """Every producer id up to Long.MAX_VALUE has been handed out (Kafka: "Exhausted all producerIds")."""


def next_block(current: ProducerIdBlock | None, broker_id: int, size: int = PRODUCER_ID_BLOCK_SIZE) -> ProducerIdBlock:
    """The block after ``current`` (None: the first block, from 0), owned by ``broker_id``."""
    if current is None:
        return ProducerIdBlock(broker_id, 0, size - 1)
    if current.last > _MAX_PRODUCER_ID - size:
        raise ProducerIdsExhaustedError(f"Exhausted all producerIds as the next block's high producerId would "
                                        f"exceed {_MAX_PRODUCER_ID}")
    return ProducerIdBlock(broker_id, current.last + 1, current.last + size)


async def allocate_producer_id_block(zk: ZooKeeperClient, broker_id: int,
                                     size: int = PRODUCER_ID_BLOCK_SIZE) -> ProducerIdBlock:
    """Claim the next block for ``broker_id``: read, compute, conditional write, again on a lost race."""
    path = ProducerIdBlockZNode.path
    attempts = 0
    while True:
        attempts += 1
        found = await zk.get(path)
        if found is None:
            try:
                await zk.create(path, None, make_parents=True)
            except NodeExistsError:
                pass
            continue
        data, stat = found
        block = next_block(ProducerIdBlockZNode.decode(data), broker_id, size)
        try:
            await zk.set(path, ProducerIdBlockZNode.encode(block), stat.version)
        except BadVersionError:
            continue  # another broker took a block meanwhile: start over from its block
        log.info("broker %d acquired producer id block %d-%d (znode version %d, %d attempt(s))", broker_id,
                 block.first, block.last, stat.version + 1, attempts)
        return block


class ZkProducerIdManager:
    """Producer ids from blocks claimed in ``/latest_producer_id_block`` (Kafka's ZkProducerIdManager): ids
    never repeat across brokers or restarts. The next block is claimed in the background once 90 % of the
    current one is used, so handing out an id never waits for ZooKeeper; ``start()`` claims the first."""

    def __init__(self, zk: ZooKeeperClient, broker_id: int, size: int = PRODUCER_ID_BLOCK_SIZE) -> None:
        self.zk = zk
        self.broker_id = broker_id
        self.size = size
        self._block: ProducerIdBlock | None = None
        self._next = 0
        self._prefetched: ProducerIdBlock | None = None
        self._prefetching: asyncio.Task | None = None

    async def start(self) -> None:
        self._block = await allocate_producer_id_block(self.zk, self.broker_id, self.size)
        self._next = self._block.first

    def next_producer_id(self) -> int:
        """The next unused id; ``ProducerIdsExhaustedError`` if the next block has not arrived yet."""
        if self._block is None or self._next > self._block.last:
            if self._prefetched is None:
                self._prefetch()
                raise ProducerIdsExhaustedError("the next producer id block is being claimed; retry")
            self._block, self._prefetched = self._prefetched, None
            self._next = self._block.first
        pid = self._next
        self._next += 1
        if self._next - self._block.first >= self._block.size * 9 // 10:
            self._prefetch()
        return pid

    def _prefetch(self) -> None:
        if self._prefetched is not None or (self._prefetching is not None and not self._prefetching.done()):
            return

        async def claim() -> None:
            try:
                self._prefetched = await allocate_producer_id_block(self.zk, self.broker_id, self.size)
            except Exception as exc:  # noqa: BLE001 - tried again by the next id handed out
                log.warning("broker %d: claiming a producer id block failed: %s", self.broker_id, exc)

        self._prefetching = asyncio.get_running_loop().create_task(claim())
