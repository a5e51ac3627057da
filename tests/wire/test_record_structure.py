"""wire._record_structure: the records of a client batch read as Kafka 4.4 reads them, and the one-layout fast path
deciding exactly as the record-by-record walk does."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.pykbroker.handlers.garbled_batches import CASES, KAFKA_44, body, record, varint
from wire import CompressionType, ErrorCode, InvalidRecordError, RecordError, decompress
from wire import _record_structure as structure

OVERHEAD = 61


def outcome(check, *args) -> int | None:
    """The error code the check refuses with, None when it accepts."""
    try:
        check(*args)
    except RecordError as exc:
        return exc.error_code
    return None


def bytecodes(call) -> int:
    """How many bytecodes ``call()`` runs (and must answer None)."""
    import sys
    counted = [0]

    def trace(frame, event, _arg):
        if event == "call":
            frame.f_trace_opcodes = True
        elif event == "opcode":
            counted[0] += 1
        return trace
    sys.settrace(trace)
    try:
        assert call() is None
    finally:
        sys.settrace(None)
    return counted[0]


def records_of(data: bytes) -> tuple[bytes, int]:
    count = int.from_bytes(data[57:61], "big")
    if data[22] & 0x07:
        return decompress(data[22] & 0x07, data[OVERHEAD:]), count
    return data[OVERHEAD:], count


EXPECTED = {0: None, ErrorCode.INVALID_RECORD: ErrorCode.INVALID_RECORD,
            ErrorCode.UNKNOWN_SERVER_ERROR: ErrorCode.UNKNOWN_SERVER_ERROR}


@pytest.mark.parametrize("name", [n for n, (kind, data) in CASES.items()
                                  if kind == "plain" and n != "second_batch_garbled"])
def test_each_case_as_kafka_reads_it(name):
    data = CASES[name][1]
    records, count = records_of(data)
    if data[22] & 0x07:
        assert outcome(structure.check_decompressed_records, records, count) == EXPECTED[KAFKA_44[name]]
    else:
        assert outcome(structure.check_records, data, OVERHEAD, len(data), count) == EXPECTED[KAFKA_44[name]]
        assert outcome(structure._walk_uncompressed, data, OVERHEAD, len(data), count) == EXPECTED[KAFKA_44[name]]


def uniform(n: int, key: int, value: int, headers: int, step: int = 0) -> bytes:
    return b"".join(record(body(i, b"k" * key if key >= 0 else None, b"v" * value if value >= 0 else None,
                                [(b"h%d" % h, b"x" * h) for h in range(headers)], ts_field=varint(i * step)))
                    for i in range(n))


@settings(max_examples=150, deadline=None)
@given(n=st.integers(1, 140), key=st.integers(-1, 20), value=st.integers(-1, 300), headers=st.integers(0, 3),
       step=st.sampled_from([0, 1, 40, 3000, 200_000]),
       flips=st.lists(st.tuples(st.integers(0, 1 << 20), st.integers(1, 255)), max_size=3),
       cut=st.integers(-3, 3), count_delta=st.integers(-1, 1))
def test_the_layout_match_decides_as_the_walk(n, key, value, headers, step, flips, cut, count_delta):
    """A batch of one layout (which primes the fast path) garbled at random: the fast path and the walk agree."""
    good = uniform(n, key, value, headers, step)
    assert outcome(structure.check_records, good, 0, len(good), n) is None
    if step < 200_000:  # timestamp deltas of up to 3 bytes: the layout tried first now
        assert structure._last.one.subn(b"", good) == (b"", n)
    data = bytearray(good)
    for at, xor in flips:
        data[at % len(data)] ^= xor
    data = data[:len(data) + cut] if cut < 0 else data + b"\x00" * cut
    count = n + count_delta
    assert outcome(structure.check_records, data, 0, len(data), count) \
        == outcome(structure._walk_uncompressed, data, 0, len(data), count)


@pytest.mark.parametrize("step", [0, 3, 50])
def test_records_whose_delta_widths_grow_are_counted_in_runs(step):
    """ProducerPerformance's 100 B batches (~590 records): the offset delta takes two bytes from the 65th record on,
    the timestamp delta two from 64 ms after the first record and three from 8.2 s; the batch is runs of one width
    each (the staircase), counted by their lengths, not the alternatives' run counted again."""
    good = uniform(300, -1, 100, 0, step)
    assert outcome(structure.check_records, good, 0, len(good), 300) is None
    assert structure._staircase_count(structure._last, good, 0, len(good)) == 300
    assert outcome(structure.check_records, good, 0, len(good), 299) == ErrorCode.INVALID_RECORD
    short = good[:-1]
    assert outcome(structure.check_records, short, 0, len(short), 300) \
        == outcome(structure._walk_uncompressed, short, 0, len(short), 300)
    records = [uniform(1, -1, 100, 0)] + [record(body(i, None, b"v" * 100, ts_field=varint(i * step)))
                                          for i in range(1, 300)]
    shrinking = b"".join(records[150:] + records[:150])  # widths shrink halfway (read by the run)
    assert structure._staircase_count(structure._last, shrinking, 0, len(shrinking)) == -1
    assert outcome(structure.check_records, shrinking, 0, len(shrinking), 300) is None


