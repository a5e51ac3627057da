"""The ``.log`` file of a segment, and regions of it handed to the network layer.

A ``.log`` file is record batches (v2) back to back, exactly as on the wire, nothing else: no header,
no padding (``preallocate`` is not supported: a preallocated tail of zeros would read as a torn batch).
Batches are located by walking their headers (base_offset int64, batch_length int32, ...).

Every open ``.log`` file descriptor is a ``SharedFile`` with a reference count: the segment holds one
reference, and each ``FileRegion`` handed out by a read holds another. Closing or deleting a segment
drops the segment's reference; the descriptor is closed when the last region is released (or garbage
collected), so a region stays readable (``os.sendfile`` / ``read_bytes``) even when retention or the
cleaner deletes its segment meanwhile — the unlinked inode lives on until then.
"""

from __future__ import annotations

import os
import struct
import threading
from collections.abc import Iterator
from typing import NamedTuple

from wire import (
    LOG_OVERHEAD,
    RECORD_BATCH_OVERHEAD,
    CorruptRecordError,
    RecordBatchHeader,
    parse_batch_header,
)
from wire import batch_crc_is_valid as _crc_ok

__all__ = ["FileRecords", "FileRegion", "SharedFile", "ScanResult", "fsync_dir", "atomic_write", "records_bytes",
           "release_records"]

_LENGTH = struct.Struct(">qi")  # base_offset, batch_length
_SCAN_CHUNK = 8 * 1024 * 1024  # recovery reads this much at a time (a batch larger than it gets its own read)
MIN_BATCH_LENGTH = RECORD_BATCH_OVERHEAD - LOG_OVERHEAD
# batches_from's reads of batch headers: one covers an index interval (4 KiB by default) of small batches; reads
# through runs of small batches double up to the largest.
HEADER_READ_AHEAD_MIN = 8 * 1024
HEADER_READ_AHEAD_MAX = 64 * 1024


class SharedFile:
    """A reference-counted file descriptor (see the module docstring). Thread-safe."""

    __slots__ = ("_fd", "_refs", "_lock", "path")

    def __init__(self, fd: int, path: str) -> None:
        self._fd = fd
        self._refs = 1
        self._lock = threading.Lock()
        self.path = path

    def fileno(self) -> int:
        if self._refs <= 0:
            raise ValueError(f"{self.path} is closed")
        return self._fd

    @property
    def closed(self) -> bool:
        return self._refs <= 0

    def retain(self) -> bool:
        """Take a reference; False if the file is already closed."""
        with self._lock:
            if self._refs <= 0:
                return False
            self._refs += 1
            return True

    def release(self) -> None:
        """Drop a reference; the last one closes the descriptor."""
        with self._lock:
            if self._refs <= 0:
                return
            self._refs -= 1
            if self._refs == 0:
                os.close(self._fd)


class FileRegion:
    """``size`` bytes at ``position`` of a segment's ``.log`` file, for ``os.sendfile`` or ``read_bytes``.

    Holds a reference on the file until ``release()`` (idempotent; also done on garbage collection).
    Implements wire's ``FileRegion`` protocol, which the response writer sends and then releases.
    """

    __slots__ = ("file", "position", "size", "_held", "__weakref__")

    def __init__(self, file: SharedFile, position: int, size: int) -> None:
        if not file.retain():
            raise ValueError(f"{file.path} was closed before the region could be read")
        self.file = file
        self.position = position
        self.size = size
        self._held = True

    def __repr__(self) -> str:
        return f"FileRegion({self.file.path}, position={self.position}, size={self.size})"

    def __len__(self) -> int:
        return self.size

    def read_bytes(self) -> bytes:
        """The region's bytes (the copy path, when a transport cannot sendfile)."""
        return _pread_exact(self.file.fileno(), self.size, self.position)

    def release(self) -> None:
        if self._held:
            self._held = False
            self.file.release()

    def __del__(self) -> None:
        try:
            self.release()
        except Exception:  # noqa: BLE001 - never raise from a finalizer
            pass


