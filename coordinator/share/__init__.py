"""Share groups (KIP-932): Kafka's queues.

State is persisted in ``__share_group_state`` (see ``records``), one single-writer shard per partition on
the coordinator runtime. Modules:

- ``service`` — ``ShareGroupService``, what the broker builds and the handlers call;
- ``coordinator`` + ``shard`` — the share coordinator (persisted share-partition state; replay = load);
  ``records`` — ShareSnapshot / ShareUpdate, byte-compatible with Kafka 4.2; ``state_batch`` — merging them;
- ``share_partition`` + ``record_state`` — one group's in-flight records on one partition (acquisition locks,
  delivery counts, acknowledgements); ``share_partition_manager`` — log reads, acquisition, persistence;
- ``share_session`` — the share sessions and their epochs; ``share_group`` — members, heartbeats and the
  sticky simple assignor, hosted by the group coordinator's __consumer_offsets shards and persisted there as
  Kafka 4.2's share-group records (``share_group_records``).
"""
