"""TransactionCoordinator over real logs: the state machine, markers, fencing, timeouts, reloads, offsets."""

from __future__ import annotations

import asyncio
import uuid

import pytest

from coordinator.group import GROUP_METADATA_TOPIC_NAME, FakeClock, GroupCoordinator, StaticTopics
from coordinator.runtime.errors import CoordinatorLogError
from coordinator.runtime.log import InMemoryCoordinatorLogs
from coordinator.runtime.partition_log import ReplicaCoordinatorLog
from coordinator.transaction.coordinator import TransactionConfig, TransactionCoordinator, TxnError
from coordinator.transaction.metadata import TRANSACTION_STATE_TOPIC_NAME, TxnState, encode_txn_record
from coordinator.transaction.producer_ids import ProducerIdManager
from replication.replica_manager import ReplicaManager
from storage import AppendOrigin, LogConfig, LogManager
from tests.coordinator.group.helpers import CONFIG, TOPIC_A, info, run
from wire import ControlRecordType, ErrorCode, build_control_batch, build_simple_batch, iter_batch_headers
from wire.messages import TxnOffsetCommitRequest
from wire.messages.txn_offset_commit_request import (
    TxnOffsetCommitRequestPartition,
    TxnOffsetCommitRequestTopic,
)

S = TxnState
DATA = "a"  # TOPIC_A: the group coordinator knows it, so transactional offsets on it are accepted
TXN_PARTITIONS = 3
GROUP = "txn-group"


class Node:
    """A replica manager leading the data, offsets and transaction-state partitions, and both coordinators."""

    def __init__(self, tmp_path, clock: FakeClock | None = None) -> None:
        self.tmp_path = tmp_path
        self.clock = clock or FakeClock()
        manager = LogManager([str(tmp_path / "logs")], default_config=LogConfig(), log_cleaner_enable=False)
        manager.startup(lambda _topic: LogConfig())
        self.rm = ReplicaManager(manager, node_id=1)
        for topic, count in ((DATA, 4), ("__consumer_offsets", CONFIG.offsets_topic_num_partitions),
                             (TRANSACTION_STATE_TOPIC_NAME, TXN_PARTITIONS)):
            for p in range(count):
                self.rm.become_leader(topic, p, uuid.uuid5(uuid.NAMESPACE_DNS, topic), 0, [1], [1], LogConfig())
        self.groups = GroupCoordinator(CONFIG, 1, StaticTopics([TOPIC_A]),
                                       lambda p: ReplicaCoordinatorLog(self.rm, p, self.clock, topic=GROUP_METADATA_TOPIC_NAME),
                                       clock=self.clock)
        self.producer_ids = ProducerIdManager(tmp_path, node_id=1)
        self.txn = self.new_coordinator()

    def new_coordinator(self, transaction_version: int = 2, **config) -> TransactionCoordinator:
        async def nothing_to_create() -> None:
            pass
        return TransactionCoordinator(
            TransactionConfig(num_partitions=TXN_PARTITIONS, **config), 1,
            log_factory=lambda p: ReplicaCoordinatorLog(self.rm, p, self.clock, topic=TRANSACTION_STATE_TOPIC_NAME),
            replica_manager=self.rm, group_coordinator=self.groups, producer_ids=self.producer_ids,
            ensure_state_topic=nothing_to_create, partition_leader=lambda p: 1, coordinator_epoch=lambda p: 0,
            clock=self.clock, transaction_version=lambda: transaction_version)

    async def produce(self, partition: int, pid: int, epoch: int, seq: int, *values: bytes) -> int:
        """A transactional batch from producer ``pid``, as Produce appends it; its base offset."""
        batch = build_simple_batch(list(values), timestamp=self.clock.now_ms(), producer_id=pid,
                                   producer_epoch=epoch, base_sequence=seq, is_transactional=True)
        result = (await self.rm.append_records({(DATA, partition): batch}, -1, 1000))[(DATA, partition)]
        assert result.error_code == ErrorCode.NONE, result
        return result.base_offset

    def log(self, partition: int):
        return self.rm.get_partition(DATA, partition).log

    def markers(self, partition: int) -> list[tuple[int, int]]:
        """(offset, producer id) of each control batch in the data partition."""
        log = self.log(partition)
        region = log.read(0, 1 << 20).records
        data = region.read_bytes()
        region.release()
        return [(h.base_offset, h.producer_id) for _, h in iter_batch_headers(data) if h.is_control]


async def begin(node: Node, txn_id: str, *partitions: int) -> tuple[int, int]:
    pid, epoch = await node.txn.init_producer_id(txn_id, 60_000)
    await node.txn.add_partitions(txn_id, pid, epoch, [(DATA, p) for p in partitions])
    return pid, epoch


async def raises(code: int, coro) -> None:
    with pytest.raises(TxnError) as exc:
        await coro
    assert exc.value.error_code == code, exc.value

async def completed(txn: TransactionCoordinator, txn_id: str, timeout: float = 10.0) -> None:
    """Until the transaction's markers and Complete state are written (EndTxn answers before, as Kafka's)."""
    deadline = asyncio.get_running_loop().time() + timeout
    while (await txn.describe(txn_id)).state not in (S.COMPLETE_COMMIT, S.COMPLETE_ABORT):
        assert asyncio.get_running_loop().time() < deadline, f"{txn_id} still {(await txn.describe(txn_id)).state}"
        await asyncio.sleep(0.005)


async def end(txn: TransactionCoordinator, txn_id: str, *args, **kwargs) -> tuple[int, int]:
    """EndTxn, then wait for the transaction to complete; EndTxn's answer."""
    answer = await txn.end_transaction(txn_id, *args, **kwargs)
    await completed(txn, txn_id)
    return answer



