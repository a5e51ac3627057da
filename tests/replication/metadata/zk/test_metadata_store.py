"""ZooKeeperMetadataStore over a real ZooKeeper: Kafka's znodes for every write, and a second broker's store
(another session) kept current by watches and config change notifications."""

from __future__ import annotations

import asyncio
import base64
import hashlib
import json
import shutil
import time
import uuid
from pathlib import Path

import pytest

from pykbroker.testing import ZooKeeperProcess
from replication.metadata.credentials import ScramCredential, credential_from_salted_password
from replication.metadata.features import BOOTSTRAP_FINALIZED
from replication.metadata.image import BrokerImage, Endpoint, PartitionState
from replication.metadata.zk.client import ZooKeeperClient
from replication.metadata.zk.metadata_store import (
    ZooKeeperMetadataStore,
    java_double_string,
    quota_entity_path,
    scram_credential_string,
)
from replication.metadata.zk.znodes import FeatureZNode, TopicPartitionStateZNode, TopicZNode

pytestmark = pytest.mark.skipif(shutil.which("java") is None, reason="ZooKeeper needs java")
GOLDEN = json.loads((Path(__file__).parent / "golden" / "kafka_3_9_1_znodes.json").read_text())


@pytest.fixture(scope="module")
def zk_server(tmp_path_factory):
    with ZooKeeperProcess(tmp_path_factory.mktemp("zk")) as server:
        yield server


def run(coro):
    return asyncio.run(asyncio.wait_for(coro, 60))


async def eventually(predicate, timeout: float = 30.0) -> None:
    deadline = asyncio.get_running_loop().time() + timeout
    while not predicate():
        if asyncio.get_running_loop().time() > deadline:
            raise TimeoutError
        await asyncio.sleep(0.02)


async def two_brokers(zk_server, with_controller: bool = False):
    """Two stores on two sessions under a fresh chroot: ``a`` writes, ``b`` must see it. Without a controller
    (unless asked) the stores write partition states and carry out deletions themselves."""
    connect = f"{zk_server.connect}/t-{uuid.uuid4().hex[:12]}"
    stores = []
    for node_id in (1, 2):
        zk = ZooKeeperClient(connect, session_timeout_ms=4000)
        await zk.start()
        store = ZooKeeperMetadataStore(zk, node_id, with_controller=with_controller, controller_epoch=lambda: 1)
        await store.start()
        stores.append(store)
    return stores


async def close(*stores):
    for s in stores:
        await s.zk.close()


def test_a_new_cluster_finalizes_kafka_4_4_levels_and_an_earlier_one_is_upgraded_at_start(zk_server, caplog):
    async def scenario() -> None:
        a, b = await two_brokers(zk_server)
        try:
            assert dict(a.finalized_features) == dict(b.finalized_features) == BOOTSTRAP_FINALIZED
            # created once, by the first broker; the epoch is the zxid of that change (never 0 or below)
            created = a.features_epoch
            assert created == b.features_epoch > 0
            # As an earlier pykbroker left it: transaction.version 1 chosen by the user, metadata.version 4.1-IV1.
            await a.zk.set("/feature", FeatureZNode.encode({"metadata.version": 27, "transaction.version": 1,
                                                            "kraft.version": 1}))
            zk = ZooKeeperClient(a.zk.connect, session_timeout_ms=4000)
            await zk.start()
            c = ZooKeeperMetadataStore(zk, 3, with_controller=False)
            with caplog.at_level("INFO", logger="pykbroker.zk.metadata"):
                await c.start()
            assert dict(c.finalized_features) == {**BOOTSTRAP_FINALIZED, "kraft.version": 1}
            assert c.features_epoch > created  # two changes later: the epoch only rises
            assert "finalized features upgraded from" in caplog.text
            await eventually(lambda: dict(a.finalized_features) == dict(c.finalized_features))
            await close(c)
        finally:
            await close(a, b)

    run(scenario())


