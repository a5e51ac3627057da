"""The Iceberg side: the catalog, a topic's tables, and one commit of records with the offsets they reach.

Blocking (pyiceberg and pyarrow do file and catalog I/O): the writer calls everything here from a worker
thread. Layout, for topic ``t`` in namespace ``kafka`` (``iceberg.catalog.namespace``):

``kafka.t``         the records: ``partition, offset, timestamp`` (timestamptz), ``key``, then ``value``
                    (key_value mode) or the declared value columns (value_schema mode), then ``headers``
                    (list of key/value structs); partitioned as ``iceberg.partition.spec`` says.
``kafka.t~dlq``     value_schema mode's dead letters: the record as key_value has it plus ``error``; its
                    snapshots name offsets past each partition's last dead letter, so none is written twice.

Exactly once: every snapshot this writer commits carries, in its summary, ``pykbroker.offsets`` (JSON
``{partition: next offset}`` for every partition translated so far, not only those of this commit) and
``pykbroker.topic-id``. A writer starts each partition at the offset the newest such snapshot names, and a
commit first checks that the table still names the offsets it started from (another writer, or an
earlier leader, may have committed meanwhile): partitions that moved are left out and re-read. The
catalog's compare-and-swap of the metadata location makes the check and the append one atomic step.
"""

from __future__ import annotations

import datetime
import json
import logging
import os
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from pykbroker.iceberg.config import IcebergTopicConfig, PartitionField
from pykbroker.iceberg.records import RecordColumns

if TYPE_CHECKING:
    import pyarrow as pa
    from pyiceberg.catalog import Catalog
    from pyiceberg.table import Table

    from pykbroker.iceberg.commits import FilesRecord
    from pykbroker.iceberg.registry_values import DecodedValue, RegistrySchemas

log = logging.getLogger("pykbroker.iceberg")

__all__ = ["CATALOG_NAME", "CommitResult", "DLQ_SUFFIX", "OFFSETS_PROPERTY", "TOPIC_ID_PROPERTY", "TableWriter",
           "committed_offsets", "open_catalog", "s3_properties", "table_offsets"]

#: The catalog's name: Spark's Iceberg catalog over the same SQLite file must have this name (the JDBC
#: catalog keeps it in every row).
CATALOG_NAME = "pykbroker"
OFFSETS_PROPERTY = "pykbroker.offsets"
TOPIC_ID_PROPERTY = "pykbroker.topic-id"
DLQ_SUFFIX = "~dlq"
#: No retry of a conflicting commit inside pyiceberg: it would re-apply the append onto the other writer's
#: snapshot without our offsets check. A conflict fails the commit; the translator re-reads from the table.
_TABLE_PROPERTIES = {"commit.retry.num-retries": "0"}
_TRANSFORMS = {"hour": "HourTransform", "day": "DayTransform", "month": "MonthTransform",
               "year": "YearTransform", "identity": "IdentityTransform"}


def s3_properties(endpoint: str = "", region: str = "", access_key_id: str = "", secret_access_key: str = "",
                  path_style_access: bool = True) -> dict[str, str]:
    """pyiceberg's FileIO properties for an ``s3://`` warehouse from the broker's ``iceberg.s3.*`` (the secret
    goes to the FileIO only: never logged, and DescribeConfigs hides it)."""
    props = {"s3.endpoint": endpoint, "s3.region": region or ("us-east-1" if endpoint else ""),
             "s3.access-key-id": access_key_id, "s3.secret-access-key": secret_access_key}
    props = {k: v for k, v in props.items() if v}
    props["s3.force-virtual-addressing"] = "false" if path_style_access else "true"
    return props