@run
async def test_init_producer_id_keeps_the_id_and_bumps_the_epoch(tmp_path):
    node = Node(tmp_path)
    pid, epoch = await node.txn.init_producer_id("t1", 60_000)
    assert epoch == 0
    assert await node.txn.init_producer_id("t1", 60_000) == (pid, 1)
    other, _ = await node.txn.init_producer_id("t2", 60_000)
    assert other != pid
    await raises(ErrorCode.INVALID_TRANSACTION_TIMEOUT, node.txn.init_producer_id("t3", 900_001))
    await raises(ErrorCode.INVALID_TRANSACTION_TIMEOUT, node.txn.init_producer_id("t3", 0))
    await raises(ErrorCode.INVALID_REQUEST, node.txn.init_producer_id("", 1000))
    await node.txn.close()


@run
async def test_commit_writes_a_marker_to_each_partition_and_moves_the_last_stable_offset(tmp_path):
    node = Node(tmp_path)
    pid, epoch = await begin(node, "c", 0, 1)
    assert (await node.txn._lookup("c"))[0].transactions["c"].state is S.ONGOING
    await node.produce(0, pid, epoch, 0, b"x", b"y")
    await node.produce(1, pid, epoch, 0, b"z")
    assert node.log(0).last_stable_offset == 0  # the open transaction holds it
    await end(node.txn, "c", pid, epoch, commit=True)
    metadata = (await node.txn.describe("c"))
    assert (metadata.state, metadata.partitions) == (S.COMPLETE_COMMIT, set())
    assert node.markers(0) == [(2, pid)] and node.markers(1) == [(1, pid)]
    assert node.log(0).last_stable_offset == 3
    assert node.log(0).collect_aborted_transactions(0, 3) == []
    # A retried EndTxn succeeds; the opposite decision does not.
    await end(node.txn, "c", pid, epoch, commit=True)
    await raises(ErrorCode.INVALID_TXN_STATE, node.txn.end_transaction("c", pid, epoch, commit=False))
    await node.txn.close()


@run
async def test_abort_records_the_aborted_transaction_for_read_committed_fetches(tmp_path):
    node = Node(tmp_path)
    pid, epoch = await begin(node, "ab", 2)
    await node.produce(2, pid, epoch, 0, b"gone")
    await end(node.txn, "ab", pid, epoch, commit=False)
    assert (await node.txn.describe("ab")).state is S.COMPLETE_ABORT
    aborted = node.log(2).collect_aborted_transactions(0, 10)
    assert [(t.producer_id, t.first_offset) for t in aborted] == [(pid, 0)]
    await node.txn.close()


@run
async def test_requests_from_a_wrong_or_old_producer_are_refused(tmp_path):
    node = Node(tmp_path)
    pid, epoch = await begin(node, "w", 0)
    await raises(ErrorCode.INVALID_PRODUCER_ID_MAPPING, node.txn.add_partitions("w", pid + 1, epoch, [(DATA, 1)]))
    await raises(ErrorCode.PRODUCER_FENCED, node.txn.add_partitions("w", pid, epoch - 1, [(DATA, 1)]))
    await raises(ErrorCode.INVALID_PRODUCER_ID_MAPPING, node.txn.end_transaction("unknown", pid, epoch, True))
    await end(node.txn, "w", pid, epoch, commit=False)
    await raises(ErrorCode.INVALID_TXN_STATE, node.txn.end_transaction("w", pid, epoch, commit=True))
    await node.txn.close()


@run
async def test_a_new_producer_fences_the_old_one_and_aborts_its_open_transaction(tmp_path):
    node = Node(tmp_path)
    pid, epoch = await begin(node, "f", 0)
    await node.produce(0, pid, epoch, 0, b"orphan")
    # The new producer is told to retry while the old transaction is aborted.
    await raises(ErrorCode.CONCURRENT_TRANSACTIONS, node.txn.init_producer_id("f", 60_000))
    await completed(node.txn, "f")
    assert node.markers(0) == [(1, pid)]
    assert [t.first_offset for t in node.log(0).collect_aborted_transactions(0, 10)] == [0]
    new_pid, new_epoch = await node.txn.init_producer_id("f", 60_000)
    assert (new_pid, new_epoch) == (pid, epoch + 2)  # one bump fenced, one is the new producer's
    await raises(ErrorCode.PRODUCER_FENCED, node.txn.add_partitions("f", pid, epoch, [(DATA, 0)]))
    await raises(ErrorCode.PRODUCER_FENCED, node.txn.end_transaction("f", pid, epoch, commit=True))
    assert node.txn.verify_partition("f", pid, epoch, (DATA, 0), abortable_error=True) == \
        ErrorCode.INVALID_PRODUCER_EPOCH
    await node.txn.close()