def test_a_batch_of_mixed_layouts_is_walked():
    mixed = record(body(0, b"k", b"short")) + record(body(1, b"key", b"a longer value")) + record(body(2, None, None))
    assert outcome(structure.check_records, mixed, 0, len(mixed), 3) is None
    assert outcome(structure.check_records, mixed[:-1], 0, len(mixed) - 1, 3) == ErrorCode.INVALID_RECORD


def test_compressed_records_out_of_order_cannot_be_rebuilt():
    data = record(body(0)) + record(body(2)) + record(body(1))
    assert outcome(structure.check_decompressed_records, data, 3) == ErrorCode.UNKNOWN_SERVER_ERROR
    assert outcome(structure.check_decompressed_records, record(body(0)) + record(body(1)), 2) is None
    assert CompressionType.GZIP  # the compressed cases above are gzip (garbled_batches.GZ)


@settings(max_examples=150, deadline=None)
@given(records=st.lists(st.tuples(st.integers(-1, 12), st.integers(-1, 200), st.integers(0, 2),
                                  st.integers(-100, 100_000)), min_size=1, max_size=20),
       flips=st.lists(st.tuples(st.integers(0, 1 << 20), st.integers(1, 255)), max_size=3),
       cut=st.integers(-3, 3), count_delta=st.integers(-1, 1))
def test_the_walk_refuses_what_the_record_decoder_refuses(records, flips, cut, count_delta):
    """Records of varying layouts garbled at random: accepted exactly when wire's whole-record decoder (another
    implementation of the same reading) decodes them."""
    from wire._records import _decode_record_list
    data = bytearray(b"".join(record(body(i, b"k" * key if key >= 0 else None, b"v" * value if value >= 0 else None,
                                          [(b"h", b"x" * h) for h in range(headers)], ts_field=varint(ts)))
                              for i, (key, value, headers, ts) in enumerate(records)))
    for at, xor in flips:
        data[at % len(data)] ^= xor
    data = data[:len(data) + cut] if cut < 0 else data + b"\x00" * cut
    count = len(records) + count_delta
    try:
        _decode_record_list(bytes(data), count)
        decoded = True
    except InvalidRecordError:
        decoded = False
    assert (outcome(structure.check_records, data, 0, len(data), count) is None) == decoded


def in_place_reference(data: bytes | bytearray, count: int) -> None:
    """Kafka's in-place reading alone (what check_decompressed_records answers, however it gets there)."""
    if not structure._read_in_place(data, count, None):
        raise structure.UnrebuildableBatchError("offset deltas out of order")