def test_feature_changes_made_at_once_through_two_brokers_both_land(zk_server):
    async def scenario() -> None:
        a, b = await two_brokers(zk_server)
        try:
            def setting(name: str, level: int):
                def change(current):
                    return {**current, name: level}
                return change

            await asyncio.gather(*(store.update_finalized_features(setting(name, level))
                                   for store, name, level in ((a, "transaction.version", 1), (b, "group.version", 0))))
            expected = {k: v for k, v in {**BOOTSTRAP_FINALIZED, "transaction.version": 1}.items()
                        if k != "group.version"}
            await eventually(lambda: dict(a.finalized_features) == dict(b.finalized_features) == expected)

            def refuse(_current):
                raise ValueError("refused")
            with pytest.raises(ValueError):
                await a.update_finalized_features(refuse)
            assert dict(a.finalized_features) == expected
        finally:
            await close(a, b)

    run(scenario())


def test_value_formats():
    assert [java_double_string(v) for v in (50.0, 0.5, 1e7, 1.5e-4)] == ["50.0", "0.5", "1.0E7", "1.5E-4"]
    assert quota_entity_path(frozenset({("user", "CN=a b"), ("client-id", None)})) == \
        ("users", "CN%3Da%20b/clients/<default>")
    assert quota_entity_path(frozenset({("ip", "10.0.0.1")})) == ("ips", "10.0.0.1")


def test_scram_credentials_are_stored_as_kafka_3_9_1_stored_them():
    """Kafka 3.9.1 stored alice's password 'alice-secret' in the golden dump: from the same salt and
    iterations we must produce the same stored and server keys."""
    alice = json.loads(next(n["data"] for n in GOLDEN["znodes"] if n["path"] == "/config/users/alice"))["config"]
    for name, digest in (("SCRAM-SHA-256", "sha256"), ("SCRAM-SHA-512", "sha512")):
        fields = dict(part.split("=", 1) for part in alice[name].split(","))
        salt, iterations = base64.b64decode(fields["salt"]), int(fields["iterations"])
        salted = hashlib.pbkdf2_hmac(digest, b"alice-secret", salt, iterations)
        assert scram_credential_string(credential_from_salted_password(name, iterations, salt, salted)) == alice[name]


def test_topics_are_kafkas_znodes_and_the_other_broker_follows(zk_server):
    async def main():
        a, b = await two_brokers(zk_server)
        try:
            topic = await a.create_topic("orders", [[1, 2], [2, 1], [1, 2]], {"cleanup.policy": "compact"})
            data, stat = await a.zk.get("/brokers/topics/orders")
            decoded = TopicZNode.decode("orders", data)
            assert data == TopicZNode.encode(decoded.partitions, decoded.topic_id)
            assert decoded.partitions == {0: [1, 2], 1: [2, 1], 2: [1, 2]} and stat.version == 0
            assert base64.urlsafe_b64encode(topic.topic_id.bytes).decode().rstrip("=") == decoded.topic_id
            assert (await a.zk.get("/config/topics/orders"))[0] == b'{"version":1,"config":{"cleanup.policy":"compact"}}'
            state_data, state_stat = await a.zk.get("/brokers/topics/orders/partitions/1/state")
            assert state_data == b'{"controller_epoch":1,"leader":2,"version":1,"leader_epoch":0,"isr":[2,1]}'
            with pytest.raises(KeyError):
                await a.create_topic("orders", [[1]], {})

            await eventually(lambda: "orders" in b.topics and len(b.topics["orders"].partitions) == 3
                             and b.topics["orders"].partitions[1].leader == 2)
            assert b.topics["orders"].topic_id == topic.topic_id and b.topics_by_id[topic.topic_id].name == "orders"
            assert b.topics["orders"].configs == {"cleanup.policy": "compact"}

            await a.add_partitions("orders", [[2, 1], [1, 2]])
            assert (await a.zk.get("/brokers/topics/orders"))[1].version == 1
            await eventually(lambda: len(b.topics["orders"].partitions) == 5 and b.topics["orders"].partitions[4].isr == (1, 2))

            # the controller moves a leader (a conditional write of the state): both views follow
            path = "/brokers/topics/orders/partitions/0/state"
            await a.zk.set(path, TopicPartitionStateZNode.encode(2, 1, [2], 1), version=state_stat.version)
            for store in (a, b):
                await eventually(lambda s=store: (s.topics["orders"].partitions[0].leader,
                                                  s.topics["orders"].partitions[0].leader_epoch,
                                                  s.topics["orders"].partitions[0].partition_epoch) == (2, 1, 1))

            await a.set_topic_configs("orders", {"retention.ms": "1000"})
            await eventually(lambda: b.topics["orders"].configs == {"retention.ms": "1000"})
            assert json.loads((await a.zk.get("/config/changes/config_change_0000000000"))[0]) == \
                {"version": 2, "entity_path": "topics/orders"}

            await a.delete_topic("orders")
            for path in ("/brokers/topics/orders", "/config/topics/orders", "/admin/delete_topics/orders"):
                assert await a.zk.exists(path) is None, path
            await eventually(lambda: "orders" not in b.topics and topic.topic_id not in b.topics_by_id)
            with pytest.raises(KeyError):
                await a.delete_topic("orders")
        finally:
            await close(a, b)

    run(main())


