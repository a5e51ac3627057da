"""LogSegment: finding the batch that holds an offset, from the remembered tail or by scanning the file."""

from __future__ import annotations

from pathlib import Path

from storage.segment import RECENT_BATCHES, LogOffsetPosition
from wire import iter_batch_headers

from .conftest import batch, open_log, small_config


def by_scanning(path: str, offset: int, starting_position: int = 0) -> LogOffsetPosition | None:
    """The answer worked out from the file alone: the first batch at or after ``starting_position`` whose last
    offset is >= ``offset``."""
    data = Path(path).read_bytes()
    for pos, header in iter_batch_headers(data, starting_position):
        if header.base_offset + header.last_offset_delta >= offset:
            return LogOffsetPosition(header.base_offset + header.last_offset_delta, pos, header.batch_length + 12)
    return None


def test_translate_offset_answers_as_a_scan_of_the_file_before_and_after_truncation(log_dir):
    log = open_log(log_dir, small_config(internal_segment_bytes=1 << 20, index_interval_bytes=4096))
    for i in range(2 * RECENT_BATCHES + 5):  # more batches than are remembered, of 1 to 3 records
        log.append_as_leader(batch([b"v%d" % i] * (1 + i % 3)), 0)
    segment = log.active_segment

    def check() -> None:
        path = segment.log.path
        for offset in range(log.log_end_offset + 2):
            assert segment.translate_offset(offset) == by_scanning(path, offset), offset
        last = by_scanning(path, log.log_end_offset - 1)
        assert last is not None  # a starting position (a batch boundary) past the last batch: none
        assert segment.translate_offset(log.log_end_offset - 1, last.position + last.size) is None

    check()
    log.truncate_to(log.log_end_offset - 6)  # remembered batches are gone...
    for i in range(6):  # ...and others, of other sizes, now sit where they were
        log.append_as_leader(batch([b"w%d" % i] * (4 - i % 3)), 0)
    check()
    log.close()
