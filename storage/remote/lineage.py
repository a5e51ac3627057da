"""Remote segments against a partition's leader-epoch lineage (Kafka's RemoteLogManager checks, KIP-405).

After an unclean leader election the new leader's log diverges from what its predecessor copied: the remote
segments of the old lineage hold records the partition no longer has. These pure functions decide, from a
partition's leader-epoch cache (``(epoch, start offset)`` pairs, oldest first) and its log end offset, which
remote segments still belong to it:

* ``segment_for_offset`` — the segment a read of an offset uses: the one (starting last) whose range of the
  offset's epoch holds it (Kafka's RemoteLogMetadataCache.remoteLogSegmentMetadata); ``epoch_end`` bounds
  the read to that epoch so a segment that diverged later never returns its diverged records;
* ``is_within_leader_epochs`` — Kafka's isRemoteSegmentWithinLeaderEpochs: the segment's epochs and their
  offsets are the lineage's (first and last epochs may be partial); only such segments are counted
  (retention.bytes, the remote size) and searched by timestamp;
* ``highest_remote_offset`` — Kafka's findHighestRemoteOffset: the highest copied offset on the lineage (where
  copying goes on, what local retention may delete);
* ``log_start_offset`` — Kafka's findLogStartOffset: where the remote data of the lineage starts;
* ``is_below_earliest_epoch`` — segments whose epochs all precede the lineage's first (unreferenced after an
  unclean election or a truncated cache), deleted by retention without moving the log start offset;
* ``early_epochs`` — the epochs a cache lost below its earliest entry (a log written before they were kept across
  restarts), from the remote segments' leader epochs, so they are on the lineage (counted, expired) again.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from storage.remote.metadata import RemoteLogSegmentMetadata

__all__ = ["early_epochs", "epoch_end", "filtered_epochs", "highest_remote_offset", "is_below_earliest_epoch", "next_segment_after",
           "is_within_leader_epochs", "log_start_offset", "segment_for_offset"]

Epochs = Sequence[tuple[int, int]]  # (leader epoch, its start offset), oldest first


def filtered_epochs(entries: Iterable[tuple[int, int]]) -> list[tuple[int, int]]:
    """The epochs that hold records: an epoch starting where the next one starts has none (Kafka's
    buildFilteredLeaderEpochMap)."""
    entries = list(entries)
    return [(e, o) for i, (e, o) in enumerate(entries) if i + 1 == len(entries) or entries[i + 1][1] != o]


def _segment_epoch_end(m: RemoteLogSegmentMetadata, epoch: int) -> int | None:
    """The last offset of ``epoch`` inside segment ``m`` (None: the segment has no such epoch)."""
    epochs = m.segment_leader_epochs
    for i, (e, _) in enumerate(epochs):
        if e == epoch:
            return epochs[i + 1][1] - 1 if i + 1 < len(epochs) else m.end_offset
    return None


def _epoch_for_offset(lineage: Epochs, offset: int) -> int | None:
    found = None
    for e, o in lineage:
        if o > offset:
            break
        found = e
    return found


def epoch_end(lineage: Epochs, offset: int, log_end_offset: int) -> int:
    """The offset after the last one of ``offset``'s epoch on the lineage (the next epoch's start, else the log end)."""
    epoch = _epoch_for_offset(lineage, offset)
    for e, o in lineage:
        if epoch is not None and e > epoch:
            return o
    return log_end_offset


def segment_for_offset(segments: Iterable[RemoteLogSegmentMetadata], lineage: Epochs,
                       offset: int) -> RemoteLogSegmentMetadata | None:
    """The readable segment holding ``offset`` within the range of the offset's epoch on the lineage, the one
    starting last when copies overlap; None when no segment holds it. Below the lineage's earliest epoch (a cache
    that lost its early epochs: a log written before they were kept across restarts) any segment holding it."""
    epoch = _epoch_for_offset(lineage, offset)
    best = None
    if epoch is None:
        for m in segments:
            if m.start_offset <= offset <= m.end_offset and (best is None or m.start_offset > best.start_offset):
                best = m
        return best
    for m in segments:
        if m.start_offset <= offset and (best is None or m.start_offset > best.start_offset):
            end = _segment_epoch_end(m, epoch)
            if end is not None and dict(m.segment_leader_epochs)[epoch] <= offset <= end:
                best = m
    return best


def is_within_leader_epochs(m: RemoteLogSegmentMetadata, log_end_offset: int, lineage: Epochs) -> bool:
    """Whether segment ``m`` lies on the lineage (``lineage`` filtered of empty epochs): its epochs from the
    lineage's first on are the lineage's, starting at the lineage's offsets (the first may start later), its
    last epoch ends no later than the lineage's, and it ends below the log end offset."""
    seg = dict(filtered_epochs(m.segment_leader_epochs))
    if not seg or not lineage:
        return False
    epochs = dict(lineage)
    first_epoch, last_epoch = lineage[0][0], lineage[-1][0]
    seg_last = max(seg)
    if seg_last < first_epoch or seg_last > last_epoch:
        return False
    seg_first = min((e for e in seg if e >= first_epoch), default=None)
    if seg_first is None:
        return False
    ordered = sorted(seg.items())
    for i, (epoch, offset) in enumerate(ordered):
        if epoch < seg_first:
            continue
        if epoch not in epochs:
            return False
        if epoch == seg_first and epoch != first_epoch and offset < epochs[epoch]:
            return False
        later = [(e, o) for e, o in lineage if e > epoch]
        if epoch == seg_last:
            if later and m.end_offset > later[0][1] - 1:
                return False
        else:
            if not later or later[0] != ordered[i + 1]:
                return False
    return m.end_offset < log_end_offset