@run
async def test_verify_partition_admits_only_writes_inside_the_ongoing_transaction(tmp_path):
    node = Node(tmp_path)
    pid, epoch = await begin(node, "v", 0)
    def verify(txn_id, producer_id, tp, abortable_error=True):
        return node.txn.verify_partition(txn_id, producer_id, epoch, tp, abortable_error=abortable_error)
    assert verify("v", pid, (DATA, 0)) == ErrorCode.NONE
    assert verify("v", pid, (DATA, 1)) == ErrorCode.TRANSACTION_ABORTABLE
    assert verify("v", pid, (DATA, 1), abortable_error=False) == ErrorCode.INVALID_TXN_STATE  # older clients
    assert verify("v", pid + 5, (DATA, 0)) == ErrorCode.INVALID_PRODUCER_ID_MAPPING
    assert verify(None, pid, (DATA, 1)) == ErrorCode.NONE  # idempotent only
    assert await node.txn.verify_partitions("v", pid, epoch, [(DATA, 0), (DATA, 1)]) == {
        (DATA, 0): ErrorCode.NONE, (DATA, 1): ErrorCode.TRANSACTION_ABORTABLE}
    assert await node.txn.verify_partitions("v", pid, epoch + 1, [(DATA, 0)]) == {(DATA, 0): ErrorCode.PRODUCER_FENCED}
    await end(node.txn, "v", pid, epoch, commit=True)
    # A late write after the commit would hold the last stable offset forever (KAFKA-14402).
    assert verify("v", pid, (DATA, 0)) == ErrorCode.TRANSACTION_ABORTABLE
    await node.txn.close()


@run
async def test_timed_out_transactions_are_aborted_and_their_producer_fenced(tmp_path):
    for version in (2, 1):
        await _timed_out_transaction_is_aborted(tmp_path / f"tv{version}", version)


async def _timed_out_transaction_is_aborted(tmp_path, transaction_version: int) -> None:
    """Whatever the finalized transaction.version, the abort carries the epoch plus one (Kafka's fence);
    below 2 the fence also forgets the last epoch, and the abort is recorded as client version 0."""
    node = Node(tmp_path)
    node.txn = node.new_coordinator(transaction_version=transaction_version)
    pid, epoch = await node.txn.init_producer_id("slow", 5_000)
    await node.txn.add_partitions("slow", pid, epoch, [(DATA, 3)])
    await node.produce(3, pid, epoch, 0, b"late")
    node.clock.advance(4_000)
    assert await node.txn.abort_timed_out_transactions() == 0
    node.clock.advance(2_000)
    assert await node.txn.abort_timed_out_transactions() == 1
    await completed(node.txn, "slow")
    metadata = await node.txn.describe("slow")
    assert (metadata.state, metadata.producer_epoch) == (S.COMPLETE_ABORT, epoch + 1)
    assert (metadata.last_producer_epoch, metadata.client_transaction_version) == (
        (epoch, 2) if transaction_version >= 2 else (-1, 0))
    assert [t.producer_id for t in node.log(3).collect_aborted_transactions(0, 10)] == [pid]
    await raises(ErrorCode.PRODUCER_FENCED, node.txn.end_transaction("slow", pid, epoch, commit=True))
    await node.txn.close()


@run
async def test_idle_transactional_ids_expire(tmp_path):
    node = Node(tmp_path)
    node.txn = node.new_coordinator(transactional_id_expiration_ms=10_000)
    await node.txn.init_producer_id("idle", 1_000)
    node.clock.advance(9_000)
    assert await node.txn.remove_expired_transactional_ids() == 0
    node.clock.advance(1_000)
    assert await node.txn.remove_expired_transactional_ids() == 1
    await raises(ErrorCode.TRANSACTIONAL_ID_NOT_FOUND, node.txn.describe("idle"))
    await node.txn.close()
    reloaded = node.new_coordinator()  # the tombstone keeps it forgotten
    await reloaded.start()
    await raises(ErrorCode.TRANSACTIONAL_ID_NOT_FOUND, reloaded.describe("idle"))
    await reloaded.close()


@run
async def test_state_is_rebuilt_from_the_log(tmp_path):
    node = Node(tmp_path)
    pid, epoch = await begin(node, "durable", 0, 1)
    await node.txn.close()
    reloaded = node.new_coordinator()
    await reloaded.start()
    metadata = await reloaded.describe("durable")
    assert (metadata.producer_id, metadata.producer_epoch, metadata.state) == (pid, epoch, S.ONGOING)
    assert metadata.partitions == {(DATA, 0), (DATA, 1)}
    assert [m.transactional_id for m in await reloaded.list_transactions({S.ONGOING}, set())] == ["durable"]
    await end(reloaded, "durable", pid, epoch, commit=True)
    assert node.markers(0) and node.markers(1)
    await reloaded.close()


@run
async def test_a_prepared_commit_found_at_load_is_completed(tmp_path):
    node = Node(tmp_path)
    pid, epoch = await begin(node, "half", 2)
    await node.produce(2, pid, epoch, 0, b"decided")
    metadata = (await node.txn._lookup("half"))[0].transactions["half"]
    # As if the node died after writing PrepareCommit, before any marker.
    transit = metadata.prepare_end(True, node.clock.now_ms())
    key, value = encode_txn_record("half", transit)
    state_log = ReplicaCoordinatorLog(node.rm, node.txn.partition_for("half"), node.clock,
                                      topic=TRANSACTION_STATE_TOPIC_NAME)
    await state_log.append([(key, value)])
    await node.txn.close()
    reloaded = node.new_coordinator()
    await reloaded.start()
    for _ in range(50):
        if (await reloaded.describe("half")).state is S.COMPLETE_COMMIT:
            break
        await asyncio.sleep(0.01)
    assert (await reloaded.describe("half")).state is S.COMPLETE_COMMIT
    assert node.markers(2) == [(1, pid)]
    assert node.log(2).last_stable_offset == 2
    await reloaded.close()


def offsets_commit(txn_id: str, pid: int, epoch: int, offsets: dict[int, int]) -> TxnOffsetCommitRequest:
    return TxnOffsetCommitRequest(
        transactional_id=txn_id, group_id=GROUP, producer_id=pid, producer_epoch=epoch, generation_id_or_member_epoch=-1,
        member_id="", group_instance_id=None,
        topics=[TxnOffsetCommitRequestTopic(name=DATA, partitions=[
            TxnOffsetCommitRequestPartition(partition_index=p, committed_offset=o, committed_leader_epoch=-1,
                                            committed_metadata="") for p, o in offsets.items()])])


