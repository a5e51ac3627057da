"""The broker side: each partition leader translates its committed records and commits them to the table.

``IcebergService`` runs on the broker's event loop. On every published metadata image it starts a
``TopicTranslator`` for each topic whose ``iceberg.mode`` is on (and stops those turned off, deleted or
created anew under the same name). A translator, each tick:

1. finds the partitions of its topic led here; a newly led one starts at the offset the table's newest
   snapshot names for it (``tables.committed_offsets``), or at the log start offset;
2. reads each one's records as a read_committed consumer would (``Partition.read``: up to the last stable
   offset, with the aborted transactions), decoded off the loop, and keeps them pending, at most
   ``iceberg.target.file.size.bytes`` per partition;
3. commits once a partition's pending bytes reach that bound or its oldest pending record has waited
   ``iceberg.commit.interval.ms``: one snapshot with every pending partition's rows and next offsets;
4. every ``COMPACTION_EVERY`` commits, if it leads partition 0, compacts table partitions of
   ``iceberg.compaction.min.files`` small files or more into one file each (``TableWriter.compact``), with a
   progress line per table partition;
5. now and then (``MAINTENANCE_MAX_EVERY_S`` at most), if it leads partition 0, expires snapshots older than
   ``iceberg.snapshot.max.age.ms`` and deletes files no snapshot references once older than
   ``iceberg.orphan.file.min.age.ms`` (written before a kill -9 and never committed, or of expired
   snapshots), with a log line each.

Everything touching pyiceberg or pyarrow (and the decoding) runs on one worker thread per broker, so the
catalog sees one writer at a time from each broker. In a cluster (brokers sharing one catalog) every leader
commits its own partitions to the table; a commit that loses the catalog's compare-and-swap to another
broker's is tried again (the offsets check runs anew each time). A commit that still fails (a catalog
error) drops what was pending: it is read again from the offsets the table names, so nothing is lost or
written twice. Each commit logs
one line with the records, offsets, snapshot and the lag left (records below the last stable offset not
in the table, and the age of the oldest of them).
"""

from __future__ import annotations

import asyncio
import logging
import random
import time
import uuid
from collections.abc import Callable, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from pykbroker.iceberg.config import (
    MODE_VALUE_SCHEMA_LATEST,
    IcebergConfigError,
    IcebergTopicConfig,
    split_topic_configs,
)
from pykbroker.iceberg.records import RecordColumns, committed_records
from replication.partition import PartitionError, read_bytes

if TYPE_CHECKING:
    from pykbroker.iceberg.commits import CommitCoordination
    from pykbroker.iceberg.tables import TableWriter
    from replication.metadata.image import MetadataImage, TopicState
    from replication.replica_manager import ReplicaManager

log = logging.getLogger("pykbroker.iceberg")

__all__ = ["ICEBERG_BROKER_PROPERTIES", "IcebergService", "PartitionLag", "TopicTranslator"]

#: The broker properties the service reads.
ICEBERG_BROKER_PROPERTIES = ("iceberg.catalog.type", "iceberg.catalog.uri", "iceberg.warehouse",
                             "iceberg.catalog.namespace", "iceberg.s3.endpoint", "iceberg.s3.region",
                             "iceberg.s3.access.key.id", "iceberg.s3.secret.access.key",
                             "iceberg.s3.path.style.access")

#: Bytes one read of one partition returns at most (a consumer's max.partition.fetch.bytes).
READ_BYTES = 1 << 20
#: Longest sleep between two ticks of a translator (shorter with a shorter commit interval).
MAX_TICK_S = 0.5
#: Tries of one commit that conflicts with other brokers' commits to the same table.
COMMIT_ATTEMPTS = 5
#: Commits between two looks for small files to compact (by the leader of partition 0 only: one compactor).
COMPACTION_EVERY = 10
#: A cluster's leaders: how often the table is read for what the committer committed, how many submissions may
#: wait for it per partition, and how long one may wait before the partition is read again from the table.
RECONCILE_EVERY_S = 0.5
MAX_SUBMITTED = 16
SUBMITTED_TIMEOUT_S = 60.0
#: Longest time between two maintenance runs (snapshot expiry, orphan files) of a table; shorter when
#: iceberg.snapshot.max.age.ms or iceberg.orphan.file.min.age.ms is (half the smaller, at least a second).
MAINTENANCE_MAX_EVERY_S = 3600.0


