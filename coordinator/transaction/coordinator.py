"""The transaction coordinator (Kafka's TransactionCoordinator and TransactionStateManager).

Each transactional id belongs to one __transaction_state partition (``Utils.abs(id.hashCode()) % n``)
and is coordinated by that partition's leader. Each partition this node leads is a shard
(``shard.TransactionStateShard``) on the coordinator runtime shared with the group coordinator: its
state is rebuilt by replaying its log when this node starts leading it (transactions found half-way,
PrepareCommit/PrepareAbort, are then completed), and its appends go through the shard's ordered
write path (acks=all).

Every change is written before it takes effect: the coordinator computes the next state, marks the
transaction pending (other requests on it get CONCURRENT_TRANSACTIONS), appends the record, and
the state changes when the runtime replays that record once the append succeeded. Ending a
transaction is

    Ongoing -> PrepareCommit/PrepareAbort (written; the decision is durable)
            -> a COMMIT/ABORT marker on every partition of the transaction
            -> CompleteCommit/CompleteAbort (written)

EndTxn is answered once the Prepare state is durable (appended with acks=all, so replicated to
min.insync.replicas): the decision cannot be lost any more. The markers and the Complete state follow in
the background, as Kafka's TransactionMarkerChannelManager sends them: markers that cannot be written yet
(no leader, an unreachable leader, a leader that moved) are sent again until every partition's leader has
them. Until the Complete state is written the transaction shows PrepareCommit/PrepareAbort (ListTransactions,
DescribeTransactions) and requests on its id (InitProducerId, AddPartitionsToTxn, AddOffsetsToTxn, EndTxn,
a version 2 write's implicit add) get CONCURRENT_TRANSACTIONS, which clients retry; an add for the next
transaction first waits up to 100 ms for the completion (``_completed_within``), as Kafka's partition leaders
retry a version 2 write's add for 100 ms. A coordinator that
stops leading the partition (or is killed) leaves the rest to the next one, which finds the Prepare state
when it loads the partition and sends the markers again.

A background task aborts transactions older than their timeout (fencing their producer by bumping
the epoch, as Kafka does) and forgets transactional ids idle longer than
``transactional.id.expiration.ms``. It leaves alone a transaction whose next state is being written: the
broker gives those appends ``request.timeout.ms`` (as Kafka's TransactionStateManager), so a write
waiting for a dead replica to leave the ISR keeps its transaction rather than having it fenced.

Transaction versions (KIP-890): clients of version 0/1 add partitions with AddPartitionsToTxn and keep
their epoch; their transactional writes are verified (``verify_partition``, part 1). Version 2 clients
(EndTxn v5+, finalized by this broker as by a new Kafka 4.4 cluster) add partitions by writing
(Produce v12+, TxnOffsetCommit v5+: ``add_partition_from_write``), and every EndTxn bumps the epoch,
moving to a new producer id when it is exhausted, so a late write of an ended transaction is fenced
(part 2). Aborts the coordinator starts itself (timeouts, fencing) bump the epoch as version 2 does.
"""

from __future__ import annotations

import asyncio
import logging
import re
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass
from typing import Any, Protocol

from coordinator.group.partitioner import GROUP_METADATA_TOPIC_NAME, partition_for
from coordinator.runtime.clock import Clock
from coordinator.runtime.errors import ApiError
from coordinator.runtime.log import CoordinatorLogFactory
from coordinator.runtime.result import CoordinatorResult
from coordinator.runtime.runtime import CoordinatorRuntime
from coordinator.runtime.timer import CoordinatorTimer
from coordinator.transaction.metadata import (
    COMPLETED_STATES,
    MAX_PRODUCER_EPOCH,
    TRANSACTION_STATE_TOPIC_NAME,
    TopicPartition,
    TransactionLogRecord,
    TransactionMetadata,
    TxnState,
    TxnTransit,
    decode_record,
    is_epoch_exhausted,
)
from coordinator.transaction.shard import TransactionStateShard
from storage import AppendOrigin
from wire import ControlRecordType, ErrorCode, build_control_batch

__all__ = ["TransactionCoordinator", "TransactionConfig", "TxnError"]

log = logging.getLogger("pykbroker.coordinator.transaction")

S = TxnState
# Markers that could not be written are sent again after 0.1 s, doubling to 1 s (the partition has no leader, or
# its leader is unreachable or moved).
MARKER_RETRY_BACKOFF_S = 0.1
MARKER_RETRY_BACKOFF_MAX_S = 1.0
# Kafka's add.partitions.to.txn.retry.backoff.ms / .max.ms: a write's implicit add retries CONCURRENT_TRANSACTIONS.
ADD_PARTITION_RETRY_BACKOFF_S = 0.02
ADD_PARTITION_RETRY_MAX_S = 0.1
# An add that finds another add of the same transaction being written waits for it this long at most: on a
# cluster that write (acks=all on __transaction_state) takes longer than Kafka's 100 ms retry window, and each
# failed add costs the producer a retry backoff (100 ms doubling to 1 s), as Kafka's sub-millisecond writes never do.
ADD_PARTITION_WAIT_FOR_ADD_MAX_S = 5.0
# Transaction version 2: the next transaction's EndTxn (its epoch the one the previous EndTxn answered) that finds
# the previous transaction still completing waits this long at most for it. Kafka answers it PRODUCER_FENCED in
# that window, which on Kafka lasts milliseconds and on a busy pykbroker cluster hundreds of them: franz-go's
# transactional consumers, aborting on a rebalance right after a commit, were fenced (its kgo TestTxnEtl).
END_TXN_WAIT_FOR_COMPLETION_MAX_S = 5.0
# The transaction.version a new cluster finalizes (replication.metadata.features); the coordinator asks for the current one.
SERVER_TRANSACTION_VERSION = 2