def highest_remote_offset(segments: Iterable[RemoteLogSegmentMetadata], cache: Epochs,
                          log_end_offset: int) -> tuple[int, int]:
    """(offset, epoch) of the highest copied offset on the lineage, (-1, -1) when none: for the latest epoch of
    the cache that some segment holds, the highest offset copied in it, capped below the epoch's end."""
    highest: dict[int, int] = {}
    for m in segments:
        for epoch, _ in m.segment_leader_epochs:
            end = _segment_epoch_end(m, epoch)
            if end is not None and end > highest.get(epoch, -1):
                highest[epoch] = end
    for i in range(len(cache) - 1, -1, -1):
        epoch = cache[i][0]
        if epoch in highest:
            end = cache[i + 1][1] if i + 1 < len(cache) else log_end_offset
            return (end - 1, epoch) if end <= highest[epoch] else (highest[epoch], epoch)
    return -1, -1


def log_start_offset(segments: Iterable[RemoteLogSegmentMetadata], cache: Epochs) -> int | None:
    """The first remote offset of the lineage: the lowest start of the segments holding the cache's earliest epoch
    that any segment holds; None when no segment holds any."""
    segments = list(segments)
    for epoch, _ in cache:
        starts = [m.start_offset for m in segments if any(e == epoch for e, _ in m.segment_leader_epochs)]
        if starts:
            return min(starts)
    return None


def is_below_earliest_epoch(m: RemoteLogSegmentMetadata, cache: Epochs) -> bool:
    """Every epoch of the segment precedes the lineage's earliest: no offset of it can be read any more."""
    return bool(cache) and bool(m.segment_leader_epochs) and all(e < cache[0][0] for e, _ in m.segment_leader_epochs)


def next_segment_after(segments: Iterable[RemoteLogSegmentMetadata], lineage: Epochs,
                       offset: int) -> RemoteLogSegmentMetadata | None:
    """The first segment on the lineage starting after ``offset`` (a gap left by transaction markers or
    compaction: Kafka's findNextSegmentMetadata)."""
    segments = list(segments)
    for start in sorted({m.start_offset for m in segments if m.start_offset > offset}):
        found = segment_for_offset(segments, lineage, start)
        if found is not None:
            return found
    return None


def early_epochs(segments: Iterable[RemoteLogSegmentMetadata], cache: Epochs, log_start_offset: int) -> list[tuple[int, int]]:
    """``(epoch, start offset)`` entries the cache lacks between ``log_start_offset`` and its earliest entry, from
    the leader epochs of the remote segments there (each epoch starting at the lowest offset a segment has it;
    one that would not start after the previous is left out); the cache's earliest epoch itself may come back
    with a lower start. The first entry starts no lower than ``log_start_offset``. Empty when the cache reaches
    back to it (or is empty)."""
    if not cache or cache[0][1] <= log_start_offset:
        return []
    first_epoch, first_start = cache[0]
    starts: dict[int, int] = {}
    for m in segments:
        if m.end_offset < log_start_offset:
            continue
        for epoch, offset in m.segment_leader_epochs:
            if epoch <= first_epoch and offset < first_start:
                starts[epoch] = min(starts.get(epoch, offset), offset)
    out: list[tuple[int, int]] = []
    for epoch, offset in sorted(starts.items()):
        if not out or offset > out[-1][1]:
            out.append((epoch, offset))
    below = [i for i, (_, offset) in enumerate(out) if offset <= log_start_offset]
    if below:
        out = [(out[below[-1]][0], log_start_offset), *out[below[-1] + 1:]]
    return out
