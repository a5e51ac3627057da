"""The records inside a client's batch, walked as Kafka 4.4's LogValidator walks them before appending.

Kafka iterates every record of every client batch, and a record it cannot read fails the produce, so nothing
a consumer cannot read is stored (judged with raw produces against a Kafka 4.4 single node):

* ``check_records`` — an uncompressed batch (DefaultRecord.readFrom over the batch's buffer): each of the
  ``records_count`` records' length varint, then attributes, timestamp and offset deltas, key, value and
  headers read in bounds, the fields spanning exactly the length; no bytes left after the last record.
  Anything else is INVALID_RECORD (InvalidRecordError), but a length varint longer than 5 bytes, which
  Kafka's reader lets escape as an IllegalArgumentException: UNKNOWN_SERVER_ERROR (UndecodableBatchError).
  Offset deltas are not checked (Kafka keeps them as written), nor record attributes, nor non-minimal varints.
* ``check_decompressed_records`` — a compressed batch's records, as Kafka reads them in place
  (DefaultRecord.readPartiallyFrom): the length varint is only checked not negative (a length that does not
  match the fields is stored, as Kafka stores it), the fields read in order within the decompressed data,
  nothing left over; offset deltas other than 0..n-1 make Kafka rebuild the batch from records it never
  read whole and fail: UNKNOWN_SERVER_ERROR. When the topic's compression.type rebuilds the batch, Kafka reads
  the records whole (as an uncompressed batch's, an overlong length INVALID_RECORD) and renumbers their offsets
  (storage.log_validator.maybe_recompress).

Cost: a produce's batch is the hot path. Batches whose records all have one layout (same key and value lengths and
headers, any timestamp and offset deltas of up to 3 bytes each: what a producer sends of fixed-size records) are
checked by C-level regular-expression matches compiled once per layout and tried first for the next batch. First
the layout's staircase, one match for the whole batch, compressed or not: runs of records of one width each, a
possessive group a run, their timestamp deltas of 1, 2, then 3 bytes and within each their offset deltas of 1 then 2
(a producer's timestamps and offsets only grow, so their widths never shrink). A run's length counts its records;
in a compressed batch kept as sent each run's offset deltas are also sliced out at its stride and compared with its
part of 0..n-1. A Java producer's batches, process time: 590 records of 100 B uncompressed ~25 us (its offset deltas
two bytes from the 65th record; timestamp deltas growing to two bytes took ~115 us as a run of alternatives counted
again), 63 of 1 KiB ~3 us; lz4's 564 of 100 B ~25 us and ~180 to 240 bytecodes, 58 of 1 KiB (one run: its offset
deltas compared without a loop over the runs) ~3 us and ~70.
Else, uncompressed, a run of the layout's records of any widths from end to end (which can be read one way only),
counted by ``Pattern.subn``; compressed, ``Pattern.split`` by the layout's record as Kafka reads it in place, its
offset delta captured, compared with the split that n records in order give (empty gaps between the minimal varints
0..n-1; a batch not of the layout stops the split at once).
Batches of varying value lengths (one key length and headers layout) take one match a record capturing its length
varints, Python jumping the value (~38 bytecodes a record, the walk 175 to 330), compiled when a batch starts with
it a second time; what neither reads (records of changing key lengths, values of 8 KiB or more) is walked record by
record in Python, from the first record not read whole. A compressed batch that neither C-level pass accepts goes
through the same checks on its decompressed records (their strict reading implies Kafka's in-place one), then its
offset deltas are matched a record at a time (~30 bytecodes a record where the walk took ~70: 54 records of 800 to
1,200 bytes ~4,300 bytecodes, was ~6,400); Kafka's laxer in-place reading runs only when the strict one refuses, and
decides.
"""

from __future__ import annotations

import re
from functools import cache
from typing import NamedTuple

from wire._compression import InvalidRecordError, UndecodableBatchError, UnrebuildableBatchError
from wire._primitives import _uvarint_bytes

