"""A ``ClusterProcesses`` whose every link goes through a ``Network`` of fault-injecting proxies.

Broker ``n`` (node name ``broker-n``) listens on its own port but advertises its proxy's, so clients and the
other brokers reach it only through the proxy; it reaches ZooKeeper (node ``zookeeper``) through a proxy of
its own. With ``disk_mb`` each broker's log dir is a tmpfs of its own, for the ``disk-full`` fault; with
``clock_shift`` each broker's wall clock can be jumped (``clocks``, a ``chaos.clock.ClockShifts``); with
``flaky_dirs`` each broker's log dir is a ``chaos.flaky_fs`` FUSE mount that can turn read-only (``flaky``).
``bootstrap`` is the proxied address list; ``direct_bootstrap`` bypasses the network (the nemesis'
own health checks, which must not be partitioned).
"""

from __future__ import annotations

import subprocess
from pathlib import Path

from chaos.clock import ClockShifts
from chaos.flaky_fs import FlakyMount
from chaos.network import Network
from pykbroker.testing import BrokerProcess, ClusterProcesses, free_port

__all__ = ["ZOOKEEPER", "ProxiedCluster", "node_name"]

ZOOKEEPER = "zookeeper"


def node_name(node_id: int) -> str:
    return f"broker-{node_id}"


class ProxiedCluster(ClusterProcesses):
    def __init__(self, root: str | Path | None = None, size: int = 3, overrides: dict[str, str] | None = None,
                 *, zookeeper_session_timeout_ms: int = 6000, disk_mb: int = 0, clock_shift: bool = False,
                 flaky_dirs: bool = False) -> None:
        """``disk_mb``: each broker's log dir is a tmpfs of that size mounted by the cluster (root only), so
        the nemesis can fill it (``disks``: node id -> mount point)."""
        super().__init__(root, size, overrides, zookeeper_session_timeout_ms=zookeeper_session_timeout_ms)
        self.network = Network()
        self.proxy_ports: dict[int, int] = {}
        self.disk_mb = disk_mb
        self.disks: dict[int, Path] = {}
        self.clocks = ClockShifts(self.root / "clocks") if clock_shift else None
        self.flaky_dirs = flaky_dirs
        self.flaky: dict[int, FlakyMount] = {}

    @property
    def bootstrap(self) -> str:
        return ",".join(f"127.0.0.1:{self.proxy_ports[i]}" for i in self.brokers)

    @property
    def direct_bootstrap(self) -> str:
        return ",".join(b.bootstrap for b in self.brokers.values())

    def add_broker(self, node_id: int, overrides: dict[str, str] | None = None, port: int | None = None) -> BrokerProcess:
        port = port or free_port()
        name = node_name(node_id)
        proxy = self.network.proxy(name, port, owners=str(self.root))
        zk_proxy = self.network.proxy(ZOOKEEPER, self.zookeeper.port, source=name)
        self.proxy_ports[node_id] = proxy
        broker = BrokerProcess(self.root / f"broker-{node_id}", {
            "node.id": str(node_id), "zookeeper.connect": f"127.0.0.1:{zk_proxy}",
            "zookeeper.session.timeout.ms": str(self.zookeeper_session_timeout_ms),
            "advertised.listeners": f"PLAINTEXT://127.0.0.1:{proxy}",
            **self.overrides, **(overrides or {})}, port=port, log_path=self.root / f"broker-{node_id}.log")
        self.brokers[node_id] = broker
        disk = self.root / f"broker-{node_id}-disk" if self.flaky_dirs else broker.data_dir / "logs"
        if self.disk_mb and node_id not in self.disks:  # under the FUSE mount, when there is one
            self.disks[node_id] = mount_tmpfs(disk, self.disk_mb)
        if self.flaky_dirs and node_id not in self.flaky:
            self.flaky[node_id] = FlakyMount(disk, broker.data_dir / "logs",
                                             self.root / f"broker-{node_id}-fs.log").start()
        if self.clocks is not None:
            self.clocks.attach(node_id, broker)
        broker.start()
        return broker

    def close(self) -> None:
        try:
            self.network.heal()
            super().close()
        finally:
            self.network.close()
            for flaky in self.flaky.values():
                flaky.close()
            self.flaky.clear()
            for mount in self.disks.values():
                subprocess.run(["umount", "-l", str(mount)], capture_output=True)
            self.disks.clear()


def mount_tmpfs(path: Path, size_mb: int) -> Path:
    """Mount a tmpfs of ``size_mb`` MiB at ``path`` (created); raises with the reason when it cannot."""
    path.mkdir(parents=True, exist_ok=True)
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size_mb}m", "tmpfs", str(path)],
                          capture_output=True, text=True)
    if done.returncode != 0:
        raise RuntimeError(f"cannot mount a tmpfs at {path} for disk faults (needs root): {done.stderr.strip()}")
    return path