def test_configs_quotas_scram_and_features_reach_the_other_broker(zk_server):
    async def main():
        a, b = await two_brokers(zk_server)
        try:
            await a.set_broker_configs({"": {"log.retention.bytes": "1073741824"}, "1": {"log.cleaner.threads": "2"}})
            assert (await a.zk.get("/config/brokers/<default>"))[0] == \
                b'{"version":1,"config":{"log.retention.bytes":"1073741824"}}'
            await eventually(lambda: b.broker_configs == {"": {"log.retention.bytes": "1073741824"},
                                                          "1": {"log.cleaner.threads": "2"}})

            alice, default_pair = frozenset({("user", "alice")}), frozenset({("user", None), ("client-id", None)})
            await a.alter_client_quotas([
                (frozenset({("client-id", "client-a")}), {"producer_byte_rate": 1024.0, "consumer_byte_rate": 2048.0}),
                (alice, {"request_percentage": 50.0}),
                (frozenset({("user", "alice"), ("client-id", "client-a")}), {"producer_byte_rate": 4096.0}),
                (default_pair, {"consumer_byte_rate": 8192.0}),
                (frozenset({("ip", "127.0.0.2")}), {"connection_creation_rate": 10.0}),
            ])
            # byte for byte what Kafka 3.9.1 wrote for the same operator commands (golden dump)
            golden = {n["path"]: n["data"] for n in GOLDEN["znodes"]}
            for path in ("/config/clients/client-a", "/config/users/alice/clients/client-a",
                         "/config/users/<default>/clients/<default>", "/config/ips/127.0.0.2"):
                assert (await a.zk.get(path))[0].decode() == golden[path], path
            await eventually(lambda: b.client_quotas.get(alice) == {"request_percentage": 50.0}
                             and b.client_quotas.get(default_pair) == {"consumer_byte_rate": 8192.0}
                             and len(b.client_quotas) == 5)

            salt, salted = b"s" * 16, b"p" * 32
            await a.alter_scram_credentials([], [("alice", 1, 4096, salt, salted), ("alice", 2, 8192, salt, salted * 2)])
            config = json.loads((await a.zk.get("/config/users/alice"))[0])["config"]
            assert set(config) == {"request_percentage", "SCRAM-SHA-256", "SCRAM-SHA-512"}  # quota kept
            assert config["request_percentage"] == "50.0"
            await eventually(lambda: set(b.scram_credentials.get("alice", {})) == {1, 2})
            assert b.scram_credentials["alice"][1] == credential_from_salted_password("SCRAM-SHA-256", 4096, salt, salted)
            assert isinstance(b.scram_credentials["alice"][2], ScramCredential)
            await a.alter_scram_credentials([("alice", 1)], [])
            await eventually(lambda: set(b.scram_credentials["alice"]) == {2})

            await a.alter_client_quotas([(alice, {"request_percentage": None})])
            await eventually(lambda: alice not in b.client_quotas)

            await a.set_group_configs("g 1", {"consumer.session.timeout.ms": "50000"})
            assert (await a.zk.get("/config/groups/g%201"))[0] == \
                b'{"version":1,"config":{"consumer.session.timeout.ms":"50000"}}'
            await eventually(lambda: dict(b.image.group_configs.get("g 1", {})) == {"consumer.session.timeout.ms": "50000"})
            await a.set_group_configs("g 1", {})
            await eventually(lambda: "g 1" not in b.image.group_configs)

            await a.set_finalized_features({"group.version": 1})
            assert (await a.zk.get("/feature"))[0] == \
                b'{"features":{"group.version":{"max_version_level":1}},"version":2,"status":1}'
            await eventually(lambda: b.finalized_features == {"group.version": 1})
        finally:
            await close(a, b)

    run(main())


