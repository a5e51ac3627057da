"""Cluster mode's coordination through ZooKeeper, laid out as Kafka's ZooKeeper mode laid it out.

- ``znodes``: every znode path and its JSON, one class per znode (byte-compatible with Kafka 3.9.1).
- ``client``: one kazoo session per broker, bridged to the asyncio event loop.
- ``broker_registration``, ``cluster_id``, ``controller_election``, ``producer_id_block``: the coordination
  pieces, with their rules as pure functions.
"""
