"""Helpers for the storage tests: a fake clock, small-segment configs, batches."""

from __future__ import annotations

import os

import pytest

from storage import Log, LogConfig
from wire import CompressionType, Record, build_batch, build_simple_batch


class FakeClock:
    """An injectable clock in milliseconds; tests move it by hand."""

    def __init__(self, now: int = 1_700_000_000_000) -> None:
        self.now = now

    def __call__(self) -> int:
        return self.now

    def advance(self, ms: int) -> None:
        self.now += ms


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


def small_config(**overrides) -> LogConfig:
    base = dict(internal_segment_bytes=4096, index_interval_bytes=256, segment_index_bytes=1024,
                message_timestamp_after_max_ms=(1 << 63) - 1, file_delete_delay_ms=0)
    base.update(overrides)
    return LogConfig(**base)


def batch(values: list[bytes | None], *, keys: list[bytes | None] | None = None, timestamp: int = 1_700_000_000_000,
          **kwargs) -> bytes:
    return build_simple_batch(values, keys=keys, timestamp=timestamp, **kwargs)


def keyed_batch(pairs: list[tuple[bytes, bytes | None]], *, timestamp: int = 1_700_000_000_000,
                compression: CompressionType = CompressionType.NONE, **kwargs) -> bytes:
    records = [Record(i, 0, k, v) for i, (k, v) in enumerate(pairs)]
    return build_batch(records, base_timestamp=timestamp, compression=compression, **kwargs)


@pytest.fixture
def log_dir(tmp_path) -> str:
    path = tmp_path / "topic-0"
    return str(path)


def open_log(path: str, config: LogConfig | None = None, **kwargs) -> Log:
    return Log.open(path, config or small_config(), **kwargs)


def read_all(log: Log, start: int | None = None) -> list[tuple[int, bytes | None, bytes | None]]:
    """(offset, key, value) of every record from ``start`` to the log end offset, via Log.read."""
    from wire import decode_records, iter_batch_headers
    out = []
    offset = log.log_start_offset if start is None else start
    while offset < log.log_end_offset:
        info = log.read(offset, 1 << 20, min_one_message=True)
        if not info.size:
            break
        data = info.records.read_bytes()
        info.records.release()
        last = offset
        for pos, header in iter_batch_headers(data):
            _, records = decode_records(data, pos)
            for r in records:
                o = header.base_offset + r.offset_delta
                if o >= offset:
                    out.append((o, r.key, r.value))
            last = header.base_offset + header.last_offset_delta + 1
        if last <= offset:
            break
        offset = last
    return out


def segment_files(path: str) -> list[str]:
    return sorted(os.listdir(path))