__all__ = ["check_decompressed_records", "check_records", "read_in_place"]

Buffer = bytes | bytearray | memoryview


def _invalid(message: str) -> InvalidRecordError:
    return InvalidRecordError(message)


def _varint(buf: Buffer, pos: int, end: int, max_bytes: int) -> tuple[int, int]:
    """A zigzag varint of at most ``max_bytes`` bytes at ``pos`` (IndexError past ``end``; ValueError when
    longer): Kafka's ByteUtils.readVarint / readVarlong."""
    if pos >= end:
        raise IndexError
    b = buf[pos]
    pos += 1
    if b < 0x80:
        return (b >> 1) ^ -(b & 1), pos
    value = b & 0x7F
    shift = 7
    while True:
        if pos >= end:
            raise IndexError
        b = buf[pos]
        pos += 1
        value |= (b & 0x7F) << shift
        if b < 0x80:
            break
        shift += 7
        if shift >= 7 * max_bytes:
            raise ValueError("varint too long")
    bits = 32 if max_bytes == 5 else 64
    value &= (1 << bits) - 1
    return (value >> 1) ^ -(value & 1), pos


def _walk_uncompressed(buf: Buffer, pos: int, end: int, count: int) -> None:
    """Kafka's uncompressed record iterator over ``count`` records in ``buf[pos:end]`` (varints of one and two bytes
    read inline: this walk is per record, for batches of varying layouts)."""
    data = bytes(buf[pos:end])  # a copy indexes fastest, and ends where the batch ends (IndexError past it)
    end = len(data)
    pos = 0
    varint = _varint
    for _ in range(count):
        try:
            b = data[pos]
            if b < 0x80:
                size = (b >> 1) ^ -(b & 1)
                pos += 1
            else:
                c = data[pos + 1]
                if c < 0x80:
                    u = (b & 0x7F) | (c << 7)
                    size = (u >> 1) ^ -(u & 1)
                    pos += 2
                else:
                    size, pos = varint(data, pos, end, 5)
        except IndexError:
            raise _invalid("Incorrect declared batch size, premature EOF reached") from None
        except ValueError:
            raise UndecodableBatchError("record length varint is longer than 5 bytes") from None
        if end - pos < size:
            raise _invalid(f"Invalid record size: expected {size} bytes in record payload, but instead the buffer "
                           f"has only {end - pos} remaining bytes.")
        start = pos
        try:
            pos += 1  # attributes
            if data[pos] < 0x80:  # timestamp delta
                pos += 1
            elif data[pos + 1] < 0x80:
                pos += 2
            else:
                pos = varint(data, pos, end, 10)[1]
            if data[pos] < 0x80:  # offset delta (two bytes from the 65th record)
                pos += 1
            elif data[pos + 1] < 0x80:
                pos += 2
            else:
                pos = varint(data, pos, end, 5)[1]
            # key, then value: a length (odd when negative: no bytes), then its bytes
            b = data[pos]
            if b < 0x80:
                pos += 1 if b & 1 else 1 + (b >> 1)
            else:
                length, pos = varint(data, pos, end, 5)
                if length > 0:
                    pos += length
            b = data[pos]  # past the end: IndexError
            if b < 0x80:
                pos += 1 if b & 1 else 1 + (b >> 1)
            elif data[pos + 1] < 0x80:
                pos += 2 if b & 1 else 2 + (((b & 0x7F) | (data[pos + 1] << 7)) >> 1)
            else:
                length, pos = varint(data, pos, end, 5)
                if length > 0:
                    pos += length
            if pos < end and data[pos] == 0:  # no headers (past the end: the else reads, IndexError)
                pos += 1
            else:
                headers, pos = varint(data, pos, end, 5)
                if headers < 0 or headers > end - pos:
                    raise _invalid(f"Found invalid number of record headers {headers}")
                for _ in range(headers):
                    length, pos = varint(data, pos, end, 5)
                    if length < 0:
                        raise _invalid(f"Invalid negative header key size {length}")
                    if pos + length > end:
                        raise IndexError
                    length, pos = varint(data, pos + length, end, 5)
                    if length > 0:
                        if pos + length > end:
                            raise IndexError
                        pos += length
        except (IndexError, ValueError):
            raise _invalid("Found invalid record structure") from None
        if pos - start != size:
            raise _invalid(f"Invalid record size: expected to read {size} bytes in record payload, but instead read "
                           f"{pos - start}")
    if pos != end:
        raise _invalid("Incorrect declared batch size, records still remaining in file")


