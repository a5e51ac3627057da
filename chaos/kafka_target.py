"""Apache Kafka 4.1 under the same nemesis, for comparison: a 3-node KRaft cluster (combined broker and
controller, ``compat_tests/jvm/kafka_broker.KafkaCluster``) behind the interface the nemesis uses of a
``ClusterProcesses`` (``brokers``, ``broker(id)``, ``bootstrap``, ``wait_for_brokers``, ``restart_broker``).

There is no ZooKeeper: ``restart-zookeeper`` and ``partition-zk`` do not apply. ``pause-session`` holds past
``broker.session.timeout.ms``, KRaft's counterpart of the ZooKeeper session, set to the campaign's session
timeout. With ``proxied`` every link goes through a ``chaos.network.Network`` as a ``ProxiedCluster``'s:
node n advertises its proxy's port to clients and brokers, and the KRaft voters are named by their
controller listeners' proxies, so a cut of ``broker-n`` from ``broker-m`` stops both replication and the
quorum's traffic between them; the other ``partition-*`` kinds then apply.
"""

from __future__ import annotations

import time
from pathlib import Path

from confluent_kafka.admin import AdminClient

from chaos.cluster import node_name
from chaos.network import Network
from compat_tests.jvm.kafka_broker import KafkaBroker, KafkaCluster

__all__ = ["KAFKA_KINDS", "KafkaTarget"]

KAFKA_KINDS = ("kill-leader", "kill-controller", "kill-coordinator", "pause-isr", "pause-session", "partition-leader",
               "partition-followers", "partition-one-way", "partition-halves", "partition-clients")


class _Node:
    """A Kafka node as the nemesis sees a broker process."""

    def __init__(self, node: KafkaBroker) -> None:
        self.node = node

    @property
    def proc(self):
        return self.node.proc

    @property
    def alive(self) -> bool:
        return self.node.proc is not None and self.node.proc.poll() is None

    @property
    def bootstrap(self) -> str:
        return self.node.bootstrap

    @property
    def log_path(self) -> Path:
        return self.node.log_path

    def kill(self) -> None:
        self.node.kill()

    def start(self, timeout: float = 120.0) -> None:
        self.node.start(timeout)

    def close(self) -> None:
        self.node.close()


class KafkaTarget:
    def __init__(self, jars: Path, root: Path, size: int = 3, overrides: dict[str, str] | None = None,
                 *, zookeeper_session_timeout_ms: int = 8000, proxied: bool = False) -> None:
        props = {"broker.session.timeout.ms": str(zookeeper_session_timeout_ms), **(overrides or {})}
        self.cluster = KafkaCluster(jars, root, size=size, heap="-Xmx384m", overrides=props)
        self.brokers = {n.node_id: _Node(n) for n in self.cluster.nodes}
        self.zookeeper = None
        self.network: Network | None = None
        self.proxy_ports: dict[int, int] = {}
        if proxied:
            self.network = Network()
            controller_proxies = {}
            for n in self.cluster.nodes:
                self.proxy_ports[n.node_id] = self.network.proxy(node_name(n.node_id), n.port, owners=str(root))
                controller_proxies[n.node_id] = self.network.proxy(node_name(n.node_id), n.controller_port,
                                                                   owners=str(root))
            voters = ",".join(f"{i}@127.0.0.1:{port}" for i, port in controller_proxies.items())
            for n in self.cluster.nodes:
                n.voters = voters
                n.overrides["advertised.listeners"] = f"PLAINTEXT://127.0.0.1:{self.proxy_ports[n.node_id]}"

    @property
    def bootstrap(self) -> str:
        if self.proxy_ports:
            return ",".join(f"127.0.0.1:{port}" for port in self.proxy_ports.values())
        return self.cluster.bootstrap

    def broker(self, node_id: int) -> _Node:
        return self.brokers[node_id]

    def restart_broker(self, node_id: int, timeout: float = 120.0) -> None:
        """Start a killed node; it is back once every live node's metadata lists it."""
        self.brokers[node_id].start(timeout)
        self.wait_for_brokers(len(self.brokers), timeout)

    def wait_for_brokers(self, count: int, timeout: float = 30.0) -> None:
        deadline = time.monotonic() + timeout
        seen: list[int] = []
        while time.monotonic() < deadline:
            seen = []
            for b in self.brokers.values():
                if not b.alive:
                    continue
                try:
                    admin = AdminClient({"bootstrap.servers": b.bootstrap, "log_level": 2})
                    md = admin.list_topics(timeout=5)
                    seen.append(len(md.brokers))
                except Exception:  # noqa: BLE001 - not answering yet
                    seen.append(-1)
            if seen and all(n == count for n in seen):
                return
            time.sleep(0.5)
        raise TimeoutError(f"Kafka nodes see {seen} brokers, not {count}")

    def __enter__(self) -> KafkaTarget:
        self.cluster.start()
        return self

    def __exit__(self, *exc: object) -> None:
        try:
            if self.network is not None:
                self.network.heal()
            self.cluster.close()
        finally:
            if self.network is not None:
                self.network.close()