def maintenance_every_s(config: IcebergTopicConfig) -> float:
    """Seconds between two maintenance runs of a table (half the smaller age bound, within 1 s and an hour)."""
    every = min(config.snapshot_max_age_ms, config.orphan_file_min_age_ms) / 2000
    return min(max(every, 1.0), MAINTENANCE_MAX_EVERY_S)


async def compact(service: IcebergService, writer: TableWriter, config: IcebergTopicConfig, topic: str) -> None:
    """Compact small files (``TableWriter.compact``) on the worker thread; a failure (a commit of another writer
    came first) leaves the table as it was, for a later try."""
    try:
        await service.run_blocking(writer.compact, config, config.compaction_min_files, log.info)
    except Exception as exc:
        log.warning("iceberg: compaction of topic %s's table stopped: %s: %s", topic, type(exc).__name__, exc)


async def maintain(service: IcebergService, writer: TableWriter, config: IcebergTopicConfig, topic: str) -> None:
    """Expire old snapshots, then delete orphan files (``TableWriter.expire_snapshots``, ``remove_orphan_files``)
    on the worker thread; a failure is logged and tried at the next run."""
    try:
        await service.run_blocking(writer.expire_snapshots, config.snapshot_max_age_ms, log.info)
        await service.run_blocking(writer.remove_orphan_files, config.orphan_file_min_age_ms, log.info)
    except Exception as exc:
        log.warning("iceberg: maintenance of topic %s's table stopped: %s: %s", topic, type(exc).__name__, exc)


@dataclass
class PartitionLag:
    """How far the table is behind one partition's log: stable records not committed, and since when."""

    records: int
    seconds: float


@dataclass
class _Progress:
    """One led partition: the committed offset this run started from, what is read and pending."""

    based_on: int | None
    next_offset: int
    pending: RecordColumns
    since: float | None = None  # monotonic time the oldest pending offset was read
    stable: int = 0  # the last stable offset at the last read
    # A cluster's leaders (pykbroker.iceberg.commits): where the pending records start, and the offset ranges
    # [start, end) submitted to the committer and not in the table yet, with the monotonic time of each.
    pending_start: int = 0
    submitted: list[tuple[int, int, float]] = field(default_factory=list)

    @property
    def committed(self) -> int:
        return self.based_on if self.based_on is not None else 0


@dataclass
class _Settings:
    catalog_type: str
    uri: str
    warehouse: str
    namespace: str
    data_dir: str
    io: dict[str, str]  # the FileIO's properties (s3 credentials among them): never logged


