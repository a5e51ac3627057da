"""kill -9 at random moments while a real child process appends (tests/storage/kill9_child.py): after
recovery every acknowledged batch is there, batches are contiguous and intact, and nothing follows the
last whole batch (a torn one is cut off); the idempotent producer's state is the last batch's (its sequence and
offsets, from the snapshots and the segments after them), and a retry of that batch is answered as a duplicate with
its original offsets."""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import time

from storage import Log
from wire import decode_records, iter_batch_headers

from .kill9_child import CONFIG, PRODUCER_ID, VALUE

ROUNDS = 20
MIN_ROUND_OFFSETS = 600  # 20 rounds: a log end past 12,000
REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def acked(path: str) -> int:
    """The highest acknowledged offset (-1 if none yet)."""
    last = -1
    if os.path.exists(path):
        for line in open(path, "rb").read().splitlines():
            if line and not line.startswith(b"ready"):
                last = max(last, int(line))
    return last


def on_disk_bytes(directory: str) -> int:
    return sum(os.path.getsize(os.path.join(directory, n)) for n in os.listdir(directory) if n.endswith(".log"))


def verify(directory: str) -> tuple[int, int]:
    """Recover the log and check it; returns (log end offset, bytes recovery cut off)."""
    before = on_disk_bytes(directory)
    log = Log.open(directory, CONFIG, log_recovery_progress=False)
    try:
        expected = log.segments.first_segment().base_offset
        last_batch = None
        for segment in log.segments.snapshot():
            data = segment.log.read(0, segment.size)
            end = 0
            last = None
            for pos, header in iter_batch_headers(data):
                last_batch = (header, data[pos:pos + header.batch_length + 12])
                assert header.base_offset == expected, (segment, header.base_offset, expected)
                expected = header.base_offset + header.last_offset_delta + 1
                end = pos + header.batch_length + 12
                last = pos
            assert end == segment.size == os.path.getsize(segment.log.path)  # nothing after the last whole batch
            if last is not None:  # spot-check the content of the last batch of each segment
                _, records = decode_records(data, last)
                assert all(r.key == b"key-%d" % r.offset_delta and VALUE.startswith(r.value) for r in records)
        assert expected == log.log_end_offset
        if last_batch is not None:
            header, batch = last_batch
            entry = log.producer_state.last_entry(PRODUCER_ID)
            assert entry is not None and (entry.last_seq, entry.last_data_offset) == (
                header.last_sequence, header.base_offset + header.last_offset_delta)
            sent = bytearray(batch)
            sent[:8] = bytes(8)  # base offset 0, as the producer sent it (outside the CRC)
            retry = log.append_as_leader(sent, 1)  # DUPLICATE_SEQUENCE_NUMBER's answer: nothing written
            assert retry.duplicate and (retry.first_offset, retry.last_offset) == (
                header.base_offset, header.base_offset + header.last_offset_delta)
            assert log.log_end_offset == expected
        return log.log_end_offset, before - on_disk_bytes(directory)
    finally:
        log.close_handlers()  # no clean close: the next child recovers again


def test_kill_minus_nine_many_times(tmp_path):
    directory = str(tmp_path / "kill9-0")
    rng = random.Random(1234)
    env = dict(os.environ, PYTHONPATH=REPO + os.pathsep + os.environ.get("PYTHONPATH", ""))
    last_end = 0
    torn = 0
    for round_ in range(ROUNDS):
        ack_path = str(tmp_path / f"ack{round_}")
        child = subprocess.Popen([sys.executable, "-m", "tests.storage.kill9_child", directory, ack_path,
                                  str(round_)], cwd=REPO, env=env, stderr=subprocess.PIPE)
        try:
            # Each round appends at least MIN_ROUND_OFFSETS before the kill's random delay starts, so that the
            # rounds cover many segments and rolls however slowly a loaded machine runs the child.
            deadline = time.monotonic() + 60
            while acked(ack_path) < last_end + MIN_ROUND_OFFSETS:
                assert child.poll() is None, child.stderr.read().decode()
                assert time.monotonic() < deadline, "the child never appended"
                time.sleep(0.002)
            time.sleep(rng.uniform(0.0, 0.05))
            os.kill(child.pid, signal.SIGKILL)
        finally:
            child.wait()
            child.stderr.close()
        acknowledged = acked(ack_path)
        end, cut = verify(directory)
        torn += cut > 0
        assert end > acknowledged, f"round {round_}: acknowledged offset {acknowledged} lost (log end {end})"
        assert end >= last_end
        last_end = end
    assert last_end >= ROUNDS * MIN_ROUND_OFFSETS
    print(f"{ROUNDS} kills, {torn} left a torn batch that recovery cut off, log end offset {last_end}")
