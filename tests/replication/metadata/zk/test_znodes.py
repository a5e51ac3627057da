"""replication/metadata/zk/znodes.py against the znodes a real Kafka 3.9.1 cluster wrote.

The golden fixture comes from compat_tests/jvm/kafka39/dump_zk_layout.py (a ZooKeeper and three 3.9.1
brokers, driven as an operator drives them). Every znode with data is decoded with our class for its path
and encoded again: the bytes must be Kafka's, key order included.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from replication.metadata.zk.znodes import (
    PERSISTENT_PATHS,
    AclEntry,
    BrokerIdZNode,
    ClusterIdZNode,
    ConfigEntityChangeNotificationSequenceZNode,
    ConfigEntityZNode,
    ControllerEpochZNode,
    ControllerZNode,
    Endpoint,
    ExtendedAclChangeZNode,
    FeatureZNode,
    IsrChangeNotificationSequenceZNode,
    LiteralAclChangeZNode,
    LogDirEventNotificationSequenceZNode,
    OfflineReplicasZNode,
    PartitionState,
    PreferredReplicaElectionZNode,
    ProducerIdBlock,
    ProducerIdBlockZNode,
    ReassignPartitionsZNode,
    ResourceZNode,
    TopicPartitionStateZNode,
    TopicZNode,
    ZNodeDecodeError,
    desanitize,
    sanitize,
)

GOLDEN = json.loads((Path(__file__).parent / "golden" / "kafka_3_9_1_znodes.json").read_text())
ZNODES = {n["path"]: n for n in GOLDEN["znodes"]}


def _broker(path: str, data: bytes) -> bytes:
    broker_id = int(path.rsplit("/", 1)[1])
    info = BrokerIdZNode.decode(broker_id, data)
    return BrokerIdZNode.encode(broker_id, info.endpoints, rack=info.rack, jmx_port=info.jmx_port,
                                timestamp_ms=info.timestamp_ms, features=info.features)


def _topic(path: str, data: bytes) -> bytes:
    a = TopicZNode.decode(path.rsplit("/", 1)[1], data)
    return TopicZNode.encode(a.partitions, a.topic_id, adding_replicas=a.adding_replicas,
                             removing_replicas=a.removing_replicas)


def _state(path: str, data: bytes) -> bytes:
    s = TopicPartitionStateZNode.decode(data)
    return TopicPartitionStateZNode.encode(s.leader, s.leader_epoch, s.isr, s.controller_epoch, s.leader_recovery_state)


def _controller(path: str, data: bytes) -> bytes:
    c = ControllerZNode.decode(data)
    return ControllerZNode.encode(c.broker_id, c.timestamp_ms, c.kraft_controller_epoch)


def _feature(path: str, data: bytes) -> bytes:
    f = FeatureZNode.decode(data)
    return FeatureZNode.encode(f.features, f.enabled)


def _acl_resource(path: str, data: bytes) -> bytes:
    return ResourceZNode.encode(ResourceZNode.decode(data))


def _literal_acl_change(path: str, data: bytes) -> bytes:
    return LiteralAclChangeZNode.encode(*LiteralAclChangeZNode.decode(data))


def _extended_acl_change(path: str, data: bytes) -> bytes:
    return ExtendedAclChangeZNode.encode(*ExtendedAclChangeZNode.decode(data))


# path pattern -> re-encoder (None: Kafka writes null data there)
LAYOUT: list[tuple[str, object]] = [
    (r"/", None), (r"/admin", None), (r"/admin/delete_topics", None), (r"/admin/delete_topics/[^/]+", None),
    (r"/admin/reassign_partitions", lambda p, d: ReassignPartitionsZNode.encode(ReassignPartitionsZNode.decode(d))),
    (r"/brokers", None), (r"/brokers/ids", None), (r"/brokers/ids/\d+", _broker), (r"/brokers/seqid", None),
    (r"/brokers/topics", None), (r"/brokers/topics/[^/]+", _topic), (r"/brokers/topics/[^/]+/partitions", None),
    (r"/brokers/topics/[^/]+/partitions/\d+", None), (r"/brokers/topics/[^/]+/partitions/\d+/state", _state),
    (r"/cluster", None), (r"/cluster/id", lambda p, d: ClusterIdZNode.encode(ClusterIdZNode.decode(d))),
    (r"/config", None), (r"/config/(topics|clients|users|brokers|ips|changes)", None),
    (r"/config/(topics|clients|users|brokers|ips)/[^/]+",
     lambda p, d: None if d is None else ConfigEntityZNode.encode(ConfigEntityZNode.decode(d))),
    (r"/config/users/[^/]+/clients", None),
    (r"/config/users/[^/]+/clients/[^/]+", lambda p, d: ConfigEntityZNode.encode(ConfigEntityZNode.decode(d))),
    (r"/config/changes/config_change_\d{10}", lambda p, d: ConfigEntityChangeNotificationSequenceZNode.encode(
        ConfigEntityChangeNotificationSequenceZNode.decode(d))),
    (r"/consumers", None), (r"/controller", _controller),
    (r"/controller_epoch", lambda p, d: ControllerEpochZNode.encode(ControllerEpochZNode.decode(d))),
    (r"/feature", _feature), (r"/isr_change_notification", None), (r"/log_dir_event_notification", None),
    (r"/latest_producer_id_block", lambda p, d: ProducerIdBlockZNode.encode(ProducerIdBlockZNode.decode(d))),
    (r"/kafka-acl", None), (r"/kafka-acl/[A-Za-z]+", None), (r"/kafka-acl/[A-Za-z]+/[^/]+", _acl_resource),
    (r"/kafka-acl-changes", None), (r"/kafka-acl-changes/acl_changes_\d{10}", _literal_acl_change),
    (r"/kafka-acl-extended", None), (r"/kafka-acl-extended/prefixed", None),
    (r"/kafka-acl-extended/prefixed/[A-Za-z]+", None),
    (r"/kafka-acl-extended/prefixed/[A-Za-z]+/[^/]+", _acl_resource),
    (r"/kafka-acl-extended-changes", None), (r"/kafka-acl-extended-changes/acl_changes_\d{10}", _extended_acl_change),
]


def _layout_entry(path: str):
    for pattern, encoder in LAYOUT:
        if re.fullmatch(pattern, path):
            return encoder
    raise AssertionError(f"znode {path} written by Kafka 3.9.1 has no class in znodes.py")


@pytest.mark.parametrize("path", sorted(ZNODES))
def test_our_encoding_is_kafkas(path):
    node = ZNODES[path]
    encoder = _layout_entry(path)
    data = None if node["data"] is None else node["data"].encode("utf-8")
    if encoder is None:
        assert data is None, f"{path}: Kafka writes data here: {node['data']}"
        return
    assert encoder(path, data) == data


def test_every_persistent_path_kafka_creates_at_start_up_is_listed():
    assert set(PERSISTENT_PATHS) <= set(ZNODES)


def test_ephemeral_znodes_are_the_broker_registrations_and_the_controller():
    ephemeral = {p for p, n in ZNODES.items() if n["ephemeral"]}
    assert ephemeral == {"/controller"} | {p for p in ZNODES if re.fullmatch(r"/brokers/ids/\d+", p)}


def test_znodes_kafka_only_reads_were_consumed_with_our_bytes():
    encoders = {
        "/admin/reassign_partitions": lambda d: ReassignPartitionsZNode.encode(ReassignPartitionsZNode.decode(d)),
        "/admin/preferred_replica_election":
            lambda d: PreferredReplicaElectionZNode.encode(PreferredReplicaElectionZNode.decode(d)),
        "/isr_change_notification/isr_change_":
            lambda d: IsrChangeNotificationSequenceZNode.encode(IsrChangeNotificationSequenceZNode.decode(d)),
        "/log_dir_event_notification/log_dir_event_":
            lambda d: LogDirEventNotificationSequenceZNode.encode(LogDirEventNotificationSequenceZNode.decode(d)),
    }
    written = GOLDEN["written_and_consumed"]
    assert len(written) == len(encoders)
    for entry in written:
        assert entry["consumed"]
        key = re.sub(r"\d{10}$", "", entry["path"])
        assert encoders[key](entry["data"].encode()) == entry["data"].encode()
    assert ReassignPartitionsZNode.encode({("events", 1): [3, 1, 2]}) == written[0]["data"].encode()
    assert PreferredReplicaElectionZNode.encode([("events", 1)]) == written[1]["data"].encode()
    assert IsrChangeNotificationSequenceZNode.encode([("events", 0)]) == written[2]["data"].encode()
    assert LogDirEventNotificationSequenceZNode.encode(2) == written[3]["data"].encode()


def test_controller_failover_bumps_the_epoch_and_its_znode_version():
    before, after = GOLDEN["controller_failover"]
    assert ControllerZNode.decode(before["controller"].encode()).broker_id != \
        ControllerZNode.decode(after["controller"].encode()).broker_id
    assert int(after["controller_epoch"]) == int(before["controller_epoch"]) + 1
    assert after["controller_epoch_zk_version"] == before["controller_epoch_zk_version"] + 1


def test_encoding_from_arguments_matches_kafka():
    broker_id, broker = next((int(p.rsplit("/", 1)[1]), n["data"]) for p, n in ZNODES.items()
                             if re.fullmatch(r"/brokers/ids/\d+", p))
    assert BrokerIdZNode.encode(broker_id, [Endpoint("PLAINTEXT", "127.0.0.1", 9090 + broker_id)],
                                rack=f"rack-{'abc'[broker_id - 1]}", timestamp_ms=1700000000000).decode() == broker
    block = ZNODES["/latest_producer_id_block"]["data"]
    owner = json.loads(block)["broker"]
    assert ProducerIdBlockZNode.encode(ProducerIdBlock(owner, 0, 999)).decode() == block
    assert FeatureZNode.encode({}).decode() == ZNODES["/feature"]["data"]
    assert ConfigEntityZNode.encode({}).decode() == '{"version":1,"config":{}}'
    assert ResourceZNode.path("Topic", "logs-", "PREFIXED") == "/kafka-acl-extended/prefixed/Topic/logs-"
    assert ResourceZNode.encode([AclEntry("User:alice", "Allow", "*", "Read")]).decode() == \
        ZNODES["/kafka-acl/Group/g1"]["data"]
    assert LiteralAclChangeZNode.encode("TransactionalId", "t") == b"TRANSACTIONAL_ID:t"


def test_a_reassignment_in_flight_is_kafkas():
    """Kafka 3.9.1 moved a partition onto a stopped broker: replicas are target + removing until it is done."""
    wide = TopicZNode.decode("wide", ZNODES["/brokers/topics/wide"]["data"].encode())
    (partition, adding), = wide.adding_replicas.items()
    assert wide.removing_replicas[partition] and wide.partitions[partition] == adding + wide.removing_replicas[partition]
    assert ReassignPartitionsZNode.decode(ZNODES["/admin/reassign_partitions"]["data"].encode()) == \
        {("wide", partition): adding}
    assert TopicZNode.encode(wide.partitions, wide.topic_id, adding_replicas=wide.adding_replicas,
                             removing_replicas=wide.removing_replicas).decode() == ZNODES["/brokers/topics/wide"]["data"]


def test_wide_topic_partition_order_and_large_config_order_are_kafkas():
    """Kafka's hash-map order: not numeric past ten partitions; a 13-entry Properties grows its table."""
    wide = TopicZNode.decode("wide", ZNODES["/brokers/topics/wide"]["data"].encode())
    assert len(wide.partitions) == 24
    assert TopicZNode.encode(dict(sorted(wide.partitions.items())), wide.topic_id, adding_replicas=wide.adding_replicas,
                             removing_replicas=wide.removing_replicas).decode() == ZNODES["/brokers/topics/wide"]["data"]
    tuned = ConfigEntityZNode.decode(ZNODES["/config/topics/tuned"]["data"].encode())
    assert len(tuned) == 13
    assert ConfigEntityZNode.encode(dict(sorted(tuned.items()))).decode() == ZNODES["/config/topics/tuned"]["data"]


