"""Producer ids handed out in blocks, as Kafka's ProducerIdManager.

A block of ``BLOCK_SIZE`` ids is reserved durably before any id in it is given out, so a crash never
reuses an id: after a restart the next block starts past everything ever reserved. On a single node the
reservation lives in ``<data dir>/producer-id-block.json`` (written atomically); the cluster will back
it with ZooKeeper's ``/latest_producer_id_block`` instead. Event-loop only (single writer).
"""

from __future__ import annotations

import json
from pathlib import Path

from storage.file_records import atomic_write

__all__ = ["BLOCK_SIZE", "ProducerIdManager"]

# Kafka's ProducerIdsBlock.PRODUCER_ID_BLOCK_SIZE.
BLOCK_SIZE = 1000
STATE_FILE = "producer-id-block.json"


class ProducerIdManager:
    """Allocates producer ids; ``next_producer_id()`` never returns the same id twice, across restarts."""

    def __init__(self, data_dir: str | Path, node_id: int) -> None:
        self.path = Path(data_dir) / STATE_FILE
        self.node_id = node_id
        self._next = 0
        self._block_end = 0  # exclusive
        if self.path.exists():
            state = json.loads(self.path.read_text())
            # Everything below the reserved end may have been handed out before the restart.
            self._next = self._block_end = int(state["block_end"])

    def _reserve_block(self) -> None:
        end = self._block_end + BLOCK_SIZE
        atomic_write(self.path, json.dumps({"version": 1, "broker_id": self.node_id,
                                                "block_start": self._block_end, "block_end": end}).encode())
        self._next = self._block_end
        self._block_end = end

    def next_producer_id(self) -> int:
        if self._next >= self._block_end:
            self._reserve_block()
        pid = self._next
        self._next += 1
        return pid