async def committed(node: Node, require_stable: bool = False) -> dict[int, tuple[int, int]]:
    """(offset, error code) per partition of DATA fetched for the group."""
    g = await node.groups.fetch_offsets(info(8), GROUP, [(DATA, [0])], require_stable=require_stable)
    assert g.error_code == ErrorCode.NONE
    return {p.partition_index: (p.committed_offset, p.error_code) for t in g.topics for p in t.partitions}


@run
async def test_offsets_committed_in_a_transaction_show_only_once_it_commits(tmp_path):
    node = Node(tmp_path)
    pid, epoch = await begin(node, "rpw", 0)
    await node.txn.add_partitions("rpw", pid, epoch, [node.txn.offsets_partition(GROUP)])
    response = await node.groups.commit_transactional_offsets(info(3), offsets_commit("rpw", pid, epoch, {0: 10}))
    assert {p.error_code for t in response.topics for p in t.partitions} == {ErrorCode.NONE}
    assert await committed(node) == {0: (-1, ErrorCode.NONE)}
    assert await committed(node, require_stable=True) == {0: (-1, ErrorCode.UNSTABLE_OFFSET_COMMIT)}
    await end(node.txn, "rpw", pid, epoch, commit=True)
    assert await committed(node, require_stable=True) == {0: (10, ErrorCode.NONE)}
    # An aborted transaction's offsets never show.
    await node.txn.add_partitions("rpw", pid, epoch, [node.txn.offsets_partition(GROUP)])
    await node.groups.commit_transactional_offsets(info(3), offsets_commit("rpw", pid, epoch, {0: 99}))
    await end(node.txn, "rpw", pid, epoch, commit=False)
    assert await committed(node, require_stable=True) == {0: (10, ErrorCode.NONE)}
    await node.txn.close()
    await node.groups.close()


# -- transaction version 2 (KIP-890 part 2) -------------------------------------------------------------------

@run
async def test_v2_writes_to_several_partitions_at_once_wait_for_each_others_add(tmp_path):
    """On a cluster an add's append to __transaction_state takes longer than Kafka's 100 ms retry window: the
    writes of one transaction to other partitions wait for it instead of answering CONCURRENT_TRANSACTIONS."""
    node = Node(tmp_path)
    pid, epoch = await node.txn.init_producer_id("v2c", 60_000)
    write = node.txn._runtime.write

    async def slow_write(index, operation):
        await asyncio.sleep(0.3)  # an acks=all append waiting for the followers
        return await write(index, operation)

    node.txn._runtime.write = slow_write
    codes = await asyncio.gather(*(node.txn.add_partition_from_write("v2c", pid, epoch, (DATA, p)) for p in range(3)))
    assert codes == [ErrorCode.NONE] * 3
    assert (await node.txn.describe("v2c")).partitions == {(DATA, p) for p in range(3)}
    await node.txn.close()
    await node.groups.close()


@run
async def test_v2_writes_add_their_partition_and_every_end_bumps_the_epoch(tmp_path):
    node = Node(tmp_path)
    pid, epoch = await node.txn.init_producer_id("v2", 60_000)
    assert await node.txn.add_partition_from_write("v2", pid, epoch, (DATA, 0)) == ErrorCode.NONE
    await node.produce(0, pid, epoch, 0, b"first")
    assert await end(node.txn, "v2", pid, epoch, commit=True, client_version=2) == (pid, epoch + 1)
    assert node.markers(0) == [(1, pid)]
    assert node.log(0).last_stable_offset == 2
    # A retry of that EndTxn (the old epoch) succeeds without another bump; the old epoch may write no more.
    assert await end(node.txn, "v2", pid, epoch, commit=True, client_version=2) == (pid, epoch + 1)
    assert await node.txn.add_partition_from_write("v2", pid, epoch, (DATA, 0)) == ErrorCode.INVALID_PRODUCER_EPOCH
    # The next transaction runs on the bumped epoch, its sequences from 0 again.
    epoch += 1
    assert await node.txn.add_partition_from_write("v2", pid, epoch, (DATA, 0)) == ErrorCode.NONE
    await node.produce(0, pid, epoch, 0, b"second")
    assert await end(node.txn, "v2", pid, epoch, commit=False, client_version=2) == (pid, epoch + 1)
    assert [t.first_offset for t in node.log(0).collect_aborted_transactions(0, 10)] == [2]
    await node.txn.close()


@run
async def test_v2_end_rules_for_completed_and_empty_transactions(tmp_path):
    node = Node(tmp_path)
    pid, epoch = await node.txn.init_producer_id("v2e", 60_000)
    await raises(ErrorCode.INVALID_TXN_STATE, node.txn.end_transaction("v2e", pid, epoch, True, client_version=2))
    # An abort with nothing added is allowed and bumps the epoch.
    assert await end(node.txn, "v2e", pid, epoch, False, client_version=2) == (pid, epoch + 1)
    assert (await node.txn.describe("v2e")).state is S.COMPLETE_ABORT
    await raises(ErrorCode.INVALID_TXN_STATE, node.txn.end_transaction("v2e", pid, epoch + 1, True, client_version=2))
    assert await end(node.txn, "v2e", pid, epoch + 1, False, client_version=2) == (pid, epoch + 2)
    await raises(ErrorCode.PRODUCER_FENCED, node.txn.end_transaction("v2e", pid, epoch + 5, False, client_version=2))
    await raises(ErrorCode.INVALID_PRODUCER_ID_MAPPING,
                 node.txn.end_transaction("v2e", pid + 1, epoch + 2, False, client_version=2))
    await node.txn.close()