def _zigzag(value: int) -> bytes:
    """``value`` as the minimal zigzag varint a record length or field length is written in."""
    return _uvarint_bytes(((value << 1) ^ (value >> 31)) & 0xFFFFFFFF)


_WIDTH = {1: b"[\\x00-\\x7f]", 2: b"[\\x80-\\xff][\\x00-\\x7f]", 3: b"[\\x80-\\xff]{2}[\\x00-\\x7f]"}
_VARINT = b"[\\x80-\\xff]{0,4}[\\x00-\\x7f]"  # any varint Kafka's ByteUtils.readVarint reads
_VARLONG = b"[\\x80-\\xff]{0,9}[\\x00-\\x7f]"  # any varlong its readVarlong reads


class _Layout(NamedTuple):
    source: bytes  # regex source of one record of the layout
    in_place: bytes  # regex source of one record of the layout as Kafka reads it in place, its offset delta a group
    staircase: bytes  # regex source of a batch of the layout whose delta widths never shrink (a group a width pair)
    steps: tuple[tuple[bool, int, int], ...]  # each group's: offset deltas of two bytes, record width, their place


def _layout(buf: Buffer, pos: int, end: int, count: int) -> _Layout | None:
    """The layout of the record at ``pos``: its key and value lengths and headers, any attributes, and timestamp
    and offset deltas of 1 to 3 bytes each (its length following their widths). None when that record cannot be
    read (the walk then says why), has another layout (a non-minimal length), or the batch cannot be ``count``
    records of it (its length out of the layout's bounds, its second record's length not one the layout allows):
    a batch of varying records must not compile a layout each."""
    try:
        size, body = _varint(buf, pos, end, 5)
        _, p = _varint(buf, body + 1, end, 10)
        timestamp_width = p - body - 1
        _, after = _varint(buf, p, end, 5)
        offset_width = after - p
        p = after
        base = size - timestamp_width - offset_width + 2  # the length with one-byte deltas (varying batches: None)
        if not count * (len(_zigzag(base)) + base) <= end - pos <= count * (len(_zigzag(base + 4)) + base + 4):
            return None
        literals = []  # (start, end, bytes that follow) of the varints the layout keeps as they are
        for i in range(2 + 1):  # key, value, then the header count
            length, after = _varint(buf, p, end, 5)
            literals.append((p, after, length if i < 2 and length > 0 else 0))
            p = after + (length if i < 2 and length > 0 else 0)
        headers = literals[-1]
        header_count = _varint(buf, headers[0], end, 5)[0]
        if not 0 <= header_count <= 64:
            return None
        for i in range(header_count * 2):
            length, after = _varint(buf, p, end, 5)
            if length < 0 and i % 2 == 0:
                return None  # a negative header key size
            literals.append((p, after, max(length, 0)))
            p = after + max(length, 0)
        if p - body != size or p > end or timestamp_width > 3 or offset_width > 3 or buf[pos:body] != _zigzag(size):
            return None
        if count > 1 and not base <= _varint(buf, p, end, 5)[0] < base + 5:
            return None
    except (IndexError, ValueError):
        return None
    tail = b"".join(re.escape(bytes(buf[start:stop])) + (b".{%d}" % following if following else b"")
                    for start, stop, following in literals)
    alternatives = []
    for extra in range(5):
        widths = [(t, extra + 2 - t) for t in (1, 2, 3) if 1 <= extra + 2 - t <= 3]
        alternatives.append(re.escape(_zigzag(base + extra)) + b".(?:"
                            + b"|".join(_WIDTH[t] + _WIDTH[o] for t, o in widths) + b")")
    lengths = b"|".join(re.escape(_zigzag(base + extra)) for extra in range(5))
    in_place = b"(?:" + lengths + b")." + _VARLONG + b"(" + _VARINT + b")" + tail
    staircase = []
    steps = []
    for timestamp in (1, 2, 3):  # timestamp deltas to 63 ms after the first record's, to 8 s, to 17 min
        for offset in (1, 2):  # offset deltas of one byte (to the 64th record), then two (to the 8,192nd)
            length = base + timestamp + offset - 2
            staircase.append(b"((?:" + re.escape(_zigzag(length)) + b"." + _WIDTH[timestamp] + _WIDTH[offset] + tail
                             + b")*+)")  # possessive: a record is of one run only (no backtracking state a record)
            steps.append((offset == 2, len(_zigzag(length)) + length, len(_zigzag(length)) + 1 + timestamp))
    return _Layout(b"(?:" + b"|".join(alternatives) + b")" + tail, in_place, b"".join(staircase), tuple(steps))


