"""A librdkafka workload in its own process: killed with -9 mid-run, it starts again under a new instance,
what it left in flight is recorded as indeterminate, and every check still passes on a real broker."""

from __future__ import annotations

import signal
import time

from confluent_kafka.admin import AdminClient, NewTopic

from chaos.checker import check_acknowledged_read_once, check_offsets_unique, check_read_committed
from chaos.client_process import DIED, ClientProcess
from chaos.history import History
from chaos.workloads import read_back
from pykbroker.testing import BrokerProcess
from tests.chaos.helpers import wait_until


def test_a_producer_process_killed_mid_run_goes_on_and_loses_nothing_acknowledged(tmp_path):
    t0 = time.monotonic()
    clock = lambda: round(time.monotonic() - t0, 3)  # noqa: E731
    history = History()
    with BrokerProcess(tmp_path / "broker") as broker:
        admin = AdminClient({"bootstrap.servers": broker.bootstrap})
        admin.create_topics([NewTopic("acks", 2, 1)])["acks"].result(30)
        producer = ClientProcess("p", history, clock, "producer", {"bootstrap": broker.bootstrap, "topic": "acks",
                                 "partitions": 2, "rate": 300.0}, tmp_path / "p.log").start()
        try:
            wait_until(lambda: sum(p.ok for p in history.produced) >= 200, 60, "the first run acknowledged 200")
            first = producer.proc
            assert first is not None
            first.send_signal(signal.SIGKILL)
            wait_until(lambda: any(p.ok and p.producer == "p.r2" for p in history.produced), 60,
                       "the second run acknowledged a record")
            producer.stop(60)
        finally:
            producer.kill()
        for partition in (0, 1):
            read_back(broker.bootstrap, "acks", partition, history, clock)
    assert first.returncode == -signal.SIGKILL
    assert (producer.runs, producer.crashed_runs, producer.errors) == (2, 1, [])
    assert {p.producer for p in history.produced} == {"p", "p.r2"}
    seqs = [p.seq for p in history.produced]
    assert len(seqs) == len(set(seqs)), "a sequence number was used twice across the two runs"
    assert min(p.seq for p in history.produced if p.producer == "p.r2") > \
        max(p.seq for p in history.produced if p.producer == "p")
    assert all(p.error == DIED for p in history.produced if not p.ok)
    for check in (check_acknowledged_read_once, check_offsets_unique):
        result = check(history)
        assert result.ok, result.violations[:3]
        assert result.checked > 200


def test_a_transactional_process_killed_with_a_transaction_open_leaves_it_whole_or_absent(tmp_path):
    t0 = time.monotonic()
    clock = lambda: round(time.monotonic() - t0, 3)  # noqa: E731
    history = History()
    overrides = {"transaction.state.log.num.partitions": "1", "transaction.state.log.replication.factor": "1",
                 "transaction.state.log.min.isr": "1"}
    with BrokerProcess(tmp_path / "broker", overrides) as broker:
        admin = AdminClient({"bootstrap.servers": broker.bootstrap})
        admin.create_topics([NewTopic("txn", 2, 1)])["txn"].result(30)
        txn = ClientProcess("txn", history, clock, "transactions", {"bootstrap": broker.bootstrap, "topic": "txn",
                            "partitions": 2, "seed": 7}, tmp_path / "txn.log").start()
        try:
            wait_until(lambda: any(p.txn == "committed" for p in history.produced), 90, "a committed transaction")
            assert broker.proc is not None
            broker.proc.send_signal(signal.SIGSTOP)  # no transaction can end: the next one stays open
            try:
                wait_until(lambda: bool(txn.pending_transaction), 30, "a transaction open")
                proc = txn.proc
                assert proc is not None
                proc.send_signal(signal.SIGKILL)
            finally:
                broker.proc.send_signal(signal.SIGCONT)
            wait_until(lambda: any(p.txn == "committed" and p.producer == "txn.r2" for p in history.produced), 120,
                       "the second run committed a transaction")
            txn.stop(60)
        finally:
            txn.kill()
        for partition in (0, 1):
            read_back(broker.bootstrap, "txn", partition, history, clock, committed=True)
    assert (txn.runs, txn.crashed_runs) == (2, 1)
    assert any(p.txn == "unknown" and p.producer == "txn" for p in history.produced)
    assert txn.stats["outcomes"]["committed"] >= 1
    result = check_read_committed(history)
    assert result.ok, result.violations[:3]