@run
async def test_v2_an_exhausted_epoch_continues_on_a_new_producer_id(tmp_path):
    node = Node(tmp_path)
    pid, _ = await node.txn.init_producer_id("v2x", 60_000)
    metadata = (await node.txn._lookup("v2x"))[0].transactions["v2x"]
    metadata.producer_epoch = 32_766  # as after 32766 transactions
    assert await node.txn.add_partition_from_write("v2x", pid, 32_766, (DATA, 1)) == ErrorCode.NONE
    new_pid, new_epoch = await end(node.txn, "v2x", pid, 32_766, commit=True, client_version=2)
    assert new_pid != pid and new_epoch == 0
    assert node.markers(1) == [(0, pid)]  # the marker closes the old producer id's transaction
    # Retrying the EndTxn with the old id and last epoch is recognised.
    assert await end(node.txn, "v2x", pid, 32_766, commit=True, client_version=2) == (new_pid, 0)
    assert await node.txn.add_partition_from_write("v2x", new_pid, 0, (DATA, 1)) == ErrorCode.NONE
    await node.txn.close()


@run
async def test_v2_fencing_and_timeouts_abort_with_a_bumped_epoch(tmp_path):
    node = Node(tmp_path)
    pid, epoch = await node.txn.init_producer_id("v2f", 2_000)
    assert await node.txn.add_partition_from_write("v2f", pid, epoch, (DATA, 2)) == ErrorCode.NONE
    await node.produce(2, pid, epoch, 0, b"stale")
    node.clock.advance(3_000)
    assert await node.txn.abort_timed_out_transactions() == 1
    await completed(node.txn, "v2f")
    metadata = await node.txn.describe("v2f")
    assert (metadata.state, metadata.producer_epoch) == (S.COMPLETE_ABORT, epoch + 1)
    # To Kafka's rules the old epoch now looks like a retry of an abort: its commit is refused.
    await raises(ErrorCode.INVALID_TXN_STATE, node.txn.end_transaction("v2f", pid, epoch, True, client_version=2))
    assert await node.txn.add_partition_from_write("v2f", pid, epoch, (DATA, 2)) == ErrorCode.INVALID_PRODUCER_EPOCH
    # A new producer (InitProducerId) bumps again, after which the old epoch is plainly fenced.
    assert await node.txn.init_producer_id("v2f", 2_000) == (pid, epoch + 2)
    await raises(ErrorCode.PRODUCER_FENCED, node.txn.end_transaction("v2f", pid, epoch, True, client_version=2))
    await node.txn.close()


@run
async def test_init_producer_id_recovery_with_the_expected_epoch(tmp_path):
    node = Node(tmp_path)
    pid, epoch = await node.txn.init_producer_id("kip360", 60_000)
    # KIP-360: a producer recovering from an abortable error names its id and epoch: bumped once ...
    assert await node.txn.init_producer_id("kip360", 60_000, pid, epoch) == (pid, epoch + 1)
    # ... and a retry of that call (the last epoch) gets the same answer without another bump.
    assert await node.txn.init_producer_id("kip360", 60_000, pid, epoch) == (pid, epoch + 1)
    await raises(ErrorCode.PRODUCER_FENCED, node.txn.init_producer_id("kip360", 60_000, pid, epoch + 7))
    await raises(ErrorCode.PRODUCER_FENCED, node.txn.init_producer_id("kip360", 60_000, pid + 50, epoch))
    # An unknown transactional id with an expected producer starts fresh, as in Kafka.
    fresh, fresh_epoch = await node.txn.init_producer_id("kip360-new", 60_000, 12345, 3)
    assert fresh_epoch == 0 and fresh != 12345
    await node.txn.close()


def in_memory_coordinator(node: Node, logs: InMemoryCoordinatorLogs, leaders: dict[int, int]) -> TransactionCoordinator:
    """A coordinator whose __transaction_state partitions are in-memory logs, led as ``leaders`` says."""
    async def nothing_to_create() -> None:
        pass
    return TransactionCoordinator(
        TransactionConfig(num_partitions=TXN_PARTITIONS), 1, log_factory=logs, replica_manager=node.rm,
        group_coordinator=node.groups, producer_ids=node.producer_ids, ensure_state_topic=nothing_to_create,
        partition_leader=lambda p: leaders.get(p, 1), coordinator_epoch=lambda p: 0, clock=node.clock)


@run
async def test_a_failed_state_append_changes_nothing_and_maps_the_error_as_kafka_does(tmp_path):
    node = Node(tmp_path)
    logs = InMemoryCoordinatorLogs()
    txn = in_memory_coordinator(node, logs, {})
    pid, epoch = await txn.init_producer_id("f", 60_000)
    log = logs(txn.partition_for("f"))
    written = log.log_end_offset
    # The transaction log's mapping (Kafka's TransactionStateManager), not the group coordinator's.
    for append_error, answer in ((ErrorCode.NOT_ENOUGH_REPLICAS, ErrorCode.COORDINATOR_NOT_AVAILABLE),
                                 (ErrorCode.NOT_LEADER_OR_FOLLOWER, ErrorCode.NOT_COORDINATOR),
                                 (ErrorCode.MESSAGE_TOO_LARGE, ErrorCode.UNKNOWN_SERVER_ERROR)):
        log.fail_next_append = CoordinatorLogError(append_error)
        await raises(answer, txn.add_partitions("f", pid, epoch, [(DATA, 0)]))
        metadata = await txn.describe("f")
        assert (metadata.state, metadata.pending_state, metadata.partitions) == (S.EMPTY, None, set())
    assert log.log_end_offset == written
    await txn.add_partitions("f", pid, epoch, [(DATA, 0)])  # nothing is left pending
    assert (await txn.describe("f")).state is S.ONGOING
    await txn.close()


