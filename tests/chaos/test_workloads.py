"""The group workload's members are processes: one that cannot stop is killed within the bound and named,
and what it consumed before stays in the history for the checker."""

from __future__ import annotations

import signal
import time

from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic

from chaos.checker import check_all
from chaos.history import History, Produced
from chaos.workloads import GroupWorkload
from pykbroker.testing import BrokerProcess
from tests.chaos.helpers import wait_until

RECORDS = 200



def test_a_member_that_cannot_stop_is_abandoned_in_seconds_and_its_reads_are_kept(tmp_path):
    t0 = time.monotonic()
    clock = lambda: round(time.monotonic() - t0, 3)  # noqa: E731
    history = History()
    with BrokerProcess(tmp_path / "broker", {"offsets.topic.num.partitions": "1", "group.initial.rebalance.delay.ms": "0"}) as broker:
        admin = AdminClient({"bootstrap.servers": broker.bootstrap})
        admin.create_topics([NewTopic("acks", 2, 1)])["acks"].result(30)
        producer = Producer({"bootstrap.servers": broker.bootstrap, "acks": "all", "enable.idempotence": True})
        for i in range(RECORDS):
            value = f"p-{i}"

            def delivered(err, msg, value=value, seq=i) -> None:
                history.add(Produced("acks", msg.partition(), None, value, err is None,
                                     msg.offset() if err is None else -1, acked=clock(), producer="p", seq=seq))
            producer.produce("acks", value.encode(), partition=i % 2, on_delivery=delivered)
        assert producer.flush(30) == 0
        group = GroupWorkload("group", history, clock, broker.bootstrap, "acks", "g", tmp_path / "group.log",
                              members=2, commit_every=10).start()
        try:
            wait_until(lambda: len({c.value for c in history.consumed}) == RECORDS and
                       {c.partition for c in history.commits} == {0, 1} and
                       all(max(c.offset for c in history.commits if c.partition == p) == RECORDS // 2
                           for p in (0, 1)), 120, "the group read and committed everything")
            stuck = group.procs[0]
            stuck.send_signal(signal.SIGSTOP)  # as stuck as a thread inside librdkafka: deaf to SIGTERM
            started = time.monotonic()
            group.stop(3.0)
            took = time.monotonic() - started
        finally:
            group.kill()
    assert took < 15, f"stop took {took:.1f}s"
    assert stuck.returncode == -signal.SIGKILL
    # m1's close may itself wait on the rebalance the frozen m0 holds up: killed too, or exited cleanly
    assert group.abandoned in (["m0"], ["m0", "m1"])
    assert group.procs[1].returncode == (-signal.SIGKILL if "m1" in group.abandoned else 0), \
        (tmp_path / "group.log").read_text()
    assert not group.errors
    readers = {c.reader for c in history.consumed}
    assert readers <= {"group:g:m0", "group:g:m1"}
    assert sorted({c.value for c in history.consumed}) == sorted(f"p-{i}" for i in range(RECORDS))
    groups = {r.name: r for r in check_all(history)}
    assert groups["groups never skip acknowledged records"].ok and groups["groups never skip acknowledged records"].checked == RECORDS
    assert groups["committed offsets never go backwards"].ok