class _Patterns(NamedTuple):
    """A layout compiled: a batch of its records whose delta widths never shrink (runs of records of one width each,
    a group a run) and each group's records' width (their lengths count them) and where they have their offset
    deltas; with any widths, a run of them (one way to read it only) and one (to count); one read in place, its offset
    delta captured, or else the rest of the data (a compressed batch split by it, which stops at the first record not
    of the layout)."""
    staircase: re.Pattern[bytes]
    steps: tuple[tuple[bool, int, int], ...]
    run: re.Pattern[bytes]
    one: re.Pattern[bytes]
    in_place: re.Pattern[bytes]


_NEVER = re.compile(b"(?!)")
_layouts: dict[bytes, _Patterns] = {}
_MAX_LAYOUTS = 256
# The layout that matched last: a producer's next batch most likely has it too; then the others that matched
# lately, most recent first (producers of several layouts take turns: each is tried before a layout is read).
_last = _Patterns(_NEVER, (), _NEVER, _NEVER, _NEVER)
_recent: list[_Patterns] = []
_MAX_RECENT = 8


def check_records(buf: Buffer, pos: int, end: int, count: int) -> None:
    """Raise InvalidRecordError (or UndecodableBatchError) unless ``buf[pos:end]`` is ``count`` records Kafka
    reads (see the module's docstring)."""
    last = _last
    if _staircase_count(last, buf, pos, end) == count:
        return
    if last.run.fullmatch(buf, pos, end) is not None and last.one.subn(b"", memoryview(buf)[pos:end])[1] == count:
        return  # records of the layout from end to end, as many as the count says
    _check_records_slow(buf, pos, end, count)


def _staircase_count(patterns: _Patterns, buf: Buffer, pos: int, end: int) -> int:
    """How many records of the layout ``buf[pos:end]`` is as runs of one width each, their delta widths never
    shrinking (a producer's timestamps and offsets only grow); -1 when it is not. Each run's length counts its
    records."""
    m = patterns.staircase.fullmatch(buf, pos, end)
    if m is None:
        return -1
    if m.end(1) == end:  # one run (records of up to 64 ms and 64 records)
        return (end - pos) // patterns.steps[0][1]
    count = 0
    for (start, stop), step in zip(m.regs[1:], patterns.steps, strict=True):
        count += (stop - start) // step[1]
        if stop == end:  # the runs after it are empty
            break
    return count


def _matches(patterns: _Patterns, buf: Buffer, pos: int, end: int, count: int) -> bool:
    """Whether ``buf[pos:end]`` is ``count`` records of the layout (as check_records tries ``_last``)."""
    if _staircase_count(patterns, buf, pos, end) == count:
        return True
    return patterns.run.fullmatch(buf, pos, end) is not None and \
        patterns.one.subn(b"", memoryview(buf)[pos:end])[1] == count


