"""kafka-python consumer groups against pykbroker: assignment, rebalances, static members, commits, admin."""

from __future__ import annotations

import select
import subprocess
import sys
import threading
import time

import pytest

from pykbroker.testing import BrokerProcess

GROUP_BROKER_OVERRIDES = {
    "group.initial.rebalance.delay.ms": "0",
    "group.min.session.timeout.ms": "1000",
    "num.partitions": "4",
}


@pytest.fixture(scope="module")
def gbroker(tmp_path_factory):
    """A broker tuned for fast group tests: no initial rebalance delay, short sessions allowed."""
    with BrokerProcess(tmp_path_factory.mktemp("groups-kp"), overrides=GROUP_BROKER_OVERRIDES) as b:
        yield b
        assert b.alive, f"the broker died during the tests; its log:\n{b.log()}"


def consumer(broker, group: str, *topics: str, **config):
    from kafka import KafkaConsumer
    c = KafkaConsumer(bootstrap_servers=broker.bootstrap, group_id=group, enable_auto_commit=False,
                      session_timeout_ms=config.pop("session_timeout_ms", 6000),
                      heartbeat_interval_ms=config.pop("heartbeat_interval_ms", 500),
                      max_poll_interval_ms=config.pop("max_poll_interval_ms", 30_000), **config)
    if topics:
        c.subscribe(list(topics))
        # Its topics' metadata before its first join: kafka-python 3.0.12 stalls in a rebalance it starts because
        # its metadata changed since it last assigned as leader, when the JoinGroup is held past the poll that
        # sent it (other members rejoining): need_rejoin() turns false once the assignment is made, no poll awaits
        # the join, and the member stays REBALANCING without heartbeats until its session times out.
        c.topics()
    return c


def create_topic(broker, name: str) -> None:
    """Through Metadata auto-creation (num.partitions=4 on this broker), asking until the topic appears."""
    from pykbroker.testing import RawClient
    with RawClient(broker.bootstrap) as client:
        client.wait_for_topics(name, auto_create=True)


def poll_until(consumers, predicate, timeout: float = 20.0):
    """Keep every consumer polling in its own thread, as applications do, until predicate holds.

    kafka-python 3.0.12 loses a JoinGroup/SyncGroup round that completes while its consumer is outside
    poll(): driven from one thread in turns, or with polls shorter than the time a leader's JoinGroup
    waits for the other members, a leader rejoins in a loop or stops heartbeating (seen in CI). Long
    polls on one thread per consumer keep every round inside a poll.
    """
    stop = threading.Event()

    def poll_forever(c):
        while not stop.is_set():
            c.poll(timeout_ms=1000)

    threads = [threading.Thread(target=poll_forever, args=(c,), daemon=True) for c in consumers]
    for t in threads:
        t.start()
    try:
        deadline = time.monotonic() + timeout
        while not predicate():
            assert time.monotonic() < deadline, [c.assignment() for c in consumers]
            time.sleep(0.05)
    finally:
        stop.set()
        for t in threads:
            t.join()


def partitions(consumers) -> list[list]:
    return [sorted(tp.partition for tp in c.assignment()) for c in consumers]


def covers_without_overlap(consumers, n: int) -> bool:
    got = [p for ps in partitions(consumers) for p in ps]
    return sorted(got) == list(range(n)) and all(partitions(consumers))


def test_members_share_partitions_and_rebalance(gbroker):
    create_topic(gbroker, "kp-share")
    cs = [consumer(gbroker, "kp-share-g", "kp-share") for _ in range(3)]
    try:
        poll_until(cs, lambda: covers_without_overlap(cs, 4))
        cs.pop().close()  # LeaveGroup: the two left take over its partitions
        poll_until(cs, lambda: covers_without_overlap(cs, 4))
    finally:
        for c in cs:
            c.close()


def test_roundrobin_and_cooperative_sticky_assignors(gbroker):
    from kafka.coordinator.assignors.roundrobin import RoundRobinPartitionAssignor
    from kafka.coordinator.assignors.sticky.sticky_assignor import StickyPartitionAssignor
    create_topic(gbroker, "kp-rr")
    for group, assignor in (("kp-rr-g", RoundRobinPartitionAssignor), ("kp-sticky-g", StickyPartitionAssignor)):
        cs = [consumer(gbroker, group, "kp-rr", partition_assignment_strategy=[assignor]) for _ in range(2)]
        try:
            poll_until(cs, lambda cs=cs: covers_without_overlap(cs, 4))
        finally:
            for c in cs:
                c.close()


def test_killed_member_partitions_move_after_session_timeout(gbroker):
    create_topic(gbroker, "kp-kill")
    script = f"""
import time
from kafka import KafkaConsumer
c = KafkaConsumer('kp-kill', bootstrap_servers='{gbroker.bootstrap}', group_id='kp-kill-g', enable_auto_commit=False,
                  session_timeout_ms=2000, heartbeat_interval_ms=300)
c.topics()  # its topic's metadata before its first join, as consumer() does
while True:
    c.poll(timeout_ms=1000)
    if c.assignment():
        print('assigned', flush=True)
"""
    proc = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True)
    survivor = consumer(gbroker, "kp-kill-g", "kp-kill")
    try:
        # Polls of 1 s: kafka-python 3.0.12 can lose a join that completes after poll() timed out (its
        # heartbeat never restarts), which with 100 ms polls hung this test until max.poll.interval.ms.
        ready, _, _ = select.select([proc.stdout], [], [], 30)
        assert ready and proc.stdout.readline().strip() == "assigned", "the member to kill got no partitions"
        poll_until([survivor], lambda: 0 < len(survivor.assignment()) < 4)
        proc.kill()
        proc.wait()
        started = time.monotonic()
        poll_until([survivor], lambda: len(survivor.assignment()) == 4, timeout=15)
        assert time.monotonic() - started >= 1.0  # moved by the session timeout, not a LeaveGroup
    finally:
        proc.kill()
        survivor.close()