@settings(max_examples=200, deadline=None)
@given(n=st.integers(1, 200), key=st.integers(-1, 20), value=st.integers(-1, 300), headers=st.integers(0, 2),
       step=st.sampled_from([0, 1, 40, 3000]), swap=st.one_of(st.none(), st.tuples(st.integers(), st.integers())),
       offset_field=st.one_of(st.none(), st.tuples(st.integers(), st.sampled_from([b"\x80\x00", b"\x02", b"\x81\x01"]))),
       flips=st.lists(st.tuples(st.integers(0, 1 << 20), st.integers(1, 255)), max_size=2),
       cut=st.integers(-2, 2), count_delta=st.integers(-1, 1))
def test_compressed_records_of_the_last_layout_decide_as_kafka_reads_them_in_place(n, key, value, headers, step, swap,
                                                                                   offset_field, flips, cut,
                                                                                   count_delta):
    """A compressed batch of the layout that matched last (its one-byte offset deltas sliced out, or the batch split
    by the layout's record): records swapped, an offset delta rewritten (overlong too), garbled at random, accept
    and refuse as Kafka's in-place reading does."""
    def one(i: int, field: bytes | None = None) -> bytes:
        return record(body(i, b"k" * key if key >= 0 else None, b"v" * value if value >= 0 else None,
                           [(b"h%d" % h, b"x" * h) for h in range(headers)], ts_field=varint(i * step),
                           offset_field=field))
    good = [one(i) for i in range(n)]
    primer = b"".join(good)
    assert outcome(structure.check_decompressed_records, primer, n) is None  # the layout matched last now
    records = list(good)
    if swap is not None:
        i, j = swap[0] % n, swap[1] % n
        records[i], records[j] = records[j], records[i]
    if offset_field is not None:
        i = offset_field[0] % n
        records[i] = one(i, offset_field[1])
    data = bytearray(b"".join(records))
    for at, xor in flips:
        data[at % len(data)] ^= xor
    data = data[:len(data) + cut] if cut < 0 else data + b"\x00" * cut
    count = n + count_delta
    assert outcome(structure.check_decompressed_records, bytes(data), count) \
        == outcome(in_place_reference, bytes(data), count)


@settings(max_examples=100, deadline=None)
@given(records=st.lists(st.tuples(st.integers(-1, 3), st.integers(-1, 9000), st.integers(0, 300)), min_size=1,
                        max_size=80),
       rewrite=st.one_of(st.none(), st.tuples(st.integers(), st.sampled_from([b"\x80\x00", b"\x02", b"\x81\x01"]))))
def test_compressed_records_of_varying_layouts_decide_as_kafka_reads_them_in_place(records, rewrite):
    """Records of varying keys and values (checked by the steps or the walk, then their offset deltas by a match a
    record), one offset delta rewritten (overlong too): accepted and refused as Kafka's in-place reading does."""
    fields = [(b"k" * key if key >= 0 else None, b"v" * value if value >= 0 else None, ts) for key, value, ts in records]
    where = rewrite[0] % len(records) if rewrite is not None else -1
    data = b"".join(record(body(i, key, value, ts_field=varint(ts), offset_field=rewrite[1] if i == where else None))
                    for i, (key, value, ts) in enumerate(fields))
    assert outcome(structure.check_decompressed_records, data, len(records)) \
        == outcome(in_place_reference, data, len(records))


def test_a_compressed_batch_of_more_records_than_two_byte_offset_deltas_is_walked():
    """9,000 records (offset deltas of three bytes from the 8,193rd: not compared at C level, no split of that many
    kept): accepted in order, refused with the last two swapped."""
    records = [record(body(i, None, b"v")) for i in range(9000)]
    data = b"".join(records)
    for _ in range(2):
        assert outcome(structure.check_decompressed_records, data, 9000) is None
    swapped = b"".join(records[:-2] + [records[-1], records[-2]])
    assert outcome(structure.check_decompressed_records, swapped, 9000) == ErrorCode.UNKNOWN_SERVER_ERROR
    assert max(structure._in_order_splits, default=0) <= structure._MAX_IN_ORDER


@pytest.mark.parametrize("n, size, step, most", [(160, 100, 0, 200), (54, 1024, 0, 100), (160, 100, 3, 270),
                                                 (54, 1024, 3, 200)])