class TxnError(Exception):
    """A request refused with ``error_code``."""

    def __init__(self, error_code: int, message: str | None = None) -> None:
        super().__init__(message or ErrorCode(error_code).name)
        self.error_code = error_code


@dataclass(frozen=True)
class TransactionConfig:
    num_partitions: int = 50
    max_timeout_ms: int = 900_000
    abort_timed_out_interval_ms: int = 10_000
    transactional_id_expiration_ms: int = 604_800_000
    remove_expired_interval_ms: int = 3_600_000
    request_timeout_ms: int = 30_000  # for appends of transaction markers, as Kafka's request.timeout.ms

    @classmethod
    def from_properties(cls, get: Callable[[str], Any]) -> TransactionConfig:
        return cls(
            num_partitions=get("transaction.state.log.num.partitions"),
            max_timeout_ms=get("transaction.max.timeout.ms"),
            abort_timed_out_interval_ms=get("transaction.abort.timed.out.transaction.cleanup.interval.ms"),
            transactional_id_expiration_ms=get("transactional.id.expiration.ms"),
            remove_expired_interval_ms=get("transaction.remove.expired.transaction.cleanup.interval.ms"),
            request_timeout_ms=get("request.timeout.ms"))


def append_error_to_response_error(code: int) -> int:
    """Kafka's mapping of a failed __transaction_state append to the error a client is given."""
    if code in (ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, ErrorCode.NOT_ENOUGH_REPLICAS,
                ErrorCode.NOT_ENOUGH_REPLICAS_AFTER_APPEND, ErrorCode.REQUEST_TIMED_OUT):
        return ErrorCode.COORDINATOR_NOT_AVAILABLE
    if code in (ErrorCode.NOT_LEADER_OR_FOLLOWER, ErrorCode.KAFKA_STORAGE_ERROR):
        return ErrorCode.NOT_COORDINATOR
    return ErrorCode.UNKNOWN_SERVER_ERROR


class RemoteMarkers(Protocol):
    """Sends one transaction's markers to the broker leading ``partitions`` (WriteTxnMarkers, with the
    transaction's version as v2 carries it, KIP-1228); error codes by partition."""

    def __call__(self, leader: int, producer_id: int, producer_epoch: int, coordinator_epoch: int, commit: bool,
                 partitions: list[TopicPartition], transaction_version: int) -> Awaitable[dict[TopicPartition, int]]: ...