def open_catalog(catalog_type: str, uri: str, warehouse: str, data_dir: str,
                 io_properties: Mapping[str, str] | None = None) -> Catalog:
    """The catalog the broker properties name; defaults: SQLite and a warehouse under ``data_dir``/iceberg.
    ``io_properties`` (``s3_properties``) reach the FileIO that writes and reads the warehouse's files."""
    io = dict(io_properties or {})
    if catalog_type == "rest":
        from pyiceberg.catalog.rest import RestCatalog

        if not uri:
            raise ValueError("iceberg.catalog.type=rest needs iceberg.catalog.uri (the REST catalog's URL)")
        props = {"uri": uri, **io}
        if warehouse:
            props["warehouse"] = warehouse
        return RestCatalog(CATALOG_NAME, **props)
    from pyiceberg.catalog.sql import SqlCatalog

    root = os.path.join(os.path.abspath(data_dir), "iceberg")
    if not uri or not warehouse:
        os.makedirs(os.path.join(root, "warehouse"), exist_ok=True)
    props = {"uri": uri or f"sqlite:///{root}/catalog.db", "warehouse": warehouse or f"file://{root}/warehouse", **io}
    try:
        return SqlCatalog(CATALOG_NAME, **props)
    except Exception as e:  # noqa: BLE001 - sqlalchemy's OperationalError, without importing sqlalchemy here
        # SqlCatalog checks for its tables, then creates them: another process opening the same catalog at the
        # same moment (a reader such as pyiceberg or Spark, another broker) can create them in between. Once
        # they exist, a second open only checks.
        if "already exists" not in str(e):
            raise
        return SqlCatalog(CATALOG_NAME, **props)


def committed_offsets(table: Table, topic_id: str) -> dict[int, int]:
    """``{partition: next offset}`` of the newest snapshot (of the current one's ancestry) that names them
    for ``topic_id``; empty for a new table or a table of an earlier topic of the same name."""
    snapshot = table.current_snapshot()
    while snapshot is not None:
        props = snapshot.summary.additional_properties if snapshot.summary is not None else {}
        if OFFSETS_PROPERTY in props:
            if props.get(TOPIC_ID_PROPERTY) != topic_id:
                return {}
            return {int(p): int(o) for p, o in json.loads(props[OFFSETS_PROPERTY]).items()}
        snapshot = table.snapshot_by_id(snapshot.parent_snapshot_id) if snapshot.parent_snapshot_id else None
    return {}


def table_offsets(data_dir: str | os.PathLike[str], topic: str, namespace: str = "kafka") -> dict[int, int]:
    """``{partition: next offset}`` the newest snapshot of ``topic``'s table names, in the default catalog of a
    broker whose first log dir is ``data_dir``; empty while there is no such catalog, table or snapshot."""
    root = os.path.join(os.fspath(data_dir), "iceberg")
    if not os.path.exists(os.path.join(root, "catalog.db")):
        return {}
    catalog = open_catalog("sql", "", "", os.fspath(data_dir))
    if not catalog.table_exists((namespace, topic)):
        return {}
    snapshot = catalog.load_table((namespace, topic)).current_snapshot()
    props = snapshot.summary.additional_properties if snapshot is not None and snapshot.summary else {}
    return {int(p): int(o) for p, o in json.loads(props.get(OFFSETS_PROPERTY, "{}")).items()}


@dataclass(frozen=True)
class CommitResult:
    """What one commit did: rows per table, the offsets now committed, and partitions left out as stale."""

    rows: int
    dead_letters: int
    offsets: dict[int, int]
    stale: tuple[int, ...]
    snapshot_id: int | None


