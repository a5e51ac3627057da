"""Storage micro-benchmark: the log's append and read throughput beside the disk's sequential write speed.

    python -m bench storage          (STORAGE_BENCH_MB=512 by default; runs well under a minute)

Measured in one run, on the same file system:

* disk: a dd-like sequential write of the same volume in 1 MiB writes, then fsync (the ceiling);
* append: ``Log.append_as_leader`` of 16-record batches of 1 KiB records (a producer's default 16 KiB
  batch), header-only validation and offset assignment, rolling 1 GiB segments, then one fsync at the end
  (MB/s with and without that fsync, and batches/s);
* read: ``Log.read`` of 1 MiB regions from offset 0 to the end, sent with ``os.sendfile`` to /dev/null (the
  zero-copy fetch path), and the same through ``read_bytes()`` (the copy path).

The ratio printed is append-with-fsync over the disk's write speed.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import time

from storage import Log, LogConfig
from wire import Record, build_batch

RECORD = 1024
RECORDS_PER_BATCH = 16


def _disk_write(path: str, total: int) -> float:
    chunk = os.urandom(1 << 20)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    start = time.perf_counter()
    written = 0
    while written < total:
        written += os.write(fd, chunk)
    os.fsync(fd)
    elapsed = time.perf_counter() - start
    os.close(fd)
    os.unlink(path)
    return elapsed


def main() -> None:
    megabytes = int(os.environ.get("STORAGE_BENCH_MB", "512"))
    total = megabytes << 20
    root = tempfile.mkdtemp(prefix="storage-bench-")
    try:
        disk_s = _disk_write(os.path.join(root, "dd.bin"), total)
        value = os.urandom(RECORD)
        records = [Record(i, 0, None, value) for i in range(RECORDS_PER_BATCH)]
        raw = build_batch(records, base_timestamp=time.time_ns() // 1_000_000)
        batches = total // len(raw)
        config = LogConfig(message_timestamp_after_max_ms=(1 << 63) - 1)
        log = Log.open(os.path.join(root, "bench-0"), config)
        append = log.append_as_leader
        start = time.perf_counter()
        for _ in range(batches):
            append(raw, 0)
        appended_s = time.perf_counter() - start
        log.flush()
        synced_s = time.perf_counter() - start
        volume = batches * len(raw)
        log.maybe_increment_high_watermark(log.log_end_offset)

        devnull = os.open(os.devnull, os.O_WRONLY)
        start = time.perf_counter()
        offset, sent = 0, 0
        while offset < log.log_end_offset:
            info = log.read(offset, 1 << 20, min_one_message=True)
            region = info.records
            os.sendfile(devnull, region.file.fileno(), region.position, region.size)
            sent += region.size
            offset = info.next_offset_upper_bound if info.next_offset_upper_bound > offset else log.log_end_offset
            region.release()
        sendfile_s = time.perf_counter() - start
        start = time.perf_counter()
        offset, copied = 0, 0
        while offset < log.log_end_offset:
            info = log.read(offset, 1 << 20, min_one_message=True)
            copied += len(info.records.read_bytes())
            offset = info.next_offset_upper_bound if info.next_offset_upper_bound > offset else log.log_end_offset
            info.records.release()
        copy_s = time.perf_counter() - start
        os.close(devnull)
        log.close()

        mb = 1 << 20
        disk = total / mb / disk_s
        with_sync = volume / mb / synced_s
        print(f"volume                 {volume / mb:8.0f} MiB in {batches} batches of {len(raw)} bytes "
              f"({RECORDS_PER_BATCH} x {RECORD} B records)")
        print(f"disk sequential write  {disk:8.0f} MiB/s  (1 MiB writes + fsync)")
        print(f"log append             {volume / mb / appended_s:8.0f} MiB/s  {batches / appended_s:10.0f} batches/s"
              f"  (page cache)")
        print(f"log append + fsync     {with_sync:8.0f} MiB/s  {batches / synced_s:10.0f} batches/s")
        print(f"log read (sendfile)    {sent / mb / sendfile_s:8.0f} MiB/s")
        print(f"log read (copy)        {copied / mb / copy_s:8.0f} MiB/s")
        print(f"ratio append+fsync / disk write: {with_sync / disk:.2f}")
    finally:
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
