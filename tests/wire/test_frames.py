"""The incremental frame reader: whole vs byte-at-a-time, size limits, and a fuzzer over chunkings."""

from __future__ import annotations

import struct

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from wire import DEFAULT_MAX_FRAME_SIZE, FrameError, FrameReader, frame

BODIES = [b"", b"\x00", b"\x00\x12\x00\x03\x00\x00\x00\x01", bytes(range(256)) * 3, b"x" * 70_000]


def stream(bodies: list[bytes]) -> bytes:
    return b"".join(frame(len(b)) + b for b in bodies)


def read_all(reader: FrameReader, chunks: list[bytes]) -> list[bytes]:
    out = []
    for chunk in chunks:
        reader.feed(chunk)
        while (f := reader.next_frame()) is not None:
            out.append(f)
    return out


def test_frame_prefix() -> None:
    assert frame(0) == b"\x00\x00\x00\x00"
    assert frame(258) == b"\x00\x00\x01\x02"


def test_whole_and_byte_at_a_time_give_the_same_frames() -> None:
    data = stream(BODIES)
    whole = read_all(FrameReader(), [data])
    one_by_one = read_all(FrameReader(), [data[i:i + 1] for i in range(len(data))])
    assert whole == one_by_one == BODIES


def test_needs_more_data_until_the_frame_is_whole() -> None:
    reader = FrameReader()
    assert reader.next_frame() is None
    reader.feed(b"\x00\x00\x00")
    assert reader.next_frame() is None
    reader.feed(b"\x03ab")
    assert reader.next_frame() is None
    assert reader.buffered == 6
    reader.feed(memoryview(b"cd"))
    assert reader.next_frame() == b"abc"
    assert reader.buffered == 1  # "d" starts the next size prefix
    assert reader.next_frame() is None


def test_negative_size_is_a_frame_error() -> None:
    reader = FrameReader()
    reader.feed(struct.pack(">i", -1))
    with pytest.raises(FrameError, match="negative"):
        reader.next_frame()


def test_oversized_frame_is_refused_before_its_body_arrives() -> None:
    reader = FrameReader(max_frame_size=1024)
    reader.feed(frame(1024) + bytes(1024))
    assert reader.next_frame() == bytes(1024)  # exactly the limit is fine
    reader.feed(frame(1025))  # nothing of the body yet: refused on the size alone
    with pytest.raises(FrameError, match="exceeds"):
        reader.next_frame()
    default = FrameReader()
    default.feed(frame(DEFAULT_MAX_FRAME_SIZE + 1))
    with pytest.raises(FrameError):
        default.next_frame()
    assert issubclass(FrameError, ValueError)


def test_limit_applies_to_every_frame_in_a_stream() -> None:
    reader = FrameReader(max_frame_size=8)
    reader.feed(frame(3) + b"abc" + frame(9) + bytes(9))
    assert reader.next_frame() == b"abc"
    with pytest.raises(FrameError):
        reader.next_frame()


@st.composite
def chunked(draw: st.DrawFn, data: bytes) -> list[bytes]:
    """``data`` cut at random points (including empty chunks)."""
    cuts = sorted(draw(st.lists(st.integers(0, len(data)), max_size=12)))
    bounds = [0, *cuts, len(data)]
    return [data[a:b] for a, b in zip(bounds, bounds[1:], strict=False)]


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data(), bodies=st.lists(st.binary(max_size=40), max_size=6))
def test_fuzz_any_chunking_gives_the_same_frames(data: st.DataObject, bodies: list[bytes]) -> None:
    raw = stream(bodies)
    reader = FrameReader()
    assert read_all(reader, data.draw(chunked(raw))) == bodies
    assert reader.buffered == 0


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data(), garbage=st.binary(max_size=64), limit=st.integers(0, 64))
def test_fuzz_garbage_gives_frames_or_frame_error(data: st.DataObject, garbage: bytes, limit: int) -> None:
    """Whatever arrives, the reader either frames it or raises FrameError, the same for any chunking."""
    def outcome(chunks: list[bytes]) -> tuple[list[bytes], bool]:
        reader = FrameReader(max_frame_size=limit)
        frames: list[bytes] = []
        try:
            for chunk in chunks:
                reader.feed(chunk)
                while (f := reader.next_frame()) is not None:
                    frames.append(f)
        except FrameError:
            return frames, True
        return frames, False

    assert outcome(data.draw(chunked(garbage))) == outcome([garbage])


