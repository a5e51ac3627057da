"""franz-go (twmb/franz-go, pinned in compat_tests/franz/go.mod) against a pykbroker single node: it produces,
consumes in a group with the classic protocol and with KIP-848's (``kgo.ServerSideBalancer``, which franz-go takes
up only when the broker advertises ConsumerGroupHeartbeat v1), commits, and every record comes back once; the
group is of the protocol asked for. franz-go pushes client metrics (KIP-714) by default: with a subscription they
reach the Prometheus scrape. (On a 3-broker cluster: compat_tests/test_cluster.py.)
"""

from __future__ import annotations

import uuid

import pytest

from compat_tests.franz import franz_binary, run_franz
from compat_tests.test_client_telemetry import pushed, wait_for
from pykbroker.testing import BrokerProcess, RawClient, free_port
from wire.messages import CreateTopicsRequest, ListGroupsRequest
from wire.messages.create_topics_request import CreatableTopic

RECORDS = 1000
PARTITIONS = 3


@pytest.fixture(scope="module")
def franz_broker(tmp_path_factory):
    franz_binary()  # skips without Go, before a broker is started
    port = free_port()
    with BrokerProcess(tmp_path_factory.mktemp("franz"), overrides={
            "group.initial.rebalance.delay.ms": "0", "group.consumer.heartbeat.interval.ms": "500",
            "metrics.port": str(port), "metrics.client.telemetry.enable": "true"}) as broker:
        broker.start()
        yield broker, port
        assert broker.alive, broker.log()


def create_topic(bootstrap: str, name: str, replication: int = 1) -> None:
    with RawClient(bootstrap) as c:
        r = c.request(CreateTopicsRequest(topics=[CreatableTopic(name=name, num_partitions=PARTITIONS,
                                                                 replication_factor=replication)],
                                          timeout_ms=30_000), 7)
        assert r.topics[0].error_code == 0, r.topics[0].error_message
        c.wait_for_topics(name, timeout=30)


def group_types(bootstrap: str) -> dict[str, str]:
    with RawClient(bootstrap) as c:
        return {g.group_id: g.group_type for g in c.request(ListGroupsRequest(), 5).groups}


def check_run(bootstrap: str, protocol: str) -> None:
    topic = f"franz-{protocol}-{uuid.uuid4().hex[:6]}"
    create_topic(bootstrap, topic)
    report = run_franz(bootstrap, topic, topic, protocol, RECORDS)
    assert (report["produced"], report["consumed"], report["distinct"]) == (RECORDS, RECORDS, RECORDS), report
    assert sorted(report["committed"]) == list(range(PARTITIONS)) and sum(report["committed"].values()) == RECORDS
    assert group_types(bootstrap)[topic] == protocol


@pytest.mark.parametrize("protocol", ["classic", "consumer"])
def test_franz_go_produces_consumes_and_commits(franz_broker, protocol):
    check_run(franz_broker[0].bootstrap, protocol)


def test_franz_go_pushes_client_metrics(franz_broker):
    broker, port = franz_broker
    with RawClient(broker.bootstrap) as c:
        # franz-go takes Kafka's "*" (all metrics) as a literal prefix, so its metrics' common prefix is asked for
        c.set_client_metrics("franz", metrics="org.apache.kafka.", interval_ms="100", match="client_software_name=kgo")
    topic = f"franz-telemetry-{uuid.uuid4().hex[:6]}"
    create_topic(broker.bootstrap, topic)
    run_franz(broker.bootstrap, topic, topic, "classic", 100)
    got = wait_for(lambda: pushed(port, "org_apache_kafka_", "franz-producer"),
                   "franz-go's pushed metrics on the scrape", timeout=30)
    assert all(labels["client_software_name"] == "kgo" for samples in got.values() for labels, _ in samples), got
