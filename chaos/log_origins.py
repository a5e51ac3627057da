"""Who wrote a stored record: the producer id, epoch and sequence of its batch, read from the brokers'
segment files (Kafka's format, so the same for pykbroker and Apache Kafka).

Clients do not show these, and they tell two causes of a record stored twice apart: the same
(producer id, epoch, sequence) twice is the broker failing to deduplicate a retry; the same producer id
under two epochs is the client resending after it bumped its epoch (librdkafka does so after an
OUT_OF_ORDER_SEQUENCE or a timed-out batch whose fate it cannot know), which no broker can deduplicate.
"""

from __future__ import annotations

from pathlib import Path

from chaos.history import Origin
from wire import iter_batch_headers


def partition_dirs(root: Path, topic: str, partition: int) -> list[Path]:
    """Every replica's dir of ``topic-partition`` under ``root`` (a cluster's data), not future or deleted logs."""
    return sorted(p for p in root.rglob(f"{topic}-{partition}") if p.is_dir())


def origins(root: Path, topic: str, partition: int, offsets: set[int]) -> list[Origin]:
    """The origin of each of ``offsets`` found in some replica of ``topic-partition`` under ``root``."""
    found: dict[int, Origin] = {}
    for directory in partition_dirs(root, topic, partition):
        for segment in sorted(directory.glob("*.log")):
            if len(found) == len(offsets):
                break
            buf = segment.read_bytes()
            for _, header in iter_batch_headers(buf):
                wanted = [o for o in offsets if header.base_offset <= o <= header.base_offset + header.last_offset_delta
                          and o not in found]
                for offset in wanted:
                    found[offset] = Origin(topic, partition, offset, header.producer_id, header.producer_epoch,
                                           header.base_sequence + offset - header.base_offset
                                           if header.base_sequence >= 0 else -1)
    return [found[o] for o in sorted(found)]
