"""The leader-epoch cache of a partition: the first offset written in each leader epoch.

On disk: ``leader-epoch-checkpoint`` in the partition directory (format in storage.checkpoints).
Invariants (Kafka's LeaderEpochFileCache): epochs and start offsets both strictly increase; assigning an
epoch removes every entry with an epoch or start offset >= the new one. Answers OffsetForLeaderEpoch
(``end_offset_for``) and the epoch of an offset (ListOffsets). Mutated under the owning log's lock; the
checkpoint is written through ``persist`` (the log hands it to its background flusher, so the fsync stays
off the event loop).
"""

from __future__ import annotations

import logging
from bisect import bisect_left, bisect_right
from collections.abc import Callable

from storage.checkpoints import CorruptCheckpointError, LeaderEpochCheckpointFile

log = logging.getLogger("storage.leader_epoch")

__all__ = ["LeaderEpochFileCache", "UNDEFINED_EPOCH", "UNDEFINED_EPOCH_OFFSET"]

UNDEFINED_EPOCH = -1
UNDEFINED_EPOCH_OFFSET = -1


class LeaderEpochFileCache:
    """(epoch, start_offset) entries of one partition (see the module docstring)."""

    def __init__(self, checkpoint: LeaderEpochCheckpointFile,
                 persist: Callable[[Callable[[], None]], None] | None = None, *, new_dir: bool = False) -> None:
        """``new_dir``: the partition directory was just created, so there is no checkpoint to read."""
        self.checkpoint = checkpoint
        self._persist = persist
        self._epochs: list[int] = []
        self._offsets: list[int] = []
        # Changes handed to ``persist`` and changes written by it (numbered): ``write_pending`` writes the
        # entries when a write handed over has not run yet (a close before the delayed write).
        self._handed = self._written = 0
        if new_dir:
            return
        try:
            entries = checkpoint.read()
        except CorruptCheckpointError as exc:
            log.warning("ignoring %s: %s (the cache is rebuilt from the log)", checkpoint.path, exc)
            entries = []
        for epoch, offset in entries:
            self._assign(epoch, offset)

    # -- queries ---------------------------------------------------------------------------------------
    def entries(self) -> list[tuple[int, int]]:
        return list(zip(self._epochs, self._offsets, strict=True))

    def is_empty(self) -> bool:
        return not self._epochs

    @property
    def latest_epoch(self) -> int | None:
        return self._epochs[-1] if self._epochs else None

    @property
    def earliest_entry(self) -> tuple[int, int] | None:
        return (self._epochs[0], self._offsets[0]) if self._epochs else None

    def epoch_for_offset(self, offset: int) -> int | None:
        """The epoch in which ``offset`` was written (the last entry starting at or before it)."""
        i = bisect_right(self._offsets, offset) - 1
        return self._epochs[i] if i >= 0 else None

    def end_offset_for(self, requested_epoch: int, log_end_offset: int) -> tuple[int, int]:
        """(epoch, end offset) for OffsetForLeaderEpoch, as Kafka's LeaderEpochFileCache.endOffsetFor.

        The current epoch ends at the log end offset; an older one at the start of the next larger epoch,
        answered with the largest known epoch <= the requested one (or the requested epoch itself when it
        is older than all of them); unknown larger epochs are (-1, -1).
        """
        if requested_epoch == UNDEFINED_EPOCH or not self._epochs:
            return UNDEFINED_EPOCH, UNDEFINED_EPOCH_OFFSET
        if requested_epoch == self._epochs[-1]:
            return requested_epoch, log_end_offset
        higher = bisect_right(self._epochs, requested_epoch)
        if higher >= len(self._epochs):
            return UNDEFINED_EPOCH, UNDEFINED_EPOCH_OFFSET
        floor = higher - 1
        if floor < 0:
            return requested_epoch, self._offsets[higher]
        return self._epochs[floor], self._offsets[higher]

    # -- changes ---------------------------------------------------------------------------------------
    def _assign(self, epoch: int, start_offset: int) -> bool:
        if epoch < 0 or start_offset < 0:
            raise ValueError(f"Received invalid partition leader epoch entry {epoch} {start_offset}")
        if self._epochs and epoch == self._epochs[-1] and start_offset >= self._offsets[-1]:
            return False
        # Remove entries that would break monotonicity: any epoch >= this one or start offset >= this one.
        keep = min(bisect_left(self._epochs, epoch), bisect_left(self._offsets, start_offset))
        del self._epochs[keep:]
        del self._offsets[keep:]
        self._epochs.append(epoch)
        self._offsets.append(start_offset)
        return True

    def assign(self, epoch: int, start_offset: int) -> None:
        """Record that ``epoch`` starts at ``start_offset`` (a no-op when nothing changes)."""
        if self._assign(epoch, start_offset):
            self._flush()

    def truncate_from_end(self, end_offset: int) -> None:
        """Remove entries starting at or after ``end_offset`` (the log was truncated to it)."""
        keep = bisect_left(self._offsets, end_offset)
        if keep < len(self._offsets):
            del self._epochs[keep:]
            del self._offsets[keep:]
            self._flush()

    def truncate_from_start(self, start_offset: int) -> None:
        """Drop entries wholly before ``start_offset``; the entry covering it is moved up to start there."""
        i = bisect_right(self._offsets, start_offset) - 1
        if i < 0 or (i == 0 and self._offsets[0] == start_offset):
            return
        epoch = self._epochs[i]
        del self._epochs[:i + 1]
        del self._offsets[:i + 1]
        self._epochs.insert(0, epoch)
        self._offsets.insert(0, start_offset)
        self._flush()

    def restore_early(self, entries: list[tuple[int, int]]) -> bool:
        """Put back ``entries`` (oldest first, increasing) below the earliest one: epochs up to it whose start
        offsets precede its start (the earliest epoch may come back with a lower start). True if it changed."""
        if not self._epochs:
            return False
        early = [(e, o) for e, o in entries if e <= self._epochs[0] and o < self._offsets[0]]
        if not early:
            return False
        if early[-1][0] == self._epochs[0]:
            self._offsets[0] = early.pop()[1]
        self._epochs[:0] = [e for e, _ in early]
        self._offsets[:0] = [o for _, o in early]
        self._flush()
        return True

    def clear(self) -> None:
        self._epochs.clear()
        self._offsets.clear()
        self._flush()

    def _flush(self) -> None:
        entries = self.entries()
        self._handed += 1
        number = self._handed

        def write() -> None:  # the entries as they are now, written later
            self.checkpoint.write(entries)
            self._written = max(self._written, number)
        if self._persist is None:
            write()
        else:
            self._persist(write)

    def write_pending(self) -> None:
        """Write the entries now if a change handed to ``persist`` is not written yet (at close)."""
        if self._written < self._handed:
            number = self._handed
            self.checkpoint.write(self.entries())
            self._written = max(self._written, number)

    def write_now(self) -> None:
        self.checkpoint.write(self.entries())
