"""A ``ClusterProcesses`` whose every link goes through a ``Network`` of fault-injecting proxies.

Broker ``n`` (node name ``broker-n``) listens on its own port but advertises its proxy's, so clients and the
other brokers reach it only through the proxy; it reaches ZooKeeper (node ``zookeeper``) through a proxy of
its own. ``bootstrap`` is the proxied address list; ``direct_bootstrap`` bypasses the network (the nemesis'
own health checks, which must not be partitioned).
"""

from __future__ import annotations

from pathlib import Path

from chaos.network import Network
from pykbroker.testing import BrokerProcess, ClusterProcesses, free_port

__all__ = ["ZOOKEEPER", "ProxiedCluster", "node_name"]

ZOOKEEPER = "zookeeper"


def node_name(node_id: int) -> str:
    return f"broker-{node_id}"


class ProxiedCluster(ClusterProcesses):
    def __init__(self, root: str | Path | None = None, size: int = 3, overrides: dict[str, str] | None = None,
                 *, zookeeper_session_timeout_ms: int = 6000) -> None:
        super().__init__(root, size, overrides, zookeeper_session_timeout_ms=zookeeper_session_timeout_ms)
        self.network = Network()
        self.proxy_ports: dict[int, int] = {}

    @property
    def bootstrap(self) -> str:
        return ",".join(f"127.0.0.1:{self.proxy_ports[i]}" for i in self.brokers)

    @property
    def direct_bootstrap(self) -> str:
        return ",".join(b.bootstrap for b in self.brokers.values())

    def broker_pids(self) -> dict[int, str]:
        """pid -> node name of every running broker (how a broker's proxy tells brokers from clients)."""
        return {b.proc.pid: node_name(i) for i, b in self.brokers.items() if b.proc is not None}

    def add_broker(self, node_id: int, overrides: dict[str, str] | None = None) -> BrokerProcess:
        port = free_port()
        name = node_name(node_id)
        proxy = self.network.proxy(name, port, sources=self.broker_pids)
        zk_proxy = self.network.proxy(ZOOKEEPER, self.zookeeper.port, source=name)
        self.proxy_ports[node_id] = proxy
        broker = BrokerProcess(self.root / f"broker-{node_id}", {
            "node.id": str(node_id), "zookeeper.connect": f"127.0.0.1:{zk_proxy}",
            "zookeeper.session.timeout.ms": str(self.zookeeper_session_timeout_ms),
            "advertised.listeners": f"PLAINTEXT://127.0.0.1:{proxy}",
            **self.overrides, **(overrides or {})}, port=port, log_path=self.root / f"broker-{node_id}.log")
        self.brokers[node_id] = broker
        broker.start()
        return broker

    def close(self) -> None:
        try:
            self.network.heal()
            super().close()
        finally:
            self.network.close()