class IcebergService:
    """Every Iceberg translator of one broker (see the module docstring)."""

    def __init__(self, settings: Mapping[str, Any], data_dir: str, replica_manager: ReplicaManager) -> None:
        # An s3:// warehouse, or a REST catalog whose tables are in S3 (it may name the endpoint itself).
        s3_set = any(settings[f"iceberg.s3.{n}"] for n in ("endpoint", "region", "access.key.id"))
        io: dict[str, str] = {}
        if s3_set or str(settings["iceberg.warehouse"]).startswith(("s3://", "s3a://")):
            # Imported here: every broker builds this service at start, and most have no Iceberg topic.
            from pykbroker.iceberg.tables import s3_properties

            io = s3_properties(settings["iceberg.s3.endpoint"], settings["iceberg.s3.region"],
                               settings["iceberg.s3.access.key.id"], settings["iceberg.s3.secret.access.key"],
                               bool(settings["iceberg.s3.path.style.access"]))
        self.settings = _Settings(settings["iceberg.catalog.type"], settings["iceberg.catalog.uri"],
                                  settings["iceberg.warehouse"], settings["iceberg.catalog.namespace"], data_dir, io)
        self.replica_manager = replica_manager
        # The broker's schema registry (pykbroker.schema_registry.SchemaRegistry), for value_schema_id_prefix
        # and value_schema_latest topics; set by the broker.
        self.schema_registry: Callable[[], Any] | None = None
        # In a cluster: leaders submit files to one committer per topic (commits.CommitCoordination); None on a
        # single node, whose leaders commit themselves. Set by the broker.
        self.coordination: CommitCoordination | None = None
        self.image: MetadataImage | None = None
        self._drops: set[asyncio.Task] = set()
        self.translators: dict[str, TopicTranslator] = {}
        self._catalog: Any = None
        self._executor: ThreadPoolExecutor | None = None
        self._closed = False

    # -- wiring ----------------------------------------------------------------------------------------
    def apply(self, old: MetadataImage | None, new: MetadataImage) -> None:
        """Start, reconfigure or stop translators for the topics of ``new`` (a metadata listener)."""
        if self._closed:
            return
        seen, self.image = self.image, new
        for name, topic in new.topics.items():
            # A topic this writer has already seen unchanged keeps its translator, or its lack of one: parsing every
            # topic's configs on every metadata change made creating many topics quadratic.
            if seen is not None and seen.topics.get(name) is topic:
                continue
            config = _iceberg_config(topic)
            current = self.translators.get(name)
            if current is not None and (current.topic_id != topic.topic_id or config is None):
                self._stop(name, drop=False)
                current = None
            if config is None:
                continue
            if current is None:
                self.translators[name] = TopicTranslator(self, topic.name, topic.topic_id, config)
                self.translators[name].start()
            else:
                current.config = config
        for name in [n for n in self.translators if n not in new.topics]:
            self._stop(name, drop=self.translators[name].config.delete_table_on_topic_delete)

    def _stop(self, name: str, *, drop: bool) -> None:
        translator = self.translators.pop(name)
        translator.stop()
        if drop:
            task = asyncio.get_running_loop().create_task(translator.drop_table())
            self._drops.add(task)
            task.add_done_callback(self._drops.discard)

    async def close(self) -> None:
        self._closed = True
        translators = list(self.translators.values())
        self.translators.clear()
        for t in translators:
            t.stop()
        await asyncio.gather(*(t.wait_stopped() for t in translators), *self._drops, return_exceptions=True)
        if self.coordination is not None:
            await self.coordination.close()
        if self._executor is not None:
            self._executor.shutdown(wait=False)

    async def run_blocking(self, fn: Callable[..., Any], *args: Any) -> Any:
        """Run ``fn`` on the service's one worker thread (pyiceberg, pyarrow, decoding)."""
        if self._executor is None:
            self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="iceberg")
        return await asyncio.get_running_loop().run_in_executor(self._executor, fn, *args)

    def catalog(self) -> Any:
        """The catalog (on the worker thread): opened, and pyiceberg imported, on first use."""
        if self._catalog is None:
            from pykbroker.iceberg.tables import open_catalog

            s = self.settings
            self._catalog = open_catalog(s.catalog_type, s.uri, s.warehouse, s.data_dir, s.io)
        return self._catalog

    def lag(self) -> dict[tuple[str, int], PartitionLag]:
        """The table lag of every partition translated here."""
        out: dict[tuple[str, int], PartitionLag] = {}
        for t in self.translators.values():
            out.update({(t.topic, p): lag for p, lag in t.lag().items()})
        return out


def _iceberg_config(topic: TopicState) -> IcebergTopicConfig | None:
    """The topic's parsed iceberg configs when its mode is on (configs were validated when set)."""
    if topic.internal:
        return None
    try:
        config = IcebergTopicConfig.from_topic_configs(split_topic_configs(topic.configs)[1])
    except IcebergConfigError as exc:  # stored by an older version or written to ZooKeeper by hand
        log.error("iceberg: topic %s is not translated: %s", topic.name, exc)
        return None
    return config if config.enabled else None


