"""Child process of the kill -9 test: appends batches to a log as fast as it can, acknowledging each.

    python -m tests.storage.kill9_child <partition dir> <ack file> <seed>

Batches are built once (1 record, 16 × 1 KiB, 512 × 1 KiB: big writes make a kill land mid-write, a torn
batch), so the loop is mostly the append itself. After each append returns, ``<last offset>`` is written
to the ack file (O_APPEND, one write per line). Retention keeps the log near 8 MiB so the test stays
small. The log is opened as after a crash each time: every start recovers what the previous kill left.
"""

from __future__ import annotations

import os
import random
import sys

from storage import Log, LogConfig
from wire import Record, build_batch

CONFIG = LogConfig(internal_segment_bytes=2 * 1024 * 1024, index_interval_bytes=4096, segment_index_bytes=8192,
                   max_message_bytes=2 * 1024 * 1024, message_timestamp_after_max_ms=(1 << 63) - 1,
                   retention_bytes=8 * 1024 * 1024, retention_ms=-1, file_delete_delay_ms=0)
VALUE = bytes(range(256)) * 4  # 1 KiB


def batches() -> list[bytes]:
    def make(count: int, size: int) -> bytes:
        records = [Record(i, i, b"key-%d" % i, VALUE[:size]) for i in range(count)]
        return build_batch(records, base_timestamp=1_700_000_000_000)
    return [make(1, 100), make(16, 1024), make(512, 1024)]


def main() -> None:
    directory, ack_path, seed = sys.argv[1], sys.argv[2], int(sys.argv[3])
    rng = random.Random(seed)
    pool = batches()
    log = Log.open(directory, CONFIG, log_recovery_progress=False)
    ack = os.open(ack_path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    os.write(ack, b"ready %d\n" % log.log_end_offset)
    n = 0
    while True:
        info = log.append_as_leader(pool[rng.choices((0, 1, 2), (2, 3, 5))[0]], 1)
        os.write(ack, b"%d\n" % info.last_offset)
        n += 1
        if n % 16 == 0:
            log.maybe_increment_high_watermark(log.log_end_offset)
            log.delete_old_segments()


if __name__ == "__main__":
    main()