class TableWriter:
    """One topic's table (and dead-letter table) in ``catalog``; not thread-safe: one commit at a time."""

    def __init__(self, catalog: Catalog, namespace: str, topic: str, topic_id: str) -> None:
        self.catalog = catalog
        self.identifier = (namespace, topic)
        self.dlq_identifier = (namespace, topic + DLQ_SUFFIX)
        self.topic = topic
        self.topic_id = topic_id

    # -- tables ------------------------------------------------------------------------------------------
    def load_or_create(self, config: IcebergTopicConfig, columns: Sequence[tuple[str, str]] = ()) -> Table:
        """The table, created on first use; columns declared since it was created are added (evolution): the
        declared ones, or in the registry modes ``columns`` (those of the schemas records name)."""
        from pyiceberg.exceptions import NoSuchTableError

        self.catalog.create_namespace_if_not_exists(self.identifier[0])
        try:
            table = self.catalog.load_table(self.identifier)
        except NoSuchTableError:
            table = self.catalog.create_table_if_not_exists(
                self.identifier, schema=_schema(config), partition_spec=_partition_spec(_schema(config), config),
                properties=_TABLE_PROPERTIES)
            log.info("iceberg: created table %s for topic %s (%s)", ".".join(self.identifier), self.topic,
                     config.mode)
        if any(table.properties.get(k) != v for k, v in _TABLE_PROPERTIES.items()):
            with table.transaction() as transaction:
                transaction.set_properties(_TABLE_PROPERTIES)
            table = self.catalog.load_table(self.identifier)
        # A mode switched on an existing table adds the value column (key_value) or the declared ones.
        if config.decodes_with_registry:
            wanted = list(columns)
        else:
            wanted = list(config.value_schema) if config.value_schema else [("value", "bytes")]
        missing = [(name, json_type) for name, json_type in wanted
                   if name not in {f.name for f in table.schema().fields}]
        if missing:
            with table.update_schema() as update:
                for name, json_type in missing:
                    update.add_column(name, _iceberg_type(json_type))
            table = self.catalog.load_table(self.identifier)
            log.info("iceberg: table %s evolved: added %s", ".".join(self.identifier),
                     ", ".join(name for name, _ in missing))
        return table

    def offsets(self, config: IcebergTopicConfig) -> dict[int, int]:
        return committed_offsets(self.load_or_create(config), self.topic_id)

    def drop(self) -> None:
        """Drop the table and its dead-letter table (the topic was deleted, iceberg.delete.table.on.topic.delete)."""
        for identifier in (self.identifier, self.dlq_identifier):
            if self.catalog.table_exists(identifier):
                self.catalog.drop_table(identifier)
                log.info("iceberg: dropped table %s with its topic", ".".join(identifier))

    # -- commits -----------------------------------------------------------------------------------------
    def commit(self, config: IcebergTopicConfig, batches: Sequence[RecordColumns], based_on: dict[int, int | None],
               next_offsets: dict[int, int], schemas: RegistrySchemas | None = None) -> CommitResult:
        """Append ``batches`` and record ``next_offsets`` in one snapshot, for the partitions whose committed
        offset is still ``based_on`` (None: none yet); the others are reported ``stale``, not written.
        The registry modes decode values with ``schemas`` (the registry's by id, or the subject's latest).

        Raises pyiceberg's CommitFailedException when another writer committed between the load and the
        append (the caller retries).
        """
        import pyarrow as pa

        decoded = _decode_registry_values(batches, schemas or {}) \
            if config.decodes_with_registry else None
        table = self.load_or_create(config, _registry_columns(decoded)) if decoded is not None \
            else self.load_or_create(config)
        current = committed_offsets(table, self.topic_id)
        stale = tuple(sorted(p for p in next_offsets if current.get(p) != based_on.get(p)))
        keep = [b for b in batches if b.partition not in stale]
        offsets = dict(current)
        offsets.update({p: o for p, o in next_offsets.items() if p not in stale})
        if offsets == current:
            return CommitResult(0, 0, current, stale, None)
        rows, dead = _to_arrow(table, config, keep, decoded)
        properties = {OFFSETS_PROPERTY: json.dumps({str(p): o for p, o in sorted(offsets.items())}),
                      TOPIC_ID_PROPERTY: self.topic_id}
        if dead is not None:
            self._dead_letters(dead)
        if rows.num_rows == 0:
            rows = pa.Table.from_pylist([], schema=rows.schema)
        transaction = table.transaction()
        transaction.append(rows, snapshot_properties=properties)
        transaction.commit_transaction()
        snapshot = self.catalog.load_table(self.identifier).current_snapshot()
        return CommitResult(rows.num_rows, len(dead["offset"]) if dead is not None else 0, offsets, stale,
                            snapshot.snapshot_id if snapshot is not None else None)

    # -- a cluster: leaders write files, one committer commits them (pykbroker.iceberg.commits) -----------------
    def write_files(self, config: IcebergTopicConfig, batches: Sequence[RecordColumns],
                    ranges: Mapping[int, tuple[int, int]], schemas: RegistrySchemas | None = None
                    ) -> tuple[list[FilesRecord], int]:
        """Write the Parquet files of ``batches`` (one ``RecordColumns`` per partition, the records read at the
        offsets ``ranges[partition]`` = [start, end)) without committing them; dead letters go to their table
        at once. (one FilesRecord per partition, the dead letters written)."""
        from pyiceberg.io.pyarrow import _dataframe_to_data_files

        from pykbroker.iceberg.commits import FilesRecord

        decoded = _decode_registry_values(batches, schemas or {}) \
            if config.decodes_with_registry else None
        table = self.load_or_create(config, _registry_columns(decoded)) if decoded is not None \
            else self.load_or_create(config)
        out = []
        dead_letters = 0
        for b in batches:
            rows, dead = _to_arrow(table, config, [b], decoded)
            if dead is not None:
                self._dead_letters(dead)
                dead_letters += len(dead["offset"])
            paths: tuple[str, ...] = ()
            if rows.num_rows:
                files = _dataframe_to_data_files(table.metadata, rows, table.io)
                paths = tuple(f.file_path for f in files)
            start, end = ranges[b.partition]
            out.append(FilesRecord(self.topic, self.topic_id, b.partition, start, end, paths, rows.num_rows))
        return out, dead_letters

    def commit_files(self, config: IcebergTopicConfig, pending: Mapping[int, Mapping[int, FilesRecord]]
                     ) -> CommitResult:
        """Append, in one snapshot, the files of ``pending`` ({partition: {start offset: record}}) that continue
        the offsets the table names without a gap, and record the offsets they reach. Files of offsets the
        table has are never added, so a retry, a second leader or a restarted committer writes nothing twice.
        Raises pyiceberg's CommitFailedException when another writer committed first (the caller tries again)."""
        import pyarrow as pa

        from pykbroker.iceberg.commits import chain

        table = self.load_or_create(config)
        current = committed_offsets(table, self.topic_id)
        records = [r for p, starts in pending.items() for r in chain(dict(starts), current.get(p))]
        if not records:
            return CommitResult(0, 0, current, (), None)
        offsets = dict(current)
        for r in records:
            offsets[r.partition] = r.end
        properties = {OFFSETS_PROPERTY: json.dumps({str(p): o for p, o in sorted(offsets.items())}),
                      TOPIC_ID_PROPERTY: self.topic_id}
        paths = [path for r in records for path in r.paths]
        transaction = table.transaction()
        if paths:
            transaction.add_files(paths, snapshot_properties=properties, check_duplicate_files=False)
        else:  # only offsets move (records that were all dead letters, or aborted)
            transaction.append(pa.Table.from_pylist([], schema=table.schema().as_arrow()),
                               snapshot_properties=properties)
        transaction.commit_transaction()
        snapshot = self.catalog.load_table(self.identifier).current_snapshot()
        rows = sum(r.rows for r in records)
        log.info("iceberg: committed %d records in %d files of the partition leaders of topic %s to %s (its "
                 "committer), snapshot %s, offsets %s",
                 rows, len(paths), self.topic, ".".join(self.identifier),
                 snapshot.snapshot_id if snapshot is not None else None,
                 {r.partition: offsets[r.partition] for r in records})
        return CommitResult(rows, 0, offsets, (), snapshot.snapshot_id if snapshot is not None else None)

    def _dead_letters(self, rows: dict[str, list[Any]]) -> None:
        """Append undecodable records to the dead-letter table before their offsets are committed to the
        table. Its snapshots carry offsets too (past the last dead letter of each partition), so after a crash
        between the two commits the re-read dead letters already there are not appended again."""
        import pyarrow as pa

        table = self.catalog.create_table_if_not_exists(self.dlq_identifier, schema=_dlq_schema(),
                                                        properties=_TABLE_PROPERTIES)
        done = committed_offsets(table, self.topic_id)
        keep = [i for i, (p, o) in enumerate(zip(rows["partition"], rows["offset"], strict=True))
                if o >= done.get(p, -1)]
        if not keep:
            return
        rows = {name: [values[i] for i in keep] for name, values in rows.items()}
        offsets = dict(done)
        for p, o in zip(rows["partition"], rows["offset"], strict=True):
            offsets[p] = max(offsets.get(p, 0), o + 1)
        transaction = table.transaction()
        transaction.append(pa.Table.from_pydict(rows, schema=table.schema().as_arrow()), snapshot_properties={
            OFFSETS_PROPERTY: json.dumps({str(p): o for p, o in sorted(offsets.items())}),
            TOPIC_ID_PROPERTY: self.topic_id})
        transaction.commit_transaction()


    # -- compaction --------------------------------------------------------------------------------------
    def compact(self, config: IcebergTopicConfig, min_files: int, progress: Callable[[str], None]) -> int:
        """Rewrite each table partition holding ``min_files`` or more data files, together smaller than
        ``iceberg.target.file.size.bytes``, as one file; returns the files removed. One snapshot (a delete and
        an append, in one commit) per table partition, carrying the offsets of the snapshot it replaces; the
        catalog's compare-and-swap fails it, untouched, if a record commit came first."""
        table = self.load_or_create(config)
        groups: dict[tuple, list[Any]] = {}
        for task in table.scan().plan_files():
            partition = task.file.partition
            groups.setdefault(tuple(partition[i] for i in range(len(partition))), []).append(task.file)
        due = [(key, files) for key, files in sorted(groups.items(), key=lambda kv: str(kv[0]))
               if len(files) >= min_files and sum(f.file_size_in_bytes for f in files) < config.target_file_size_bytes]
        if not due:
            return 0
        name = ".".join(self.identifier)
        progress(f"iceberg: compacting {name}: {len(due)} table partitions of {min_files} or more small files")
        removed = 0
        for i, (key, files) in enumerate(due, 1):
            started = time.monotonic()
            where = _partition_filter(table, key)
            rows = table.scan(row_filter=where).to_arrow()
            snapshot = table.current_snapshot()
            props = dict(snapshot.summary.additional_properties) if snapshot and snapshot.summary else {}
            carried = {k: v for k, v in props.items() if k in (OFFSETS_PROPERTY, TOPIC_ID_PROPERTY)}
            transaction = table.transaction()
            transaction.overwrite(rows, overwrite_filter=where,
                                  snapshot_properties={**carried, "pykbroker.compaction": str(len(files))})
            transaction.commit_transaction()
            table = self.catalog.load_table(self.identifier)
            removed += len(files)
            progress(f"iceberg: compacting {name} {i}/{len(due)}: partition {_describe(table, key)}: {len(files)} "
                     f"files, {sum(f.file_size_in_bytes for f in files):,} bytes, {rows.num_rows} records -> one file "
                     f"in {(time.monotonic() - started) * 1000:.0f} ms")
        return removed


    # -- maintenance -------------------------------------------------------------------------------------
    def _existing_tables(self) -> list[Table]:
        return [self.catalog.load_table(i) for i in (self.identifier, self.dlq_identifier)
                if self.catalog.table_exists(i)]

    def expire_snapshots(self, max_age_ms: int, progress: Callable[[str], None]) -> int:
        """Expire the snapshots (of the table and its dead-letter table) older than ``max_age_ms``, never the
        current one (which names the offsets); returns how many. Their files become orphans, for
        ``remove_orphan_files``. A commit of another writer first fails it (the catalog's compare-and-swap)."""
        cutoff = int(time.time() * 1000) - max_age_ms
        expired = 0
        for table in self._existing_tables():
            current = table.current_snapshot()
            old = [s.snapshot_id for s in table.snapshots()
                   if s.timestamp_ms < cutoff and (current is None or s.snapshot_id != current.snapshot_id)]
            if not old:
                continue
            table.maintenance.expire_snapshots().by_ids(old).commit()
            expired += len(old)
            progress(f"iceberg: expired {len(old)} snapshots of {'.'.join(table.name())} older than {max_age_ms} ms; "
                     f"{len(table.snapshots())} kept")
        return expired

    def remove_orphan_files(self, min_age_ms: int, progress: Callable[[str], None]) -> int:
        """Delete the files under the tables' ``data/`` (any) and ``metadata/`` (manifests and manifest lists,
        ``*.avro``) that no snapshot references and that are older than ``min_age_ms``; returns how many."""
        from pyarrow.fs import FileSelector, FileType
        from pyiceberg.io.pyarrow import PyArrowFileIO

        cutoff = time.time() - min_age_ms / 1000
        removed = 0
        for table in self._existing_tables():
            io = table.io
            if not isinstance(io, PyArrowFileIO):
                log.warning("iceberg: orphan files of %s are not looked for: its FileIO is %s, not pyarrow's",
                            ".".join(table.name()), type(io).__name__)
                continue
            locations = [s.manifest_list for s in table.snapshots()]
            if table.snapshots():
                locations += table.inspect.all_files()["file_path"].to_pylist()
                locations += table.inspect.all_manifests()["path"].to_pylist()
            referenced = {PyArrowFileIO.parse_location(loc, io.properties)[2] for loc in locations}
            scheme, netloc, root = PyArrowFileIO.parse_location(table.location(), io.properties)
            fs = io.fs_by_scheme(scheme, netloc)
            orphans = []
            for folder, suffix in (("data", ""), ("metadata", ".avro")):
                for info in fs.get_file_info(FileSelector(f"{root.rstrip('/')}/{folder}", recursive=True,
                                                          allow_not_found=True)):
                    if info.type == FileType.File and info.path.endswith(suffix) and info.path not in referenced \
                            and info.mtime is not None and info.mtime.timestamp() < cutoff:
                        orphans.append(info)
            for info in orphans:
                fs.delete_file(info.path)
            if orphans:
                removed += len(orphans)
                progress(f"iceberg: removed {len(orphans)} orphan files ({sum(i.size or 0 for i in orphans):,} bytes) "
                         f"of {'.'.join(table.name())}, unreferenced and older than {min_age_ms} ms")
        return removed


