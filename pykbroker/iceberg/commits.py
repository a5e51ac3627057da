"""One committer per topic in a cluster, through the coordinator runtime: partition leaders write data files,
the coordinator of the topic's ``__iceberg_commits`` partition commits them.

In cluster mode a partition leader does not commit to the table itself. It writes the Parquet files of its
pending records (``TableWriter.write_files``) and produces a ``FilesRecord`` — topic, partition, the offsets
``[start, end)`` the files hold, their paths — to ``__iceberg_commits`` partition ``crc32(topic) % N`` with
acks=all. The leader of that partition is the topic's committer: ``CoordinatorRuntime`` loads a
``CommitterShard`` there (replaying the partition's records, as every coordinator loads) and unloads it on
resignation; each tick an operation on the shard's task reads the records appended since, then commits in one
snapshot (``TableWriter.commit_files``) the files that continue, without a gap, from the offsets the table's
newest snapshot names, and records the new offsets in that snapshot. Files of offsets already in the table
(a leader that re-read after a failover, a committer killed after its catalog commit) are never added: the
chain starts at the table's offsets, so a kill -9 of the committer mid-commit, of a leader, or both, leaves
neither a gap nor a duplicate. A leader learns what was committed from the table and starts again from
its offsets when another writer's files got there first.
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
import zlib
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from replication.partition import PartitionError, read_bytes
from wire import ErrorCode, build_simple_batch, decode_records, iter_batch_headers

if TYPE_CHECKING:
    from pykbroker.iceberg.writer import IcebergService

__all__ = ["COMMITS_TOPIC", "CommitCoordination", "CommitterShard", "FilesRecord", "commits_partition"]

log = logging.getLogger("pykbroker.iceberg")

COMMITS_TOPIC = "__iceberg_commits"
#: Partitions of __iceberg_commits: how many brokers can be committers at once.
COMMITS_PARTITIONS = 5
#: How often a committer looks for new files, and a broker for the commits partitions it leads.
COMMITTER_TICK_S = 0.2
#: Bytes of __iceberg_commits read at once.
READ_BYTES = 1 << 20


def commits_partition(topic: str, partitions: int = COMMITS_PARTITIONS) -> int:
    """The __iceberg_commits partition whose leader commits ``topic``'s table."""
    return zlib.crc32(topic.encode()) % partitions


@dataclass(frozen=True)
class FilesRecord:
    """Data files a partition leader wrote for the committed records at offsets ``[start, end)``."""

    topic: str
    topic_id: str
    partition: int
    start: int
    end: int
    paths: tuple[str, ...]
    rows: int

    def encode(self) -> tuple[bytes, bytes]:
        key = {"type": "files", "topic": self.topic, "partition": self.partition, "start": self.start}
        value = {"type": "files", "topic": self.topic, "topic_id": self.topic_id, "partition": self.partition,
                 "start": self.start, "end": self.end, "paths": list(self.paths), "rows": self.rows}
        return json.dumps(key).encode(), json.dumps(value).encode()

    @classmethod
    def decode(cls, key: bytes | None, value: bytes | None) -> FilesRecord | None:
        """The record, or None for anything else (a tombstone, a later record type)."""
        if value is None:
            return None
        try:
            v = json.loads(value)
            if v.get("type") != "files":
                return None
            return cls(str(v["topic"]), str(v["topic_id"]), int(v["partition"]), int(v["start"]), int(v["end"]),
                       tuple(str(p) for p in v["paths"]), int(v["rows"]))
        except (ValueError, KeyError, TypeError, AttributeError):
            return None


@dataclass
class CommitterShard:
    """The files of one __iceberg_commits partition not committed yet: {(topic, topic id): {partition: {start:
    record}}} (for one start, the record reaching furthest), and the offset after the last record read."""

    partition: int
    pending: dict[tuple[str, str], dict[int, dict[int, FilesRecord]]] = field(default_factory=dict)
    next_offset: int = 0
    # Tables with files records since their last commit attempt (or whose last attempt failed): the only ones a
    # tick commits, so files waiting for an earlier range do not reload the table every tick.
    dirty: set[tuple[str, str]] = field(default_factory=set)

    def replay(self, offset: int, record: Any) -> None:
        self.next_offset = max(self.next_offset, offset + 1)
        if isinstance(record, FilesRecord):
            self.dirty.add((record.topic, record.topic_id))
            starts = self.pending.setdefault((record.topic, record.topic_id), {}).setdefault(record.partition, {})
            known = starts.get(record.start)
            if known is None or record.end > known.end:
                starts[record.start] = record

    def on_loaded(self) -> None:
        log.info("iceberg: committer of %s-%d loaded: %d files records pending", COMMITS_TOPIC, self.partition,
                 sum(len(s) for parts in self.pending.values() for s in parts.values()))

    def on_unloaded(self) -> None:
        pass

    def prune(self, topic: str, topic_id: str, committed: dict[int, int]) -> None:
        """Forget the files of offsets the table has (whoever wrote them)."""
        parts = self.pending.get((topic, topic_id), {})
        for p, starts in parts.items():
            for start in [s for s in starts if s < committed.get(p, -1)]:
                del starts[start]
        if not any(parts.values()):
            self.pending.pop((topic, topic_id), None)