def test_a_compressed_batch_of_the_last_layout_takes_no_walk(n, size, step, most):
    """Java producers' lz4 batches (160 records of 100 B, offset deltas of two bytes from the 65th; 54 of 1 KiB), their
    timestamp deltas one to two bytes wide: read in C-level passes, about 80 (one run) to 250 bytecodes a batch (the
    walk of their offset deltas alone took ~20 a record)."""
    data = b"".join(record(body(i, None, bytes([65 + i % 26]) * size, ts_field=varint(i * step))) for i in range(n))
    for _ in range(2):  # its layout read and compiled, then what n records in order split into made
        assert outcome(structure.check_decompressed_records, data, n) is None
    counted = bytecodes(lambda: outcome(structure.check_decompressed_records, data, n))
    assert counted < most, counted


def test_layouts_seen_lately_are_tried_before_a_layout_is_read(monkeypatch):
    """Producers of several layouts taking turns: each batch matches a recent layout, none is read again."""
    batches = [(uniform(10, 3, 100, 0), 10), (uniform(20, -1, 1000, 1), 20), (uniform(5, 8, 10, 2), 5)]
    for data, n in batches:
        assert outcome(structure.check_records, data, 0, len(data), n) is None

    def unexpected(*args):
        raise AssertionError("a recent layout was read again")
    monkeypatch.setattr(structure, "_layout", unexpected)
    for data, n in [batches[0], batches[2], batches[1], batches[0]]:
        assert outcome(structure.check_records, data, 0, len(data), n) is None


def varying(sizes: list[int], key: int, headers: int) -> bytes:
    return b"".join(record(body(i, b"k" * key if key >= 0 else None, b"v" * size if size >= 0 else None,
                                [(b"h%d" % h, b"x" * h) for h in range(headers)], ts_field=varint(i * 40)))
                    for i, size in enumerate(sizes))


@settings(max_examples=150, deadline=None)
@given(sizes=st.lists(st.integers(-1, 9000), min_size=1, max_size=30), key=st.integers(-1, 20),
       headers=st.integers(0, 2), split=st.integers(0, 30), other_key=st.integers(-1, 3),
       flips=st.lists(st.tuples(st.integers(0, 1 << 20), st.integers(1, 255)), max_size=3),
       cut=st.integers(-3, 3), count_delta=st.integers(-1, 1))
def test_the_varying_steps_decide_as_the_walk(sizes, key, headers, split, other_key, flips, cut, count_delta):
    """Records of one layout but their value lengths (the steps read them, but lengths of 3 bytes), the key changing
    after ``split`` records, garbled at random: check_records and the walk agree."""
    good = varying(sizes[:split], key, headers) + varying(sizes[split:], other_key, headers)
    assert outcome(structure.check_records, good, 0, len(good), len(sizes)) is None
    data = bytearray(good)
    for at, xor in flips:
        data[at % len(data)] ^= xor
    data = data[:len(data) + cut] if cut < 0 else data + b"\x00" * cut
    count = len(sizes) + count_delta
    assert outcome(structure.check_records, data, 0, len(data), count) \
        == outcome(structure._walk_uncompressed, data, 0, len(data), count)


@pytest.mark.parametrize("key, headers", [(-1, 0), (8, 1)])
def test_a_batch_of_varying_values_is_stepped_not_walked(key, headers):
    """54 records of 800 to 1200-byte values (null keys and no headers; keys and a header): about 40 bytecodes a
    record, where the walk takes 175 to 330."""
    import random
    rnd = random.Random(key)
    sizes = [rnd.randint(800, 1200) for _ in range(54)]
    data = bytearray(varying(sizes, key, headers))
    for _ in range(2):  # the layout seen, then compiled
        assert outcome(structure.check_records, data, 0, len(data), 54) is None
    counted = bytecodes(lambda: outcome(structure.check_records, data, 0, len(data), 54))
    # ~38 a record: ~2,500, more with recent one-layout patterns tried first (walked: 9,368 and 17,978)
    assert counted < 4000, counted