# -- compaction filters ------------------------------------------------------------------------------------
def _describe(table: Table, key: tuple) -> str:
    return ",".join(f"{f.name}={v}" for f, v in zip(table.spec().fields, key, strict=True)) or "(unpartitioned)"


def _partition_filter(table: Table, key: tuple) -> Any:
    """The row filter selecting exactly the rows of the table partition ``key`` (under the current spec)."""
    import pyiceberg.expressions

    ex: Any = pyiceberg.expressions  # its constructors' stubs do not take plain column names
    schema = table.schema()
    where: Any = ex.AlwaysTrue()
    for field_, value in zip(table.spec().fields, key, strict=True):
        column = schema.find_field(field_.source_id).name
        transform = str(field_.transform)
        if value is None:
            part: Any = ex.IsNull(column)
        elif transform == "identity":
            part = ex.EqualTo(column, value)
        else:
            start, end = _time_range(transform, int(value))
            part = ex.And(ex.GreaterThanOrEqual(column, start), ex.LessThan(column, end))
        where = part if isinstance(where, ex.AlwaysTrue) else ex.And(where, part)
    return where


def _time_range(transform: str, value: int) -> tuple[str, str]:
    """[start, end) as ISO timestamps of a time transform's partition value (hours/days/months/years since 1970)."""
    epoch = datetime.datetime(1970, 1, 1, tzinfo=datetime.UTC)
    if transform in ("hour", "day"):
        step = datetime.timedelta(hours=1) if transform == "hour" else datetime.timedelta(days=1)
        start = epoch + value * step
        end = start + step
    else:
        months = value if transform == "month" else value * 12
        width = 1 if transform == "month" else 12
        start = epoch.replace(year=1970 + months // 12, month=months % 12 + 1)
        later = months + width
        end = epoch.replace(year=1970 + later // 12, month=later % 12 + 1)
    return start.isoformat(), end.isoformat()


# -- schemas -------------------------------------------------------------------------------------------------
def _iceberg_type(json_type: str) -> Any:
    from pyiceberg.types import BinaryType, BooleanType, DoubleType, LongType, StringType

    return {"string": StringType(), "integer": LongType(), "number": DoubleType(), "boolean": BooleanType(),
            "object": StringType(), "array": StringType(), "bytes": BinaryType()}[json_type]


def _headers_type(first_id: int) -> Any:
    from pyiceberg.types import BinaryType, ListType, NestedField, StringType, StructType

    return ListType(first_id, StructType(NestedField(first_id + 1, "key", StringType(), required=False),
                                         NestedField(first_id + 2, "value", BinaryType(), required=False)),
                    element_required=False)


def _coordinates() -> list[Any]:
    from pyiceberg.types import BinaryType, IntegerType, LongType, NestedField, TimestamptzType

    return [NestedField(1, "partition", IntegerType(), required=False),
            NestedField(2, "offset", LongType(), required=False),
            NestedField(3, "timestamp", TimestamptzType(), required=False),
            NestedField(4, "key", BinaryType(), required=False)]


def _schema(config: IcebergTopicConfig) -> Any:
    from pyiceberg.schema import Schema
    from pyiceberg.types import BinaryType, NestedField

    fields = _coordinates()
    if config.decodes_with_registry:
        pass  # the value columns come from the registry's schemas, added as records name them
    elif config.value_schema:
        fields += [NestedField(10 + i, name, _iceberg_type(t), required=False)
                   for i, (name, t) in enumerate(config.value_schema)]
    else:
        fields.append(NestedField(5, "value", BinaryType(), required=False))
    fields.append(NestedField(6, "headers", _headers_type(1000), required=False))
    return Schema(*fields)


def _dlq_schema() -> Any:
    from pyiceberg.schema import Schema
    from pyiceberg.types import BinaryType, NestedField, StringType

    return Schema(*_coordinates(), NestedField(5, "value", BinaryType(), required=False),
                  NestedField(6, "headers", _headers_type(1000), required=False),
                  NestedField(7, "error", StringType(), required=False))


def _partition_spec(schema: Any, config: IcebergTopicConfig) -> Any:
    from pyiceberg import transforms
    from pyiceberg.partitioning import PartitionField as IcebergPartitionField
    from pyiceberg.partitioning import PartitionSpec

    def one(i: int, f: PartitionField) -> IcebergPartitionField:
        source = schema.find_field(f.column)
        name = f.column if f.transform == "identity" else f"{f.column}_{f.transform}"
        return IcebergPartitionField(source_id=source.field_id, field_id=1000 + i,
                                     transform=getattr(transforms, _TRANSFORMS[f.transform])(), name=name)

    return PartitionSpec(*(one(i, f) for i, f in enumerate(config.partition_spec)))


# -- rows ----------------------------------------------------------------------------------------------------
def _headers(headers: list[list[tuple[str, bytes | None]]]) -> list[list[dict[str, Any]]]:
    return [[{"key": k, "value": v} for k, v in hs] for hs in headers]


def _timestamps(ms: list[int]) -> list[int | None]:
    return [t * 1000 if t >= 0 else None for t in ms]


Decoded = dict[tuple[int, int], tuple["DecodedValue | None", str | None]]  # (partition, offset) -> decoded, error


def _decode_registry_values(batches: Sequence[RecordColumns], schemas: RegistrySchemas) -> Decoded:
    """Every value of ``batches`` decoded with the registry's ``schemas`` (by id, or the subject's latest)."""
    from pykbroker.iceberg.registry_values import decode_registry_value

    return {(b.partition, o): decode_registry_value(v, schemas) for b in batches
            for o, v in zip(b.offsets, b.values, strict=True)}


def _registry_columns(decoded: Decoded) -> list[tuple[str, str]]:
    """The value columns the decoded records' schemas have, in the order they first appear."""
    out: dict[str, str] = {}
    for result, _ in decoded.values():
        if result is not None:
            for name, kind in result[1]:
                out.setdefault(name, kind)
    return list(out.items())


def _column_kinds(table: Table) -> dict[str, set[str]]:
    """The value_schema mode types each column of ``table`` stores."""
    from pyiceberg.types import BinaryType, BooleanType, DoubleType, IntegerType, LongType, StringType

    kinds = {StringType: {"string", "object", "array"}, LongType: {"integer"}, IntegerType: {"integer"},
             DoubleType: {"number"}, BooleanType: {"boolean"}, BinaryType: {"bytes"}}
    return {f.name: next((k for t, k in kinds.items() if isinstance(f.field_type, t)), set())
            for f in table.schema().fields}


def _to_arrow(table: Table, config: IcebergTopicConfig, batches: Sequence[RecordColumns],
              decoded: Decoded | None = None) -> tuple[pa.Table, dict[str, list[Any]] | None]:
    """(rows for the table in its current schema, dead letters' columns or None) of ``batches``."""
    import pyarrow as pa

    arrow_schema = table.schema().as_arrow()
    columns: dict[str, list[Any]] = {f.name: [] for f in arrow_schema}
    dead: dict[str, list[Any]] = {n: [] for n in ("partition", "offset", "timestamp", "key", "value", "headers",
                                                  "error")}
    for b in batches:
        stamps = _timestamps(b.timestamps)
        headers = _headers(b.headers)
        if not config.value_schema and decoded is None:
            columns["partition"] += [b.partition] * len(b)
            columns["offset"] += b.offsets
            columns["timestamp"] += stamps
            columns["key"] += b.keys
            columns["value"] += b.values
            columns["headers"] += headers
            continue
        from pykbroker.iceberg.values import decode_json_value

        names = [n for n in columns if n not in _CORE_COLUMNS]
        kinds = _column_kinds(table) if decoded is not None else {}
        for i, value in enumerate(b.values):
            if decoded is not None:
                result, error = decoded[(b.partition, b.offsets[i])]
                cells = result[0] if result is not None else {}
                if result is not None:
                    error = next((f"field {name!r} is of type {kind}, but the table's column holds "
                                  f"{'/'.join(sorted(kinds.get(name, set())))} (an earlier schema version's type)"
                                  for name, kind in result[1] if kind not in kinds.get(name, {kind})), None)
            else:
                cells, error = decode_json_value(value, config.value_schema)
            if error is not None:
                for name, item in (("partition", b.partition), ("offset", b.offsets[i]), ("timestamp", stamps[i]),
                                   ("key", b.keys[i]), ("value", value), ("headers", headers[i]), ("error", error)):
                    dead[name].append(item)
                continue
            columns["partition"].append(b.partition)
            columns["offset"].append(b.offsets[i])
            columns["timestamp"].append(stamps[i])
            columns["key"].append(b.keys[i])
            columns["headers"].append(headers[i])
            for name in names:
                columns[name].append(cells.get(name))
    count = len(columns["offset"])
    for values in columns.values():  # columns of the other mode (the table's mode was switched): null
        values.extend([None] * (count - len(values)))
    rows = pa.Table.from_pydict(columns, schema=arrow_schema)
    return rows, dead if dead["offset"] else None


_CORE_COLUMNS = ("partition", "offset", "timestamp", "key", "headers")