def read_like_a_socket(reader: FrameReader, data: bytes, sizes: list[int]) -> list[bytes]:
    """What a BufferedProtocol does: read at most ``sizes[i]`` bytes into ``get_buffer()``, then take frames."""
    out: list[bytes] = []
    pos = i = 0
    while pos < len(data):
        target = reader.get_buffer()
        assert len(target) > 0
        n = min(len(target), len(data) - pos, max(1, sizes[i % len(sizes)]) if sizes else len(data))
        target[:n] = data[pos:pos + n]
        may_have_frames = reader.buffer_updated(n)
        pos += n
        i += 1
        taken = len(out)
        while (f := reader.next_frame()) is not None:
            out.append(f)
        assert may_have_frames or len(out) == taken  # False only when no frame can be whole: not asked then
    return out


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(sizes=st.lists(st.integers(1, 20_000), max_size=8),
       bodies=st.lists(st.sampled_from(BODIES) | st.binary(max_size=9000), max_size=6))
def test_fuzz_socket_reads_of_any_size_give_the_same_frames(sizes: list[int], bodies: list[bytes]) -> None:
    reader = FrameReader()
    assert read_like_a_socket(reader, stream(bodies), sizes) == bodies
    assert reader.buffered == 0


def test_a_large_frame_is_read_into_a_buffer_of_its_own() -> None:
    """After its size prefix, a large frame's body goes straight into its own buffer, which is returned."""
    body = bytes(range(256)) * 400
    reader = FrameReader()
    target = reader.get_buffer()
    target[:104] = frame(len(body)) + body[:100]
    assert reader.buffer_updated(104)  # the size prefix is read: frames may be asked for
    assert reader.next_frame() is None
    rest = reader.get_buffer()
    assert len(rest) == len(body) - 100  # exactly the rest of the body: one read can finish it
    rest[:50] = body[100:150]
    assert not reader.buffer_updated(50)  # the body still not whole: nothing to ask for
    rest = reader.get_buffer()
    rest[:] = body[150:]
    assert reader.buffer_updated(len(body) - 150)
    got = reader.next_frame()
    assert isinstance(got, bytearray) and got == body
    assert reader.next_frame() is None and reader.buffered == 0


def test_release_scratch_drops_the_buffer_only_when_nothing_is_unread() -> None:
    reader = FrameReader()
    data = stream([b"first", b"second"])
    cut = len(frame(5)) + 5 + 3  # the first frame and 3 bytes of the next
    reader.feed(data[:cut])
    assert reader.next_frame() == b"first"
    reader.release_scratch()  # a partial frame is unread: kept
    assert reader.buffered == 3
    reader.feed(data[cut:])
    assert reader.next_frame() == b"second"
    reader.release_scratch()
    assert reader.buffered == 0 and len(reader._scratch) == 0  # an idle connection holds no read buffer
    reader.feed(stream([b"third"]))
    assert reader.next_frame() == b"third"


def test_a_released_scratch_buffer_serves_the_next_read_of_any_connection() -> None:
    """Given back when nothing is unread, taken by the next reader that needs one (not zeroed: only what the socket
    wrote is read), and never more than SCRATCH_POOL_SIZE of them kept."""
    from wire import _frames

    _frames._SCRATCH_POOL.clear()
    first, second = FrameReader(), FrameReader()
    first.feed(stream([b"a" * 300]))
    assert first.next_frame() == b"a" * 300
    used = first._scratch
    first.release_scratch()
    assert _frames._SCRATCH_POOL == [used] and len(first._scratch) == 0
    second.feed(stream([b"bc"]))  # the buffer still holds the first connection's bytes after these
    assert second._scratch is used and not _frames._SCRATCH_POOL
    assert second.next_frame() == b"bc" and second.next_frame() is None
    readers = [FrameReader() for _ in range(_frames.SCRATCH_POOL_SIZE + 3)]
    for r in readers:
        r.feed(stream([b"x"]))
        assert r.next_frame() == b"x"
    for r in readers:
        r.release_scratch()
    assert len(_frames._SCRATCH_POOL) == _frames.SCRATCH_POOL_SIZE
    _frames._SCRATCH_POOL.clear()