@run
async def test_resignation_unloads_and_election_loads_the_partition_by_replaying_it(tmp_path):
    node = Node(tmp_path)
    logs = InMemoryCoordinatorLogs()
    leaders: dict[int, int] = {}
    txn = in_memory_coordinator(node, logs, leaders)
    pid, epoch = await txn.init_producer_id("moving", 60_000)
    await txn.add_partitions("moving", pid, epoch, [(DATA, 1)])
    index = txn.partition_for("moving")
    before = await txn.describe("moving")
    state = (before.producer_id, before.producer_epoch, before.state, before.partitions)

    leaders[index] = 2  # another broker won the election
    txn.on_resignation(index)
    await raises(ErrorCode.NOT_COORDINATOR, txn.describe("moving"))
    assert txn.verify_partition("moving", pid, epoch, (DATA, 1), abortable_error=True) == ErrorCode.NONE

    leaders[index] = 1  # and this one again
    txn.on_election(index)
    after = await txn.describe("moving")
    assert after is not before  # a fresh shard, rebuilt from the records alone
    assert (after.producer_id, after.producer_epoch, after.state, after.partitions) == state
    assert txn.verify_partition("moving", pid, epoch, (DATA, 1), abortable_error=True) == ErrorCode.NONE
    await txn.close()


@run
async def test_markers_go_to_every_leader_at_once(tmp_path):
    """As Kafka's marker channel: the markers for partitions led by other brokers are sent to each at the same
    time (one at a time, every commit waited for each leader's acks=all round trip in turn, issue 33)."""
    node = Node(tmp_path)
    in_flight, most, sent = 0, 0, []

    async def remote_markers(leader, producer_id, producer_epoch, coordinator_epoch, commit, partitions, _version):
        nonlocal in_flight, most
        in_flight += 1
        most = max(most, in_flight)
        try:
            await asyncio.sleep(0.05)  # the other broker's append and replication
            batch = build_control_batch(ControlRecordType.COMMIT if commit else ControlRecordType.ABORT,
                                        producer_id=producer_id, producer_epoch=producer_epoch,
                                        timestamp=node.clock.now_ms(), partition_leader_epoch=-1,
                                        coordinator_epoch=coordinator_epoch)
            results = await node.rm.append_records({tp: batch for tp in partitions}, -1, 1000,
                                                   origin=AppendOrigin.COORDINATOR)
            sent.append((leader, sorted(partitions)))
            return {tp: r.error_code for tp, r in results.items()}
        finally:
            in_flight -= 1

    async def nothing_to_create() -> None:
        pass
    node.txn = TransactionCoordinator(
        TransactionConfig(num_partitions=TXN_PARTITIONS), 1,
        log_factory=lambda p: ReplicaCoordinatorLog(node.rm, p, node.clock, topic=TRANSACTION_STATE_TOPIC_NAME),
        replica_manager=node.rm, group_coordinator=node.groups, producer_ids=node.producer_ids,
        ensure_state_topic=nothing_to_create, partition_leader=lambda p: 1, coordinator_epoch=lambda p: 0,
        clock=node.clock, data_partition_leader=lambda _t, p: {0: 1, 1: 2, 2: 3, 3: 2}[p], remote_markers=remote_markers)
    pid, epoch = await begin(node, "spread", 0, 1, 2, 3)
    for p in range(4):
        await node.produce(p, pid, epoch, 0, b"v")
    await end(node.txn, "spread", pid, epoch, commit=True)
    assert (await node.txn.describe("spread")).state is S.COMPLETE_COMMIT
    assert sorted(sent) == [(2, [(DATA, 1), (DATA, 3)]), (3, [(DATA, 2)])]
    assert [node.markers(p) for p in range(4)] == [[(1, pid)]] * 4
    assert most == 2, "the markers went to one leader after the other"
    await node.txn.close()


class UnreachableLeader:
    """Broker 2 leads DATA-1 and refuses markers (unreachable, then no longer the leader) until ``reachable``;
    ``leaders`` says who leads each DATA partition (the coordinator asks at every round)."""

    def __init__(self, node: Node) -> None:
        self.node = node
        self.reachable = False
        self.leaders = {0: 1, 1: 2, 2: 1, 3: 1}
        self.attempts = 0
        self.slow: asyncio.Event | None = None  # set: the leader answers once it is set

    async def __call__(self, leader, producer_id, producer_epoch, coordinator_epoch, commit, partitions, _version):
        self.attempts += 1
        if self.slow is not None:
            await self.slow.wait()
        elif not self.reachable:
            raise ConnectionRefusedError(f"broker {leader} is down")
        batch = build_control_batch(ControlRecordType.COMMIT if commit else ControlRecordType.ABORT,
                                    producer_id=producer_id, producer_epoch=producer_epoch,
                                    timestamp=self.node.clock.now_ms(), partition_leader_epoch=-1,
                                    coordinator_epoch=coordinator_epoch)
        results = await self.node.rm.append_records({tp: batch for tp in partitions}, -1, 1000,
                                                    origin=AppendOrigin.COORDINATOR)
        return {tp: r.error_code for tp, r in results.items()}

    def coordinator(self, leaders_of_state: dict[int, int] | None = None) -> TransactionCoordinator:
        async def nothing_to_create() -> None:
            pass
        node = self.node
        state = leaders_of_state if leaders_of_state is not None else {}
        return TransactionCoordinator(
            TransactionConfig(num_partitions=TXN_PARTITIONS), 1,
            log_factory=lambda p: ReplicaCoordinatorLog(node.rm, p, node.clock, topic=TRANSACTION_STATE_TOPIC_NAME),
            replica_manager=node.rm, group_coordinator=node.groups, producer_ids=node.producer_ids,
            ensure_state_topic=nothing_to_create, partition_leader=lambda p: state.get(p, 1),
            coordinator_epoch=lambda p: 0, clock=node.clock,
            data_partition_leader=lambda _t, p: self.leaders[p], remote_markers=self)


