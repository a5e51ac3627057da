"""The common part of the offset and time indexes: fixed-size entries, preallocated, trimmed on roll.

On disk (Kafka's AbstractIndex): a file of fixed-size big-endian entries whose offsets are stored
relative to the segment's base offset (4 bytes). A new, writable index is preallocated (ftruncate,
sparse) to ``max_index_size`` rounded down to a whole entry, and trimmed to its entries when the segment
becomes inactive or is closed; an index opened from an existing file has ``length // entry_size``
entries, as in Kafka, except that trailing all-zero entries (a preallocated index left by a crash) end
the list, as kafka-dump-log reads them. Nothing is checksummed: after a crash, recovery rebuilds indexes
from the log.

In memory the entries are two ``array('q')`` (keys and values, absolute offsets), searched with bisect.
New entries are also kept packed and written to the file with one ``pwrite`` per PENDING_BYTES of them, and
before anything that needs the file whole: fsync (flush), resize and trim (roll, close), releasing the
descriptor; so a produce request costs no index syscall (it cost one per index per batch). Only a crash
loses the unwritten entries, and after a crash recovery rebuilds the indexes of every segment past the
recovery point, which a flush (that writes them) moves. No mmap: nothing to unmap before deleting, and a
full disk is an OSError, not a SIGBUS. Loading reads the file in chunks and stops at the zero-filled
tail. The file descriptor is opened by the first entries written and closed when the index is trimmed
(its segment rolled or recovered): a broker with thousands of partitions holds one per index being
written, not two per segment (Kafka's LazyIndex and its mmaps hold none). Writers are serialized by the
owning log's lock; lookups may run on any thread.
"""

from __future__ import annotations

import os
import struct
import threading
from array import array

from storage.errors import CorruptIndexError

__all__ = ["AbstractIndex", "INT32_MAX"]

INT32_MAX = (1 << 31) - 1
_READ_CHUNK = 96 * 1024  # bytes read at a time when loading: a multiple of both entry sizes (8, 12)
PENDING_BYTES = 4096  # new entries written together once this many bytes of them wait (one page)


