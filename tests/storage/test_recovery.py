import os
import random
import shutil

import pytest

from storage import recovery as recovery_module
from storage.log_manager import LogManager
from wire import iter_batch_headers

from .conftest import batch, keyed_batch, open_log, read_all, small_config


def fill(log, n, size=150):
    for i in range(n):
        log.append_as_leader(batch([b"%04d" % i + b"p" * size]), 0)


def crash(log):
    """Leave the files as a kill -9 would (nothing trimmed, no snapshot at the end)."""
    log.close_handlers()


def test_torn_tail_at_every_kind_of_position_is_truncated(tmp_path):
    rng = random.Random(7)
    src = str(tmp_path / "src-0")
    log = open_log(src, small_config(internal_segment_bytes=1 << 20))
    fill(log, 40)
    crash(log)
    seg = os.path.join(src, "00000000000000000000.log")
    data = open(seg, "rb").read()
    ends = [p + h.batch_length + 12 for p, h in iter_batch_headers(data)]
    cuts = sorted(set(rng.sample(range(1, len(data)), 25) + ends[:3] + [len(data)]))
    for cut in cuts:
        work = str(tmp_path / f"cut{cut}-0")
        shutil.copytree(src, work)
        with open(os.path.join(work, "00000000000000000000.log"), "r+b") as f:
            f.truncate(cut)
        recovered = open_log(work, small_config(internal_segment_bytes=1 << 20))
        complete = sum(1 for e in ends if e <= cut)
        assert recovered.log_end_offset == complete, cut
        assert [int(v[:4]) for _, _, v in read_all(recovered)] == list(range(complete))
        assert os.path.getsize(os.path.join(work, "00000000000000000000.log")) == (ends[complete - 1] if complete else 0)
        recovered.close()


def test_corruption_in_an_old_unflushed_segment_drops_everything_after(log_dir):
    log = open_log(log_dir)
    fill(log, 60)
    assert log.num_segments >= 3
    second = log.segments.snapshot()[1]
    crash(log)
    with open(second.log.path, "r+b") as f:
        f.seek(300)
        byte = f.read(1)
        f.seek(300)
        f.write(bytes([byte[0] ^ 0xFF]))
    recovered = open_log(log_dir)
    assert recovered.num_segments == 2
    values = [int(v[:4]) for _, _, v in read_all(recovered)]
    assert values == list(range(len(values))) and recovered.log_end_offset == len(values)
    assert recovered.log_end_offset < 60
    recovered.close()


def test_missing_and_corrupt_indexes_are_rebuilt(log_dir):
    log = open_log(log_dir)
    fill(log, 60)
    segs = log.segments.snapshot()
    expected = [(s.base_offset, list(s.offset_index.keys), list(s.offset_index.values)) for s in segs[:-1]]
    log.close()
    os.unlink(segs[0].offset_index.path)
    with open(segs[1].offset_index.path, "r+b") as f:
        f.write(b"\xff" * 13)  # garbage, and not a whole number of entries
    with open(segs[2].time_index.path, "wb") as f:
        f.write(b"\x00" * 12 + b"\xff" * 12)
    # a clean start would skip recovery, but broken indexes are rebuilt anyway
    recovered = open_log(log_dir, had_clean_shutdown=True, recovery_point=60)
    rebuilt = [(s.base_offset, list(s.offset_index.keys), list(s.offset_index.values))
               for s in recovered.segments.snapshot()[:-1]]
    assert rebuilt == expected
    assert [int(v[:4]) for _, _, v in read_all(recovered, 17)] == list(range(17, 60))
    recovered.close()


def test_clean_shutdown_skips_the_scan(tmp_path, monkeypatch):
    manager = LogManager([str(tmp_path)], default_config=small_config(), log_cleaner_enable=False)
    manager.startup()
    log = manager.get_or_create_log("t", 0)
    fill(log, 50)
    manager.shutdown()
    assert os.path.exists(tmp_path / ".kafka_cleanshutdown")
    calls = []
    real = recovery_module.recover_segment
    monkeypatch.setattr(recovery_module, "recover_segment", lambda *a: calls.append(a) or real(*a))
    manager = LogManager([str(tmp_path)], default_config=small_config(), log_cleaner_enable=False)
    manager.startup()
    assert calls == [] and manager.had_clean_shutdown[str(tmp_path)]
    assert not os.path.exists(tmp_path / ".kafka_cleanshutdown")  # removed until the next clean shutdown
    log = manager.get_log("t", 0)
    assert log.log_end_offset == 50 and log.recovery_point == 50
    fill(log, 1)
    crash(log)
    manager.scheduler.shutdown(drain=False)
    for fd in manager._dir_locks.values():
        os.close(fd)
    calls.clear()
    manager = LogManager([str(tmp_path)], default_config=small_config(), log_cleaner_enable=False)
    manager.startup()
    assert calls, "an unclean start scans the segments after the recovery point"
    assert manager.get_log("t", 0).log_end_offset == 51
    manager.shutdown()