async def until(condition, timeout: float = 10.0) -> None:
    deadline = asyncio.get_running_loop().time() + timeout
    while not condition():
        assert asyncio.get_running_loop().time() < deadline, "condition not met in time"
        await asyncio.sleep(0.01)


@run
async def test_end_txn_answers_once_prepare_is_written_and_the_id_waits_for_the_markers(tmp_path):
    """Kafka's EndTxn: answered once PrepareCommit is durable; until every leader has its marker the transaction
    shows PrepareCommit and every request on the id gets CONCURRENT_TRANSACTIONS; a retried EndTxn answers
    CONCURRENT_TRANSACTIONS meanwhile, then the same id and epoch as the first answer."""
    node = Node(tmp_path)
    broker2 = UnreachableLeader(node)
    node.txn = txn = broker2.coordinator()
    pid, epoch = await txn.init_producer_id("slow-leader", 60_000)
    for p in (0, 1):
        assert await txn.add_partition_from_write("slow-leader", pid, epoch, (DATA, p)) == ErrorCode.NONE
        await node.produce(p, pid, epoch, 0, b"v")
    assert await txn.end_transaction("slow-leader", pid, epoch, True, client_version=2) == (pid, epoch + 1)
    await until(lambda: broker2.attempts >= 2)  # retried
    metadata = await txn.describe("slow-leader")
    assert (metadata.state, metadata.producer_epoch) == (S.PREPARE_COMMIT, epoch + 1)
    assert [m.transactional_id for m in await txn.list_transactions({S.PREPARE_COMMIT}, set())] == ["slow-leader"]
    assert node.markers(0) == [(1, pid)] and node.markers(1) == []  # the reachable leader has its marker already
    await raises(ErrorCode.CONCURRENT_TRANSACTIONS, txn.end_transaction("slow-leader", pid, epoch, True, 2))
    await raises(ErrorCode.INVALID_TXN_STATE, txn.end_transaction("slow-leader", pid, epoch, False, 2))
    await raises(ErrorCode.CONCURRENT_TRANSACTIONS, txn.add_partitions("slow-leader", pid, epoch + 1, [(DATA, 2)], 2))
    assert await txn.add_partition_from_write("slow-leader", pid, epoch + 1, (DATA, 2)) == \
        ErrorCode.CONCURRENT_TRANSACTIONS
    await raises(ErrorCode.CONCURRENT_TRANSACTIONS, txn.init_producer_id("slow-leader", 60_000))
    assert node.log(1).last_stable_offset == 0  # read_committed consumers of DATA-1 wait
    broker2.reachable = True
    await completed(txn, "slow-leader")
    assert node.markers(1) == [(1, pid)] and node.log(1).last_stable_offset == 2
    assert await txn.end_transaction("slow-leader", pid, epoch, True, client_version=2) == (pid, epoch + 1)
    assert await txn.add_partition_from_write("slow-leader", pid, epoch + 1, (DATA, 2)) == ErrorCode.NONE
    await txn.close()


@run
async def test_markers_follow_a_leader_that_moves(tmp_path):
    node = Node(tmp_path)
    broker2 = UnreachableLeader(node)
    node.txn = txn = broker2.coordinator()
    pid, epoch = await begin(node, "moved", 1)
    await node.produce(1, pid, epoch, 0, b"v")
    await txn.end_transaction("moved", pid, epoch, commit=False)
    await until(lambda: broker2.attempts >= 1)
    assert (await txn.describe("moved")).state is S.PREPARE_ABORT
    # A client's next AddPartitionsToTxn waits 100 ms for the completion (as a version 2 write's add is retried),
    # then hears CONCURRENT_TRANSACTIONS.
    started = asyncio.get_running_loop().time()
    await raises(ErrorCode.CONCURRENT_TRANSACTIONS, txn.add_partitions("moved", pid, epoch, [(DATA, 1)]))
    assert asyncio.get_running_loop().time() - started >= 0.1
    broker2.leaders[1] = 1  # broker 2 died; this broker leads DATA-1 now
    await completed(txn, "moved")
    assert node.markers(1) == [(1, pid)]
    assert [t.producer_id for t in node.log(1).collect_aborted_transactions(0, 10)] == [pid]
    await txn.close()


