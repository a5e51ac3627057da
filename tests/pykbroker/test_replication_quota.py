"""Replication throttles: which replicas a throttled-replicas list names, and a rate measured as Kafka's."""

from pykbroker.replication_quota import ReplicationQuotaManager, throttled_partitions


def test_a_throttled_replicas_list_names_partitions_of_one_broker_or_every_one():
    assert throttled_partitions("0:1,1:2,2:1", 1) == frozenset({0, 2})
    assert throttled_partitions("0:1, 1:2", 2) == frozenset({1})
    assert throttled_partitions("*", 7) is True
    assert throttled_partitions("", 1) == frozenset() and throttled_partitions(None, 1) == frozenset()
    assert throttled_partitions("junk,3:x,4:1", 1) == frozenset({4})


def test_the_throttle_is_spent_once_the_rate_over_the_windows_passes_the_dynamic_rate():
    now = [1000.0]
    per_broker, default = {}, {}
    topics = {"t": {"leader.replication.throttled.replicas": "0:5"}}
    q = ReplicationQuotaManager(5, "leader.replication.throttled.rate", "leader.replication.throttled.replicas",
                                lambda: (per_broker, default), topics.get, clock=lambda: now[0])
    assert q.is_throttled("t", 0) and not q.is_throttled("t", 1) and not q.is_throttled("other", 0)
    q.record(10_000_000)
    assert not q.is_quota_exceeded()  # no rate set: unlimited
    default["leader.replication.throttled.rate"] = "2000000"
    # 10 MB in the first second counts over Kafka's smallest window, 10 of the 11 samples: 1 MB/s.
    assert not q.is_quota_exceeded()
    per_broker["leader.replication.throttled.rate"] = "500000"  # this broker's value wins over the default
    assert q.is_quota_exceeded()
    now[0] += 30  # the windows age out
    q.record(1)
    assert not q.is_quota_exceeded()
    topics["t"] = {"leader.replication.throttled.replicas": "*"}
    assert q.is_throttled("t", 3)