def test_after_a_session_expiry_the_view_is_reloaded_and_watched_again(zk_server):
    from kazoo.client import KazooClient

    async def main():
        a, b = await two_brokers(zk_server)
        try:
            await a.create_topic("before", [[1]], {})
            await eventually(lambda: "before" in b.topics)

            def expire() -> None:
                thief = KazooClient(hosts=zk_server.connect, client_id=b.zk.kazoo.client_id, timeout=10)
                thief.start(10)
                thief.stop()
                thief.close()

            old_session = b.zk.session_id
            await asyncio.to_thread(expire)
            await eventually(lambda: b.zk.session_id != old_session and b.zk.connected)
            await a.create_topic("after", [[2]], {})
            await a.set_topic_configs("before", {"retention.ms": "5"})
            await eventually(lambda: "after" in b.topics and b.topics["before"].configs == {"retention.ms": "5"})
        finally:
            await close(a, b)

    run(main())


def test_rereading_a_topic_rearms_its_watch_instead_of_stacking_them(zk_server):
    async def main():
        a, b = await two_brokers(zk_server)
        reloads: list = []
        b.subscribe(lambda old, new: "t" in new.topics and old.topics.get("t") is not new.topics["t"]
                    and reloads.append("t"))
        try:
            await a.create_topic("t", [[1]], {})
            for _ in range(5):
                await a.add_partitions("t", [[1]])
                await b._load_topic("t")  # explicit rereads, as after b's own writes
            await eventually(lambda: len(b.topics["t"].partitions) == 6)
            watchers = b.zk.kazoo._data_watchers  # kazoo's client-side watchers, by path with the chroot
            assert len(watchers[f"{b.zk.chroot}/brokers/topics/t"]) == 1
            reloads.clear()
            await a.add_partitions("t", [[1]])
            await eventually(lambda: len(b.topics["t"].partitions) == 7)
            await asyncio.sleep(0.2)
            assert reloads == ["t"]  # one change, one reread
        finally:
            await close(a, b)

    run(main())


def test_applied_change_notifications_older_than_15_minutes_are_purged(zk_server):
    async def main():
        a, b = await two_brokers(zk_server)
        try:
            await a.set_broker_configs({"1": {"log.cleaner.threads": "2"}})
            await a.set_broker_configs({"1": {"log.cleaner.threads": "3"}})
            await eventually(lambda: b.broker_configs.get("1") == {"log.cleaner.threads": "3"})
            assert len(await a.zk.get_children("/config/changes")) == 2
            b.clock = lambda: time.time() + 16 * 60  # a quarter of an hour later
            await a.set_broker_configs({"1": {"log.cleaner.threads": "4"}})
            await eventually(lambda: b.broker_configs.get("1") == {"log.cleaner.threads": "4"})
            deadline = asyncio.get_running_loop().time() + 10
            while len(await a.zk.get_children("/config/changes")) > 0:
                assert asyncio.get_running_loop().time() < deadline
                await asyncio.sleep(0.05)
        finally:
            await close(a, b)

    run(main())