def test_partition_state_while_recovering_carries_the_recovery_state():
    data = TopicPartitionStateZNode.encode(1, 5, [1], 3, leader_recovery_state=1)
    assert TopicPartitionStateZNode.decode(data, zk_version=7) == PartitionState(1, 5, [1], 3, 1, 7)
    assert json.loads(data)["leader_recovery_state"] == 1


def test_sanitized_names_are_kafkas():
    # Kafka's SanitizerTest
    principal = "CN=Some characters !@#$%&*()_-+=';:,/~"
    assert sanitize(principal) == "CN%3DSome%20characters%20%21%40%23%24%25%26%2A%28%29_-%2B%3D%27%3B%3A%2C%2F%7E"
    assert desanitize(sanitize(principal)) == principal
    assert sanitize("client-a.1_x") == "client-a.1_x"
    assert sanitize("ü") == "%C3%BC"


@pytest.mark.parametrize("decode, data", [
    (ClusterIdZNode.decode, b"not json"),
    (ClusterIdZNode.decode, None),
    (lambda d: BrokerIdZNode.decode(1, d), b'{"version":5,"endpoints":["nonsense"],"jmx_port":-1}'),
    (lambda d: BrokerIdZNode.decode(1, d), b"[]"),
    (lambda d: TopicZNode.decode("t", d), b'{"partitions":{"x":[1]},"version":3}'),
    (lambda d: TopicZNode.decode("t", d), b'{"partitions":{"0":["a"]},"version":3}'),
    (TopicPartitionStateZNode.decode, b'{"leader":1}'),
    (ControllerEpochZNode.decode, b"one"),
    (ControllerZNode.decode, b'{"version":2}'),
    (ProducerIdBlockZNode.decode, b'{"version":1,"broker":1,"block_start":"x","block_end":"9"}'),
    (FeatureZNode.decode, b'{"version":3,"status":1,"features":{}}'),
    (FeatureZNode.decode, b'{"version":2,"status":1,"features":{"f":{"max_version_level":0}}}'),
    (ConfigEntityChangeNotificationSequenceZNode.decode, b'{"version":1,"entity_name":"t"}'),
    (LiteralAclChangeZNode.decode, b"no separator"),
    (ResourceZNode.decode, b'{"acls":[{"principal":"User:a"}],"version":1}'),
    (OfflineReplicasZNode.decode, b'{"version":1,"partitions":{"t":["0"]}}'),
    (OfflineReplicasZNode.decode, b'{"version":1}'),
])
def test_bad_data_raises_znode_decode_error(decode, data):
    with pytest.raises(ZNodeDecodeError):
        decode(data)


def test_empty_producer_id_block_znode_means_no_block_yet():
    assert ProducerIdBlockZNode.decode(b"") is None
    assert ProducerIdBlockZNode.decode(None) is None


def test_offline_replicas_znode_round_trips_by_topic():
    data = OfflineReplicasZNode.encode([("t", 2), ("a", 0), ("t", 0)])
    assert data == b'{"version":1,"partitions":{"a":[0],"t":[0,2]}}'
    assert OfflineReplicasZNode.decode(data) == (("a", 0), ("t", 0), ("t", 2))
    assert OfflineReplicasZNode.path(3) == "/pykbroker/offline_replicas/3"
