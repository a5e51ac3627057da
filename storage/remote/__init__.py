"""The remote tier of tiered storage (KIP-405): segments copied to object storage and read back.

- ``object_store``: the object-store interface (shared with Iceberg topics) and the directory backend;
  ``s3``: the S3-compatible backend.
- ``metadata``: remote segment metadata, its state machine and records, and the per-partition replay.
- ``storage_manager``: Kafka's RemoteStorageManager — a segment's files to objects and back.
- ``reader``: records from remote segments through a bounded chunk cache.

The leader's copy and expiration task and the metadata topic live in ``replication`` (they need leadership
and the replica manager): ``replication.remote_log_manager``, ``replication.remote_log_metadata``.
"""
