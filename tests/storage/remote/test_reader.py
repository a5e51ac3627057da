"""Remote reads: a real segment copied by the RemoteStorageManager is read back, record by record, through a
chunk cache smaller than the segment; local retention of a tiered log deletes only what is copied."""

from __future__ import annotations

import uuid

from storage.remote.metadata import RemoteLogSegmentMetadata
from storage.remote.object_store import LocalFileObjectStore
from storage.remote.reader import ChunkCache, RemoteLogReader
from storage.remote.storage_manager import LogSegmentData, RemoteStorageManager
from wire import decode_records, iter_batch_headers

from ..conftest import batch, open_log, small_config


def copy_first_segment(log, rsm: RemoteStorageManager) -> RemoteLogSegmentMetadata:
    segments = log.segments.snapshot()
    seg, nxt = segments[0], segments[1]
    m = RemoteLogSegmentMetadata(uuid.uuid4(), "t", 0, uuid.uuid4(), seg.base_offset, nxt.base_offset - 1,
                                 seg.max_timestamp_so_far, 1, 0, seg.size, ((0, 0),))
    rsm.copy_log_segment_data(m, LogSegmentData(seg.log.path, seg.offset_index.path, seg.time_index.path,
                                                seg.txn_index.path, None, b"0\n1\n0 0\n"))
    return m


def offsets(data: bytes) -> list[int]:
    out = []
    for pos, header in iter_batch_headers(data):
        _, records = decode_records(data, pos)
        out += [header.base_offset + r.offset_delta for r in records]
    return out


def test_records_come_back_from_any_offset_through_a_small_cache(tmp_path, clock):
    log = open_log(str(tmp_path / "t-0"), small_config(), time_ms=clock)
    for i in range(40):
        log.append_as_leader(batch([b"%04d" % i + b"r" * 200, b"second"]), 0)
    rsm = RemoteStorageManager(LocalFileObjectStore(str(tmp_path / "remote")))
    m = copy_first_segment(log, rsm)
    cache = ChunkCache(max_bytes=2048)
    reader = RemoteLogReader(rsm, cache, chunk_size=512)
    for start in (0, 1, 7, m.end_offset):
        got = reader.read(m, start, 1 << 20, max_offset=1 << 40, min_one_message=True)
        found = offsets(got.records)
        assert found[0] <= start <= found[-1] + 1 and found[-1] == m.end_offset  # whole batches from `start`
        assert got.next_offset == m.end_offset + 1
    assert cache.size_in_bytes <= 2048 + 512  # bounded (one chunk over at most, while being added)
    limited = reader.read(m, 0, 300, max_offset=1 << 40, min_one_message=True)
    assert offsets(limited.records) == [0, 1]  # the first batch whole, nothing more within 300 bytes
    assert isinstance(limited.records, memoryview)  # in one cached chunk: a view of it, not a copy
    whole = reader.read(m, 0, 1 << 20, max_offset=1 << 40, min_one_message=True).records
    assert bytes(whole) == open(log.segments.snapshot()[0].log.path, "rb").read()[:m.segment_size_in_bytes]
    assert offsets(reader.read(m, 0, 1 << 20, max_offset=4, min_one_message=True).records) == [0, 1, 2, 3]


def test_local_retention_of_a_tiered_log_waits_for_the_copy(tmp_path, clock):
    config = small_config(remote_storage_enable=True, local_retention_bytes=1, retention_bytes=-1)
    log = open_log(str(tmp_path / "t-0"), config, time_ms=clock)
    for i in range(40):
        log.append_as_leader(batch([b"%04d" % i + b"r" * 200]), 0)
    log.update_high_watermark(log.log_end_offset)
    assert log.delete_old_segments() == 0  # nothing copied: nothing deleted
    first_two = log.segments.snapshot()[2].base_offset
    log.highest_offset_in_remote_storage = first_two - 1
    assert log.delete_old_segments() == 2
    assert log.log_start_offset == 0 and log.local_log_start_offset == first_two
    assert log.fetch_offset_by_timestamp(-4)[1] == first_two
    assert log.fetch_offset_by_timestamp(-5)[1] == first_two - 1
    assert log.fetch_offset_by_timestamp(-6)[1] == first_two


def test_a_replica_starting_at_the_local_start_takes_the_remote_epochs_and_producer_state(tmp_path, clock):
    leader = open_log(str(tmp_path / "a" / "t-0"), small_config(), time_ms=clock)
    for i in range(40):
        leader.append_as_leader(batch([b"%04d" % i + b"r" * 200], producer_id=7, producer_epoch=0,
                                      base_sequence=i, timestamp=clock.now), 0 if i < 10 else 1)
    segments = leader.segments.snapshot()
    next_base = segments[1].base_offset
    snapshot = leader.producer_state.snapshots.get(next_base)
    assert snapshot is not None  # taken at the roll, as the copy sends it
    epochs = [(e, o) for e, o in leader.leader_epoch_cache.entries() if o < next_base] or [(0, 0)]
    follower = open_log(str(tmp_path / "b" / "t-0"), small_config(), time_ms=clock)
    follower.truncate_fully_and_start_at(next_base)
    with open(snapshot, "rb") as f:
        follower.build_remote_log_aux_state(epochs, f.read(), next_base)
    assert follower.leader_epoch_cache.entries() == epochs
    entry = follower.producer_state.last_entry(7)
    assert entry is not None and entry.last_seq == next_base - 1
