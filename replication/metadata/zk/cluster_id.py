"""The cluster id in ``/cluster/id``, as Kafka's ``KafkaZkClient.getOrGenerateClusterId``.

The first broker to start generates an id (Kafka's ``Uuid.randomUuid().toString``: 16 random bytes in
url-safe base64 without padding, never the zero or metadata-topic uuid, never starting with ``-``) and
creates the znode; every other broker, and every later start, reads it. Two brokers racing both try the
create: the loser reads the winner's id.
"""

from __future__ import annotations

import base64
import uuid

from replication.metadata.zk.client import NodeExistsError, ZooKeeperClient
from replication.metadata.zk.znodes import ClusterIdZNode

__all__ = ["generate_cluster_id", "get_or_create_cluster_id"]


def generate_cluster_id() -> str:
    """A new id as Kafka's ``Uuid.randomUuid().toString()`` makes one."""
    while True:
        u = uuid.uuid4()
        text = base64.urlsafe_b64encode(u.bytes).decode().rstrip("=")
        if u.int > 1 and not text.startswith("-"):  # 0: ZERO_UUID, 1: METADATA_TOPIC_ID
            return text


async def get_or_create_cluster_id(zk: ZooKeeperClient, proposed: str | None = None) -> str:
    """The cluster's id, creating ``/cluster/id`` with ``proposed`` (or a new id) when there is none."""
    found = await zk.get(ClusterIdZNode.path)
    if found is not None:
        return ClusterIdZNode.decode(found[0])
    try:
        await zk.create(ClusterIdZNode.path, ClusterIdZNode.encode(proposed or generate_cluster_id()),
                        make_parents=True)
    except NodeExistsError:
        pass  # another broker won the race: its id is the cluster's
    found = await zk.get(ClusterIdZNode.path)
    assert found is not None
    return ClusterIdZNode.decode(found[0])