def _check_records_slow(buf: Buffer, pos: int, end: int, count: int) -> None:
    global _last
    for patterns in _recent:
        if patterns is not _last and _matches(patterns, buf, pos, end, count):
            break
    else:
        layout = _layout(buf, pos, end, count)
        if layout is None:
            _check_varying(buf, pos, end, count)
            return
        patterns = _layouts.get(layout.source)  # type: ignore[assignment]
        if patterns is None:
            if len(_layouts) >= _MAX_LAYOUTS:
                _layouts.clear()
            patterns = _layouts[layout.source] = _Patterns(re.compile(b"(?s)" + layout.staircase), layout.steps,
                                                           re.compile(b"(?s)(?:" + layout.source + b")*"),
                                                           re.compile(b"(?s)" + layout.source),
                                                           re.compile(b"(?s)" + layout.in_place + b"|.+"))
        if not _matches(patterns, buf, pos, end, count):
            _check_varying(buf, pos, end, count)
            return
    _last = patterns
    if patterns in _recent:
        _recent.remove(patterns)
    _recent.insert(0, patterns)
    del _recent[_MAX_RECENT:]


# Batches of varying records (what producers send of JSON values of different lengths): a layout of one record
# (its key length, or a null key, and its header count, key and value lengths) with any value length of up to two
# bytes, any attributes and deltas, checked by one regular-expression match per record (C level) capturing the
# record's and the value's length varints, then Python jumping the value and checking the length adds up. A record
# the step does not read is left to the walk, from the first record not read whole (same answer: the walk's state
# at a record's start is its position only).
_EVEN = b"".join(re.escape(bytes([b])) for b in range(0, 0x80, 2))
_EVEN_HIGH = b"".join(re.escape(bytes([b])) for b in range(0x80, 0x100, 2))
_LENGTH_SOURCE = b"([" + _EVEN + b"]|[" + _EVEN_HIGH + b"][\\x01-\\x7f])"  # exactly _length_tables()[0]'s keys
_VALUE_SOURCE = b"(\\x01|[" + _EVEN + b"]|[" + _EVEN_HIGH + b"][\\x01-\\x7f])"  # exactly _length_tables()[1]'s keys
_DELTAS_SOURCE = b"." + _VARLONG + _VARINT  # attributes, timestamp, offset


@cache
def _length_tables() -> tuple[dict[bytes, int], dict[bytes, int]]:
    """The keys of the length sources' matches: a record length varint -> the record's width (``_LENGTH_SOURCE``);
    a value length varint -> its bytes, null 0 (``_VALUE_SOURCE``). Built on first use (~6 ms), not at import: every
    broker start imports this module (the tables built at import were 20 ms of it)."""
    varints = [_zigzag(n) for n in range(1 << 13)]
    return ({v: len(v) + n for n, v in enumerate(varints)},
            {v: n for n, v in enumerate(varints)} | {_zigzag(-1): 0})


class _Steps(NamedTuple):
    """A layout of varying value lengths compiled: its first record; a record after the previous one's suffix; the
    suffix (header count and headers) alone, of ``suffix_width`` bytes."""
    first: re.Pattern[bytes]
    step: re.Pattern[bytes]
    suffix: re.Pattern[bytes]
    suffix_width: int


_steps: dict[bytes, _Steps] = {}
_seen: set[bytes] = set()
_last_steps: _Steps | None = None


