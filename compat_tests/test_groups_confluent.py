"""confluent-kafka (librdkafka) consumer groups against pykbroker: classic assignors, the KIP-848
protocol (group.protocol=consumer), commits, AdminClient group APIs, offsets across a kill -9."""

from __future__ import annotations

import time

import pytest

from pykbroker.testing import BrokerProcess

GROUP_BROKER_OVERRIDES = {
    "group.initial.rebalance.delay.ms": "0",
    "group.min.session.timeout.ms": "1000",
    "group.consumer.heartbeat.interval.ms": "500",
    "num.partitions": "4",
}


@pytest.fixture(scope="module")
def gbroker(tmp_path_factory):
    with BrokerProcess(tmp_path_factory.mktemp("groups-ck"), overrides=GROUP_BROKER_OVERRIDES) as b:
        yield b
        assert b.alive, f"the broker died during the tests; its log:\n{b.log()}"


def create_topic(broker, name: str) -> None:
    """Through Metadata auto-creation (num.partitions=4 on this broker), asking until the topic appears."""
    from pykbroker.testing import RawClient
    with RawClient(broker.bootstrap) as client:
        client.wait_for_topics(name, auto_create=True)


class Member:
    """A confluent consumer that records its assignment through the rebalance callbacks."""

    def __init__(self, broker, group: str, topic: str, **config) -> None:
        from confluent_kafka import Consumer
        self.partitions: set[int] = set()
        conf = {"bootstrap.servers": broker.bootstrap, "group.id": group, "enable.auto.commit": False,
                "topic.metadata.refresh.interval.ms": 1000}
        if config.get("group.protocol") != "consumer":
            conf.update({"session.timeout.ms": 6000, "heartbeat.interval.ms": 300})
        conf.update(config)
        self.consumer = Consumer(conf)
        self.consumer.subscribe([topic], on_assign=self._on_assign, on_revoke=self._on_revoke,
                                on_lost=self._on_revoke)
        self.incremental = conf.get("partition.assignment.strategy") == "cooperative-sticky" or \
            conf.get("group.protocol") == "consumer"

    def _on_assign(self, consumer, partitions) -> None:
        if not self.incremental:
            self.partitions = set()
        self.partitions |= {p.partition for p in partitions}

    def _on_revoke(self, consumer, partitions) -> None:
        self.partitions -= {p.partition for p in partitions}

    def close(self) -> None:
        self.consumer.close()


def poll_until(members, predicate, timeout: float = 20.0) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, [sorted(m.partitions) for m in members]
        for m in members:
            m.consumer.poll(0.05)


def covers(members, n: int = 4) -> bool:
    got = sorted(p for m in members for p in m.partitions)
    return got == list(range(n)) and all(m.partitions for m in members)


@pytest.mark.parametrize("strategy", ["range", "roundrobin", "cooperative-sticky"])
def test_classic_assignors_share_and_rebalance(gbroker, strategy):
    topic = f"ck-{strategy}"
    create_topic(gbroker, topic)
    members = [Member(gbroker, f"{topic}-g", topic, **{"partition.assignment.strategy": strategy})
               for _ in range(2)]
    try:
        poll_until(members, lambda: covers(members))
        members.append(Member(gbroker, f"{topic}-g", topic, **{"partition.assignment.strategy": strategy}))
        poll_until(members, lambda: covers(members))
        members.pop(0).close()
        poll_until(members, lambda: covers(members))
    finally:
        for m in members:
            m.close()


def test_consumer_group_protocol_kip_848(gbroker):
    from confluent_kafka.admin import AdminClient
    create_topic(gbroker, "ck-848")
    members = [Member(gbroker, "ck-848-g", "ck-848", **{"group.protocol": "consumer"}) for _ in range(2)]
    admin = AdminClient({"bootstrap.servers": gbroker.bootstrap})
    try:
        poll_until(members, lambda: covers(members))
        members.append(Member(gbroker, "ck-848-g", "ck-848", **{"group.protocol": "consumer"}))
        poll_until(members, lambda: covers(members))
        listed = admin.list_consumer_groups(request_timeout=10).result(timeout=10)
        types = {g.group_id: g.type for g in listed.valid}
        assert str(types["ck-848-g"]).endswith("CONSUMER")
        described = admin.describe_consumer_groups(["ck-848-g"], request_timeout=10)["ck-848-g"].result(timeout=10)
        assert len(described.members) == 3
        assigned = sorted(tp.partition for m in described.members for tp in m.assignment.topic_partitions)
        assert assigned == [0, 1, 2, 3]
        members.pop(0).close()
        poll_until(members, lambda: covers(members))
    finally:
        for m in members:
            m.close()


def test_commit_offsets_and_committed(gbroker):
    from confluent_kafka import Consumer, TopicPartition
    create_topic(gbroker, "ck-commit")
    c = Consumer({"bootstrap.servers": gbroker.bootstrap, "group.id": "ck-commit-g", "enable.auto.commit": False})
    try:
        wanted = [TopicPartition("ck-commit", 0, 11, metadata="hello", leader_epoch=2),
                  TopicPartition("ck-commit", 3, 7)]
        c.commit(offsets=wanted, asynchronous=False)
        got = c.committed([TopicPartition("ck-commit", p) for p in range(4)], timeout=10)
        assert [(tp.partition, tp.offset) for tp in got] == [(0, 11), (1, -1001), (2, -1001), (3, 7)]
        assert got[0].metadata == "hello" and got[0].leader_epoch == 2
    finally:
        c.close()