def test_producer_state_is_rebuilt_after_a_crash(log_dir):
    log = open_log(log_dir)
    for seq in range(0, 40, 2):
        log.append_as_leader(batch([b"p" * 200, b"q"], producer_id=3, producer_epoch=1, base_sequence=seq), 0)
    assert log.num_segments > 1
    crash(log)
    recovered = open_log(log_dir)
    entry = recovered.producer_state.last_entry(3)
    assert entry.producer_epoch == 1 and entry.last_seq == 39
    retry = batch([b"p" * 200, b"q"], producer_id=3, producer_epoch=1, base_sequence=38)
    assert recovered.append_as_leader(retry, 0).duplicate
    recovered.append_as_leader(batch([b"n"], producer_id=3, producer_epoch=1, base_sequence=40), 0)
    recovered.close()


def _compacted_log(log_dir):
    log = open_log(log_dir, small_config(cleanup_policy=("compact",)))
    for i in range(40):
        log.append_as_leader(keyed_batch([(b"k%d" % (i % 3), b"v%03d" % i + b"." * 150)]), 0)
    segs = log.segments.snapshot()
    log.close()
    return segs


def test_interrupted_swap_is_completed(log_dir):
    segs = _compacted_log(log_dir)
    # Crash after the cleaned segment (here: segments 0 and 1 merged verbatim) was renamed .swap, before
    # the segments it replaces were renamed .deleted.
    data = open(segs[0].log.path, "rb").read() + open(segs[1].log.path, "rb").read()
    with open(segs[0].log.path + ".swap", "wb") as f:
        f.write(data)
    with open(segs[0].offset_index.path + ".swap", "wb") as f:
        f.write(b"\x01" * 5)  # swapped indexes are rebuilt, whatever they hold
    with open(segs[2].log.path + ".deleted", "wb") as f:
        f.write(b"old")
    recovered = open_log(log_dir, small_config(cleanup_policy=("compact",)))
    names = os.listdir(log_dir)
    assert not [n for n in names if n.endswith((".cleaned", ".swap", ".deleted"))]
    assert os.path.basename(segs[1].log.path) not in names  # replaced by the swapped segment
    assert recovered.segments.base_offsets[:2] == [0, segs[2].base_offset]
    assert [int(v[1:4]) for _, _, v in read_all(recovered)] == list(range(40))
    recovered.close()


def test_unfinished_cleaning_is_discarded(log_dir):
    segs = _compacted_log(log_dir)
    with open(segs[0].log.path + ".cleaned", "wb") as f:
        f.write(b"junk")
    with open(segs[1].log.path + ".swap", "wb") as f:
        f.write(b"junk")  # at or after the first .cleaned offset: part of the same unfinished cleaning
    recovered = open_log(log_dir, small_config(cleanup_policy=("compact",)))
    assert not [n for n in os.listdir(log_dir) if n.endswith((".cleaned", ".swap"))]
    assert [int(v[1:4]) for _, _, v in read_all(recovered)] == list(range(40))
    recovered.close()


@pytest.mark.parametrize("seed", range(3))
def test_random_truncation_of_any_segment_file(tmp_path, seed):
    rng = random.Random(seed)
    src = str(tmp_path / "s-0")
    log = open_log(src)
    fill(log, 50)
    crash(log)
    names = sorted(n for n in os.listdir(src) if n.endswith((".log", ".index", ".timeindex")))
    victim = rng.choice(names)
    path = os.path.join(src, victim)
    with open(path, "r+b") as f:
        f.truncate(rng.randrange(0, max(1, os.path.getsize(path))))
    recovered = open_log(src)
    values = [int(v[:4]) for _, _, v in read_all(recovered)]
    assert values == list(range(len(values)))
    assert recovered.log_end_offset == len(values)
    recovered.close()