def _steps_at(data: bytes, start: int) -> _Steps | None:
    """The varying layout of the record at ``start``; None when it has none (the walk reads it)."""
    try:
        _, p = _varint(data, start, len(data), 5)
        _, p = _varint(data, p + 1, len(data), 10)
        _, key_at = _varint(data, p, len(data), 5)
        length, p = _varint(data, key_at, len(data), 5)
        key_source = re.escape(data[key_at:p]) + (b".{%d}" % length if length > 0 else b"")
        length, p = _varint(data, p + max(length, 0), len(data), 5)
        suffix = p + max(length, 0)
        headers, p = _varint(data, suffix, len(data), 5)
        if not 0 <= headers <= 64:
            return None
        parts = [re.escape(data[suffix:p])]
        for i in range(headers * 2):
            length, after = _varint(data, p, len(data), 5)
            if length < 0 and i % 2 == 0:
                return None  # a negative header key size
            parts.append(re.escape(data[p:after]) + (b".{%d}" % length if length > 0 else b""))
            p = after + max(length, 0)
    except (IndexError, ValueError):
        return None
    suffix_source = b"".join(parts)
    key = key_source + b"\n" + suffix_source
    steps = _steps.get(key)
    if steps is None:
        if key not in _seen:  # compiled when seen again: records of layouts seen once (changing keys) are walked
            if len(_seen) >= 4 * _MAX_LAYOUTS:
                _seen.clear()
            _seen.add(key)
            return None
        if len(_steps) >= _MAX_LAYOUTS:
            _steps.clear()
        head = _LENGTH_SOURCE + _DELTAS_SOURCE + key_source + _VALUE_SOURCE
        steps = _steps[key] = _Steps(re.compile(b"(?s)" + head), re.compile(b"(?s)" + suffix_source + head),
                                     re.compile(b"(?s)" + suffix_source), p - suffix)
    return steps


def _run(data: bytes, start: int, count: int, steps: _Steps) -> tuple[int, int]:
    """How many of ``count`` records from ``start`` the layout reads whole, and where the next one starts."""
    m = steps.first.match(data, start) if count > 0 else None
    if m is None:
        return 0, start
    span, value_length = _length_tables()
    step, width = steps.step, steps.suffix_width
    size, value = m.groups()
    due = start + span[size] - width  # where the record's value ends by its length (a record starts at due + width)
    p = m.end() + value_length[value]  # where it ends by its value's
    if p != due:
        return 0, start
    for i in range(1, count):
        m = step.match(data, p)  # the previous record's suffix, then this record's head
        if m is None:
            return (i, due + width) if steps.suffix.match(data, p) else (i - 1, due + width - span[size])
        size, value = m.groups()
        due += span[size]
        p = m.end() + value_length[value]
        if p != due:
            return i, due + width - span[size]
    return (count, due + width) if steps.suffix.match(data, p) else (count - 1, due + width - span[size])


def _check_varying(buf: Buffer, pos: int, end: int, count: int) -> None:
    """check_records of a batch of varying records: steps of varying layouts, what they do not read walked."""
    global _last_steps
    data = bytes(memoryview(buf)[pos:end])  # a copy: length varints matched are hashable, the batch's end its end
    n, start = _run(data, 0, count, _last_steps) if _last_steps is not None else (0, 0)
    done = n
    while done < count and (done == 0 or n >= 8):  # the layout read first, or one changing after a run of records
        steps = _steps_at(data, start)
        if steps is None:
            break
        n, start = _run(data, start, count - done, steps)
        if n == 0:
            break
        _last_steps = steps
        done += n
    if done < count or start != len(data):
        _walk_uncompressed(data, start, len(data), count - done)


def check_decompressed_records(data: Buffer, count: int, *, in_place: bool = True) -> None:
    """Kafka's reading of a compressed batch's ``count`` records, decompressed to ``data``: in place (the topic keeps
    the producer's codec), or whole, as when it rebuilds the batch in the topic's compression.type (a record's
    length checked as in an uncompressed batch, an overlong one INVALID_RECORD; offset deltas renumbered)."""
    if not in_place:
        try:
            _walk_uncompressed(data, 0, len(data), count)
        except UndecodableBatchError as exc:
            raise _invalid(str(exc)) from None
        return
    last = _last  # most likely the layout of this producer's previous batch
    if _in_order_as(last, data, count):
        return
    try:
        check_records(data, 0, len(data), count)  # the stricter reading, at C speed for most producers' batches
    except (InvalidRecordError, UndecodableBatchError):
        in_order = _read_in_place(data, count, None)  # Kafka's laxer in-place reading decides
    else:  # read whole: in place too (by a layout seen lately, now the last: its passes again, else a walk)
        in_order = _last is not last and _in_order_as(_last, data, count) or _offset_deltas_in_order(data, count)
    if not in_order:
        raise UnrebuildableBatchError("offset deltas are not 0 to records_count - 1: Kafka cannot rebuild the batch")


