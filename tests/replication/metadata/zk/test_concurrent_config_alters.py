"""Two IncrementalAlterConfigs of different keys of one resource sent at the same moment through two brokers of a
ZooKeeper cluster: both are kept, as Kafka 4.4's controller (which applies each to what it has committed) keeps
them. The config znode is written conditionally on the version read and, on a conflict, the alteration is applied
again to what the other broker wrote (ZooKeeperMetadataStore._write_entity); without that one key was lost.
"""

from __future__ import annotations

import threading
import time

from pykbroker.testing import ClusterProcesses, RawClient
from wire import ErrorCode
from wire.messages import CreateTopicsRequest, DescribeConfigsRequest, IncrementalAlterConfigsRequest
from wire.messages.create_topics_request import CreatableTopic
from wire.messages.describe_configs_request import DescribeConfigsResource
from wire.messages.incremental_alter_configs_request import AlterableConfig, AlterConfigsResource

TOPIC, BROKER = 2, 4
ROUNDS = 10
# (resource type, resource name, a key per broker)
RESOURCES = [(TOPIC, "cas", ("retention.ms", "segment.ms")),
             (BROKER, "", ("log.retention.ms", "log.flush.interval.messages"))]


def _alter(client: RawClient, resource_type: int, name: str, key: str, value: str,
           barrier: threading.Barrier, codes: list[int]) -> None:
    request = IncrementalAlterConfigsRequest(resources=[AlterConfigsResource(
        resource_type=resource_type, resource_name=name, configs=[AlterableConfig(
            name=key, config_operation=0, value=value)])])
    barrier.wait()
    codes.append(client.request(request, 1).responses[0].error_code)


def _described(client: RawClient, resource_type: int, name: str, keys: tuple[str, ...]) -> dict[str, str]:
    r = client.request(DescribeConfigsRequest(resources=[DescribeConfigsResource(
        resource_type=resource_type, resource_name=name, configuration_keys=list(keys))]), 4)
    return {c.name: c.value for c in r.results[0].configs if c.config_source in (1, 3)}  # TOPIC_CONFIG, DYNAMIC_DEFAULT_BROKER_CONFIG


def test_concurrent_alters_of_different_keys_through_two_brokers_are_both_kept(tmp_path):
    with ClusterProcesses(tmp_path, size=2) as cluster, \
            RawClient(cluster.broker(1).bootstrap) as one, RawClient(cluster.broker(2).bootstrap) as two:
        r = one.request(CreateTopicsRequest(timeout_ms=10_000, topics=[CreatableTopic(
            name="cas", num_partitions=1, replication_factor=1)]), 7)
        assert r.topics[0].error_code == ErrorCode.NONE, r
        one.wait_for_topics("cas")
        two.wait_for_topics("cas")
        lost = []
        for i in range(ROUNDS):
            for resource_type, name, keys in RESOURCES:
                values = {keys[0]: str(3_600_000 + i), keys[1]: str(7_200_000 + i)}
                barrier, codes = threading.Barrier(2), []
                threads = [threading.Thread(target=_alter, args=(client, resource_type, name, key, values[key],
                                                                 barrier, codes))
                           for client, key in ((one, keys[0]), (two, keys[1]))]
                for t in threads:
                    t.start()
                for t in threads:
                    t.join()
                assert codes == [ErrorCode.NONE] * 2, codes
                # the image follows ZooKeeper's watch a moment later: wait for both values (a lost one never comes)
                deadline = time.monotonic() + 2
                while (got := _described(one, resource_type, name, keys)) != values and time.monotonic() < deadline:
                    time.sleep(0.01)
                if got != values:
                    lost.append((i, resource_type, got, values))
        assert lost == []
