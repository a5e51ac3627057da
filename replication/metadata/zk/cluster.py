"""A broker's ZooKeeper persistence over one session: the metadata store, the controller's election and
fencing, the controller's store, ACLs, delegation tokens and producer-id blocks, all on the same
``ZooKeeperClient``.

The broker builds this one object in cluster mode and never touches the client itself.
"""

from __future__ import annotations

from typing import Any

from replication.metadata.zk.acl_store import ZooKeeperAclStore
from replication.metadata.zk.client import ZooKeeperClient
from replication.metadata.zk.controller_election import ControllerElection
from replication.metadata.zk.controller_store import ZkControllerStore
from replication.metadata.zk.metadata_store import ZooKeeperMetadataStore
from replication.metadata.zk.producer_id_block import ZkProducerIdManager
from replication.metadata.zk.token_store import ZooKeeperTokenStore

__all__ = ["ZooKeeperCluster"]


class ZooKeeperCluster:
    """Every ZooKeeper store of broker ``node_id`` (``config``: ``zookeeper.connect`` and its timeouts)."""

    def __init__(self, config: Any, node_id: int) -> None:
        self.client = ZooKeeperClient.from_config(config)
        self.election = ControllerElection(self.client, node_id)
        self.controller_store = ZkControllerStore(self.client, self.election)
        self.metadata = ZooKeeperMetadataStore(self.client, node_id,
                                               controller_epoch=lambda: max(self.election.epoch, 0))
        self.producer_ids = ZkProducerIdManager(self.client, node_id)
        self.acl_store = ZooKeeperAclStore(self.client)
        self.token_store = ZooKeeperTokenStore(self.client)

    async def start(self) -> None:
        """Open the session and load the cluster's metadata (this broker is not registered yet)."""
        await self.client.start()
        await self.metadata.start()

    async def close(self) -> None:
        """Leave the election and end the session (which ends this broker's registration)."""
        await self.election.close()
        await self.client.close()
