"""Partition: the min.insync.replicas check of acks=all appends, as Kafka's effectiveMinIsr."""

from __future__ import annotations

import uuid

import pytest

from replication.partition import Partition, PartitionError
from wire import ErrorCode


class FakeLog:
    """Just what a leader's append touches: offsets and an append that counts records."""

    def __init__(self) -> None:
        self.log_end_offset = 0
        self.high_watermark = 0
        self.appended = 0

    def assign_epoch_start_offset(self, epoch: int, offset: int) -> None:
        pass

    def append_as_leader(self, records, leader_epoch: int, **kwargs):
        self.appended += 1
        self.log_end_offset += 1
        return self.appended


def leader(replicas: list[int], isr: list[int]) -> Partition:
    p = Partition("t", 0, uuid.uuid4(), FakeLog(), node_id=1)
    p.make_leader(0, replicas, isr)
    return p


def test_isr_smaller_than_min_insync_replicas_refuses_acks_all():
    p = leader([1, 2, 3], [1])
    with pytest.raises(PartitionError) as exc:
        p.append_records_to_leader(b"r", -1, 2)
    assert exc.value.code == ErrorCode.NOT_ENOUGH_REPLICAS
    assert "min.isr requirement of 2" in exc.value.message
    p.append_records_to_leader(b"r", 1, 2)  # acks=1 does not need the ISR


def test_min_insync_replicas_above_the_replication_factor_counts_as_the_replication_factor():
    p = leader([1], [1])
    p.append_records_to_leader(b"r", -1, 2)
    p = leader([1, 2], [1])
    with pytest.raises(PartitionError) as exc:
        p.append_records_to_leader(b"r", -1, 3)
    assert "min.isr requirement of 2" in exc.value.message
