"""``pykbroker cluster``: ZooKeeper and N brokers on this machine (``make cluster``), until Ctrl-C stops them all.

    pykbroker cluster [--brokers 3] [--data ./data/cluster] [--first-port 9092] [--zookeeper-port 2181]

Broker N listens on 127.0.0.1:(first port + N - 1) with its data in ``<data>/broker-N`` and its log in
``<data>/broker-N.log``; ZooKeeper's data and log are in ``<data>/zookeeper``; the brokers share the chroot
``/pykbroker``. Restarting reuses the data. Java is needed for ZooKeeper (its jars come from Maven Central
through ``tools/zookeeper/fetch_jars.sh`` on first use).
"""

from __future__ import annotations

import argparse
import signal
import sys
import threading
from pathlib import Path


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="pykbroker cluster", description=__doc__.split("\n\n")[0])
    ap.add_argument("--brokers", type=int, default=3)
    ap.add_argument("--data", default="./data/cluster")
    ap.add_argument("--first-port", type=int, default=9092)
    ap.add_argument("--zookeeper-port", type=int, default=2181)
    ap.add_argument("--session-timeout-ms", type=int, default=18000, help="zookeeper.session.timeout.ms")
    args = ap.parse_args(argv)

    from pykbroker.testing import BrokerCluster

    cluster = BrokerCluster(args.brokers, Path(args.data), ports=[args.first_port + i for i in range(args.brokers)],
                            zookeeper_port=args.zookeeper_port, session_timeout_ms=args.session_timeout_ms)
    stop = threading.Event()
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda *_: stop.set())
    try:
        cluster.start()
    except (RuntimeError, OSError) as exc:
        print(f"pykbroker cluster: cannot start: {exc}", file=sys.stderr)
        return 1
    print(f"zookeeper listening on {cluster.zookeeper.connect} (data {cluster.zookeeper.data_dir})", flush=True)
    for node_id, broker in enumerate(cluster.brokers, 1):
        print(f"broker {node_id} listening on {broker.bootstrap} (data {broker.data_dir}, log {broker.log_path})",
              flush=True)
    print(f"bootstrap.servers={cluster.bootstrap}; Ctrl-C stops the cluster", flush=True)
    try:
        while not stop.wait(1.0):
            for node_id, broker in enumerate(cluster.brokers, 1):
                if broker.proc is not None and not broker.alive:
                    print(f"broker {node_id} exited with {broker.proc.returncode}; see {broker.log_path}", flush=True)
                    broker.proc = None
    finally:
        print("stopping the cluster", flush=True)
        cluster.stop()
    return 0
