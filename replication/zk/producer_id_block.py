"""Producer-id blocks from ``/latest_producer_id_block``, as Kafka's ``ZkProducerIdManager``.

A broker that runs out of producer ids reads the znode (data and version), computes the next block of
``PRODUCER_ID_BLOCK_SIZE`` ids after the last one handed out (the first block is 0-999), and writes it back
*conditionally on the version it read*. If another broker wrote in between, the write fails with
BadVersion and the broker reads again, so two brokers never get overlapping blocks. Kafka creates the znode
empty at start-up; empty means "no block yet".
"""

from __future__ import annotations

import logging

from replication.zk.client import BadVersionError, NodeExistsError, ZooKeeperClient
from replication.zk.znodes import ProducerIdBlock, ProducerIdBlockZNode

log = logging.getLogger("pykbroker.zk.producer_ids")

__all__ = ["PRODUCER_ID_BLOCK_SIZE", "ProducerIdsExhaustedError", "allocate_producer_id_block", "next_block"]

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