def _in_order_as(patterns: _Patterns, data: Buffer, count: int) -> bool:
    """Whether ``data`` is ``count`` records of the layout in order, Kafka reading them in place: runs of records of
    one width each, their delta widths never shrinking (a producer's timestamps and offsets only grow), their offset
    deltas sliced out at the run's stride; or its split (False: maybe not, the checks decide)."""
    m = patterns.staircase.fullmatch(data)
    if m is not None:
        size = len(data)
        if m.end(1) == size:  # one run (records of up to 64 ms and 64 records: 1 KiB batches)
            _, width, at = patterns.steps[0]
            return size == count * width and data[at::width] == _SMALL_DELTAS[:count]
        index = 0
        for (start, end), (wide, width, at) in zip(m.regs[1:], patterns.steps, strict=True):
            if start == end:
                continue
            n = (end - start) // width
            if not wide:
                if data[start + at:end:width] != _SMALL_DELTAS[index:index + n]:
                    break
            elif data[start + at:end:width] != _WIDE_LOW[index:index + n] or \
                    data[start + at + 1:end:width] != _WIDE_HIGH[index:index + n]:
                break
            index += n
            if end == size:  # the runs after it are empty
                return index == count  # (else the split reads the same records: as many)
        else:
            if count == 0:  # no records
                return True
    if count > _MAX_IN_ORDER:
        return False
    parts = patterns.in_place.split(data)  # records of the layout from end to end, no gaps between
    return len(parts) == 2 * count + 1 and parts == _in_order(count)


_SMALL_DELTAS = bytes(range(0, 128, 2))  # the offset deltas 0..63 as varints (one byte each)
# The offset deltas 64..8191 as varints (two bytes each): first bytes, then second bytes; 0..63 have none (zeros: no
# first byte of a two-byte varint is)
_WIDE_LOW = bytes(64) + bytes(index << 1 & 0x7F | 0x80 for index in range(64, 8192))
_WIDE_HIGH = bytes(64) + bytes(index >> 6 for index in range(64, 8192))
_MAX_IN_ORDER = 8192  # the records whose offset deltas are compared at C level (two-byte deltas at most)
_deltas: list[bytes] = []  # the minimal varints of 0, 1, ..., made as far as a batch needed them
_in_order_splits: dict[int, list[bytes]] = {}  # at most 64 counts, each a list of at most 16,385 references
_MAX_SPLITS = 64


def _in_order(count: int) -> list[bytes]:
    """What a layout's ``in_place`` pattern splits ``count`` (at most _MAX_IN_ORDER) records of offset deltas
    0..count-1 into: the offset deltas as minimal varints between empty gaps."""
    parts = _in_order_splits.get(count)
    if parts is None:
        _deltas.extend(_zigzag(index) for index in range(len(_deltas), count))
        if len(_in_order_splits) >= _MAX_SPLITS:
            _in_order_splits.clear()
        parts = _in_order_splits[count] = [b""] * (2 * count + 1)
        parts[1::2] = _deltas[:count]
    return parts


_HEAD = re.compile(b"(?s)" + _LENGTH_SOURCE + b"." + _VARLONG + b"(" + _VARINT + b")")  # length, ..., offset delta


def _offset_deltas_in_order(data: Buffer, count: int) -> bool:
    """Whether the offset deltas of ``count`` records that ``check_records`` read whole are 0..count-1: a match a
    record (C level) capturing its length varint and offset delta, compared with the minimal varint of its index, the
    length jumping to the next record (~18 bytecodes a record); the walk decides the rest (lengths of 8 KiB or more,
    an offset delta not minimal or out of order)."""
    if count > _MAX_IN_ORDER:
        return _offset_deltas_walked(data, count)
    match = _HEAD.match
    span = _length_tables()[0]
    pos = 0
    for delta in _in_order(count)[1::2]:
        m = match(data, pos)
        if m is None:
            return _offset_deltas_walked(data, count)
        size, offset = m.groups()
        if offset != delta:
            return _offset_deltas_walked(data, count)
        pos += span[size]
    return True


