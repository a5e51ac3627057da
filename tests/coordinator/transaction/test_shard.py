"""TransactionStateShard: the state of one __transaction_state partition changes only by replaying records."""

from __future__ import annotations

import pytest

from coordinator.transaction.metadata import (
    TransactionLogRecord,
    TransactionMetadata,
    TxnState,
    decode_record,
    encode_txn_record,
)
from coordinator.transaction.shard import TransactionStateShard
from wire import DecodeError

S = TxnState


def shard() -> tuple[TransactionStateShard, list[TransactionStateShard]]:
    loaded: list[TransactionStateShard] = []
    return TransactionStateShard(2, 7, loaded.append), loaded


def test_replay_creates_updates_in_place_and_forgets_on_a_tombstone():
    s, loaded = shard()
    empty = TransactionMetadata("t", 1000, -1, 60_000).prepare_increment_epoch(60_000, 5)
    s.replay(0, TransactionLogRecord("t", empty))
    metadata = s.transactions["t"]
    assert (metadata.producer_id, metadata.producer_epoch, metadata.state) == (1000, 0, S.EMPTY)
    ongoing = metadata.prepare_add_partitions([("a", 0)], 6)
    assert metadata.pending_state is S.ONGOING
    s.replay(1, TransactionLogRecord("t", ongoing))
    assert s.transactions["t"] is metadata  # a request holding it sees the new state
    assert (metadata.state, metadata.partitions, metadata.pending_state) == (S.ONGOING, {("a", 0)}, None)
    s.replay(2, TransactionLogRecord("t", None))
    assert "t" not in s.transactions
    s.on_loaded()
    assert loaded == [s] and s.coordinator_epoch == 7


def test_a_record_replays_the_same_from_its_bytes_except_the_last_epoch():
    s, _ = shard()
    transit = TransactionMetadata("t", 1000, 3, 60_000).prepare_increment_epoch(60_000, 5, expected_epoch=3)
    assert transit.last_producer_epoch == 3
    record = TransactionLogRecord("t", transit)
    decoded = decode_record(*record.encode())
    assert decoded.transactional_id == "t"
    assert decoded.transit == transit.__class__(**{**{f: getattr(transit, f) for f in transit.__slots__},
                                                   "last_producer_epoch": -1})
    s.replay(0, decoded)
    assert s.transactions["t"].producer_epoch == 4


def test_producer_data_and_markers_are_not_transaction_state():
    s, _ = shard()
    transit = TransactionMetadata("t", 1000, -1, 60_000).prepare_increment_epoch(60_000, 5)
    s.replay(0, TransactionLogRecord("t", transit), producer_id=1000)
    s.replay_end_transaction(1, 1000, True)
    assert s.transactions == {}


def test_undecodable_records_raise_decode_error():
    key, value = encode_txn_record("t", TransactionMetadata("t", 1, 0, 1000).prepare_increment_epoch(1000, 5))
    with pytest.raises(DecodeError):
        decode_record(None, value)
    unknown_status = bytearray(value)
    assert unknown_status[16] == S.EMPTY  # after version, producer id, epoch and timeout
    unknown_status[16] = 99
    with pytest.raises(DecodeError, match="99"):
        decode_record(key, bytes(unknown_status))
