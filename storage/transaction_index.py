"""The transaction index (``.txnindex``): the aborted transactions whose abort marker is in a segment.

On disk (Kafka's TransactionIndex / AbortedTxn): 34-byte entries, big-endian::

    version int16 (0) | producer_id int64 | first_offset int64 | last_offset int64 | last_stable_offset int64

``last_offset`` is the offset of the ABORT marker; ``last_stable_offset`` the LSO right after it.
Entries are appended in marker order (``last_offset`` increases). The file is created on the first
append and never preallocated. read_committed fetches collect the aborted transactions overlapping the
fetched range from it. Serialized by the owning log's lock; reads from any thread.
"""

from __future__ import annotations

import os
import struct
from typing import NamedTuple

from storage.errors import CorruptIndexError

__all__ = ["AbortedTxn", "TransactionIndex", "TxnIndexSearchResult", "collect_aborted_txns", "parse_entries"]

_ENTRY = struct.Struct(">hqqqq")
ENTRY_SIZE = _ENTRY.size  # 34
CURRENT_VERSION = 0


class AbortedTxn(NamedTuple):
    producer_id: int
    first_offset: int
    last_offset: int
    last_stable_offset: int
    version: int = CURRENT_VERSION

    def pack(self) -> bytes:
        return _ENTRY.pack(self.version, self.producer_id, self.first_offset, self.last_offset,
                           self.last_stable_offset)


class TxnIndexSearchResult(NamedTuple):
    aborted_transactions: list[AbortedTxn]
    is_complete: bool  # an entry's last_stable_offset reached the upper bound: later segments need no look


def parse_entries(data: bytes) -> tuple[list[AbortedTxn], str | None]:
    """The entries of a ``.txnindex`` file's bytes, and why the file is corrupt (None when it is not)."""
    entries: list[AbortedTxn] = []
    reason = None
    if len(data) % ENTRY_SIZE:
        reason = f"{len(data)} bytes is not a multiple of {ENTRY_SIZE}"
    for pos in range(0, len(data) - len(data) % ENTRY_SIZE, ENTRY_SIZE):
        version, pid, first, last, lso = _ENTRY.unpack_from(data, pos)
        if version != CURRENT_VERSION:
            reason = f"Unexpected aborted transaction version {version}"
            break
        entries.append(AbortedTxn(pid, first, last, lso, version))
    return entries, reason


def collect_aborted_txns(entries: list[AbortedTxn], fetch_offset: int, upper_bound_offset: int) -> TxnIndexSearchResult:
    """Aborted transactions of ``entries`` overlapping [fetch_offset, upper_bound_offset)."""
    found: list[AbortedTxn] = []
    for txn in entries:
        if txn.last_offset >= fetch_offset and txn.first_offset < upper_bound_offset:
            found.append(txn)
        if txn.last_stable_offset >= upper_bound_offset:
            return TxnIndexSearchResult(found, True)
    return TxnIndexSearchResult(found, False)


class TransactionIndex:
    """``<base_offset>.txnindex`` (see the module docstring)."""

    def __init__(self, path: str, base_offset: int, *, new_file: bool = False) -> None:
        """``new_file``: ``path`` cannot exist yet (created by the first aborted transaction): not looked for."""
        self.path = path
        self.base_offset = base_offset
        self.entries: list[AbortedTxn] = []
        self.corrupt_reason: str | None = None
        self._fd: int | None = None
        if not new_file and os.path.exists(path):
            self._fd = os.open(path, os.O_RDWR)
            self._load(os.pread(self._fd, os.fstat(self._fd).st_size, 0))

    def _load(self, data: bytes) -> None:
        entries, self.corrupt_reason = parse_entries(data)
        self.entries.extend(entries)

    def sanity_check(self) -> None:
        if self.corrupt_reason is not None:
            raise CorruptIndexError(f"Transaction index file {self.path} is corrupt: {self.corrupt_reason}")

    def append(self, txn: AbortedTxn) -> None:
        if self.entries and txn.last_offset <= self.entries[-1].last_offset:
            raise ValueError(f"The last offset of appended transactions must increase sequentially, but "
                             f"{txn.last_offset} is not greater than current last offset "
                             f"{self.entries[-1].last_offset} of index {self.path}")
        if self._fd is None:
            self._fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        os.pwrite(self._fd, txn.pack(), len(self.entries) * ENTRY_SIZE)
        self.entries.append(txn)

    def collect_aborted_txns(self, fetch_offset: int, upper_bound_offset: int) -> TxnIndexSearchResult:
        """Aborted transactions overlapping [fetch_offset, upper_bound_offset)."""
        return collect_aborted_txns(self.entries, fetch_offset, upper_bound_offset)

    def truncate_to(self, offset: int) -> None:
        """Remove the transactions whose marker (last_offset) is at or after ``offset``."""
        keep = len(self.entries)
        for i, txn in enumerate(self.entries):
            if txn.last_offset >= offset:
                keep = i
                break
        if keep == len(self.entries) and self.corrupt_reason is None:
            return
        del self.entries[keep:]
        if self._fd is not None:
            os.ftruncate(self._fd, keep * ENTRY_SIZE)
        self.corrupt_reason = None

    def reset(self) -> None:
        self.entries.clear()
        self.corrupt_reason = None
        if self._fd is not None:
            os.ftruncate(self._fd, 0)

    def flush(self) -> None:
        if self._fd is not None:
            os.fsync(self._fd)

    def close(self) -> None:
        fd, self._fd = self._fd, None
        if fd is not None:
            os.close(fd)

    def rename(self, new_path: str) -> None:
        if os.path.exists(self.path):
            os.rename(self.path, new_path)
        self.path = new_path

    def delete_if_exists(self) -> bool:
        self.close()
        try:
            os.unlink(self.path)
            return True
        except FileNotFoundError:
            return False