def _read(reader: FrameReader, data: bytes) -> bool:
    """One socket read of ``data`` (it must fit the buffer offered); buffer_updated's answer."""
    target = reader.get_buffer()
    assert len(target) >= len(data)
    target[:len(data)] = data
    return reader.buffer_updated(len(data))


def test_after_a_large_frame_the_next_is_read_ahead_in_one_read_into_a_buffer_of_its_own() -> None:
    """A producer's batches come one after the other: after a large frame the next read offers room for one an eighth
    larger, so the next batch comes in one read, the frame a writable view of that buffer (no copy out of the scratch
    buffer); parts of it in several reads too; what else is read there goes on as if read into the scratch buffer."""
    from wire import _frames

    first, second, third = b"a" * 20_000, b"b" * 21_000, b"c" * 22_400
    reader = FrameReader()
    _read(reader, frame(len(first)) + first[:1000])  # the first large frame: size first, its own buffer after
    assert reader.next_frame() is None
    assert _read(reader, first[1000:])
    assert reader.next_frame() == first
    ahead = reader.get_buffer()
    assert len(ahead) == 4 + 20_000 + 20_000 // 8  # the next is read ahead, with room for one an eighth larger
    assert reader.get_buffer().obj is ahead.obj  # a read that found nothing keeps it (no new buffer each time)
    assert _read(reader, frame(len(second)) + second)  # whole in one read
    got = reader.next_frame()
    assert isinstance(got, memoryview) and not got.readonly and got == second
    assert reader.buffered == 0
    # in two reads, with the start of the next frames after it
    assert not _read(reader, frame(len(third)) + third[:5000])
    assert reader.next_frame() is None
    tail = frame(1) + b"x" + frame(len(first))[:2]
    assert _read(reader, third[5000:])
    assert reader.next_frame() == third
    assert _read(reader, tail)  # read ahead: one small frame and two bytes of a size go to the scratch buffer
    assert reader.next_frame() == b"x" and reader.next_frame() is None
    reader.feed(frame(len(first))[2:] + first)
    assert reader.next_frame() == first  # through the scratch buffer, as before
    # a frame larger than the room: through the scratch buffer too, and the room follows it
    big = b"d" * 40_000
    assert _read(reader, frame(len(big)) + big[:10_000])
    assert reader.next_frame() is None
    assert _read(reader, big[10_000:])
    assert reader.next_frame() == big
    assert len(reader.get_buffer()) == 4 + 40_000 + 40_000 // 8
    # a small frame ends the reading ahead; frames larger than READ_AHEAD_MAX are never read ahead
    assert _read(reader, frame(3) + b"abc")
    assert reader.next_frame() == b"abc"
    assert len(reader.get_buffer()) == _frames.SCRATCH_SIZE
    huge = bytes(_frames.READ_AHEAD_MAX + 1)
    reader.feed(frame(len(huge)) + huge)
    assert reader.next_frame() == huge
    assert len(reader.get_buffer()) == _frames.SCRATCH_SIZE


def test_a_bad_size_read_ahead_is_refused_as_ever() -> None:
    for size in (-1, 30_000):
        reader = FrameReader(max_frame_size=25_000)
        reader.feed(frame(20_000) + bytes(20_000))
        assert reader.next_frame() == bytes(20_000)
        _read(reader, struct.pack(">i", size) + b"zz")
        with pytest.raises(FrameError):
            reader.next_frame()


def test_no_reading_ahead_with_a_memory_pool() -> None:
    """With queued.max.request.bytes each frame's bytes are allocated from the pool once its size is known: never
    ahead of it."""
    reader = FrameReader(allocate=lambda size: True)
    reader.feed(frame(20_000) + bytes(20_000))
    assert isinstance(reader.next_frame(), bytearray)
    assert len(reader.get_buffer()) == 16384