def chain(starts: dict[int, FilesRecord], committed: int | None) -> list[FilesRecord]:
    """The records continuing ``committed`` without a gap (from the lowest start when the table names none)."""
    if not starts:
        return []
    at = committed if committed is not None else min(starts)
    out = []
    while at in starts:
        out.append(starts[at])
        at = starts[at].end
    return out


class CommitCoordination:
    """The cluster side of a broker's Iceberg topics: leaders submit files, committers commit them."""

    def __init__(self, service: IcebergService, broker: Any) -> None:
        self.service = service
        self.broker = broker
        self.runtime: Any = None
        self._epochs: dict[int, int] = {}  # commits partitions loaded here -> the leader epoch loaded at
        self._commits: dict[str, int] = {}  # commits made here per topic (compaction every COMPACTION_EVERY)
        self._next_maintenance: dict[str, float] = {}  # per topic, monotonic time of the next maintenance run
        self._task: asyncio.Task | None = None

    # -- the leader side -------------------------------------------------------------------------------
    async def submit(self, record: FilesRecord) -> None:
        """Produce ``record`` (acks=all) to the topic's __iceberg_commits partition's leader."""
        from wire.messages import RESPONSES, ProduceRequest
        from wire.messages.produce_request import PartitionProduceData, TopicProduceData

        partition = commits_partition(record.topic)
        leader = await self._leader(partition)
        key, value = record.encode()
        batch = build_simple_batch([value], keys=[key], timestamp=int(time.time() * 1000))
        request = ProduceRequest(transactional_id=None, acks=-1, timeout_ms=30_000, topic_data=[TopicProduceData(
            name=COMMITS_TOPIC, partition_data=[PartitionProduceData(index=partition, records=batch)])])
        answer = await self.broker.broker_clients.get(leader).request(request, 9, RESPONSES[request.API_KEY])
        [result] = answer.responses[0].partition_responses
        if result.error_code != ErrorCode.NONE:
            raise RuntimeError(f"submitting files of {record.topic}-{record.partition} to {COMMITS_TOPIC}-"
                               f"{partition}: {ErrorCode(result.error_code).name}")

    async def _leader(self, partition: int) -> int:
        deadline = time.monotonic() + 30
        while True:
            image = self.broker.metadata.image
            topic = image.topics.get(COMMITS_TOPIC)
            if topic is None:
                try:
                    await self.broker.internal_topics.ensure_topic(
                        COMMITS_TOPIC, COMMITS_PARTITIONS,
                        # replicated as __consumer_offsets is, so a committer's failure moves it to another broker
                        min(self.broker.config["offsets.topic.replication.factor"],
                            len(image.live_broker_ids() or [0])),
                        lambda _a: {"cleanup.policy": "delete", "retention.ms": "86400000"})
                except Exception as exc:  # noqa: BLE001 - too few brokers yet, or created meanwhile
                    log.info("iceberg: %s not created yet (%s)", COMMITS_TOPIC, exc)
            elif partition < len(topic.partitions) and topic.partitions[partition].leader >= 0:
                return int(topic.partitions[partition].leader)
            if time.monotonic() > deadline:
                raise RuntimeError(f"{COMMITS_TOPIC}-{partition} has no leader")
            await asyncio.sleep(0.1)

    # -- the committer side ----------------------------------------------------------------------------
    def start(self) -> None:
        self._task = asyncio.get_running_loop().create_task(self._run(), name="iceberg-committer")

    async def close(self) -> None:
        if self._task is not None:
            self._task.cancel()
            try:
                await self._task
            except asyncio.CancelledError:
                pass
        if self.runtime is not None:
            await self.runtime.close()

    def _build_runtime(self) -> Any:
        from coordinator.runtime.clock import SystemClock
        from coordinator.runtime.partition_log import ReplicaCoordinatorLog
        from coordinator.runtime.runtime import CoordinatorRuntime

        clock = SystemClock()
        rm = self.service.replica_manager
        return CoordinatorRuntime(lambda partition, _timer: CommitterShard(partition),
                                  lambda partition: ReplicaCoordinatorLog(rm, partition, clock, topic=COMMITS_TOPIC),
                                  clock, decode_record=FilesRecord.decode, topic=COMMITS_TOPIC)

    async def _run(self) -> None:
        while True:
            try:
                await self._tick()
            except asyncio.CancelledError:
                raise
            except Exception:
                log.exception("iceberg: committer tick failed")
            await asyncio.sleep(COMMITTER_TICK_S)

    async def _tick(self) -> None:
        if COMMITS_TOPIC not in self.broker.metadata.image.topics and not self._epochs:
            return  # no Iceberg topic has submitted files yet: nothing to look at
        rm = self.service.replica_manager
        led = {p: part for (t, p), part in list(rm.partitions.items()) if t == COMMITS_TOPIC and part.is_leader}
        if not led and not self._epochs:
            return
        if self.runtime is None:
            self.runtime = self._build_runtime()
        for p in list(self._epochs):
            if p not in led or led[p].leader_epoch != self._epochs[p]:
                del self._epochs[p]
                await self.runtime.unload(p)
                log.info("iceberg: no longer the committer of %s-%d", COMMITS_TOPIC, p)
        for p, part in led.items():
            if p not in self._epochs:
                self._epochs[p] = part.leader_epoch
                self.runtime.load(p)
                log.info("iceberg: committer of %s-%d (leader epoch %d): loading", COMMITS_TOPIC, p,
                         part.leader_epoch)
        for p in list(self._epochs):
            if self.runtime.is_loaded(p):
                await self.runtime.run(p, self._commit)

    async def _commit(self, ctx: Any) -> None:
        """On the shard's task: read the records appended since, then commit what continues each table."""
        shard: CommitterShard = ctx.shard
        partition = self.service.replica_manager.get_partition(COMMITS_TOPIC, ctx.partition)
        if partition is None:
            return
        while True:
            try:
                read = partition.read(shard.next_offset, READ_BYTES, read_committed=False, min_one_message=True)
            except PartitionError:
                return
            data = read_bytes(read.records)
            before = shard.next_offset
            for pos, header in iter_batch_headers(data):
                if header.next_offset <= shard.next_offset or header.is_control:
                    shard.next_offset = max(shard.next_offset, header.next_offset)
                    continue
                _, records = decode_records(data, pos)
                for r in records:
                    offset = header.offset_of(r)
                    if offset >= shard.next_offset:
                        shard.replay(offset, FilesRecord.decode(r.key, r.value))
                shard.next_offset = max(shard.next_offset, header.next_offset)
            if shard.next_offset == before:
                break
        image = self.service.image
        if image is None:
            return  # no metadata yet: which topics exist is not known
        for topic, topic_id in sorted(shard.dirty):
            parts = shard.pending.get((topic, topic_id), {})
            state = image.topics.get(topic)
            if state is None or str(state.topic_id) != topic_id:
                shard.pending.pop((topic, topic_id), None)  # the topic is gone (or was created anew)
                shard.dirty.discard((topic, topic_id))
                continue
            from pykbroker.iceberg.writer import _iceberg_config

            config = _iceberg_config(state)
            if config is None:
                continue
            result = await self.service.run_blocking(self._commit_files, topic, topic_id, config, parts)
            if result is not None:  # else another writer came first: tried again next tick
                shard.dirty.discard((topic, topic_id))
                shard.prune(topic, topic_id, result.offsets)
                if result.snapshot_id is not None:
                    await self._after_commit(topic, topic_id, config)

    async def _after_commit(self, topic: str, topic_id: str, config: Any) -> None:
        """The one writer of the table also compacts it (every COMPACTION_EVERY commits) and expires snapshots
        and orphan files (``maintenance_every_s``), so nothing else commits to it in a cluster."""
        from pykbroker.iceberg.tables import TableWriter
        from pykbroker.iceberg.writer import COMPACTION_EVERY, compact, maintain, maintenance_every_s

        count = self._commits[topic] = self._commits.get(topic, 0) + 1
        writer = TableWriter(self.service.catalog(), self.service.settings.namespace, topic, topic_id)
        if config.compaction_min_files and count % COMPACTION_EVERY == 0:
            await compact(self.service, writer, config, topic)
        if time.monotonic() >= self._next_maintenance.get(topic, 0.0):
            self._next_maintenance[topic] = time.monotonic() + maintenance_every_s(config)
            await maintain(self.service, writer, config, topic)

    def _commit_files(self, topic: str, topic_id: str, config: Any, parts: dict[int, dict[int, FilesRecord]]) -> Any:
        from pyiceberg.exceptions import CommitFailedException

        from pykbroker.iceberg.tables import TableWriter

        writer = TableWriter(self.service.catalog(), self.service.settings.namespace, topic, topic_id)
        try:
            return writer.commit_files(config, parts)
        except CommitFailedException as exc:  # another writer (compaction, maintenance) came first: next tick
            log.info("iceberg: committer: commit to %s lost to another writer (%s); trying again",
                     ".".join(writer.identifier), exc)
            return None