def release_records(records: FileRegion | bytes) -> None:
    """Give back what a read's records hold: a region's reference on its segment file (bytes hold nothing)."""
    if isinstance(records, FileRegion):
        records.release()


def records_bytes(records: FileRegion | bytes | bytearray | memoryview) -> bytes:
    """A read's records as bytes; a region is read, then released."""
    if not isinstance(records, FileRegion):
        return bytes(records)
    try:
        return records.read_bytes()
    finally:
        records.release()


def _pread_exact(fd: int, size: int, position: int) -> bytes:
    data = os.pread(fd, size, position)
    if len(data) == size:
        return data
    parts = [data]
    got = len(data)
    while got < size:
        chunk = os.pread(fd, size - got, position + got)
        if not chunk:
            break
        parts.append(chunk)
        got += len(chunk)
    return b"".join(parts)


class ScanResult(NamedTuple):
    """What a full scan of a ``.log`` file found (see ``FileRecords.scan``)."""

    valid_bytes: int
    error: str | None  # why the bytes after valid_bytes are not a batch (None: clean end or torn tail)


class FileRecords:
    """A segment's ``.log`` file: append, positional reads, header walks, truncate, flush.

    Invariant: ``size`` is the number of bytes of complete batches written (the file may be longer only
    after a crash, until recovery truncates it). Not thread-safe for writers: the owning log's lock
    serializes append/truncate; reads by position are safe from any thread.
    """

    def __init__(self, path: str, *, create: bool = False, new_file: bool = False) -> None:
        """``new_file``: create ``path``, which must not exist (its directory was just created): it is empty."""
        flags = os.O_RDWR | (os.O_CREAT | os.O_EXCL if new_file else os.O_CREAT if create else 0)
        fd = os.open(path, flags, 0o644)
        self.path = path
        self.file = SharedFile(fd, path)
        self.size = 0 if new_file else os.fstat(fd).st_size

    # -- writes ---------------------------------------------------------------------------------------
    def append(self, data: bytes | bytearray | memoryview) -> int:
        """Write ``data`` at the end; returns its position. On an OSError the tail is cut back first."""
        position = self.size
        fd = self.file.fileno()
        total = len(data)
        try:
            written = os.pwrite(fd, data, position)  # all of it, but for a short write (then the rest, in a loop)
            if written < total:
                view = memoryview(data)
                while written < total:
                    written += os.pwrite(fd, view[written:], position + written)
        except OSError:
            try:
                os.ftruncate(fd, position)
            except OSError:
                pass
            raise
        self.size = position + total
        return position

    def truncate_to(self, size: int) -> int:
        """Cut the file to ``size`` bytes (never grows it); returns how many bytes were removed."""
        fd = self.file.fileno()
        on_disk = os.fstat(fd).st_size
        if not 0 <= size <= on_disk:
            raise ValueError(f"cannot truncate {self.path} ({on_disk} bytes) to {size} bytes")
        if size != on_disk:
            os.ftruncate(fd, size)
        self.size = size
        return on_disk - size

    def flush(self) -> None:
        os.fsync(self.file.fileno())

    def close(self) -> None:
        self.file.release()

    def rename(self, new_path: str) -> None:
        os.rename(self.path, new_path)
        self.path = new_path
        self.file.path = new_path

    # -- reads ----------------------------------------------------------------------------------------
    def read(self, position: int, size: int) -> bytes:
        return _pread_exact(self.file.fileno(), size, position)

    def region(self, position: int, size: int) -> FileRegion:
        return FileRegion(self.file, position, size)

    def header_at(self, position: int) -> RecordBatchHeader | None:
        """The batch header at ``position``, or None when fewer than a whole batch's bytes remain."""
        if self.size - position < RECORD_BATCH_OVERHEAD:
            return None
        raw = os.pread(self.file.fileno(), RECORD_BATCH_OVERHEAD, position)
        header = parse_batch_header(raw, 0)
        if position + header.batch_length + LOG_OVERHEAD > self.size:
            return None
        return header

    def batches_from(self, position: int = 0, end: int | None = None) -> Iterator[tuple[int, RecordBatchHeader]]:
        """(position, header) of each whole batch from ``position`` up to ``end`` (default: size)."""
        limit = self.size if end is None else min(end, self.size)
        fd = self.file.fileno()
        buffer_start = position
        buf = b""
        read_ahead = HEADER_READ_AHEAD_MIN
        while position < limit:
            if limit - position < RECORD_BATCH_OVERHEAD:
                return
            offset_in = position - buffer_start
            if offset_in + RECORD_BATCH_OVERHEAD > len(buf):
                # Read ahead: headers of small batches come in one pread instead of one each. A read is small
                # (a fetch's offset lookup wants a header or two, of batches that may be 1 MB each) unless the
                # walk went through the whole previous one: small batches, then it doubles.
                read_ahead = min(read_ahead * 2, HEADER_READ_AHEAD_MAX) if buf and offset_in <= len(buf) \
                    else HEADER_READ_AHEAD_MIN
                buffer_start = position
                buf = os.pread(fd, min(read_ahead, limit - position), position)
                offset_in = 0
                if len(buf) < RECORD_BATCH_OVERHEAD:
                    return
            header = parse_batch_header(buf, offset_in)
            size = header.batch_length + LOG_OVERHEAD
            if position + size > limit:
                return
            yield position, header
            position += size

    def scan(self, on_batch, *, check_crc: bool = True, start: int = 0) -> ScanResult:
        """Walk every batch from ``start`` in large reads, verifying CRCs; stop at the first bad one.

        ``on_batch(position, header, buf, pos_in_buf)`` is called per valid batch (it may raise
        CorruptRecordError to stop there). Reads the file as it is on disk, past ``size``. Returns where
        the valid prefix ends and why the bytes after it are not a batch (None: a clean end or torn tail).
        """
        fd = self.file.fileno()
        file_size = os.fstat(fd).st_size
        position = start
        while position < file_size:
            remaining = file_size - position
            if remaining < LOG_OVERHEAD:
                break
            buf = os.pread(fd, min(_SCAN_CHUNK, remaining), position)
            pos = 0
            end = len(buf)
            while end - pos >= LOG_OVERHEAD:
                _, length = _LENGTH.unpack_from(buf, pos)
                if length < MIN_BATCH_LENGTH:
                    return ScanResult(position + pos, f"batch_length {length} is below the minimum")
                size = length + LOG_OVERHEAD
                if end - pos < size:
                    if pos > 0 or position + size > file_size:
                        break
                    buf = os.pread(fd, size, position)  # a single batch larger than the read chunk
                    end = len(buf)
                    if end < size:
                        break
                error = self._check(buf, pos, check_crc, on_batch, position + pos)
                if error is not None:
                    return ScanResult(position + pos, error)
                pos += size
            if pos == 0:
                break  # torn tail: the next batch is not all there
            position += pos
        return ScanResult(position, None)

    @staticmethod
    def _check(buf: bytes, pos: int, check_crc: bool, on_batch, file_position: int) -> str | None:
        try:
            header = parse_batch_header(buf, pos)
            if check_crc and not _crc_ok(buf, pos, header):
                return "CRC mismatch"
            on_batch(file_position, header, buf, pos)
        except CorruptRecordError as exc:
            return str(exc)
        return None


def fsync_dir(path: str | os.PathLike[str]) -> None:
    """fsync a directory so that renames and creations in it are durable."""
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def atomic_write(path: str | os.PathLike[str], data: bytes) -> None:
    """Kafka's checkpoint write: ``path.tmp`` written and fsynced, renamed over ``path``, directory fsynced."""
    path = os.fspath(path)
    tmp = path + ".tmp"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    try:
        view = memoryview(data)
        while view:
            n = os.write(fd, view)
            view = view[n:]
        os.fsync(fd)
    finally:
        os.close(fd)
    os.replace(tmp, path)
    fsync_dir(os.path.dirname(os.path.abspath(path)))
