"""Messages through the console: browse, search (a bounded server-side filter with progress), tail,
produce. All of it is Fetch, ListOffsets and Produce as the logged-in principal (``KafkaSession``).

Browsing a partition reads ``[lower, upper)`` with Fetch and orders it: newest first ends at the start
position (the end, an offset or the first offset at a timestamp) and goes back ``limit`` offsets; oldest
first begins there. A whole topic is each partition's slice merged by timestamp. Records go to the page
with key, value and header values in base64; the page decodes them (text, JSON, hex). Fetches ask at most
FETCH_MAX_BYTES so the broker's event loop, which also serves this, decodes little at a time.
"""

from __future__ import annotations

import asyncio
import base64
import time
from dataclasses import dataclass, field
from typing import Any

from pykbroker.console.kafka import KafkaSession, RequestError, check
from wire import (
    CompressionType,
    CorruptRecordError,
    ErrorCode,
    Record,
    build_batch,
    decode_records,
    decode_records_from,
    iter_batch_headers,
)
from wire.messages import FetchRequest, ListOffsetsRequest, ProduceRequest
from wire.messages.fetch_request import FetchPartition, FetchTopic
from wire.messages.list_offsets_request import ListOffsetsPartition, ListOffsetsTopic
from wire.messages.produce_request import PartitionProduceData, TopicProduceData

__all__ = ["SearchJob", "browse", "decode_position", "end_offsets", "leaders", "produce", "tail"]

# Bytes asked per partition in one Fetch: small, so each answer is decoded quickly on the event loop.
FETCH_MAX_BYTES = 256 * 1024
# The most records one browse returns.
MAX_LIMIT = 1000
# The most records one search may scan, and matches it keeps.
MAX_SCAN = 1_000_000
MAX_MATCHES = 500
# The live tail: a partition further behind than this skips to its newest records (the page shows 500), and
# each poll reads at most this much of each partition.
TAIL_MAX_BEHIND = 200
TAIL_FETCH_BYTES = 64 * 1024
# ListOffsets special timestamps (LATEST_TIERED: the last offset copied to remote storage, ListOffsets v9+).
LATEST, EARLIEST, LATEST_TIERED = -1, -2, -5
LATEST_TIERED_VERSION = 9


def _b64(data: bytes | None) -> str | None:
    return None if data is None else base64.b64encode(data).decode()


def record_json(partition: int, offset: int, timestamp: int, record: Record) -> dict[str, Any]:
    return {"partition": partition, "offset": offset, "timestamp": timestamp, "key": _b64(record.key),
            "value": _b64(record.value), "headers": [[k, _b64(v)] for k, v in record.headers],
            "size": len(record.key or b"") + len(record.value or b"")}


async def leaders(session: KafkaSession, topic: str, partition: int | None = None) -> dict[int, int]:
    """{partition: leader} of ``topic`` (only ``partition`` when given), as Metadata answers this principal."""
    meta = await session.metadata([topic])
    [t] = meta.topics
    check(t.error_code, None, f"topic {topic}")
    out = {p.partition_index: p.leader_id for p in t.partitions}
    if partition is not None:
        if partition not in out:
            raise RequestError(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"{topic} has no partition {partition}")
        return {partition: out[partition]}
    return out


async def list_offsets(session: KafkaSession, topic: str, parts: dict[int, int], timestamp: int) -> dict[int, int]:
    """{partition: offset} for ``timestamp`` (LATEST, EARLIEST or ms) from each partition's leader; a
    timestamp after the last record answers the end offset."""
    by_leader: dict[int, list[int]] = {}
    for p, leader in parts.items():
        by_leader.setdefault(leader, []).append(p)
    out: dict[int, int] = {}
    for leader, ps in by_leader.items():
        request = ListOffsetsRequest(replica_id=-1, isolation_level=0, topics=[ListOffsetsTopic(name=topic, partitions=[
            ListOffsetsPartition(partition_index=p, current_leader_epoch=-1, timestamp=timestamp) for p in ps])])
        answer = await session.request(request, leader, LATEST_TIERED_VERSION if timestamp == LATEST_TIERED else None)
        for t in answer.topics:
            for p in t.partitions:
                check(p.error_code, None, f"{topic}-{p.partition_index}")
                out[p.partition_index] = p.offset
    if timestamp >= 0 and any(o < 0 for o in out.values()):
        ends = await list_offsets(session, topic, {p: parts[p] for p, o in out.items() if o < 0}, LATEST)
        out.update(ends)
    return out