def test_brokers_controller_partition_changes_and_features_in_the_image(zk_server):
    from replication.metadata.zk.controller_election import ControllerElection

    async def main():
        a, b = await two_brokers(zk_server)
        images: list = []
        b.subscribe(lambda old, new: images.append(new))
        try:
            assert a.image.cluster_id == b.image.cluster_id and len(a.image.cluster_id) == 22
            endpoints = (Endpoint("PLAINTEXT", "127.0.0.1", 9092), Endpoint("SSL", "127.0.0.1", 9093, "SSL"))
            await a.register_broker(BrokerImage(1, endpoints, "rack-a"))
            assert a.image.brokers[1] == BrokerImage(1, endpoints, "rack-a")
            await eventually(lambda: b.image.brokers.get(1) == BrokerImage(1, endpoints, "rack-a"))

            election = ControllerElection(a.zk, 1)
            await election.start()
            await eventually(lambda: b.image.controller_id == 1 and a.image.controller_id == 1)

            await a.create_topic("t", [[1, 2]], {})
            state = a.image.partition("t", 0)
            assert (state.leader, state.isr, state.partition_epoch) == (1, (1, 2), 0)
            shrunk = await a.alter_partition("t", 0, PartitionState(0, 1, 0, (1, 2), (1,), 1))
            assert shrunk is not None and shrunk.partition_epoch == 1 and a.image.partition("t", 0).isr == (1,)
            assert await a.alter_partition("t", 0, PartitionState(0, 1, 0, (1, 2), (1, 2), 1)) is None  # stale epoch
            await eventually(lambda: b.image.partition("t", 0) == PartitionState(0, 1, 0, (1, 2), (1,), 1))

            before = a.features_epoch
            await a.set_finalized_features({"group.version": 1})
            first = a.features_epoch
            await a.set_finalized_features({"group.version": 1, "transaction.version": 2})
            # the zxid of /feature's last change: it only rises, as a KRaft cluster's metadata offset
            assert before < first < a.features_epoch
            await eventually(lambda: b.finalized_features == {"group.version": 1, "transaction.version": 2}
                             and b.features_epoch == a.features_epoch)
            assert [i.offset for i in images] == sorted(i.offset for i in images)  # images never go back

            await election.close()
            await eventually(lambda: b.image.voters.get(1) == BrokerImage(1, endpoints, "rack-a"))
            await a.zk.close()  # broker 1's session ends: its registration goes
            await eventually(lambda: 1 not in b.image.brokers and b.image.controller_id == -1)
            # ... but it stays a voter, with its last address, as in a KRaft quorum's static voter set
            assert b.image.voters.get(1) == BrokerImage(1, endpoints, "rack-a")
        finally:
            await close(a, b)

    run(main())


def test_with_the_controller_creation_and_deletion_go_through_it_as_in_kafka(zk_server):
    from replication.controller.zk_controller import ZkController
    from replication.metadata.zk.controller_election import ControllerElection
    from replication.metadata.zk.controller_store import ZkControllerStore

    async def main():
        a, b = await two_brokers(zk_server, with_controller=True)
        election = ControllerElection(a.zk, 1)
        controller = ZkController(ZkControllerStore(a.zk, election), 1)
        try:
            for store in (a, b):
                await store.register_broker(BrokerImage(store.node_id, (Endpoint("PLAINTEXT", "127.0.0.1", 9090),)))
            await election.start()
            topic = await b.create_topic("t", [[2, 1], [1, 2]], {"retention.ms": "1000"})
            assert [(p.leader, p.isr) for p in topic.partitions] == [(2, (2, 1)), (1, (1, 2))]
            state = json.loads((await b.zk.get("/brokers/topics/t/partitions/0/state"))[0])
            assert state["controller_epoch"] == election.epoch  # written by the controller, not by the store
            topic = await b.add_partitions("t", [[1, 2]])
            assert (topic.partitions[2].leader, topic.partitions[2].isr) == (1, (1, 2))

            b.admin_timeout_s = 1.0
            offline = await b.create_topic("offline", [[3]], {})  # broker 3 is not registered
            assert offline.partitions[0].leader == -1  # Kafka's CreateTopics times out the same way

            deleted = await b.delete_topic("t")
            assert deleted.name == "t" and "t" not in b.topics
            await eventually(lambda: "t" not in a.topics)
            for path in ("/brokers/topics/t", "/config/topics/t", "/admin/delete_topics/t"):
                assert await b.zk.exists(path) is None, path
        finally:
            await controller.close()
            await election.close()
            await close(a, b)

    run(main())



