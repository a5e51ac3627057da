"""Child process of the kill -9 test: appends batches to a log as fast as it can, acknowledging each.

    python -m tests.storage.kill9_child <partition dir> <ack file> <seed>

Batches are built once (1 record, 16 × 1 KiB, 512 × 1 KiB: big writes make a kill land mid-write, a torn
batch), so the loop is mostly the append itself. They are an idempotent producer's (PRODUCER_ID, epoch 0): each
append gets the next sequence (rewritten in place, the CRC computed again), and a start takes the next sequence
from the producer state recovery rebuilt, so a state that lost or invented a batch fails the next append
(OUT_OF_ORDER_SEQUENCE_NUMBER). After each append returns, ``<last offset>`` is written to the ack file
(O_APPEND, one write per line). Retention keeps the log near 8 MiB so the test stays small. The log is opened as
after a crash each time: every start recovers what the previous kill left.
"""

from __future__ import annotations

import os
import random
import struct
import sys

import crc32c

from storage import Log, LogConfig
from wire import Record, build_batch

CONFIG = LogConfig(internal_segment_bytes=2 * 1024 * 1024, index_interval_bytes=4096, segment_index_bytes=8192,
                   max_message_bytes=2 * 1024 * 1024, message_timestamp_after_max_ms=(1 << 63) - 1,
                   retention_bytes=8 * 1024 * 1024, retention_ms=-1, file_delete_delay_ms=0)
VALUE = bytes(range(256)) * 4  # 1 KiB
PRODUCER_ID = 4242
_SEQUENCE_AT, _CRC_AT, _CRC_FROM = 53, 17, 21  # a v2 batch's base sequence and CRC (of the bytes from 21 on)


def with_sequence(batch: bytes, sequence: int) -> bytearray:
    """``batch`` as the producer's batch of base sequence ``sequence``."""
    out = bytearray(batch)
    struct.pack_into(">i", out, _SEQUENCE_AT, sequence)
    struct.pack_into(">I", out, _CRC_AT, crc32c.crc32c(memoryview(out)[_CRC_FROM:]))
    return out


def batches() -> list[bytes]:
    def make(count: int, size: int) -> bytes:
        records = [Record(i, i, b"key-%d" % i, VALUE[:size]) for i in range(count)]
        return build_batch(records, base_timestamp=1_700_000_000_000, producer_id=PRODUCER_ID, producer_epoch=0,
                           base_sequence=0)
    return [make(1, 100), make(16, 1024), make(512, 1024)]


def main() -> None:
    directory, ack_path, seed = sys.argv[1], sys.argv[2], int(sys.argv[3])
    rng = random.Random(seed)
    pool = batches()
    log = Log.open(directory, CONFIG, log_recovery_progress=False)
    ack = os.open(ack_path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    os.write(ack, b"ready %d\n" % log.log_end_offset)
    entry = log.producer_state.last_entry(PRODUCER_ID)
    sequence = 0 if entry is None else entry.last_seq + 1
    n = 0
    while True:
        batch = pool[rng.choices((0, 1, 2), (2, 3, 5))[0]]
        info = log.append_as_leader(with_sequence(batch, sequence), 1)
        assert not info.duplicate
        sequence += info.records_count
        os.write(ack, b"%d\n" % info.last_offset)
        n += 1
        if n % 16 == 0:
            log.maybe_increment_high_watermark(log.log_end_offset)
            log.delete_old_segments()


if __name__ == "__main__":
    main()