async def end_offsets(session: KafkaSession, topic: str, parts: dict[int, int]) -> dict[int, tuple[int, int]]:
    """{partition: (log start offset, high watermark)}."""
    start = await list_offsets(session, topic, parts, EARLIEST)
    end = await list_offsets(session, topic, parts, LATEST)
    return {p: (start[p], end[p]) for p in parts}


async def fetch_raw(session: KafkaSession, topic: str, leader: int, positions: dict[int, int], *,
                    max_wait_ms: int = 0, partition_max_bytes: int = FETCH_MAX_BYTES) -> dict[int, bytes]:
    """One Fetch of ``positions`` ({partition: offset}) from ``leader``: {partition: its record batches}."""
    request = FetchRequest(replica_id=-1, max_wait_ms=max_wait_ms, min_bytes=1 if max_wait_ms else 0,
                           max_bytes=partition_max_bytes * max(len(positions), 1), isolation_level=0,
                           session_id=0, session_epoch=-1, topics=[FetchTopic(topic=topic, partitions=[
                               FetchPartition(partition=p, current_leader_epoch=-1, fetch_offset=o, log_start_offset=-1,
                                              partition_max_bytes=partition_max_bytes) for p, o in positions.items()])],
                           forgotten_topics_data=[], rack_id="")
    answer = await session.request(request, leader)
    check(answer.error_code, None, f"fetch {topic}")
    out: dict[int, bytes] = {}
    for t in answer.responses:
        for p in t.partitions:
            check(p.error_code, None, f"{topic}-{p.partition_index}")
            out[p.partition_index] = bytes(p.records or b"")
    return out


async def fetch(session: KafkaSession, topic: str, leader: int, positions: dict[int, int], *, max_wait_ms: int = 0,
                partition_max_bytes: int = FETCH_MAX_BYTES) -> dict[int, list[dict[str, Any]]]:
    """One Fetch of ``positions`` from ``leader``: {partition: records at or after the offset}. Control
    records and records before the offset (a batch's earlier ones) are left out."""
    got = await fetch_raw(session, topic, leader, positions, max_wait_ms=max_wait_ms,
                          partition_max_bytes=partition_max_bytes)
    return {p: _records(p, data, positions[p]) for p, data in got.items()}


def _records(partition: int, data: bytes, start: int) -> list[dict[str, Any]]:
    out = []
    for pos, header in iter_batch_headers(data):
        if header.is_control or header.next_offset <= start:
            continue
        try:  # the batch's records before ``start`` are stepped over, not decoded
            header, records = decode_records_from(data, pos, start)
        except CorruptRecordError:  # not expected from whole batches; shown as far as it goes
            break
        for r in records:
            offset = header.offset_of(r)
            if offset >= start:
                out.append(record_json(partition, offset, header.timestamp_of(r), r))
    return out


async def read_range(session: KafkaSession, topic: str, partition: int, leader: int, lower: int, upper: int,
                     ) -> list[dict[str, Any]]:
    """Records of ``[lower, upper)`` in offset order."""
    out: list[dict[str, Any]] = []
    position = lower
    while position < upper:
        got = (await fetch(session, topic, leader, {partition: position}))[partition]
        if not got:
            break
        out += [r for r in got if r["offset"] < upper]
        position = got[-1]["offset"] + 1
    return out


def decode_position(start: str, value: str | None) -> int:
    """``start`` ("end", "beginning", "offset", "timestamp") as a ListOffsets timestamp, or -3 for an offset."""
    return {"end": LATEST, "beginning": EARLIEST, "timestamp": int(value or 0), "offset": -3}[start]


async def browse(session: KafkaSession, topic: str, partition: int | None, start: str, value: str | None,
                 newest_first: bool, limit: int) -> dict[str, Any]:
    """Up to ``limit`` records from the start position, newest or oldest first, with each partition's
    log start offset and high watermark."""
    limit = max(1, min(limit, MAX_LIMIT))
    parts = await leaders(session, topic, partition)
    bounds = await end_offsets(session, topic, parts)
    where = decode_position(start, value)
    if where == -3:
        starts = {p: int(value or 0) for p in parts}
    else:
        starts = await list_offsets(session, topic, parts, where)
    records: list[dict[str, Any]] = []
    for p, leader in parts.items():
        log_start, high_watermark = bounds[p]
        at = max(log_start, min(starts[p], high_watermark))
        if newest_first:
            upper = high_watermark if start == "end" else min(high_watermark, at + 1)
            got = await read_range(session, topic, p, leader, max(log_start, upper - limit), upper)
        else:
            got = await read_range(session, topic, p, leader, at, min(high_watermark, at + limit))
        records += got
    records.sort(key=lambda r: (r["timestamp"], r["offset"]), reverse=newest_first)
    return {"records": records[:limit],
            "partitions": {p: {"log_start_offset": s, "high_watermark": e} for p, (s, e) in bounds.items()}}