def test_a_deletion_answers_when_the_name_is_created_again_before_this_broker_sees_it_gone(zk_server):
    """A producer's Metadata (auto.create.topics.enable) may create a deleted topic's name again before the broker
    that asked for the deletion rereads it: its image then goes from the old topic to the new one, never without
    the name. The deletion is done all the same (Kafka 4.4 answers at once); waiting for the name to go held the
    answer, and the admin's next request on that connection, for admin_timeout_s."""
    from replication.controller.zk_controller import ZkController
    from replication.metadata.zk.controller_election import ControllerElection
    from replication.metadata.zk.controller_store import ZkControllerStore

    async def main():
        a, b = await two_brokers(zk_server, with_controller=True)
        election = ControllerElection(a.zk, 1)
        controller = ZkController(ZkControllerStore(a.zk, election), 1)
        recreated = asyncio.Event()
        reread = b._in_task

        def held(coro_fn, *args):  # b's watches reread only once the name exists again
            async def later(*args):
                await recreated.wait()
                await coro_fn(*args)
            reread(later, *args)

        async def create_again():
            while await a.zk.exists("/brokers/topics/t") is not None:
                await asyncio.sleep(0.01)
            topic = await a.create_topic("t", [[2, 1]], {})
            recreated.set()
            return topic

        try:
            for store in (a, b):
                await store.register_broker(BrokerImage(store.node_id, (Endpoint("PLAINTEXT", "127.0.0.1", 9090),)))
            await election.start()
            old = await b.create_topic("t", [[1, 2], [2, 1]], {})
            b.admin_timeout_s = 10.0
            b._in_task = held
            again = asyncio.ensure_future(create_again())
            started = time.monotonic()
            deleted = await b.delete_topic("t")
            assert time.monotonic() - started < 5, "the answer waited for the name to go"
            new = await again
            assert deleted.topic_id == old.topic_id != new.topic_id
            await eventually(lambda: b.topics.get("t") is not None and b.topics["t"].topic_id == new.topic_id)
        finally:
            await controller.close()
            await election.close()
            await close(a, b)

    run(main())

def test_offline_replicas_one_broker_announces_reach_the_other_and_go_with_its_session(zk_server):
    async def scenario() -> None:
        a, b = await two_brokers(zk_server)
        try:
            await a.set_offline_replicas(1, [("t", 0), ("t", 2)])
            await eventually(lambda: dict(b.image.offline_replicas) == {("t", 0): (1,), ("t", 2): (1,)})
            await b.set_offline_replicas(2, [("t", 2)])  # a second dir, or another broker: both named
            await a.set_offline_replicas(1, [("t", 2)])
            await eventually(lambda: dict(b.image.offline_replicas) == {("t", 2): (1, 2)})
            await a.zk.close()  # a's session ends: its replicas are no longer announced
            await eventually(lambda: dict(b.image.offline_replicas) == {("t", 2): (2,)})
        finally:
            await close(b)

    run(scenario())