def test_static_member_rejoins_without_rebalance(gbroker):
    from kafka import KafkaAdminClient
    create_topic(gbroker, "kp-static")
    a = consumer(gbroker, "kp-static-g", "kp-static", group_instance_id="i-a", session_timeout_ms=10_000)
    b = consumer(gbroker, "kp-static-g", "kp-static", group_instance_id="i-b", session_timeout_ms=10_000)
    admin = KafkaAdminClient(bootstrap_servers=gbroker.bootstrap)
    try:
        poll_until([a, b], lambda: covers_without_overlap([a, b], 4))
        before = partitions([a, b])
        # kafka-python does not send LeaveGroup for static members on close: b restarts under its instance id.
        b.close()
        b = consumer(gbroker, "kp-static-g", "kp-static", group_instance_id="i-b", session_timeout_ms=10_000)
        poll_until([a, b], lambda: covers_without_overlap([a, b], 4))
        assert partitions([a, b]) == before
        described = admin.describe_groups(["kp-static-g"])["kp-static-g"]
        assert sorted(m["group_instance_id"] for m in described["members"]) == ["i-a", "i-b"]
    finally:
        admin.close()
        a.close()
        b.close()


def test_commit_and_committed_round_trip_metadata_and_leader_epoch(gbroker):
    from kafka import TopicPartition
    from kafka.structs import OffsetAndMetadata
    create_topic(gbroker, "kp-commit")
    tp0, tp1 = TopicPartition("kp-commit", 0), TopicPartition("kp-commit", 1)
    # A standalone consumer (assign()) commits to an unknown group: allowed, the group is created empty.
    standalone = consumer(gbroker, "kp-commit-g")
    standalone.assign([tp0, tp1])
    standalone.commit({tp0: OffsetAndMetadata(17, "first", 4), tp1: OffsetAndMetadata(3, "", -1)})
    assert standalone.committed(tp0, metadata=True) == OffsetAndMetadata(17, "first", 4)
    assert standalone.committed(tp1) == 3
    standalone.close()
    # A group member commits with its generation; the standalone one is then refused (seed 004, 2.2).
    member = consumer(gbroker, "kp-commit-g", "kp-commit")
    try:
        poll_until([member], lambda: len(member.assignment()) == 4)
        member.commit({tp0: OffsetAndMetadata(20, "member", 5)})
        assert member.committed(tp0, metadata=True) == OffsetAndMetadata(20, "member", 5)
        from kafka.errors import CommitFailedError
        intruder = consumer(gbroker, "kp-commit-g")
        intruder.assign([tp0])
        with pytest.raises(CommitFailedError):
            intruder.commit({tp0: OffsetAndMetadata(99, "", -1)})
        intruder.close()
    finally:
        member.close()


def test_admin_lists_describes_and_deletes_groups(gbroker):
    from kafka import KafkaAdminClient, TopicPartition
    from kafka.structs import OffsetAndMetadata
    create_topic(gbroker, "kp-admin")
    admin = KafkaAdminClient(bootstrap_servers=gbroker.bootstrap)
    member = consumer(gbroker, "kp-admin-live", "kp-admin")
    try:
        poll_until([member], lambda: len(member.assignment()) == 4)
        parked = consumer(gbroker, "kp-admin-empty")
        parked.assign([TopicPartition("kp-admin", 2)])
        parked.commit({TopicPartition("kp-admin", 2): OffsetAndMetadata(8, "m", -1)})
        parked.close()
        groups = {g["group_id"]: g for g in admin.list_groups()}
        assert groups["kp-admin-live"]["group_state"] == "Stable"
        assert groups["kp-admin-live"]["group_type"] == "classic"
        assert groups["kp-admin-empty"]["group_state"] == "Empty"
        live = admin.describe_groups(["kp-admin-live"])["kp-admin-live"]
        assert live["group_state"] == "Stable" and live["protocol_type"] == "consumer"
        assert live["members"][0]["member_assignment"]["assigned_partitions"][0]["partitions"] == [0, 1, 2, 3]
        offsets = admin.list_group_offsets("kp-admin-empty")["kp-admin-empty"]
        assert offsets[TopicPartition("kp-admin", 2)].offset == 8
        result = admin.delete_groups(["kp-admin-live", "kp-admin-empty"])
        assert result["kp-admin-empty"] == "OK"
        assert result["kp-admin-live"] != "OK"  # NON_EMPTY_GROUP
        assert "kp-admin-empty" not in {g["group_id"] for g in admin.list_groups()}
    finally:
        member.close()
        admin.close()
