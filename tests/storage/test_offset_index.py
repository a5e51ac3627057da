import os
import struct

import pytest

from storage.errors import CorruptIndexError
from storage.offset_index import OffsetIndex


def test_append_lookup_and_on_disk_format(tmp_path):
    path = str(tmp_path / "00000000000000000100.index")
    index = OffsetIndex(path, 100, 80)
    assert os.path.getsize(path) == 80  # preallocated
    assert index.max_entries == 10
    index.append(105, 0)
    index.append(110, 4096)
    index.append(120, 9000)
    assert index.lookup(99) == (100, 0)
    assert index.lookup(105) == (105, 0)
    assert index.lookup(119) == (110, 4096)
    assert index.lookup(1000) == (120, 9000)
    with open(path, "rb") as f:
        assert f.read(24) == bytes(24)  # entries are written together (a page of them, or at a flush or trim)
    index.flush()
    with open(path, "rb") as f:
        assert f.read(24) == struct.pack(">iiiiii", 5, 0, 10, 4096, 20, 9000)
    index.close()
    assert os.path.getsize(path) == 24  # trimmed on close
    again = OffsetIndex(path, 100, 80)
    assert again.entries == 3 and again.last_offset == 120
    again.sanity_check()
    assert again.is_full()  # a trimmed index is full until resized (the active segment is resized at load)
    again.resize(80)
    assert not again.is_full()
    again.close()


def test_offsets_must_increase_and_fit(tmp_path):
    index = OffsetIndex(str(tmp_path / "0.index"), 0, 1024)
    index.append(10, 0)
    with pytest.raises(ValueError):
        index.append(10, 100)
    with pytest.raises(ValueError):
        index.append(1 << 31, 200)
    assert index.can_append_offset((1 << 31) - 1)
    assert not index.can_append_offset(1 << 31)
    index.close()


def test_full_index_refuses(tmp_path):
    index = OffsetIndex(str(tmp_path / "0.index"), 0, 16)
    index.append(1, 0)
    index.append(2, 10)
    assert index.is_full()
    with pytest.raises(ValueError):
        index.append(3, 20)
    index.close()


def test_truncate_to(tmp_path):
    index = OffsetIndex(str(tmp_path / "0.index"), 0, 1024)
    for i in range(1, 6):
        index.append(i * 10, i * 100)
    index.truncate_to(30)  # removes the entry for 30 and above
    assert list(index.keys) == [10, 20]
    index.truncate_to(25)
    assert list(index.keys) == [10, 20]
    index.truncate_to(5)
    assert index.entries == 0
    index.close()


def test_zero_tail_of_an_untrimmed_index_is_not_entries(tmp_path):
    path = str(tmp_path / "0.index")
    index = OffsetIndex(path, 0, 1024)
    index.append(3, 0)
    index.append(9, 500)
    index.flush()
    index.close_handler()  # a crash after a flush: the preallocated file is never trimmed
    assert os.path.getsize(path) == 1024
    loaded = OffsetIndex(path, 0, 1024)
    assert list(loaded.keys) == [3, 9]
    loaded.sanity_check()
    loaded.close()


def test_out_of_order_entries_are_corrupt(tmp_path):
    path = str(tmp_path / "0.index")
    with open(path, "wb") as f:
        f.write(struct.pack(">iiii", 10, 100, 5, 50))
    index = OffsetIndex(path, 0, 1024)
    with pytest.raises(CorruptIndexError):
        index.sanity_check()
    index.close_handler()


def test_partial_entry_is_corrupt(tmp_path):
    path = str(tmp_path / "0.index")
    with open(path, "wb") as f:
        f.write(struct.pack(">ii", 10, 100) + b"\x00\x01")
    index = OffsetIndex(path, 0, 1024)
    with pytest.raises(CorruptIndexError):
        index.sanity_check()
    index.close_handler()


def open_fds() -> set[str]:
    return {os.readlink(f"/proc/self/fd/{fd}") for fd in os.listdir("/proc/self/fd")
            if os.path.exists(f"/proc/self/fd/{fd}")}