@pytest.mark.parametrize("states_per_multi", [500, 3])
def test_a_deleted_topic_leaves_every_image_at_once_never_leaderless(zk_server, monkeypatch, states_per_multi):
    """Kafka 4.4 (KRaft) removes a topic in one record: a broker's image has it with its leaders, then not at
    all. The controller deletes the state znodes before the topic znode (children first; in several writes when
    the topic has more partitions than one write takes, 3 here), so an image built from each znode's watch
    showed the partitions leader-less in between, and handlers answered NOT_LEADER_OR_FOLLOWER where Kafka
    answers UNKNOWN_TOPIC_OR_PARTITION (librdkafka's test 0181)."""
    from replication.metadata.zk import controller_store

    monkeypatch.setattr(controller_store, "STATES_PER_MULTI", states_per_multi)
    from replication.controller.zk_controller import ZkController
    from replication.metadata.zk.controller_election import ControllerElection
    from replication.metadata.zk.controller_store import ZkControllerStore

    async def main():
        a, b = await two_brokers(zk_server, with_controller=True)
        election = ControllerElection(a.zk, 1)
        controller = ZkController(ZkControllerStore(a.zk, election), 1)
        seen: dict[int, list[object]] = {1: [], 2: []}

        def recorder(node_id):
            def record(_old, new):
                t = new.topics.get("t")
                seen[node_id].append(None if t is None else tuple(p.leader for p in t.partitions))
            return record

        try:
            for store in (a, b):
                await store.register_broker(BrokerImage(store.node_id, (Endpoint("PLAINTEXT", "127.0.0.1", 9090),)))
            await election.start()
            await b.create_topic("t", [[1, 2], [2, 1]] * 4, {})
            await eventually(lambda: all("t" in s.topics and all(p.leader >= 0 for p in s.topics["t"].partitions)
                                         for s in (a, b)))
            for store in (a, b):
                store.subscribe(recorder(store.node_id))
            await b.delete_topic("t")
            await eventually(lambda: "t" not in a.topics and "t" not in b.topics)
            await asyncio.sleep(0.3)  # any late reread would publish now
            for node_id, images in seen.items():
                shown = [leaders for leaders in images if leaders is not None]
                assert all(-1 not in leaders for leaders in shown), (node_id, images)
                assert images[-1] is None, (node_id, images)
        finally:
            await controller.close()
            await election.close()
            await close(a, b)

    run(main())


def test_topics_created_or_deleted_together_reach_every_image_together_with_their_leaders(zk_server):
    """Kafka 4.4 commits a CreateTopics' topics with their partitions' leaders in one batch of records, and a
    DeleteTopics' removals in one: a broker lists all of them, with leaders, or none (seen on a 3-node Kafka 4.4
    cluster: compat_tests/test_cluster_topic_deletion.py). A request's topics asked for in one pass of the loop
    go in one multi, the controller writes their states (and deletes them) in one, and a broker's image takes
    them together; before, Metadata listed 3 or 7 of 10 topics meanwhile, some without leaders."""
    from replication.controller.zk_controller import ZkController
    from replication.metadata.zk.controller_election import ControllerElection
    from replication.metadata.zk.controller_store import ZkControllerStore

    names = [f"t{i}" for i in range(6)]

    async def main():
        a, b = await two_brokers(zk_server, with_controller=True)
        election = ControllerElection(a.zk, 1)
        controller = ZkController(ZkControllerStore(a.zk, election), 1)
        seen: dict[int, set[int]] = {1: set(), 2: set()}

        def recorder(node_id):
            def record(_old, new):
                mine = [new.topics[n] for n in names if n in new.topics]
                seen[node_id].add(len(mine))
                if any(p.leader < 0 for t in mine for p in t.partitions):
                    seen[node_id].add(-1)  # listed without a leader
            return record

        try:
            for store in (a, b):
                await store.register_broker(BrokerImage(store.node_id, (Endpoint("PLAINTEXT", "127.0.0.1", 9090),)))
                store.subscribe(recorder(store.node_id))
            await election.start()
            await eventually(lambda: controller.active)
            await controller.idle()  # its start-up done (topics it finds then are decided one partition at a time)
            await asyncio.gather(*(b.create_topic(n, [[1, 2], [2, 1]], {}) for n in names))
            await eventually(lambda: all(n in s.topics for s in (a, b) for n in names))
            await asyncio.gather(*(b.delete_topic(n) for n in names))
            await eventually(lambda: not any(n in s.topics for s in (a, b) for n in names))
            await asyncio.sleep(0.3)  # any late reread would publish now
            assert seen == {1: {0, len(names)}, 2: {0, len(names)}}, seen
            # one of them without a live replica (broker 3 never registered) gets no leader: the others still come
            b.admin_timeout_s = 1.0
            await asyncio.gather(*(b.create_topic(n, [[3]] if n == "t0" else [[1, 2]], {}) for n in names))
            await eventually(lambda: all(n in s.topics for s in (a, b) for n in names[1:]))
            assert "t0" not in a.topics and "t0" not in b.topics
        finally:
            await controller.close()
            await election.close()
            await close(a, b)

    run(main())