@run
async def test_a_coordinator_that_resigns_with_markers_pending_leaves_them_to_the_next(tmp_path):
    """The completion stops when the partition moves away (nothing more is written by the old coordinator); the
    next load finds PrepareCommit in the log and sends the markers again."""
    node = Node(tmp_path)
    broker2 = UnreachableLeader(node)
    leaders: dict[int, int] = {}
    node.txn = txn = broker2.coordinator(leaders)
    pid, epoch = await begin(node, "handover", 0, 1)
    await node.produce(1, pid, epoch, 0, b"v")
    await txn.end_transaction("handover", pid, epoch, commit=True)
    await until(lambda: broker2.attempts >= 1)
    index = txn.partition_for("handover")
    state_log = node.rm.get_partition(TRANSACTION_STATE_TOPIC_NAME, index).log
    written = state_log.log_end_offset
    leaders[index] = 2
    txn.on_resignation(index)
    broker2.reachable = True
    await asyncio.sleep(0.5)  # the old completion's next rounds (after 0.1 s, then 0.2 s), had it survived
    assert state_log.log_end_offset == written  # no CompleteCommit from a coordinator that is not one
    leaders[index] = 1
    txn.on_election(index)
    await completed(txn, "handover")
    assert node.markers(1) == [(1, pid)]
    await txn.close()


@run
async def test_a_v2_write_after_end_txn_waits_for_the_completion_within_kafkas_retry_window(tmp_path):
    """The next transaction's first write finds the previous one completing: its implicit add is retried the moment
    the Complete state is written (within Kafka's 100 ms window), and answers CONCURRENT_TRANSACTIONS after it."""
    node = Node(tmp_path)
    broker2 = UnreachableLeader(node)
    node.txn = txn = broker2.coordinator()
    broker2.slow = asyncio.Event()
    pid, epoch = await txn.init_producer_id("next", 60_000)
    for n in range(2):
        assert await txn.add_partition_from_write("next", pid, epoch, (DATA, 1)) == ErrorCode.NONE
        await txn.end_transaction("next", pid, epoch, True, client_version=2)
        epoch += 1
        loop = asyncio.get_running_loop()
        started = loop.time()
        if n == 0:  # broker 2 takes longer than the window
            assert await txn.add_partition_from_write("next", pid, epoch, (DATA, 0)) == \
                ErrorCode.CONCURRENT_TRANSACTIONS
            assert loop.time() - started >= 0.1  # Kafka's add.partitions.to.txn.retry.max.ms
            broker2.slow.set()
            await completed(txn, "next")
            broker2.slow.clear()
            continue
        add = asyncio.ensure_future(txn.add_partition_from_write("next", pid, epoch, (DATA, 0)))
        for _ in range(5):
            await asyncio.sleep(0)  # the add is refused once and waits for the completion
        assert not add.done()
        broker2.slow.set()  # broker 2 answers: the Complete state is written and the add goes through at once
        assert await add == ErrorCode.NONE
    assert (await txn.describe("next")).state is S.ONGOING
    await txn.close()


@run
async def test_a_clients_add_right_after_end_txn_waits_for_the_completion(tmp_path):
    """Transaction version 0/1: AddPartitionsToTxn finding the previous transaction completing is answered once it
    completes (within 100 ms) instead of CONCURRENT_TRANSACTIONS."""
    node = Node(tmp_path)
    broker2 = UnreachableLeader(node)
    broker2.slow = asyncio.Event()
    node.txn = txn = broker2.coordinator()
    pid, epoch = await begin(node, "tv1", 1)
    await txn.end_transaction("tv1", pid, epoch, commit=True)
    add = asyncio.ensure_future(txn.add_partitions("tv1", pid, epoch, [(DATA, 0)]))
    for _ in range(5):
        await asyncio.sleep(0)
    assert not add.done() and (await txn.describe("tv1")).state is S.PREPARE_COMMIT
    broker2.slow.set()
    assert await add is None
    metadata = await txn.describe("tv1")
    assert (metadata.state, metadata.partitions) == (S.ONGOING, {(DATA, 0)})
    await txn.close()


@run
async def test_the_next_transactions_end_txn_waits_for_the_previous_to_complete(tmp_path):
    """Transaction version 2: a producer that commits and at once aborts its next transaction (franz-go on a
    rebalance) sends EndTxn with the epoch the commit answered while the commit's markers may still be out. It is
    answered once the commit is complete, as Kafka (whose markers take milliseconds) answers it, not PRODUCER_FENCED."""
    node = Node(tmp_path)
    broker2 = UnreachableLeader(node)
    node.txn = txn = broker2.coordinator()
    broker2.slow = asyncio.Event()
    pid, epoch = await txn.init_producer_id("next-end", 60_000)
    assert await txn.add_partition_from_write("next-end", pid, epoch, (DATA, 1)) == ErrorCode.NONE
    assert await txn.end_transaction("next-end", pid, epoch, True, client_version=2) == (pid, epoch + 1)
    abort = asyncio.ensure_future(txn.end_transaction("next-end", pid, epoch + 1, False, client_version=2))
    for _ in range(5):
        await asyncio.sleep(0)
    assert not abort.done() and (await txn.describe("next-end")).state is S.PREPARE_COMMIT
    broker2.slow.set()  # broker 2 takes the commit's marker: the commit completes, then the abort is judged
    assert await abort == (pid, epoch + 2)
    await completed(txn, "next-end")
    assert (await txn.describe("next-end")).state is S.COMPLETE_ABORT
    # A stale epoch in the window is still fenced at once, as Kafka fences it.
    broker2.slow.clear()
    assert await txn.add_partition_from_write("next-end", pid, epoch + 2, (DATA, 1)) == ErrorCode.NONE
    assert await txn.end_transaction("next-end", pid, epoch + 2, True, client_version=2) == (pid, epoch + 3)
    await raises(ErrorCode.PRODUCER_FENCED, txn.end_transaction("next-end", pid, epoch + 1, False, 2))
    broker2.slow.set()
    await completed(txn, "next-end")
    await txn.close()