class TransactionCoordinator:
    """What the transaction request handlers call. Event-loop only."""

    def __init__(self, config: TransactionConfig, node_id: int, *, log_factory: CoordinatorLogFactory,
                 replica_manager: Any, group_coordinator: Any, producer_ids: Any,
                 ensure_state_topic: Callable[[], Awaitable[None]],
                 partition_leader: Callable[[int], int | None],
                 coordinator_epoch: Callable[[int], int],
                 clock: Clock,
                 transaction_version: Callable[[], int] = lambda: SERVER_TRANSACTION_VERSION,
                 data_partition_leader: Callable[[str, int], int | None] = lambda _t, _p: None,
                 remote_markers: RemoteMarkers | None = None,
                 partition_hosted: Callable[[int], bool] = lambda _p: True) -> None:
        """``transaction_version``: the finalized transaction.version, which aborts the broker starts follow.
        ``data_partition_leader(topic, partition)``: who leads a partition of the transaction (None: this
        broker or unknown); markers for partitions led elsewhere go through ``remote_markers``.
        ``partition_hosted(partition)``: whether this broker leads that __transaction_state partition in its replica
        manager (its log exists and the election was applied)."""
        self.config = config
        self.node_id = node_id
        self._rm = replica_manager
        self._groups = group_coordinator
        self._producer_ids = producer_ids
        self._ensure_state_topic = ensure_state_topic
        self._partition_leader = partition_leader
        self._partition_hosted = partition_hosted
        self._coordinator_epoch = coordinator_epoch
        self._now_ms = clock.now_ms
        self._transaction_version = transaction_version
        self._data_partition_leader = data_partition_leader
        self._remote_markers = remote_markers
        self._runtime = CoordinatorRuntime(self._new_shard, log_factory, clock, decode_record=decode_record,
                                           topic=TRANSACTION_STATE_TOPIC_NAME,
                                           map_append_error=append_error_to_response_error)
        self._started = False
        self._start_lock = asyncio.Lock()
        self._tasks: set[asyncio.Task] = set()
        # Set when the markers and Complete state of the id's prepared transaction are written (or left to another
        # coordinator): a version 2 write's implicit add waits on it rather than polling.
        self._completions: dict[str, asyncio.Event] = {}
        self._background: asyncio.Task | None = None

    # -- placement and loading ----------------------------------------------------------------------------
    def partition_for(self, transactional_id: str) -> int:
        return partition_for(transactional_id, self.config.num_partitions)

    def coordinator_for(self, transactional_id: str) -> int | None:
        return self._partition_leader(self.partition_for(transactional_id))

    async def start(self) -> None:
        """Create __transaction_state if needed and load every partition this node leads (idempotent)."""
        if self._started:
            return
        async with self._start_lock:
            if self._started:
                return
            await self._ensure_state_topic()
            self.load_all()

    def load_all(self) -> None:
        for index in range(self.config.num_partitions):
            if self._partition_leader(index) == self.node_id:
                self._load(index)
        self._started = True
        if self._background is None:
            self._background = asyncio.get_running_loop().create_task(self._run_background(),
                                                                      name="transaction-expiration")

    def _new_shard(self, index: int, _timer: CoordinatorTimer) -> TransactionStateShard:
        return TransactionStateShard(index, self._coordinator_epoch(index), self._resume_prepared)

    def _resume_prepared(self, shard: TransactionStateShard) -> None:
        """A partition was loaded: complete the transactions found half-way (PrepareCommit/PrepareAbort)."""
        for metadata in shard.transactions.values():
            if metadata.state in (S.PREPARE_COMMIT, S.PREPARE_ABORT):
                log.info("resuming the %s of transactional.id=%s (producer id %d, epoch %d) found at load",
                         "commit" if metadata.state is S.PREPARE_COMMIT else "abort", metadata.transactional_id,
                         metadata.producer_id, metadata.producer_epoch)
                self._start_completion(shard, metadata)

    def on_election(self, index: int) -> None:
        """This broker leads __transaction_state-``index`` (now, or in a new leader epoch): load its
        transactions, or, still loaded, take the new leader epoch as the coordinator epoch of its markers."""
        if not self._started:
            return
        if self._runtime.is_loading_or_loaded(index):
            self._runtime.shard(index).coordinator_epoch = self._coordinator_epoch(index)
        else:
            self._runtime.load(index)

    def _load(self, partition: int) -> None:
        """Load ``partition`` once this broker leads it (``CoordinatorRuntime.load_if_hosted``)."""
        self._runtime.load_if_hosted(partition, self._partition_hosted)

    def on_resignation(self, index: int) -> None:
        """Another broker leads __transaction_state-``index`` now: forget its transactions (NOT_COORDINATOR)."""
        if self._runtime.is_loaded(index):
            log.info("%s-%d unloaded: another broker is its coordinator now", TRANSACTION_STATE_TOPIC_NAME, index)
        self._spawn(self._runtime.unload(index))

    async def close(self) -> None:
        if self._background is not None:
            self._background.cancel()
        for task in list(self._tasks) + ([self._background] if self._background else []):
            task.cancel()
            try:
                await task
            except (asyncio.CancelledError, Exception):
                pass
        self._tasks.clear()
        await self._runtime.close()

    def _spawn(self, work: Awaitable[Any]) -> None:
        task = asyncio.ensure_future(work)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _shard(self, index: int) -> TransactionStateShard:
        """The shard of a partition this node leads, once loaded (a load that failed is started again)."""
        try:
            self._load(index)
            return await self._runtime.loaded(index)
        except ApiError as exc:
            raise TxnError(exc.error_code) from None

    def _loaded_shards(self) -> list[TransactionStateShard]:
        return [self._runtime.shard(index) for index in self._runtime.loaded_partitions()]

    async def _lookup(self, transactional_id: str) -> tuple[TransactionStateShard, TransactionMetadata | None]:
        if not transactional_id:
            raise TxnError(ErrorCode.INVALID_REQUEST, "The transactional id must not be empty.")
        await self.start()
        index = self.partition_for(transactional_id)
        if self._partition_leader(index) != self.node_id:
            raise TxnError(ErrorCode.NOT_COORDINATOR)
        shard = await self._shard(index)
        return shard, shard.transactions.get(transactional_id)

    # -- writing state --------------------------------------------------------------------------------------
    async def _write(self, shard: TransactionStateShard, metadata: TransactionMetadata,
                     transit: TxnTransit | None) -> None:
        """Append ``transit`` (None: the id's tombstone) on the partition's shard task; replaying the record
        applies it. On failure nothing changes."""
        record = TransactionLogRecord(metadata.transactional_id, transit)

        def operation(current: TransactionStateShard) -> CoordinatorResult[None]:
            if current is not shard:
                raise ApiError(ErrorCode.NOT_COORDINATOR)  # the partition was reloaded meanwhile
            return CoordinatorResult([record])

        try:
            await self._runtime.write(shard.index, operation)
        except ApiError as exc:
            metadata.abort_transition()
            log.warning("writing %s of transactional.id=%s to %s-%d failed: %s",
                        transit.state.display_name if transit is not None else "the tombstone",
                        metadata.transactional_id, TRANSACTION_STATE_TOPIC_NAME, shard.index, exc.__cause__ or exc)
            raise TxnError(exc.error_code) from exc

    # -- InitProducerId ---------------------------------------------------------------------------------------
    async def init_producer_id(self, transactional_id: str, timeout_ms: int, expected_producer_id: int = -1,
                               expected_epoch: int = -1) -> tuple[int, int]:
        """(producer id, epoch) for a transactional producer; raises TxnError.

        ``expected_producer_id``/``expected_epoch`` (v3+, KIP-360): the producer's current id and epoch when
        it recovers from an abortable error; a stale one is fenced.
        """
        if not 0 < timeout_ms <= self.config.max_timeout_ms:
            raise TxnError(ErrorCode.INVALID_TRANSACTION_TIMEOUT,
                           f"The transaction timeout {timeout_ms} is larger than transaction.max.timeout.ms "
                           f"({self.config.max_timeout_ms}) or not positive.")
        shard, metadata = await self._lookup(transactional_id)
        now = self._now_ms()
        if metadata is None:
            metadata = TransactionMetadata(transactional_id, self._producer_ids.next_producer_id(), -1, timeout_ms,
                                           update_timestamp_ms=now)
            shard.transactions[transactional_id] = metadata
        expected = expected_producer_id >= 0
        if metadata.pending_state is not None:
            raise TxnError(ErrorCode.CONCURRENT_TRANSACTIONS)
        if expected and not (metadata.producer_epoch == -1 or expected_producer_id == metadata.producer_id
                             or (expected_producer_id == metadata.prev_producer_id
                                 and is_epoch_exhausted(expected_epoch))):
            raise TxnError(ErrorCode.PRODUCER_FENCED,
                           f"Producer id {expected_producer_id} epoch {expected_epoch} is not the current "
                           f"producer of transactional.id={transactional_id}.")
        if metadata.state in (S.PREPARE_COMMIT, S.PREPARE_ABORT):
            raise TxnError(ErrorCode.CONCURRENT_TRANSACTIONS)
        if metadata.state is S.ONGOING:
            # A new producer with this id fences the old one and aborts its open transaction; it retries.
            log.info("InitProducerId for transactional.id=%s fences producer id %d epoch %d and aborts its "
                     "open transaction", transactional_id, metadata.producer_id, metadata.producer_epoch)
            await self._fence_and_abort(shard, metadata)
            raise TxnError(ErrorCode.CONCURRENT_TRANSACTIONS)
        if metadata.state not in COMPLETED_STATES:
            raise TxnError(ErrorCode.CONCURRENT_TRANSACTIONS)  # Dead: being expired
        if is_epoch_exhausted(metadata.producer_epoch) and (not expected or expected_epoch == metadata.producer_epoch):
            transit = metadata.prepare_producer_id_rotation(self._producer_ids.next_producer_id(), timeout_ms, now,
                                                            record_last_epoch=expected)
        else:
            try:
                transit = metadata.prepare_increment_epoch(timeout_ms, now, expected_epoch if expected else None)
            except ValueError as exc:
                raise TxnError(ErrorCode.PRODUCER_FENCED, str(exc)) from None
        await self._write(shard, metadata, transit)
        log.info("transactional.id=%s: producer id %d epoch %d initialized", transactional_id,
                 metadata.producer_id, metadata.producer_epoch)
        return metadata.producer_id, metadata.producer_epoch

    # -- AddPartitionsToTxn / AddOffsetsToTxn -----------------------------------------------------------
    async def add_partitions(self, transactional_id: str, producer_id: int, epoch: int,
                             partitions: Iterable[TopicPartition], client_version: int = 0) -> None:
        """Add ``partitions`` to the producer's transaction (starting it); raises TxnError.

        ``client_version`` 2 (KIP-890): added implicitly by Produce v12+ / TxnOffsetCommit v5+, or by
        AddPartitionsToTxn v4+ from a broker.
        """
        wanted = set(partitions)
        shard, metadata = await self._lookup(transactional_id)
        if client_version < 2 and metadata is not None and metadata.state in (S.PREPARE_COMMIT, S.PREPARE_ABORT) \
                and await self._completed_within(transactional_id, ADD_PARTITION_RETRY_MAX_S):
            # A client's next transaction right after EndTxn: as a version 2 write's add is retried for 100 ms,
            # the add waits that long for the previous transaction's markers rather than costing the client a
            # CONCURRENT_TRANSACTIONS round trip and its retry backoff (20-100 ms) after nearly every commit.
            shard, metadata = await self._lookup(transactional_id)
        if metadata is not None and metadata.pending_state is not None:
            raise TxnError(ErrorCode.CONCURRENT_TRANSACTIONS)
        if metadata is None or metadata.producer_id != producer_id:
            raise TxnError(ErrorCode.INVALID_PRODUCER_ID_MAPPING)
        if metadata.producer_epoch != epoch:
            raise TxnError(ErrorCode.PRODUCER_FENCED,
                           f"Producer epoch {epoch} is not the current epoch {metadata.producer_epoch} of "
                           f"transactional.id={transactional_id}; it was fenced by a newer producer.")
        if metadata.state in (S.PREPARE_COMMIT, S.PREPARE_ABORT):
            raise TxnError(ErrorCode.CONCURRENT_TRANSACTIONS)
        if metadata.state is S.ONGOING and wanted <= metadata.partitions:
            return
        if metadata.state in (S.DEAD, S.PREPARE_EPOCH_FENCE):
            raise TxnError(ErrorCode.PRODUCER_FENCED)
        started = metadata.state is not S.ONGOING
        await self._write(shard, metadata, metadata.prepare_add_partitions(wanted, self._now_ms(), client_version))
        if started:
            log.debug("transactional.id=%s: transaction of producer id %d epoch %d started", transactional_id,
                      producer_id, epoch)

    async def add_partition_from_write(self, transactional_id: str, producer_id: int, epoch: int,
                                       tp: TopicPartition) -> int:
        """Produce v12+ / TxnOffsetCommit v5+ (transaction version 2): the write adds its partition itself.

        Answers the error the write gets, as Kafka's partition leaders map it: PRODUCER_FENCED becomes
        INVALID_PRODUCER_EPOCH (``add_partitions_from_broker`` says how CONCURRENT_TRANSACTIONS is retried).
        """
        code = await self.add_partitions_from_broker(transactional_id, producer_id, epoch, [tp])
        return ErrorCode.INVALID_PRODUCER_EPOCH if code == ErrorCode.PRODUCER_FENCED else code

    async def add_partitions_from_broker(self, transactional_id: str, producer_id: int, epoch: int,
                                         partitions: list[TopicPartition]) -> int:
        """Transaction version 2: partitions that writes add, for a write to a partition this broker leads or
        for the leader of one (AddPartitionsToTxn v4+); the error code.

        CONCURRENT_TRANSACTIONS (the previous transaction is completing) is retried within Kafka's partition
        leaders' 100 ms window, at once when the completion is written rather than every 20 ms, and, while another write's add to the same transaction is being appended, until
        that append is done (``ADD_PARTITION_WAIT_FOR_ADD_MAX_S``).
        """
        loop = asyncio.get_running_loop()
        started = loop.time()
        while True:
            try:
                await self.add_partitions(transactional_id, producer_id, epoch, partitions, client_version=2)
                return ErrorCode.NONE
            except TxnError as exc:
                code = exc.error_code
            waited = loop.time() - started
            if code != ErrorCode.CONCURRENT_TRANSACTIONS or waited >= ADD_PARTITION_WAIT_FOR_ADD_MAX_S or (
                    waited >= ADD_PARTITION_RETRY_MAX_S and not self._add_in_flight(transactional_id, producer_id,
                                                                                    epoch)):
                return code
            if transactional_id not in self._completions:
                await asyncio.sleep(ADD_PARTITION_RETRY_BACKOFF_S)
                continue
            # the previous transaction is completing: retried the moment it is done
            await self._completed_within(transactional_id, max(ADD_PARTITION_RETRY_MAX_S - waited,
                                                                ADD_PARTITION_RETRY_BACKOFF_S))

    async def _completed_within(self, transactional_id: str, timeout_s: float) -> bool:
        """Wait up to ``timeout_s`` for the markers and Complete state of the id's prepared transaction; whether
        they were written (or left to another coordinator) meanwhile. False at once when none is being sent."""
        completing = self._completions.get(transactional_id)
        if completing is None:
            return False
        try:
            async with asyncio.timeout(timeout_s):
                await completing.wait()
        except TimeoutError:
            return False
        return True

    def _add_in_flight(self, transactional_id: str, producer_id: int, epoch: int) -> bool:
        """Another write of this producer's transaction is adding partitions to it right now."""
        index = self.partition_for(transactional_id)
        if not self._runtime.is_loaded(index):
            return False
        metadata = self._runtime.shard(index).transactions.get(transactional_id)
        return metadata is not None and metadata.pending_state is S.ONGOING \
            and metadata.producer_id == producer_id and metadata.producer_epoch == epoch

    async def verify_partitions(self, transactional_id: str, producer_id: int, epoch: int,
                                partitions: Iterable[TopicPartition]) -> dict[TopicPartition, int]:
        """AddPartitionsToTxn verify_only (KIP-890): NONE for each partition in the transaction.

        As Kafka's coordinator answers it: INVALID_PRODUCER_ID_MAPPING, PRODUCER_FENCED or
        CONCURRENT_TRANSACTIONS for all, else TRANSACTION_ABORTABLE for a partition not in it.
        """
        wanted = list(partitions)
        try:
            _, metadata = await self._lookup(transactional_id)
        except TxnError as exc:
            return dict.fromkeys(wanted, exc.error_code)
        code = self._verification_error(metadata, producer_id, epoch)
        if code != ErrorCode.NONE or metadata is None:  # None: code is INVALID_PRODUCER_ID_MAPPING
            return dict.fromkeys(wanted, code)
        return {tp: ErrorCode.NONE if tp in metadata.partitions else ErrorCode.TRANSACTION_ABORTABLE for tp in wanted}

    @staticmethod
    def _verification_error(metadata: TransactionMetadata | None, producer_id: int, epoch: int) -> int:
        if metadata is None or metadata.producer_id != producer_id:
            return ErrorCode.INVALID_PRODUCER_ID_MAPPING
        if metadata.producer_epoch != epoch:
            return ErrorCode.PRODUCER_FENCED
        if metadata.state in (S.PREPARE_COMMIT, S.PREPARE_ABORT):
            return ErrorCode.CONCURRENT_TRANSACTIONS
        return ErrorCode.NONE

    def verify_partition(self, transactional_id: str | None, producer_id: int, epoch: int,
                         tp: TopicPartition, *, abortable_error: bool) -> int:
        """Produce/TxnOffsetCommit check that a transactional write belongs to the ongoing transaction.

        Without it a late write after the transaction ended would hang the partition's last stable
        offset (KAFKA-14402). Answers the error the write gets, NONE when it may proceed, mapped as
        Kafka's partition leaders map the coordinator's answer: PRODUCER_FENCED becomes
        INVALID_PRODUCER_EPOCH, and a partition outside the transaction is TRANSACTION_ABORTABLE for
        clients that know it (``abortable_error``: Produce v11+, TxnOffsetCommit v4+), else
        INVALID_TXN_STATE.
        """
        if not transactional_id:
            return ErrorCode.NONE
        index = self.partition_for(transactional_id)
        if not self._runtime.is_loaded(index):
            if self._partition_leader(index) != self.node_id:
                return ErrorCode.NONE  # another node coordinates it (no inter-broker verification yet)
            return ErrorCode.COORDINATOR_LOAD_IN_PROGRESS
        metadata = self._runtime.shard(index).transactions.get(transactional_id)
        code = self._verification_error(metadata, producer_id, epoch)
        if code == ErrorCode.PRODUCER_FENCED:
            return ErrorCode.INVALID_PRODUCER_EPOCH
        if code != ErrorCode.NONE or metadata is None:  # None: code is INVALID_PRODUCER_ID_MAPPING
            return code
        if tp not in metadata.partitions:
            return ErrorCode.TRANSACTION_ABORTABLE if abortable_error else ErrorCode.INVALID_TXN_STATE
        return ErrorCode.NONE

    def offsets_partition(self, group_id: str) -> TopicPartition:
        """The __consumer_offsets partition AddOffsetsToTxn adds for ``group_id``."""
        return GROUP_METADATA_TOPIC_NAME, self._groups.partition_for(group_id)

    # -- EndTxn ---------------------------------------------------------------------------------------------
    async def end_transaction(self, transactional_id: str, producer_id: int, epoch: int, commit: bool,
                              client_version: int = 0) -> tuple[int, int]:
        """Commit or abort the producer's transaction; the producer id and epoch to use next. Raises TxnError.

        ``client_version`` 2 (EndTxn v5+, KIP-890): the epoch is bumped with every transaction (a new
        producer id once it is exhausted), a transaction that added nothing may be aborted, and a retry
        is recognised by its epoch being one below the current one. The next transaction's EndTxn that finds
        the previous one still completing is judged once it is complete (``END_TXN_WAIT_FOR_COMPLETION_MAX_S``).
        """
        shard, metadata = await self._lookup(transactional_id)
        if metadata is None:
            raise TxnError(ErrorCode.INVALID_PRODUCER_ID_MAPPING)
        if client_version >= 2:
            if metadata.state in (S.PREPARE_COMMIT, S.PREPARE_ABORT) and metadata.producer_id == producer_id \
                    and epoch == metadata.producer_epoch \
                    and await self._completed_within(transactional_id, END_TXN_WAIT_FOR_COMPLETION_MAX_S):
                shard, metadata = await self._lookup(transactional_id)  # judged once the previous one is complete
                if metadata is None:
                    raise TxnError(ErrorCode.INVALID_PRODUCER_ID_MAPPING)
            return await self._end_v2(shard, metadata, producer_id, epoch, commit)
        if metadata.producer_id != producer_id:
            raise TxnError(ErrorCode.INVALID_PRODUCER_ID_MAPPING)
        if metadata.producer_epoch != epoch:
            raise TxnError(ErrorCode.PRODUCER_FENCED,
                           f"Producer epoch {epoch} is not the current epoch {metadata.producer_epoch} of "
                           f"transactional.id={transactional_id}; it was fenced by a newer producer.")
        if metadata.pending_state is not None:
            raise TxnError(ErrorCode.CONCURRENT_TRANSACTIONS)
        state = metadata.state
        if state is S.ONGOING:
            await self._prepare_and_complete(shard, metadata, commit, 0)
            return -1, -1
        if (state is S.COMPLETE_COMMIT and commit) or (state is S.COMPLETE_ABORT and not commit):
            return -1, -1  # a retry of an EndTxn that succeeded
        if (state is S.PREPARE_COMMIT and commit) or (state is S.PREPARE_ABORT and not commit):
            raise TxnError(ErrorCode.CONCURRENT_TRANSACTIONS)
        raise self._invalid_state(metadata, commit)

    async def _end_v2(self, shard: TransactionStateShard, metadata: TransactionMetadata, producer_id: int, epoch: int,
                      commit: bool) -> tuple[int, int]:
        """EndTxn with transaction version 2, as Kafka's table of states, retries and epochs says."""
        state = metadata.state
        retry_on_overflow = (metadata.prev_producer_id == producer_id and epoch == MAX_PRODUCER_EPOCH - 1
                             and metadata.producer_epoch == 0)
        retry_on_bump = metadata.producer_epoch == epoch + 1
        if state in (S.PREPARE_COMMIT, S.PREPARE_ABORT):
            valid_epoch = retry_on_bump
        elif state in (S.COMPLETE_COMMIT, S.COMPLETE_ABORT):
            valid_epoch = retry_on_bump or retry_on_overflow or epoch == metadata.producer_epoch
        else:
            valid_epoch = epoch == metadata.producer_epoch
        is_retry = retry_on_bump or retry_on_overflow
        if metadata.pending_state is not None:
            raise TxnError(ErrorCode.CONCURRENT_TRANSACTIONS)
        if metadata.producer_id != producer_id and not retry_on_overflow:
            raise TxnError(ErrorCode.INVALID_PRODUCER_ID_MAPPING)
        if not valid_epoch:
            raise TxnError(ErrorCode.PRODUCER_FENCED,
                           f"Producer epoch {epoch} is not the current epoch {metadata.producer_epoch} of "
                           f"transactional.id={metadata.transactional_id}; it was fenced by a newer producer.")
        if state is S.ONGOING:
            return await self._prepare_and_complete(shard, metadata, commit, 2)
        if state in (S.COMPLETE_COMMIT, S.COMPLETE_ABORT):
            if is_retry:
                if commit == (state is S.COMPLETE_COMMIT):
                    return metadata.producer_id, metadata.producer_epoch  # a retry of an EndTxn that succeeded
                raise self._invalid_state(metadata, commit)
            if not commit:  # abort of a transaction that added nothing: bumps the epoch all the same
                return await self._prepare_and_complete(shard, metadata, commit, 2)
            raise self._invalid_state(metadata, commit)
        if state in (S.PREPARE_COMMIT, S.PREPARE_ABORT):
            if commit == (state is S.PREPARE_COMMIT):
                raise TxnError(ErrorCode.CONCURRENT_TRANSACTIONS)
            raise self._invalid_state(metadata, commit)
        if state is S.EMPTY and not commit:
            return await self._prepare_and_complete(shard, metadata, commit, 2)
        raise self._invalid_state(metadata, commit)

    @staticmethod
    def _invalid_state(metadata: TransactionMetadata, commit: bool) -> TxnError:
        return TxnError(ErrorCode.INVALID_TXN_STATE,
                        f"TransactionalId {metadata.transactional_id}: cannot {'commit' if commit else 'abort'} "
                        f"from state {metadata.state.display_name}.")

    async def _prepare_and_complete(self, shard: TransactionStateShard, metadata: TransactionMetadata, commit: bool,
                                    client_version: int) -> tuple[int, int]:
        """Write Prepare*; once it is durable (acks=all on __transaction_state) the decision stands, so the
        answer goes out and the markers and Complete* follow in the background (``_complete``), as Kafka's
        coordinator answers EndTxn before its marker channel has run. The producer id and epoch the client
        uses next (-1, -1 below version 2)."""
        next_producer_id = -1
        if client_version >= 2 and is_epoch_exhausted(metadata.producer_epoch):
            next_producer_id = self._producer_ids.next_producer_id()
        await self._write(shard, metadata, metadata.prepare_end(commit, self._now_ms(), client_version,
                                                                    next_producer_id))
        log.debug("transactional.id=%s: %s of producer id %d epoch %d prepared", metadata.transactional_id,
                  "commit" if commit else "abort", metadata.producer_id, metadata.producer_epoch)
        self._start_completion(shard, metadata)
        if client_version < 2:
            return -1, -1
        # The answer names the id and epoch the Complete state will have (Kafka answers before writing it).
        if next_producer_id >= 0:
            return next_producer_id, 0
        return metadata.producer_id, metadata.producer_epoch

    async def _fence_and_abort(self, shard: TransactionStateShard, metadata: TransactionMetadata) -> None:
        """Abort an ongoing transaction with a bumped epoch, fencing its producer (Kafka's PrepareEpochFence);
        returns once the PrepareAbort is written (the markers follow in the background).

        The abort follows the finalized transaction.version, as Kafka's. Either way the PrepareAbort carries
        the epoch plus one: with 2 the abort itself bumps it (the fence step stays in memory and is never
        written); below 2 the fence bumps it and the abort keeps it.
        """
        version = self._transaction_version()
        if version < 2:
            # Kafka's transaction version 1 path applies the fence first: the abort is written with the
            # bumped epoch and no last epoch, and records client version 0.
            metadata.producer_epoch += 1
            metadata.last_producer_epoch = -1
            version = 0
        await self._write(shard, metadata, metadata.prepare_end(False, self._now_ms(), version))
        self._start_completion(shard, metadata)

    def _still_prepared(self, shard: TransactionStateShard, metadata: TransactionMetadata, state: TxnState,
                        producer_id: int, epoch: int) -> bool:
        """This broker still coordinates ``shard`` (same load) and the transaction is still the prepared one."""
        index = shard.index
        return (self._runtime.is_loading_or_loaded(index) and self._runtime.shard(index) is shard
                and shard.transactions.get(metadata.transactional_id) is metadata and metadata.state is state
                and (metadata.producer_id, metadata.producer_epoch) == (producer_id, epoch))

    def _start_completion(self, shard: TransactionStateShard, metadata: TransactionMetadata) -> None:
        transactional_id = metadata.transactional_id
        done = self._completions[transactional_id] = asyncio.Event()

        async def complete() -> None:
            try:
                await self._complete(shard, metadata)
            finally:
                done.set()
                if self._completions.get(transactional_id) is done:
                    del self._completions[transactional_id]
        self._spawn(complete())

    async def _complete(self, shard: TransactionStateShard, metadata: TransactionMetadata) -> None:
        """Send a prepared transaction's markers until every partition's leader has them (re-asking who leads
        each one at every round, so leaders that move are followed), then write its Complete state (Kafka's
        TransactionMarkerChannelManager). Meanwhile requests on the transactional id get
        CONCURRENT_TRANSACTIONS. Stops when this broker stops coordinating the partition: the next
        coordinator finds the logged Prepare state at load and resumes (``_resume_prepared``)."""
        state = metadata.state
        commit = state is S.PREPARE_COMMIT
        producer_id, epoch = metadata.producer_id, metadata.producer_epoch
        pending = set(metadata.partitions)
        backoff = MARKER_RETRY_BACKOFF_S
        rounds = 0
        while True:
            if not self._still_prepared(shard, metadata, state, producer_id, epoch):
                log.info("transactional.id=%s: no longer coordinated here; the markers of producer id %d epoch %d "
                         "are left to its next coordinator", metadata.transactional_id, producer_id, epoch)
                return
            pending = await self._write_markers(producer_id, epoch, shard.coordinator_epoch, commit, pending,
                                                metadata.transactional_id, metadata.client_transaction_version)
            if not pending:
                break
            rounds += 1
            if rounds == 1:
                log.warning("transactional.id=%s: markers for %s not written yet; retrying until their leaders "
                            "take them", metadata.transactional_id, sorted(pending))
            await asyncio.sleep(backoff)
            backoff = min(backoff * 2, MARKER_RETRY_BACKOFF_MAX_S)
        while self._still_prepared(shard, metadata, state, producer_id, epoch):
            try:
                await self._write(shard, metadata, metadata.prepare_complete(self._now_ms()))
            except TxnError as exc:
                log.warning("transactional.id=%s: writing the completed state failed (%s); retrying",
                            metadata.transactional_id, exc)
                await asyncio.sleep(MARKER_RETRY_BACKOFF_MAX_S)
                continue
            log.info("transactional.id=%s: transaction of producer id %d epoch %d %s", metadata.transactional_id,
                     producer_id, epoch, "committed" if commit else "aborted")
            return

    async def _write_markers(self, producer_id: int, epoch: int, coordinator_epoch: int, commit: bool,
                             partitions: set[TopicPartition], transactional_id: str,
                             transaction_version: int = 0) -> set[TopicPartition]:
        """Write the marker to each partition; the ones that must be retried.

        The local appends and each other leader's WriteTxnMarkers go out at once, as Kafka's marker channel
        sends to every broker in parallel: one at a time, each commit paid every leader's acks=all round trip
        in turn."""
        failed: set[TopicPartition] = set()
        data: dict[TopicPartition, bytes] = {}
        remote: dict[int, list[TopicPartition]] = {}
        for tp in sorted(partitions):
            leader = self._data_partition_leader(*tp)
            if leader is not None and leader < 0:
                failed.add(tp)  # no leader right now: retried in the background
                continue
            if leader is not None and leader != self.node_id and self._remote_markers is not None:
                remote.setdefault(leader, []).append(tp)
                continue
            if tp[0] == GROUP_METADATA_TOPIC_NAME:
                try:
                    await self._groups.complete_transaction(tp[1], producer_id, epoch, coordinator_epoch, commit)
                except Exception as exc:
                    log.warning("transaction marker for transactional.id=%s on %s-%d failed: %s",
                                transactional_id, tp[0], tp[1], exc)
                    failed.add(tp)
                continue
            data[tp] = build_control_batch(ControlRecordType.COMMIT if commit else ControlRecordType.ABORT,
                                           producer_id=producer_id, producer_epoch=epoch, timestamp=self._now_ms(),
                                           partition_leader_epoch=-1, coordinator_epoch=coordinator_epoch)

        async def send(leader: int, tps: list[TopicPartition]) -> set[TopicPartition]:
            assert self._remote_markers is not None
            try:
                codes = await self._remote_markers(leader, producer_id, epoch, coordinator_epoch, commit, tps,
                                                   transaction_version)
            except Exception as exc:  # noqa: BLE001 - the leader is unreachable: retried in the background
                log.warning("transaction markers for transactional.id=%s to broker %d failed: %s", transactional_id,
                            leader, exc)
                return set(tps)
            retry = set()
            for tp in tps:
                code = codes.get(tp, ErrorCode.UNKNOWN_SERVER_ERROR)
                if code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION:
                    log.info("transaction marker for deleted partition %s-%d dropped", tp[0], tp[1])
                elif code != ErrorCode.NONE:
                    log.warning("transaction marker on %s-%d (broker %d) failed: %s", tp[0], tp[1], leader,
                                ErrorCode(code).name)
                    retry.add(tp)
            return retry

        for retry in await asyncio.gather(self.write_markers(data), *(send(node, tps) for node, tps in remote.items())):
            failed |= retry
        return failed

    async def write_markers(self, markers: dict[TopicPartition, bytes]) -> set[TopicPartition]:
        """Append marker batches as the coordinator; the partitions to retry (deleted ones are dropped)."""
        if not markers:
            return set()
        results = await self._rm.append_records(markers, -1, self.config.request_timeout_ms,
                                                origin=AppendOrigin.COORDINATOR)
        failed = set()
        for tp, result in results.items():
            if result.error_code == ErrorCode.NONE:
                continue
            if result.error_code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION:
                log.info("transaction marker for deleted partition %s-%d dropped", tp[0], tp[1])
                continue
            log.warning("transaction marker on %s-%d failed: %s %s", tp[0], tp[1],
                        ErrorCode(result.error_code).name, result.error_message or "")
            failed.add(tp)
        return failed

    # -- expiration -----------------------------------------------------------------------------------------
    async def _run_background(self) -> None:
        abort_every = self.config.abort_timed_out_interval_ms / 1000
        remove_every = self.config.remove_expired_interval_ms / 1000
        loop = asyncio.get_running_loop()
        next_remove = loop.time() + remove_every
        while True:
            await asyncio.sleep(abort_every)
            try:
                await self.abort_timed_out_transactions()
                if loop.time() >= next_remove:
                    next_remove = loop.time() + remove_every
                    await self.remove_expired_transactional_ids()
            except asyncio.CancelledError:
                raise
            except Exception:
                log.exception("transaction expiration failed")

    async def abort_timed_out_transactions(self) -> int:
        """Abort every ongoing transaction older than its timeout; how many were aborted."""
        now = self._now_ms()
        aborted = 0
        for shard in self._loaded_shards():
            for metadata in list(shard.transactions.values()):
                if metadata.state is S.ONGOING and metadata.pending_state is None \
                        and metadata.start_timestamp_ms + metadata.timeout_ms < now:
                    log.info("transactional.id=%s: transaction of producer id %d epoch %d timed out after %d ms; "
                             "aborting it and fencing the producer", metadata.transactional_id, metadata.producer_id,
                             metadata.producer_epoch, metadata.timeout_ms)
                    try:
                        await self._fence_and_abort(shard, metadata)
                        aborted += 1
                    except TxnError as exc:
                        log.warning("aborting timed-out transactional.id=%s failed: %s", metadata.transactional_id,
                                    exc)
        return aborted

    async def remove_expired_transactional_ids(self) -> int:
        """Forget transactional ids idle longer than transactional.id.expiration.ms (tombstones)."""
        now = self._now_ms()
        removed = 0
        for shard in self._loaded_shards():
            for metadata in list(shard.transactions.values()):
                if metadata.state in COMPLETED_STATES and metadata.pending_state is None \
                        and metadata.update_timestamp_ms + self.config.transactional_id_expiration_ms <= now:
                    metadata.prepare_dead(now)
                    try:
                        await self._write(shard, metadata, None)
                    except TxnError as exc:
                        log.warning("expiring transactional.id=%s failed: %s", metadata.transactional_id, exc)
                        continue
                    removed += 1
                    log.info("transactional.id=%s expired after %d ms without use", metadata.transactional_id,
                             self.config.transactional_id_expiration_ms)
        return removed

    # -- describe and list ----------------------------------------------------------------------------------
    async def describe(self, transactional_id: str) -> TransactionMetadata:
        shard, metadata = await self._lookup(transactional_id)
        if metadata is None or metadata.state is S.DEAD:
            raise TxnError(ErrorCode.TRANSACTIONAL_ID_NOT_FOUND)
        return metadata

    async def list_transactions(self, states: set[TxnState] | None, producer_ids: set[int],
                                duration_ms: int = -1, pattern: str | None = None) -> list[TransactionMetadata]:
        await self.start()
        now = self._now_ms()
        regex = re.compile(pattern) if pattern else None
        out = []
        for index in self._runtime.hosted_partitions():
            try:
                shard = await self._shard(index)  # one still loading is waited for
            except TxnError:
                continue
            for metadata in shard.transactions.values():
                if metadata.state is S.DEAD:
                    continue
                if states and metadata.state not in states:
                    continue
                if producer_ids and metadata.producer_id not in producer_ids:
                    continue
                if duration_ms >= 0 and (metadata.state is not S.ONGOING
                                         or now - metadata.start_timestamp_ms < duration_ms):
                    continue
                if regex is not None and not regex.fullmatch(metadata.transactional_id):
                    continue
                out.append(metadata)
        return out