def test_topics_created_together_beyond_one_multis_size_go_in_several(zk_server, monkeypatch):
    """ZooKeeper refuses a request over 1 MB: a CreateTopics of many large topics is split into multis of up to
    CREATE_MULTI_BYTES (1100 bytes here: two topics); one that exists is refused alone, the others are created."""
    from replication.metadata.zk import metadata_store

    monkeypatch.setattr(metadata_store, "CREATE_MULTI_BYTES", 1100)

    async def main():
        a, b = await two_brokers(zk_server)
        try:
            await a.create_topic("x3", [[1]], {})
            multi = a.zk.multi
            writes: list[int] = []

            async def counting(ops):
                writes.append(len(ops))
                return await multi(ops)
            a.zk.multi = counting  # type: ignore[method-assign]
            names = [f"x{i}" for i in range(6)]
            created = await asyncio.gather(*(a.create_topic(n, [[1], [2]], {"retention.ms": "1"}) for n in names),
                                           return_exceptions=True)
            assert [type(c).__name__ for c in created] == ["TopicState"] * 3 + ["KeyError"] + ["TopicState"] * 2
            assert writes == [14, 13, 7, 6, 14], writes  # x0 x1, x2 x3 refused: x2, x3, then x4 x5
            await eventually(lambda: all(n in b.topics for n in names))
        finally:
            await close(a, b)

    run(main())


def test_a_topic_read_half_deleted_is_gone_and_one_not_yet_decided_comes_with_its_leaders(zk_server):
    """A store (re)loading while a deletion is half done (some state znodes gone, the request pending: a
    controller between two writes, or one that died) leaves the topic out rather than showing it leader-less;
    a topic whose states the controller has not written yet is left out too (Kafka 4.4 commits a topic and its
    partitions' leaders in one batch), and comes once they are written."""
    async def main():
        a, b = await two_brokers(zk_server)
        try:
            await a.create_topic("half", [[1], [2], [1]], {})
            await a.zk.create("/admin/delete_topics/half", make_parents=True)
            await a.zk.delete(TopicPartitionStateZNode.path("half", 1))
            await a.zk.create(TopicZNode.path("new"), TopicZNode.encode({0: [1]}, "AAAAAAAAAAAAAAAAAAAAAg"))
            c = ZooKeeperMetadataStore(a.zk, 3, with_controller=True)  # a broker starting now
            await c.start()
            assert "half" not in c.topics
            assert "new" not in c.topics
            await a.zk.create(TopicPartitionStateZNode.path("new", 0), TopicPartitionStateZNode.encode(1, 0, [1], 1),
                              make_parents=True)
            assert await c.wait_for(lambda image: "new" in image.topics, 10)
            assert [p.leader for p in c.topics["new"].partitions] == [1]
        finally:
            await close(a, b)

    run(main())
