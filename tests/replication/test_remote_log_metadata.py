"""The partition of __remote_log_metadata a user partition's records go to: Kafka's."""

from __future__ import annotations

import uuid

from replication.remote_log_metadata import metadata_partition, murmur2


def test_the_metadata_partition_is_kafkas():
    # RemoteLogMetadataTopicPartitioner: murmur2 over Objects.hash(lsb, msb, partition) — the same in every broker;
    # compat_tests/test_differential_tiered_storage.py checks it against where Kafka 4.4 wrote a topic's records.
    topic_id = uuid.UUID(int=0)
    assert metadata_partition(topic_id, 0, 50) == metadata_partition(topic_id, 0, 50)
    assert len({metadata_partition(uuid.uuid4(), p, 50) for p in range(200)}) > 30
    assert murmur2(b"21") == -973932308  # Kafka's UtilsTest.testMurmur2 vectors
    assert murmur2(b"foobar") == -790332482
    assert murmur2(b"a-little-bit-long-string") == -985981536
