import os
import struct

import pytest

from storage.errors import CorruptIndexError
from storage.time_index import TimeIndex


def test_maybe_append_lookup_format(tmp_path):
    path = str(tmp_path / "00000000000000000050.timeindex")
    index = TimeIndex(path, 50, 120)
    assert index.max_entries == 10
    assert index.last_entry == (-1, 50)
    index.maybe_append(1000, 55)
    index.maybe_append(1000, 56)  # same timestamp: ignored
    index.maybe_append(2000, 60)
    assert index.entries == 2
    assert index.lookup(999) == (-1, 50)
    assert index.lookup(1500) == (1000, 55)
    assert index.lookup(5000) == (2000, 60)
    with pytest.raises(ValueError):
        index.maybe_append(3000, 59)  # offsets may not go back
    index.flush()  # entries are written together (a page of them, or at a flush or trim)
    with open(path, "rb") as f:
        assert f.read(24) == struct.pack(">qiqi", 1000, 5, 2000, 10)
    index.close()
    assert os.path.getsize(path) == 24


def test_full_keeps_one_slot_for_roll(tmp_path):
    index = TimeIndex(str(tmp_path / "0.timeindex"), 0, 36)
    index.maybe_append(1, 1)
    index.maybe_append(2, 2)
    assert index.is_full()  # 2 of 3 slots
    with pytest.raises(ValueError):
        index.maybe_append(3, 3)
    index.maybe_append(3, 3, skip_full_check=True)
    assert index.entries == 3
    index.close()


def test_truncate_to_offset(tmp_path):
    index = TimeIndex(str(tmp_path / "0.timeindex"), 0, 1200)
    for i in range(1, 6):
        index.maybe_append(i * 100, i * 10)
    index.truncate_to(30)
    assert list(index.values) == [10, 20]
    index.close()


def test_decreasing_timestamps_are_corrupt(tmp_path):
    path = str(tmp_path / "0.timeindex")
    with open(path, "wb") as f:
        f.write(struct.pack(">qiqi", 2000, 5, 1000, 10))
    index = TimeIndex(path, 0, 1200)
    with pytest.raises(CorruptIndexError):
        index.sanity_check()
    index.close_handler()