class AbstractIndex:
    """Base of OffsetIndex and TimeIndex (see the module docstring for the format)."""

    ENTRY_SIZE: int = 0
    _STRUCT: struct.Struct

    def __init__(self, path: str, base_offset: int, max_index_size: int = -1, *, writable: bool = True,
                 new_file: bool = False) -> None:
        """``new_file``: ``path`` cannot exist yet (its segment's directory was just created): not looked for."""
        self.path = path
        self.base_offset = base_offset
        self.writable = writable
        self.keys: array = array("q")
        self.values: array = array("q")
        self.corrupt_reason: str | None = None  # set when loading found entries that make no sense
        self._fd: int | None = None  # opened by the first entry written (see _require_fd)
        self._closed = False
        self._dirty = False  # written (or resized) since the last fsync
        self._pending = bytearray()  # packed entries not yet written, from entry ``_written`` on
        self._written = 0  # entries written to the file (those after it are in ``_pending``)
        # Held while ``_pending`` and ``_written`` change: a flush (fsync) on a storage thread writes what waits
        # while the log's owner appends (Log.flush does not hold the log's lock while it flushes).
        self._pending_lock = threading.Lock()
        try:
            length = 0 if new_file else os.stat(path).st_size
        except FileNotFoundError:
            if not writable:
                raise
            length = 0
        self.length = length
        if length == 0 and writable:
            if max_index_size < self.ENTRY_SIZE:
                raise ValueError(f"Invalid max index size: {max_index_size}")
            length = self._round_down(max_index_size)
            fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
            try:
                os.ftruncate(fd, length)
            finally:
                os.close(fd)
            self._dirty = True
        elif length > 0:
            self._load_file()
            self._written = len(self.keys)
        self.length = length
        self.max_index_size = max_index_size if max_index_size > 0 else self.length
        self.max_entries = self.length // self.ENTRY_SIZE

    # -- format hooks --------------------------------------------------------------------------------
    def _parse(self, data: bytes, n: int) -> tuple[int, int, int]:
        """(key, value, relative offset) of entry ``n``."""
        raise NotImplementedError

    def _check_order(self, key: int, value: int, prev_key: int, prev_value: int) -> bool:
        raise NotImplementedError

    def _load_file(self) -> None:
        """Read the entries, a chunk at a time, up to the zero-filled preallocated tail: an index left
        untrimmed by a crash is mostly that tail, and reading it whole would cost its full size."""
        fd = os.open(self.path, os.O_RDONLY)
        try:
            position = 0
            while position < self.length:
                data = os.pread(fd, min(_READ_CHUNK, self.length - position), position)
                if not data or not self._load(data, position // self.ENTRY_SIZE):
                    break
                position += len(data)
        finally:
            os.close(fd)
        if self.length % self.ENTRY_SIZE:
            self.corrupt_reason = (f"Index file {self.path} is corrupt, found {self.length} bytes which is neither "
                                   f"positive nor a multiple of {self.ENTRY_SIZE}")

    def _load(self, data: bytes, first: int) -> bool:
        """Append the entries of ``data`` (entry ``first`` onwards); False once the list ended in it."""
        count = len(data) // self.ENTRY_SIZE
        keys, values = self.keys, self.values
        size = self.ENTRY_SIZE
        for i in range(count):
            n = first + i
            key, value, relative = self._parse(data, i)
            if n > 0 and relative == 0 and not any(data[i * size:(i + 1) * size]):
                return False  # the zero-filled preallocated tail of an index that was not trimmed
            if n > 0 and not self._check_order(key, value, keys[-1], values[-1]):
                self.corrupt_reason = f"entry {n} ({key}, {value}) is out of order"
                return False
            if relative < 0:
                self.corrupt_reason = f"entry {n} has a negative relative offset {relative}"
                return False
            keys.append(key)
            values.append(value)
        return True

    # -- state ----------------------------------------------------------------------------------------
    def _round_down(self, n: int) -> int:
        return n - n % self.ENTRY_SIZE

    @property
    def entries(self) -> int:
        return len(self.keys)

    def is_full(self) -> bool:
        return len(self.keys) >= self.max_entries

    def relative_offset(self, offset: int) -> int:
        relative = offset - self.base_offset
        if not 0 <= relative <= INT32_MAX:
            raise ValueError(f"offset {offset} is not within [{self.base_offset}, {self.base_offset + INT32_MAX}]")
        return relative

    def can_append_offset(self, offset: int) -> bool:
        return 0 <= offset - self.base_offset <= INT32_MAX

    def sanity_check(self) -> None:
        """Kafka's check at load (CorruptIndexError), plus out-of-order entries found while loading."""
        if self.corrupt_reason is not None:
            raise CorruptIndexError(f"Corrupt index found, index file ({self.path}): {self.corrupt_reason}")

    # -- writes ---------------------------------------------------------------------------------------
    def _write_entry(self, key: int, value: int, packed: bytes) -> None:
        if self._closed:
            raise ValueError(f"index {self.path} is closed")
        with self._pending_lock:
            pending = self._pending
            pending += packed
            self.keys.append(key)
            self.values.append(value)
            if len(pending) >= PENDING_BYTES:
                self._write_pending()

    def write_pending(self) -> None:
        """Write the entries kept in memory since the last write (see the module docstring); any thread."""
        with self._pending_lock:
            self._write_pending()

    def _write_pending(self) -> None:
        pending = self._pending
        if not pending:
            return
        os.pwrite(self._require_fd(), pending, self._written * self.ENTRY_SIZE)
        self._written += len(pending) // self.ENTRY_SIZE
        self._pending = bytearray()
        self._dirty = True

    def _require_fd(self) -> int:
        """The open file, opened now if needed: an index holds a descriptor only while entries are being
        written to it (the active segment's), not for every segment of every partition (Kafka maps its
        indexes and holds none)."""
        if self._closed:
            raise ValueError(f"index {self.path} is closed")
        if self._fd is None:
            self._fd = os.open(self.path, os.O_RDWR if self.writable else os.O_RDONLY)
        return self._fd

    def release(self) -> None:
        """Write what waits, close the descriptor (if open) and keep the entries: the next write opens it again."""
        if not self._closed:
            self.write_pending()
        fd, self._fd = self._fd, None
        if fd is not None:
            os.close(fd)

    def truncate_to_entries(self, n: int) -> None:
        with self._pending_lock:
            del self.keys[n:]
            del self.values[n:]
            if n < self._written:  # the file's later entries are stale, as in Kafka: the next ones overwrite them
                self._written = n
                self._pending = bytearray()
            else:
                del self._pending[(n - self._written) * self.ENTRY_SIZE:]

    def truncate(self) -> None:
        """Remove every entry (the file keeps its preallocated size)."""
        self.truncate_to_entries(0)

    def reset(self) -> None:
        """Empty and preallocated again: what recovery starts from."""
        self.truncate()
        self.resize(self.max_index_size)

    def resize(self, new_size: int) -> bool:
        """Set the file length to ``new_size`` rounded down to whole entries; max_entries follows it."""
        rounded = max(self._round_down(new_size), len(self.keys) * self.ENTRY_SIZE)
        if rounded == self.length:
            return False
        self.write_pending()
        if self._fd is None:
            if self._closed:
                raise ValueError(f"index {self.path} is closed")
            os.truncate(self.path, rounded)
        else:
            os.ftruncate(self._fd, rounded)
        self._dirty = True
        self.length = rounded
        self.max_entries = rounded // self.ENTRY_SIZE
        return True

    def trim_to_valid_size(self) -> None:
        """Cut the preallocated tail (on roll and close); the index is then full, and its descriptor is
        closed until a resize makes room again."""
        self.resize(len(self.keys) * self.ENTRY_SIZE)
        self.release()

    def flush(self) -> None:
        if self._closed:
            return
        self.write_pending()
        if not self._dirty:
            return
        if self._fd is not None:
            os.fsync(self._fd)
        else:  # fsync applies to the file, whichever descriptor asks
            fd = os.open(self.path, os.O_RDONLY)
            try:
                os.fsync(fd)
            finally:
                os.close(fd)
        self._dirty = False

    @property
    def is_open(self) -> bool:
        return not self._closed

    def close(self) -> None:
        """Trim (when writable) and close."""
        if self._closed:
            return
        try:
            if self.writable:
                self.trim_to_valid_size()
        finally:
            self.close_handler()

    def close_handler(self) -> None:
        """Close without writing anything (the directory may have failed)."""
        self._closed = True
        with self._pending_lock:
            self._pending = bytearray()
        self.release()

    def rename(self, new_path: str) -> None:
        os.rename(self.path, new_path)
        self.path = new_path

    def delete_if_exists(self) -> bool:
        self.close_handler()
        try:
            os.unlink(self.path)
            return True
        except FileNotFoundError:
            return False
