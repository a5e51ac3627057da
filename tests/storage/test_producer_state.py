import pytest

from storage.errors import (
    CorruptSnapshotError,
    InvalidProducerEpochError,
    InvalidTxnStateError,
    OutOfOrderSequenceError,
)
from storage.producer_state import (
    AppendOrigin,
    ProducerStateEntry,
    ProducerStateManager,
    read_snapshot,
    write_snapshot,
)
from wire import ControlRecordType, parse_batch_header

from .conftest import batch


def header(base_offset, pid=7, epoch=0, seq=0, count=1, transactional=False):
    raw = batch([b"v"] * count, producer_id=pid, producer_epoch=epoch, base_sequence=seq,
                is_transactional=transactional)
    return parse_batch_header(raw)._replace(base_offset=base_offset)


def test_sequences_must_follow(tmp_path):
    psm = ProducerStateManager(str(tmp_path))
    psm.check_and_update(header(0, seq=0, count=3))
    psm.check_and_update(header(3, seq=3, count=2))
    with pytest.raises(OutOfOrderSequenceError):
        psm.check_and_update(header(5, seq=7))
    entry = psm.last_entry(7)
    assert entry.last_seq == 4 and entry.last_data_offset == 4
    assert entry.find_duplicate_batch(header(99, seq=3, count=2)).first_offset == 3
    # A new epoch starts at sequence 0; an older epoch is fenced.
    with pytest.raises(OutOfOrderSequenceError):
        psm.check_and_update(header(5, epoch=1, seq=5))
    psm.check_and_update(header(5, epoch=1, seq=0))
    with pytest.raises(InvalidProducerEpochError):
        psm.check_and_update(header(6, epoch=0, seq=5))
    # Replication never refuses.
    psm.check_and_update(header(6, epoch=0, seq=42), origin=AppendOrigin.REPLICATION)


def test_only_five_batches_are_kept(tmp_path):
    psm = ProducerStateManager(str(tmp_path))
    for i in range(8):
        psm.check_and_update(header(i, seq=i))
    assert [b.last_seq for b in psm.last_entry(7).batch_metadata] == [3, 4, 5, 6, 7]


def test_a_continued_entry_is_the_next_sequence_of_the_same_epoch_only(tmp_path):
    """continued_entry: Log._append's short way, for what surely passes the full checks (wrapping past INT32_MAX
    as Kafka's sequences do); anything else is left to them."""
    psm = ProducerStateManager(str(tmp_path))
    assert psm.continued_entry(header(0, seq=0)) is None  # a producer not seen yet
    psm.check_and_update(header(0, seq=0, count=2))
    entry = psm.last_entry(7)
    assert psm.continued_entry(header(2, seq=2)) is entry
    assert psm.continued_entry(header(2, seq=3)) is None and psm.continued_entry(header(2, seq=0)) is None
    assert psm.continued_entry(header(2, epoch=1, seq=0)) is None
    psm.continue_entry(entry, header(2, seq=2, count=3), 4)
    assert (entry.last_seq, entry.last_data_offset, entry.last_offset_delta, psm.last_map_offset) == (4, 4, 2, 5)
    entry.batch_metadata[-1] = entry.batch_metadata[-1]._replace(last_seq=(1 << 31) - 4)
    across = header(5, seq=(1 << 31) - 3, count=4)  # its last sequence wraps to 0
    assert psm.continued_entry(across) is entry
    psm.continue_entry(entry, across, 8)
    assert entry.last_seq == across.last_sequence == 0 and entry.batch_metadata[-1].first_seq == (1 << 31) - 3
    entry.batch_metadata[-1] = entry.batch_metadata[-1]._replace(last_seq=(1 << 31) - 1)
    assert psm.continued_entry(header(5, seq=0)) is entry
    psm.maybe_create_verification_state_entry(7, 0, 0, False, 0)  # a transactional check pending: full checks
    assert psm.continued_entry(header(5, seq=0)) is None
    psm.clear_verification_state_entry(7)
    psm.check_and_update(header(5, seq=0, transactional=True))
    assert psm.continued_entry(header(6, seq=1)) is None  # a transaction open


def test_transactions_and_last_stable_offset(tmp_path):
    psm = ProducerStateManager(str(tmp_path))
    psm.check_and_update(header(10, pid=1, transactional=True))
    psm.check_and_update(header(11, pid=2, transactional=True))
    assert psm.first_unstable_offset() == 10
    with pytest.raises(InvalidTxnStateError):
        psm.check_and_update(header(12, pid=1, seq=1))
    marker = parse_batch_header(batch([b"x"], producer_id=1, producer_epoch=0, base_sequence=-1,
                                      is_transactional=True))._replace(base_offset=12, attributes=0x30)
    done = psm.check_and_update(marker, control=(ControlRecordType.ABORT, 0))
    assert done.is_aborted and done.first_offset == 10 and done.last_offset == 12
    assert psm.last_stable_offset(done) == 11
    psm.complete_txn(done)
    assert psm.first_unstable_offset() == 10  # not replicated yet
    psm.on_high_watermark_updated(13)
    assert psm.first_unstable_offset() == 11


def test_snapshot_round_trip_and_corruption(tmp_path):
    path = str(tmp_path / "00000000000000000010.snapshot")
    entry = ProducerStateEntry(5, 2, 3, 1234, 8)
    entry.add_batch(2, 9, 9, 2, 1234)
    write_snapshot(path, [entry, ProducerStateEntry(6)])
    entries = read_snapshot(path)
    assert entries[0].producer_id == 5 and entries[0].producer_epoch == 2 and entries[0].coordinator_epoch == 3
    assert entries[0].current_txn_first_offset == 8 and entries[0].last_seq == 9 and entries[0].last_data_offset == 9
    assert entries[0].first_seq == 7
    assert entries[1].is_empty and entries[1].current_txn_first_offset is None
    data = bytearray(open(path, "rb").read())
    data[-1] ^= 1
    open(path, "wb").write(bytes(data))
    with pytest.raises(CorruptSnapshotError):
        read_snapshot(path)


def test_take_snapshot_and_reload(tmp_path):
    psm = ProducerStateManager(str(tmp_path))
    psm.check_and_update(header(0, seq=0, count=2))
    psm.update_map_end_offset(2)
    path = psm.take_snapshot()
    assert path.endswith("00000000000000000002.snapshot")
    other = ProducerStateManager(str(tmp_path))
    other.truncate_and_reload(0, 2, now_ms=0)
    assert other.last_entry(7).last_seq == 1
    assert other.last_map_offset == 2


def test_idle_producers_expire_but_not_with_an_open_transaction(tmp_path):
    psm = ProducerStateManager(str(tmp_path), producer_id_expiration_ms=60_000)
    psm.check_and_update(header(0, pid=1))  # timestamps are 1_700_000_000_000
    psm.check_and_update(header(1, pid=2, transactional=True))
    psm.remove_expired_producers(1_700_000_059_999)
    assert psm.last_entry(1) is not None
    psm.remove_expired_producers(1_700_000_060_000)
    assert psm.last_entry(1) is None  # forgotten: its next batch starts as a new producer
    assert psm.last_entry(2) is not None  # its transaction is still open
    psm.check_and_update(header(2, pid=1, seq=17))