class TopicTranslator:
    """The records of one topic's partitions led here, into its table (see the module docstring)."""

    def __init__(self, service: IcebergService, topic: str, topic_id: uuid.UUID, config: IcebergTopicConfig) -> None:
        self.service = service
        self.topic = topic
        self.topic_id = topic_id
        self.config = config
        self.progress: dict[int, _Progress] = {}
        self._writer: TableWriter | None = None
        self._task: asyncio.Task | None = None
        self.commits = 0
        self._next_maintenance = 0.0  # monotonic time of the next maintenance run
        self._next_reconcile = 0.0  # a cluster's leader: monotonic time of the next look at the table's offsets

    def start(self) -> None:
        self._task = asyncio.get_running_loop().create_task(self._run(), name=f"iceberg-{self.topic}")

    def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()

    async def wait_stopped(self) -> None:
        if self._task is not None:
            try:
                await self._task
            except asyncio.CancelledError:
                pass

    async def drop_table(self) -> None:
        await self.wait_stopped()
        try:
            await self.service.run_blocking(lambda: self._table_writer().drop())  # the catalog opens off the loop
        except Exception:
            log.exception("iceberg: could not drop the table of deleted topic %s", self.topic)

    def _table_writer(self) -> TableWriter:
        if self._writer is None:
            from pykbroker.iceberg.tables import TableWriter

            self._writer = TableWriter(self.service.catalog(), self.service.settings.namespace, self.topic,
                                       str(self.topic_id))
        return self._writer

    def lag(self) -> dict[int, PartitionLag]:
        now = time.monotonic()
        return {p: PartitionLag(max(0, pr.stable - pr.committed), now - pr.since if pr.since is not None else 0.0)
                for p, pr in self.progress.items()}

    # -- the loop ------------------------------------------------------------------------------------------
    async def _run(self) -> None:
        backoff = 0.0
        while True:
            try:
                await self._tick()
                backoff = 0.0
            except asyncio.CancelledError:
                raise
            except Exception as exc:
                backoff = min(max(backoff * 2, 0.5), 10.0)
                log.warning("iceberg: topic %s: %s: %s (retrying in %.1f s from the table's offsets)", self.topic,
                            type(exc).__name__, exc, backoff)
                self.progress.clear()
                self._writer = None
                await asyncio.sleep(backoff)
            await asyncio.sleep(min(MAX_TICK_S, self.config.commit_interval_ms / 4000))

    def _led_partitions(self) -> dict[int, Any]:
        rm = self.service.replica_manager
        led = {}
        for (name, index), partition in list(rm.partitions.items()):
            if name == self.topic and partition.is_leader and partition.topic_id == self.topic_id:
                led[index] = partition
        return led

    async def _tick(self) -> None:
        led = self._led_partitions()
        for p in [p for p in self.progress if p not in led]:
            del self.progress[p]  # leadership moved: its pending records are the new leader's to commit
        new = [p for p in led if p not in self.progress]
        if new:
            offsets = await self.service.run_blocking(self._committed_offsets)
            for p in new:
                start = offsets.get(p)
                log_start = led[p].log.log_start_offset
                if start is not None and start < log_start:
                    log.warning("iceberg: %s-%d: offsets %d to %d were deleted from the log before reaching the "
                                "table", self.topic, p, start, log_start)
                first = max(start or 0, log_start)
                self.progress[p] = _Progress(start, first, RecordColumns(p), pending_start=first)
        for p, progress in self.progress.items():
            await self._read(led[p], progress)
        now = time.monotonic()
        due = [p for p, pr in self.progress.items()
               if pr.pending.size_bytes >= self.config.target_file_size_bytes
               or (pr.since is not None and (now - pr.since) * 1000 >= self.config.commit_interval_ms)]
        if self.service.coordination is not None and time.monotonic() >= self._next_reconcile:
            await self._reconcile()
        if due:
            await (self._submit() if self.service.coordination is not None else self._commit())
            if self.config.compaction_min_files and self.commits % COMPACTION_EVERY == 0 and 0 in self.progress \
                    and self.service.coordination is None:  # in a cluster the topic's committer compacts
                await self._compact()
        if 0 in self.progress and time.monotonic() >= self._next_maintenance and self.service.coordination is None:
            await self._maintain()

    def _committed_offsets(self) -> dict[int, int]:
        return self._table_writer().offsets(self.config)

    async def _read(self, partition: Any, progress: _Progress) -> None:
        """Read and decode what is stable past ``progress.next_offset``, up to the size bound."""
        while progress.pending.size_bytes < self.config.target_file_size_bytes:
            try:
                result = partition.read(progress.next_offset, READ_BYTES, read_committed=True, min_one_message=True)
            except PartitionError:
                return  # not the leader any more, or the offset is gone: the next tick sorts it out
            progress.stable = result.last_stable_offset
            data = read_bytes(result.records)  # a file region is released
            if not data:
                return
            columns, next_offset = await self.service.run_blocking(
                committed_records, progress.pending.partition, data, progress.next_offset,
                result.aborted_transactions or [])
            if next_offset <= progress.next_offset:
                return
            if progress.since is None:
                progress.since = time.monotonic()
            progress.pending.extend(columns)
            progress.next_offset = next_offset

    async def _compact(self) -> None:
        """Compact small files (``TableWriter.compact``) on the worker thread, between two commits; a failure
        (a commit of another broker came first) leaves the table as it was, for a later try."""
        await compact(self.service, self._table_writer(), self.config, self.topic)

    async def _maintain(self) -> None:
        """Expire old snapshots, then delete orphan files (``TableWriter.expire_snapshots``,
        ``remove_orphan_files``) on the worker thread; a failure is logged and tried at the next run."""
        self._next_maintenance = time.monotonic() + maintenance_every_s(self.config)
        await maintain(self.service, self._table_writer(), self.config, self.topic)

    async def _registry_schemas(self, batches: list[RecordColumns]) -> Any:
        """None unless the mode decodes with the registry. value_schema_id_prefix: the registry's schemas of the
        ids the values name, read on from ``_schemas`` when one is not known yet (an id it does not have makes its
        records dead letters). value_schema_latest: the subject's latest schema, ``_schemas`` read up to date
        first (a schema registered since the last commit decodes this one's values)."""
        from pykbroker.iceberg.registry_values import LatestSchema, schema_ids

        if not self.config.decodes_with_registry:
            return None
        if self.config.mode == MODE_VALUE_SCHEMA_LATEST:
            subject = self.config.subject(self.topic)
            latest = None
            if self.service.schema_registry is not None:
                registry = self.service.schema_registry()
                await registry.refresh()
                latest = registry.latest(subject)
            return LatestSchema(subject, latest, self.config.protobuf_name)
        ids = await self.service.run_blocking(schema_ids, [v for b in batches for v in b.values])
        if self.service.schema_registry is None:
            return {}
        registry = self.service.schema_registry()
        if any(registry.lookup(i) is None for i in ids):
            await registry.refresh()
        return {i: s for i in ids if (s := registry.lookup(i)) is not None}

    async def _commit_with_retries(self, writer: TableWriter, batches: list[RecordColumns],
                                   based_on: dict[int, int | None], next_offsets: dict[int, int]) -> Any:
        """``writer.commit``, again after a conflict with another broker's commit to the same table (each try
        reloads the table and checks the offsets anew, so the retry never writes a record twice)."""
        from pyiceberg.exceptions import CommitFailedException

        schemas = await self._registry_schemas(batches)
        for attempt in range(COMMIT_ATTEMPTS):
            try:
                return await self.service.run_blocking(writer.commit, self.config, batches, based_on, next_offsets,
                                                       schemas)
            except CommitFailedException:
                if attempt == COMMIT_ATTEMPTS - 1:
                    raise
                await asyncio.sleep(random.uniform(0.01, 0.05 * 2 ** attempt))
        raise AssertionError("unreachable")

    async def _submit(self) -> None:
        """A cluster's leader: write the pending records' files and submit them to the topic's committer
        (``commits.CommitCoordination``); the table shows them once it commits."""
        assert self.service.coordination is not None
        pending = {p: pr for p, pr in self.progress.items()
                   if pr.next_offset != pr.pending_start and len(pr.submitted) < MAX_SUBMITTED}
        if not pending:
            return
        started = time.monotonic()
        batches = [pr.pending for pr in pending.values()]
        ranges = {p: (pr.pending_start, pr.next_offset) for p, pr in pending.items()}
        schemas = await self._registry_schemas(batches)
        records, dead = await self.service.run_blocking(self._table_writer().write_files, self.config, batches,
                                                        ranges, schemas)
        for record in records:
            await self.service.coordination.submit(record)
        now = time.monotonic()
        for p, pr in pending.items():
            pr.submitted.append((*ranges[p], now))
            pr.pending = RecordColumns(p)
            pr.pending_start = pr.next_offset
            pr.since = None
        self.commits += 1
        log.info("iceberg: submitted %d records (%d dead letters) of topic %s in %d files to its committer, "
                 "offsets %s; took %.0f ms", sum(r.rows for r in records), dead, self.topic,
                 sum(len(r.paths) for r in records), ranges, (now - started) * 1000)

    async def _reconcile(self) -> None:
        """A cluster's leader: learn from the table what the committer committed. Submissions it reached are
        done; a partition whose table offset is none of this leader's (another writer's files got there) or
        that waited SUBMITTED_TIMEOUT_S is read again from the table's offset."""
        self._next_reconcile = time.monotonic() + RECONCILE_EVERY_S
        if not any(pr.submitted for pr in self.progress.values()):
            return
        offsets = await self.service.run_blocking(self._committed_offsets)
        now = time.monotonic()
        for p, pr in list(self.progress.items()):
            if not pr.submitted:
                continue
            committed = offsets.get(p)
            if committed is None or committed == pr.based_on:
                if now - pr.submitted[0][2] > SUBMITTED_TIMEOUT_S:
                    log.warning("iceberg: %s-%d: the committer has not committed offsets %d to %d for %.0f s; "
                                "reading them again from the table's offset", self.topic, p, pr.submitted[0][0],
                                pr.submitted[0][1], SUBMITTED_TIMEOUT_S)
                    del self.progress[p]
                continue
            if committed in {end for _, end, _ in pr.submitted}:
                pr.submitted = [s for s in pr.submitted if s[1] > committed]
                pr.based_on = committed
            else:
                log.info("iceberg: %s-%d: the table is at offset %d, which another writer's files reached; "
                         "reading on from there", self.topic, p, committed)
                del self.progress[p]

    async def _commit(self) -> None:
        started = time.monotonic()
        pending = {p: pr for p, pr in self.progress.items() if pr.next_offset != pr.based_on}
        batches = [pr.pending for pr in pending.values()]
        based_on = {p: pr.based_on for p, pr in pending.items()}
        next_offsets = {p: pr.next_offset for p, pr in pending.items()}
        writer = self._table_writer()
        result = await self._commit_with_retries(writer, batches, based_on, next_offsets)
        for p in result.stale:
            self.progress.pop(p, None)  # committed by another writer meanwhile: start again from the table
        for p, pr in pending.items():
            if p in result.stale or p not in self.progress:
                continue
            pr.based_on = result.offsets[p]
            pr.pending = RecordColumns(p)
            pr.since = None if pr.next_offset == pr.based_on else time.monotonic()
        self.commits += 1
        lag = self.lag()
        log.info("iceberg: committed %d records (%d dead letters) of topic %s to %s, snapshot %s, offsets %s; "
                 "lag %d records, %.1f s; took %.0f ms", result.rows, result.dead_letters, self.topic,
                 ".".join(writer.identifier), result.snapshot_id,
                 {p: result.offsets[p] for p in next_offsets if p in result.offsets},
                 sum(v.records for v in lag.values()), max((v.seconds for v in lag.values()), default=0.0),
                 (time.monotonic() - started) * 1000)
        if result.stale:
            log.warning("iceberg: topic %s partitions %s were committed by another writer; re-reading them",
                        self.topic, list(result.stale))
