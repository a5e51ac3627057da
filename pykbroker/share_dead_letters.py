"""The dead-letter queue of share groups (KIP-1191, share.version 2): Kafka 4.4's ShareGroupDLQManager.

A share group whose group config ``errors.deadletterqueue.topic.name`` names a topic, on a cluster with
share.version 2 finalized, has every record it gives up on written to that topic before it is archived: a
record the client REJECTs (cause "Offset rejected by client.") and one whose delivery count reaches the limit
when it is released or its lock expires ("Offset delivery count exceeded the threshold."). Each DLQ record goes
to partition ``source partition % DLQ partitions`` with the time of writing and these headers (values as text):
``__dlq.errors.topic``, ``__dlq.errors.partition``, ``__dlq.errors.offset``, ``__dlq.errors.group``,
``__dlq.errors.delivery.count``, ``__dlq.errors.message``; its key and value are the original record's when
``errors.deadletterqueue.copy.record.enable`` is true, else empty.

The DLQ topic must not start with ``__``, must start with the broker's ``errors.deadletterqueue.topic.name.prefix``
(``dlq.``; empty: any name), and if it exists must have ``errors.deadletterqueue.group.enable=true``; a missing one
is created (with that config and CreateTime timestamps) only with ``errors.deadletterqueue.auto.create.topics.enable``.
A write that cannot happen is logged with Kafka's reason and the records are archived regardless, as Kafka does.
Writes are queued and drained by one task, a batch per DLQ partition per round.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any

from coordinator.share.share_partition import CLIENT_REJECT, DELIVERY_COUNT_EXCEEDED
from wire import Record, build_batch, decode_records, iter_batch_headers

__all__ = ["CLIENT_REJECT", "DELIVERY_COUNT_EXCEEDED", "DeadLetter", "ShareGroupDeadLetters"]

log = logging.getLogger("pykbroker.share.dlq")

TOPIC_NAME = "errors.deadletterqueue.topic.name"
COPY_RECORD = "errors.deadletterqueue.copy.record.enable"
TOPIC_ENABLE = "errors.deadletterqueue.group.enable"
#: the most bytes of original records read for one round of copies
_COPY_READ_BYTES = 1 << 20


@dataclass(frozen=True, slots=True)
class DeadLetter:
    """Offsets ``first..last`` of ``topic-partition`` that ``group_id`` gave up on."""

    group_id: str
    topic: str
    partition: int
    first: int
    last: int
    delivery_count: int
    cause: str


class ShareGroupDeadLetters:
    """Queue and write share groups' dead letters. The broker gives it what lives above: ``config(name)`` (a
    live broker property), ``group_configs(group_id)``, ``share_version()`` (finalized level), ``topic(name)``
    (None, or (partition count, topic configs, leader of partition -> node id)), ``create_topic(name, configs)``,
    ``produce(leader, topic, partition, batch) -> error code`` and ``read(topic, partition, offset, max_bytes)``
    (the raw record batches of a local replica from ``offset``)."""

    def __init__(self, *, config: Callable[[str], Any], group_configs: Callable[[str], Mapping[str, str]],
                 share_version: Callable[[], int], topic: Callable[[str], tuple[int, Mapping[str, str],
                                                                               Callable[[int], int]] | None],
                 create_topic: Callable[[str, dict[str, str]], Awaitable[bool]],
                 produce: Callable[[int, str, int, bytes], Awaitable[int]],
                 read: Callable[[str, int, int, int], bytes], time_ms: Callable[[], int] | None = None) -> None:
        self._config = config
        self._group_configs = group_configs
        self._share_version = share_version
        self._topic = topic
        self._create_topic = create_topic
        self._produce = produce
        self._read = read
        self._time_ms = time_ms or (lambda: int(time.time() * 1000))
        self._pending: list[DeadLetter] = []
        self._drain: asyncio.Task | None = None
        self.written = 0  # DLQ records written (tests and metrics)

    def enabled(self, group_id: str) -> bool:
        """Kafka's isDLQEnabledForGroup: share.version 2 and a DLQ topic named by the group."""
        return self._share_version() >= 2 and bool(self._group_configs(group_id).get(TOPIC_NAME, "").strip())

    def enqueue(self, letter: DeadLetter) -> None:
        """Queue offsets a share-partition archives (its callback; nothing when the group has no DLQ)."""
        if not self.enabled(letter.group_id):
            return
        self._pending.append(letter)
        if self._drain is None or self._drain.done():
            self._drain = asyncio.get_running_loop().create_task(self._drain_pending())

    async def idle(self) -> None:
        """Until every queued dead letter is written or given up (tests)."""
        while self._drain is not None and not self._drain.done():
            await asyncio.shield(self._drain)

    async def _drain_pending(self) -> None:
        while self._pending:
            letters, self._pending = self._pending, []
            by_group: dict[str, list[DeadLetter]] = {}
            for letter in letters:
                by_group.setdefault(letter.group_id, []).append(letter)
            for group_id, group_letters in by_group.items():
                try:
                    await self._write(group_id, group_letters)
                except Exception as exc:  # noqa: BLE001 - the records stay archived whatever happens
                    log.error("Failed to write to DLQ, proceeding to ARCHIVED regardless: share group %s: %s",
                              group_id, exc)

    def _check_topic(self, group_id: str, name: str) -> str | None:
        """Kafka's validateDlqTopic: why ``name`` cannot be the group's DLQ topic, or None."""
        if not name:
            return f"Configured DLQ topic name in share group: {group_id} is empty."
        if name.startswith("__"):
            return f"Configured DLQ topic name in share group: {group_id} cannot start with __, topic: {name}."
        found = self._topic(name)
        if found is not None and str(found[1].get(TOPIC_ENABLE, "false")).lower() != "true":
            return f"DLQ is not enabled on configured DLQ topic for share group: {group_id}, topic: {name}."
        if found is None and not self._config("errors.deadletterqueue.auto.create.topics.enable"):
            return (f"DLQ topic does not exist and auto create is disabled on cluster for share group: {group_id}, "
                    f"topic: {name}.")
        prefix = self._config("errors.deadletterqueue.topic.name.prefix") or ""
        if prefix and not name.startswith(prefix):
            return (f"Configured DLQ topic name does not comply with the DLQ topic prefix in share group: {group_id}, "
                    f"topic: {name}, prefix: {prefix}.")
        return None

    async def _write(self, group_id: str, letters: list[DeadLetter]) -> None:
        configs = self._group_configs(group_id)
        name = configs.get(TOPIC_NAME, "").strip()
        problem = self._check_topic(group_id, name)
        if problem is not None:
            log.error("Failed to write to DLQ, proceeding to ARCHIVED regardless: %s", problem)
            return
        found = self._topic(name)
        if found is None:
            await self._create_topic(name, {TOPIC_ENABLE: "true", "message.timestamp.type": "CreateTime"})
            deadline = time.monotonic() + 30
            while (found := self._topic(name)) is None or any(found[2](p) < 0 for p in range(found[0])):
                if time.monotonic() > deadline:
                    raise TimeoutError(f"the DLQ topic {name} of share group {group_id} has no leaders yet")
                await asyncio.sleep(0.05)
        partitions, _, leader_of = found
        copy = str(configs.get(COPY_RECORD, "false")).lower() == "true"
        by_partition: dict[int, list[Record]] = {}
        now = self._time_ms()
        for letter in letters:
            originals = self._originals(letter) if copy else {}
            records = by_partition.setdefault(letter.partition % partitions, [])
            for offset in range(letter.first, letter.last + 1):
                key, value = originals.get(offset, (None, None))
                records.append(Record(len(records), 0, key, value, [
                    ("__dlq.errors.topic", letter.topic.encode()),
                    ("__dlq.errors.partition", str(letter.partition).encode()),
                    ("__dlq.errors.offset", str(offset).encode()),
                    ("__dlq.errors.group", group_id.encode()),
                    ("__dlq.errors.delivery.count", str(letter.delivery_count).encode()),
                    ("__dlq.errors.message", letter.cause.encode())]))
        for partition, records in by_partition.items():
            code = await self._produce(leader_of(partition), name, partition, build_batch(records, base_timestamp=now))
            if code != 0:
                raise RuntimeError(f"producing {len(records)} records to {name}-{partition} failed with error {code}")
            self.written += len(records)

    def _originals(self, letter: DeadLetter) -> dict[int, tuple[bytes | None, bytes | None]]:
        """The key and value of each offset of ``letter`` still in the local log (copy.record.enable)."""
        out: dict[int, tuple[bytes | None, bytes | None]] = {}
        offset = letter.first
        while offset <= letter.last:
            data = self._read(letter.topic, letter.partition, offset, _COPY_READ_BYTES)
            progressed = False
            for pos, header in iter_batch_headers(data):
                if header.last_offset < offset:
                    continue
                _, records = decode_records(data, pos)
                for r in records:
                    at = header.base_offset + r.offset_delta
                    if letter.first <= at <= letter.last:
                        out[at] = (r.key, r.value)
                offset = header.last_offset + 1
                progressed = True
                if offset > letter.last:
                    break
            if not progressed:
                break
        return out
