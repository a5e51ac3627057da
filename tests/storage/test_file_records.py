import os

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from storage.file_records import FileRecords
from storage.offset_index import OffsetIndex
from wire import Writer

from .conftest import batch


def test_scan_stops_at_torn_and_corrupt_batches(tmp_path):
    path = str(tmp_path / "0.log")
    records = FileRecords(path, create=True)
    one = batch([b"a" * 50])
    for _ in range(3):
        records.append(one)
    seen = []
    result = records.scan(lambda pos, h, buf, p: seen.append(pos))
    assert result == (3 * len(one), None) and seen == [0, len(one), 2 * len(one)]
    records.append(one[:40])  # torn
    assert records.scan(lambda *a: None) == (3 * len(one), None)
    records.truncate_to(3 * len(one))
    bad = bytearray(one)
    bad[-1] ^= 1
    records.append(bytes(bad))
    assert records.scan(lambda *a: None) == (3 * len(one), "CRC mismatch")
    records.close()


def test_region_goes_into_a_response_as_its_own_part(tmp_path):
    records = FileRecords(str(tmp_path / "0.log"), create=True)
    records.append(b"x" * 100)
    region = records.region(10, 50)
    w = Writer()
    w.records(region, flexible=True)
    assert region in w.parts()
    records.close()  # the owner lets go; the region still reads
    assert region.read_bytes() == b"x" * 50
    fd = region.file.fileno()
    region.release()
    try:
        os.fstat(fd)
        closed = False
    except OSError:
        closed = True
    assert closed  # the last reference closed the descriptor


@settings(max_examples=50, deadline=None)
@given(st.lists(st.integers(1, 1000), min_size=0, max_size=60, unique=True), st.integers(0, 70_000))
def test_offset_index_lookup_is_the_greatest_lower_bound(tmp_path_factory, relative, target):
    path = str(tmp_path_factory.mktemp("idx") / "0.index")
    index = OffsetIndex(path, 1000, 1024)
    entries = sorted(relative)
    for i, r in enumerate(entries):
        index.append(1000 + r, i * 100)
    lower = [(1000 + r, i * 100) for i, r in enumerate(entries) if 1000 + r <= target]
    assert index.lookup(target) == (lower[-1] if lower else (1000, 0))
    index.close()
    reloaded = OffsetIndex(path, 1000, 1024)
    assert list(reloaded.keys) == [1000 + r for r in entries]
    reloaded.close()


def test_batches_from_walks_batches_of_every_size_across_its_growing_reads(tmp_path):
    records = FileRecords(str(tmp_path / "0.log"), create=True)
    sizes = [30, 5000, 30, 300, 200_000, 30, *[700] * 300, 90_000, 30]  # small, and larger than any one read
    expected = []
    for n in sizes:
        expected.append(records.size)
        records.append(batch([b"v" * n]))
    assert [pos for pos, _ in records.batches_from()] == expected
    assert [pos for pos, _ in records.batches_from(expected[3])] == expected[3:]
    assert [pos for pos, _ in records.batches_from(0, expected[-1])] == expected[:-1]  # a batch past ``end`` is left out
    records.close()


def test_an_append_written_in_short_writes_is_whole_and_a_failed_one_leaves_nothing(tmp_path, monkeypatch):
    """pwrite may write less than asked: the rest follows until all of it is written. A write that fails cuts the
    file back to where the append started."""
    from storage import file_records

    records = FileRecords(str(tmp_path / "0.log"), create=True)
    one, two = batch([b"a" * 50]), batch([b"b" * 3000])
    records.append(one)
    real = os.pwrite
    monkeypatch.setattr(file_records.os, "pwrite", lambda fd, data, at: real(fd, bytes(data)[:700], at))
    assert records.append(bytearray(two)) == len(one)
    assert records.size == len(one) + len(two)
    with open(records.path, "rb") as f:
        assert f.read() == one + two

    def full(fd, data, at):
        real(fd, bytes(data)[:100], at)
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(file_records.os, "pwrite", full)
    with pytest.raises(OSError):
        records.append(two)
    assert records.size == os.path.getsize(records.path) == len(one) + len(two)
    records.close()