def test_admin_list_describe_and_delete_groups(gbroker):
    from confluent_kafka import ConsumerGroupState, TopicPartition
    from confluent_kafka.admin import AdminClient
    create_topic(gbroker, "ck-admin")
    admin = AdminClient({"bootstrap.servers": gbroker.bootstrap})
    live = Member(gbroker, "ck-admin-live", "ck-admin")
    try:
        poll_until([live], lambda: covers([live]))
        from confluent_kafka import Consumer
        simple = Consumer({"bootstrap.servers": gbroker.bootstrap, "group.id": "ck-admin-empty"})
        simple.commit(offsets=[TopicPartition("ck-admin", 1, 5)], asynchronous=False)
        simple.close()
        listed = admin.list_consumer_groups(states={ConsumerGroupState.STABLE}, request_timeout=10).result(timeout=10)
        assert "ck-admin-live" in {g.group_id for g in listed.valid}
        assert "ck-admin-empty" not in {g.group_id for g in listed.valid}
        described = admin.describe_consumer_groups(["ck-admin-live"], request_timeout=10)["ck-admin-live"].result(10)
        assert described.state == ConsumerGroupState.STABLE and described.partition_assignor == "range"
        futures = admin.delete_consumer_groups(["ck-admin-empty", "ck-admin-live"], request_timeout=10)
        futures["ck-admin-empty"].result(timeout=10)
        with pytest.raises(Exception, match="NON_EMPTY_GROUP"):
            futures["ck-admin-live"].result(timeout=10)
    finally:
        live.close()


def test_committed_offsets_survive_kill_9(fresh_broker):
    from confluent_kafka import Consumer, TopicPartition
    create_topic(fresh_broker, "ck-durable")

    def new_consumer():
        return Consumer({"bootstrap.servers": fresh_broker.bootstrap, "group.id": "ck-durable-g",
                         "enable.auto.commit": False})

    c = new_consumer()
    c.commit(offsets=[TopicPartition("ck-durable", 0, 123)], asynchronous=False)
    c.close()
    fresh_broker.restart(hard=True)
    c = new_consumer()
    try:
        got = c.committed([TopicPartition("ck-durable", 0)], timeout=10)
        assert got[0].offset == 123
    finally:
        c.close()


def test_classic_group_upgrades_to_consumer_group_and_back(gbroker):
    """A kafka-python (classic) member, then a librdkafka group.protocol=consumer member: the group is
    converted to a consumer group (the classic member stays, via JoinGroup/SyncGroup), and back to a
    classic group when the consumer-protocol member leaves."""
    from confluent_kafka.admin import AdminClient
    from kafka import KafkaConsumer
    create_topic(gbroker, "ck-mixed")
    classic = KafkaConsumer("ck-mixed", bootstrap_servers=gbroker.bootstrap, group_id="ck-mixed-g",
                            enable_auto_commit=False, session_timeout_ms=6000, heartbeat_interval_ms=300)
    admin = AdminClient({"bootstrap.servers": gbroker.bootstrap})

    def group_type() -> str:
        listed = admin.list_consumer_groups(request_timeout=10).result(timeout=10)
        return str({g.group_id: g.type for g in listed.valid}["ck-mixed-g"]).rsplit(".", 1)[-1]

    def classic_partitions(poll_ms: int = 50) -> list[int]:
        classic.poll(timeout_ms=poll_ms)
        return sorted(tp.partition for tp in classic.assignment())

    modern = None
    try:
        # kafka-python 3.0.12 stalls when a rebalance it starts because its metadata changed since its last
        # assignment does not end inside the poll that started it: the leader's assignment, run by a later poll's
        # network I/O, makes need_rejoin() false, so no poll awaits the join any more; it stays REBALANCING with
        # heartbeats off until the session times out, and never rejoins (pykbroker's log: generation 2 stabilized,
        # the session timeout 6 s later). Seen in a fresh-clone make test when its first metadata came after its
        # first join; the same against Kafka 4.4 (a CreatePartitions under 5-50 ms polls stalls it on either).
        # So it knows the topic's partitions before its first join: no metadata change then calls for a rejoin
        # (the rejoins below are asked by the coordinator, which sets the flag that keeps them awaited).
        assert "ck-mixed" in classic.topics()
        deadline = time.monotonic() + 30
        while classic_partitions(500) != [0, 1, 2, 3]:
            assert time.monotonic() < deadline
        assert group_type() == "CLASSIC"
        modern = Member(gbroker, "ck-mixed-g", "ck-mixed", **{"group.protocol": "consumer"})
        deadline = time.monotonic() + 20
        while True:
            modern.consumer.poll(0.05)
            got = classic_partitions()
            if got and modern.partitions and sorted(got + sorted(modern.partitions)) == [0, 1, 2, 3]:
                break
            assert time.monotonic() < deadline, (got, modern.partitions)
        assert group_type() == "CONSUMER"
        modern.close()
        modern = None
        deadline = time.monotonic() + 30
        while classic_partitions(500) != [0, 1, 2, 3]:
            assert time.monotonic() < deadline
        assert group_type() == "CLASSIC"
    finally:
        if modern is not None:
            modern.close()
        classic.close()
