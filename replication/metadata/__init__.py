"""Cluster metadata: the immutable image, the stores that publish it (embedded, ZooKeeper) and the data they persist.

The layer below the rest of replication and above storage: it imports only ``storage`` and ``wire``
(tests/test_layers.py checks it). ``zk/`` holds every piece of ZooKeeper persistence; the ZooKeeper client
is imported nowhere outside this package.
"""