def _framed(data: bytes | None) -> bool:
    """``data`` may be in Confluent's wire format (magic byte 0 and a 4-byte schema id first)."""
    return data is not None and len(data) >= 5 and data[0] == 0


def _record_matches(record: Record, needle: bytes) -> bool:
    """``needle`` in the record's key, value, a header key or a header value (bytes compared)."""
    if (record.key is not None and needle in record.key) or (record.value is not None and needle in record.value):
        return True
    return any(needle in k.encode() or (v is not None and needle in v) for k, v in record.headers)


@dataclass
class SearchJob:
    """A filter over at most ``max_scan`` records of ``topic`` from the start, run as a task in the broker
    process; ``progress()`` is what the page polls."""

    session: KafkaSession
    topic: str
    partition: int | None
    start: str
    value: str | None
    needle: bytes
    max_scan: int
    # With a schema registry (schemas.ValueDecoder): values and keys in Confluent's wire format match on the
    # JSON text of what they decode to as well as on their bytes.
    decoder: Any = None
    scanned: int = 0
    total: int = 0
    found: list[dict[str, Any]] = field(default_factory=list)
    done: bool = False
    error: str | None = None
    started: float = field(default_factory=time.monotonic)
    elapsed: float = 0.0
    task: asyncio.Task | None = None
    _parts: dict[int, int] = field(default_factory=dict)  # partition -> leader
    _ranges: dict[int, tuple[int, int]] = field(default_factory=dict)  # partition -> [from, to) to scan

    async def prepare(self) -> None:
        """Find the partitions, their leaders and the offset ranges to scan (RequestError when refused)."""
        self._parts = await leaders(self.session, self.topic, self.partition)
        bounds = await end_offsets(self.session, self.topic, self._parts)
        where = decode_position(self.start, self.value)
        starts = ({p: int(self.value or 0) for p in self._parts} if where == -3
                  else await list_offsets(self.session, self.topic, self._parts, where))
        self._ranges = {p: (max(bounds[p][0], min(starts[p], bounds[p][1])), bounds[p][1]) for p in self._parts}
        self.total = min(self.max_scan, sum(hi - lo for lo, hi in self._ranges.values()))

    def begin(self) -> None:
        """Scan in a task on the event loop (``prepare()`` first)."""
        self.task = asyncio.get_running_loop().create_task(self._run())

    def cancel(self) -> None:
        if self.task is not None:
            self.task.cancel()

    async def _run(self) -> None:
        try:
            await self._scan()
        except RequestError as exc:
            self.error = str(exc)
        except (ConnectionError, OSError) as exc:
            self.error = f"connection to the broker failed: {exc}"
        finally:
            self.done = True
            self.elapsed = time.monotonic() - self.started

    async def _scan(self) -> None:
        for p, leader in sorted(self._parts.items()):
            position, upper = self._ranges[p]
            while position < upper and self.scanned < self.max_scan and len(self.found) < MAX_MATCHES:
                data = (await fetch_raw(self.session, self.topic, leader, {p: position}))[p]
                pending: list[dict[str, Any]] = []
                before = len(self.found)
                reached = self._scan_batches(p, data, position, upper, pending)
                if pending:
                    await self._match_decoded(pending, before)
                if reached <= position:
                    break
                position = reached

    async def _match_decoded(self, pending: list[dict[str, Any]], before: int) -> None:
        """Add those of ``pending`` (framed records whose bytes did not match) whose decoded JSON holds the
        needle, in offset order among the matches from ``before`` on (this fetch's), at most MAX_MATCHES."""
        matched = await self.decoder.matching(pending, self.needle.decode(errors="replace"))
        if matched:
            self.found[before:] = sorted(self.found[before:] + matched, key=lambda r: r["offset"])[
                :max(0, MAX_MATCHES - before)]

    def _scan_batches(self, partition: int, data: bytes, position: int, upper: int,
                      pending: list[dict[str, Any]]) -> int:
        """Count and match the records of ``data`` in ``[position, upper)``; the offset reached. A batch
        whose (uncompressed) bytes do not hold the needle at all is counted without decoding it, unless a
        decoder may find it in values in Confluent's wire format: framed records whose bytes do not match go
        to ``pending`` for it."""
        for pos, header in iter_batch_headers(data):
            if header.next_offset <= position:
                continue
            if header.base_offset >= upper or self.scanned >= self.max_scan or len(self.found) >= MAX_MATCHES:
                break
            if header.is_control:
                position = header.next_offset
                continue
            whole = (header.base_offset >= position and header.next_offset <= upper
                     and self.scanned + header.records_count <= self.max_scan)
            if (whole and self.decoder is None and header.compression is CompressionType.NONE
                    and data.find(self.needle, pos, pos + header.total_size) < 0):
                self.scanned += header.records_count
                position = header.next_offset
                continue
            try:
                header, records = decode_records(data, pos)
            except CorruptRecordError:
                break
            for r in records:
                offset = header.offset_of(r)
                if offset < position or offset >= upper:
                    continue
                if self.scanned >= self.max_scan:
                    return offset
                self.scanned += 1
                if _record_matches(r, self.needle):
                    self.found.append(record_json(partition, offset, header.timestamp_of(r), r))
                    if len(self.found) >= MAX_MATCHES:
                        return offset + 1
                elif self.decoder is not None and (_framed(r.value) or _framed(r.key)):
                    pending.append(record_json(partition, offset, header.timestamp_of(r), r))
            position = header.next_offset
        return position

    def progress(self) -> dict[str, Any]:
        return {"scanned": self.scanned, "total": self.total, "done": self.done, "error": self.error,
                "matches": self.found, "elapsed_s": round(self.elapsed if self.done else
                                                          time.monotonic() - self.started, 3),
                "truncated": len(self.found) >= MAX_MATCHES}