def test_a_descriptor_is_held_only_while_entries_are_written(tmp_path):
    path = str(tmp_path / "00000000000000000000.index")
    index = OffsetIndex(path, 0, 800)
    assert path not in open_fds()  # created and preallocated, then closed
    index.append(5, 100)
    assert path not in open_fds()  # the entry waits in memory for a page of others, a flush or a trim
    index.flush()
    assert path in open_fds()  # the active segment's index keeps its descriptor for the next entries
    index.trim_to_valid_size()  # rolled: read-only from now on, entries stay in memory
    assert path not in open_fds() and index.lookup(7) == (5, 100)
    index.resize(800)  # made active again (truncation): the next write opens it again
    index.append(9, 200)
    index.flush()
    index.close()
    assert path not in open_fds()
    with open(path, "rb") as f:
        assert f.read() == struct.pack(">iiii", 5, 100, 9, 200)
    with pytest.raises(ValueError):
        index.append(20, 300)  # closed for good


def test_an_untrimmed_index_loads_up_to_its_zero_tail(tmp_path, monkeypatch):
    path = str(tmp_path / "00000000000000000000.index")
    index = OffsetIndex(path, 0, 10 * 1024 * 1024)
    for i in range(3):
        index.append(10 * (i + 1), 4096 * (i + 1))
    index.release()  # a crash: never trimmed, 10 MB of preallocated zeros after three entries
    read = []
    real_pread = os.pread
    monkeypatch.setattr(os, "pread", lambda fd, n, at: read.append(n) or real_pread(fd, n, at))
    again = OffsetIndex(path, 0, 10 * 1024 * 1024)
    assert [again.entry(i) for i in range(again.entries)] == [(10, 4096), (20, 8192), (30, 12288)]
    assert sum(read) < 1024 * 1024  # the zero tail is not read whole
    again.sanity_check()
    again.close()


def test_entries_are_written_a_page_at_a_time_and_truncation_drops_unwritten_ones(tmp_path):
    from storage.index import PENDING_BYTES

    path = str(tmp_path / "00000000000000000000.index")
    index = OffsetIndex(path, 0, 64 * 1024)
    per_page = PENDING_BYTES // 8
    for i in range(per_page + 10):
        index.append(10 * (i + 1), 100 * i)

    def on_disk(n: int) -> list[tuple[int, int]]:
        with open(path, "rb") as f:
            data = f.read(8 * n)
        return [struct.unpack_from(">ii", data, 8 * k) for k in range(n)]

    assert on_disk(per_page + 10) == [(10 * (i + 1), 100 * i) for i in range(per_page)] + [(0, 0)] * 10
    index.truncate_to(10 * (per_page + 5))  # keeps 5 of the unwritten entries
    index.append(10 * (per_page + 5) + 1, 100 * (per_page + 5))
    index.truncate_to(10 * (per_page - 2))  # below what is written: the file's later entries are stale
    index.append(10 * (per_page - 2) + 3, 100 * (per_page - 3) + 1)
    index.flush()
    expected = [(10 * (i + 1), 100 * i) for i in range(per_page - 3)] + [(10 * (per_page - 2) + 3, 100 * (per_page - 3) + 1)]
    assert on_disk(per_page - 2) == expected
    index.close()
    assert os.path.getsize(path) == 8 * (per_page - 2)
    again = OffsetIndex(path, 0, 64 * 1024)
    assert list(zip(again.keys, again.values, strict=True)) == expected
    again.close()


def test_a_flush_on_another_thread_while_entries_are_appended_writes_each_once(tmp_path):
    import threading

    path = str(tmp_path / "00000000000000000000.index")
    index = OffsetIndex(path, 0, 1024 * 1024)
    done = threading.Event()

    def flush() -> None:
        while not done.is_set():
            index.flush()

    flusher = threading.Thread(target=flush)
    flusher.start()
    try:
        for i in range(20_000):
            index.append(i + 1, i)
    finally:
        done.set()
        flusher.join()
    index.close()
    again = OffsetIndex(path, 0, 1024 * 1024)
    assert list(again.keys) == list(range(1, 20_001)) and list(again.values) == list(range(20_000))
    again.close()
