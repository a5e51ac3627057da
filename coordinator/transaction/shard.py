"""The transactions of one __transaction_state partition (Kafka's TransactionStateManager, one partition).

A shard of the coordinator runtime: its state changes only by ``replay`` of __transaction_state
records — every record of the partition at load, then each record the coordinator appends. The
partition holds no transactional data and no markers, so records of a producer and transaction
markers are not replayed.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from coordinator.transaction.metadata import (
    TRANSACTION_STATE_TOPIC_NAME,
    TransactionLogRecord,
    TransactionMetadata,
)

__all__ = ["TransactionStateShard"]

log = logging.getLogger("pykbroker.coordinator.transaction")


class TransactionStateShard:
    """The transactional ids of one loaded partition, and the coordinator epoch its markers carry."""

    def __init__(self, index: int, coordinator_epoch: int,
                 on_loaded: Callable[[TransactionStateShard], None]) -> None:
        """``on_loaded(shard)``: called once the partition is replayed (the coordinator resumes the
        transactions found half-way)."""
        self.index = index
        self.coordinator_epoch = coordinator_epoch
        self.transactions: dict[str, TransactionMetadata] = {}
        self._on_loaded = on_loaded

    def replay(self, offset: int, record: TransactionLogRecord, producer_id: int = -1) -> None:
        """Apply one record: the id's state becomes the record's (in place, so a request holding the
        metadata sees it), or the id is forgotten (a tombstone)."""
        if producer_id >= 0:
            return  # no transactional data in __transaction_state
        transactional_id, transit = record.transactional_id, record.transit
        if transit is None:
            self.transactions.pop(transactional_id, None)
            return
        metadata = self.transactions.get(transactional_id)
        if metadata is None:
            self.transactions[transactional_id] = TransactionMetadata.from_transit(transactional_id, transit)
        else:
            metadata.complete_transition(transit)

    def replay_end_transaction(self, offset: int, producer_id: int, commit: bool) -> None:
        """No markers in __transaction_state."""

    def on_loaded(self) -> None:
        if self.transactions:
            log.info("%s-%d loaded: %d transactional ids", TRANSACTION_STATE_TOPIC_NAME, self.index,
                     len(self.transactions))
        self._on_loaded(self)

    def on_unloaded(self) -> None:
        """Nothing is parked on a transaction shard: requests in flight fail with NOT_COORDINATOR."""