async def tail(session: KafkaSession, topic: str, positions: dict[int, int] | None, max_wait_ms: int = 500,
               ) -> dict[str, Any]:
    """Records after ``positions`` ({partition: next offset}; None: start at the ends now), waiting up to
    ``max_wait_ms`` for some, and the positions to ask from next. A partition more than TAIL_MAX_BEHIND
    records behind skips ahead to its newest ones, and each answer holds at most TAIL_FETCH_BYTES of each
    partition: a busy topic costs the broker one small Fetch per poll, whatever its rate."""
    parts = await leaders(session, topic)
    ends = await list_offsets(session, topic, parts, LATEST)
    if positions is None:
        return {"records": [], "positions": ends, "skipped": 0}
    wanted_from = {p: max(positions.get(p, ends[p]), ends[p] - TAIL_MAX_BEHIND) for p in parts}
    skipped = sum(max(0, wanted_from[p] - positions.get(p, ends[p])) for p in parts)
    by_leader: dict[int, dict[int, int]] = {}
    for p, leader in parts.items():
        by_leader.setdefault(leader, {})[p] = wanted_from[p]
    records: list[dict[str, Any]] = []
    next_positions = dict(wanted_from)
    for leader, wanted in by_leader.items():
        got = await fetch(session, topic, leader, wanted, max_wait_ms=max_wait_ms, partition_max_bytes=TAIL_FETCH_BYTES)
        for p, rs in got.items():
            records += rs
            if rs:
                next_positions[p] = rs[-1]["offset"] + 1
    records.sort(key=lambda r: (r["timestamp"], r["partition"], r["offset"]))
    return {"records": records, "positions": next_positions, "skipped": skipped}


async def produce(session: KafkaSession, topic: str, partition: int, key: bytes | None, value: bytes | None,
                  headers: list[tuple[str, bytes | None]]) -> dict[str, Any]:
    """One record to ``partition`` with acks=all; its offset and timestamp."""
    [(p, leader)] = (await leaders(session, topic, partition)).items()
    now = int(time.time() * 1000)
    batch = build_batch([Record(0, 0, key, value, list(headers))], base_timestamp=now)
    request = ProduceRequest(transactional_id=None, acks=-1, timeout_ms=30_000, topic_data=[
        TopicProduceData(name=topic, partition_data=[PartitionProduceData(index=p, records=batch)])])
    answer = await session.request(request, leader)
    [result] = answer.responses[0].partition_responses
    check(result.error_code, result.error_message, f"produce to {topic}-{p}")
    return {"partition": p, "offset": result.base_offset, "timestamp": now}
