"""Helpers shared by the ZooKeeper tests."""

from __future__ import annotations

import asyncio

from kazoo.client import KazooClient

from replication.metadata.zk.client import ZooKeeperClient


def run(coro, limit: float = 60):
    """Run a test's coroutine with an overall limit (above the sum of the test's own bounds, which say more)."""
    return asyncio.run(asyncio.wait_for(coro, limit))


def expire_session(server_connect: str, client: ZooKeeperClient) -> None:
    """Really expire ``client``'s session: another connection takes it over with its id and password, then
    closes it (ZooKeeper's documented way to test expiry)."""
    thief = KazooClient(hosts=server_connect, client_id=client.kazoo.client_id, timeout=10)
    thief.start(10)
    thief.stop()
    thief.close()
