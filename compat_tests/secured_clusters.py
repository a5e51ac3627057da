"""3-node clusters with more listeners than PLAINTEXT (SASL, TLS), for the security scenarios' cluster mode: a Kafka
KRaft cluster and a pykbroker cluster (ZooKeeper) configured alike, each node with its own ports per listener."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

from pykbroker.testing import ClusterProcesses, free_port

#: (listener name, security protocol) of each listener besides PLAINTEXT.
Listeners = list[tuple[str, str]]


def _listeners(host_ports: dict[str, int]) -> str:
    return ",".join(f"{name}://127.0.0.1:{port}" for name, port in host_ports.items())


def _protocols(listeners: Listeners) -> str:
    return ",".join(f"{name}:{protocol}" for name, protocol in [("PLAINTEXT", "PLAINTEXT"), *listeners])


def kafka_cluster(jars: Path, root: Path, listeners: Listeners, overrides: dict[str, str],
                  loggers: dict[str, str] | None = None) -> Iterator[tuple[object, list[dict[str, int]]]]:
    """A started 3-node Kafka KRaft cluster whose nodes have ``listeners`` too, and each node's port by listener
    name (PLAINTEXT included); killed after."""
    from compat_tests.jvm.kafka_broker import KafkaCluster
    cluster = KafkaCluster(jars, root)
    ports = []
    for node in cluster.nodes:
        own = {"PLAINTEXT": node.port, **{name: free_port() for name, _ in listeners}}
        ports.append(own)
        node.loggers.update(loggers or {})
        node.overrides.update({
            **overrides,
            "listeners": f"{_listeners(own)},CONTROLLER://127.0.0.1:{node.controller_port}",
            "advertised.listeners": _listeners(own),
            "listener.security.protocol.map": f"{_protocols(listeners)},CONTROLLER:PLAINTEXT"})
    try:
        cluster.start()
        yield cluster, ports
    finally:
        for node in cluster.nodes:
            node.kill()
        cluster.close()


def pykbroker_cluster(root: Path, listeners: Listeners,
                      overrides: dict[str, str]) -> Iterator[tuple[ClusterProcesses, list[dict[str, int]]]]:
    """A started 3-broker pykbroker cluster (one ZooKeeper) whose brokers have ``listeners`` too, and each broker's
    port by listener name; stopped after."""
    cluster = ClusterProcesses(root, size=3, overrides=overrides)
    ports = []
    try:
        cluster.zookeeper.start()
        for node_id in (1, 2, 3):
            own = {"PLAINTEXT": free_port(), **{name: free_port() for name, _ in listeners}}
            ports.append(own)
            cluster.add_broker(node_id, {"listeners": _listeners(own),
                                         "listener.security.protocol.map": _protocols(listeners)},
                               port=own["PLAINTEXT"])
        cluster.wait_for_brokers(3)
        yield cluster, ports
    finally:
        cluster.close()