def _offset_deltas_walked(data: Buffer, count: int) -> bool:
    """_offset_deltas_in_order record by record in Python: only the lengths and timestamp deltas are stepped over, the
    usual one- and two-byte varints compared inline."""
    end = len(data)
    pos = 0
    varint = _varint
    for index in range(count):
        b = data[pos]
        if b < 0x80:
            size = b >> 1  # a length read whole is not negative
            pos += 1
        else:
            c = data[pos + 1]
            if c < 0x80:
                size = ((b & 0x7F) | (c << 7)) >> 1
                pos += 2
            else:
                size, pos = varint(data, pos, end, 5)
        p = pos + 1  # attributes
        while data[p] >= 0x80:  # the timestamp delta
            p += 1
        p += 1
        z = index << 1  # the offset delta's zigzag
        if z < 0x80:
            if data[p] != z and varint(data, p, end, 5)[0] != index:
                return False
        elif (data[p] != (z & 0x7F) | 0x80 or data[p + 1] != z >> 7) and varint(data, p, end, 5)[0] != index:
            return False
        pos += size
    return True


def read_in_place(data: Buffer, count: int) -> list[tuple[int, int, bytes | None, bytes | None]]:
    """(offset delta, timestamp delta, key, value) of the ``count`` records in ``data`` as Kafka reads a compressed
    batch in place, without the record lengths (its rules on keys and timestamps see these)."""
    out: list[tuple[int, int, bytes | None, bytes | None]] = []
    _read_in_place(data, count, out)
    return out


def _read_in_place(data: Buffer, count: int, out: list[tuple[int, int, bytes | None, bytes | None]] | None) -> bool:
    """Kafka's DefaultRecord.readPartiallyFrom over ``count`` records (InvalidRecordError); whether their offset
    deltas are 0..count-1. Appends each record's fields to ``out`` when given."""
    end = len(data)
    pos = 0
    in_order = True
    fields: list[bytes | None] = [None, None]
    for index in range(count):
        try:
            size, pos = _varint(data, pos, end, 5)
            if size < 0:
                raise _invalid(f"Invalid record size: {size} is negative.")
            timestamp_delta, pos = _varint(data, pos + 1, end, 10)  # attributes (past the end: -1), timestamp
            offset_delta, pos = _varint(data, pos, end, 5)
            if offset_delta != index:
                in_order = False
            for i in range(2):  # key, value
                length, pos = _varint(data, pos, end, 5)
                if length > 0:
                    pos += length
                    if pos > end:
                        raise _invalid("Reached end of input stream before skipping all bytes.")
                fields[i] = None if length < 0 else bytes(data[pos - length:pos]) if length else b""
            headers, pos = _varint(data, pos, end, 5)
            if headers < 0:
                raise _invalid(f"Found invalid number of record headers {headers}")
            for _ in range(headers):
                length, pos = _varint(data, pos, end, 5)
                if length < 0:
                    raise _invalid(f"Invalid negative header key size {length}")
                pos += length
                if pos > end:
                    raise _invalid("Reached end of input stream before skipping all bytes.")
                length, pos = _varint(data, pos, end, 5)
                if length > 0:
                    pos += length
                    if pos > end:
                        raise _invalid("Reached end of input stream before skipping all bytes.")
        except (IndexError, ValueError):
            raise _invalid("Incorrect declared batch size, premature EOF reached") from None
        if out is not None:
            out.append((offset_delta, timestamp_delta, fields[0], fields[1]))
    if pos != end:
        raise _invalid("Incorrect declared batch size, records still remaining in file")
    return in_order
