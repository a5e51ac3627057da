"""``pykbroker local-cluster``: ZooKeeper and N brokers on this machine, for trying a cluster (``make cluster``).

Broker ``i`` (1..N) listens on ``base-port + i - 1`` (9092, 9093, 9094 by default) with its data under
``<data>/broker-<i>``; ZooKeeper listens on a free port with its data under ``<data>/zookeeper``. Each
process logs to a file beside its data, and one line per process says where it listens. Ctrl-C (or
SIGTERM) stops the brokers, then ZooKeeper; a rerun with the same data dir brings the same cluster back.
"""

from __future__ import annotations

import argparse
import signal
import sys
import threading
from pathlib import Path

from pykbroker.testing import BrokerProcess, ZooKeeperProcess

__all__ = ["main"]


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(prog="pykbroker local-cluster", description=__doc__.splitlines()[0])
    ap.add_argument("--brokers", type=int, default=3, help="how many brokers (default 3)")
    ap.add_argument("--base-port", type=int, default=9092, help="port of broker 1 (default 9092)")
    ap.add_argument("--data", default="data/cluster", help="data directory (default data/cluster)")
    ap.add_argument("--override", action="append", default=[], metavar="KEY=VALUE",
                    help="a broker property for every broker (repeatable)")
    args = ap.parse_args(argv)
    root = Path(args.data).resolve()
    root.mkdir(parents=True, exist_ok=True)
    overrides = dict(o.split("=", 1) for o in args.override)
    stop = threading.Event()
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda *_: stop.set())

    zookeeper = ZooKeeperProcess(root / "zookeeper")
    brokers: list[BrokerProcess] = []
    try:
        zookeeper.start()
        print(f"zookeeper listening on {zookeeper.connect} (log {zookeeper.log_path})", flush=True)
        for node_id in range(1, args.brokers + 1):
            broker = BrokerProcess(root / f"broker-{node_id}", {
                "node.id": str(node_id), "zookeeper.connect": zookeeper.connect, **overrides},
                port=args.base_port + node_id - 1, log_path=root / f"broker-{node_id}.log")
            brokers.append(broker)
            broker.start()
            print(f"broker {node_id} listening on {broker.bootstrap} (log {broker.log_path})", flush=True)
        print(f"cluster ready: bootstrap.servers={','.join(b.bootstrap for b in brokers)}; Ctrl-C stops it",
              flush=True)
        while not stop.wait(1):
            for node_id, broker in enumerate(brokers, 1):
                if not broker.alive:
                    print(f"broker {node_id} exited; see {broker.log_path}", file=sys.stderr, flush=True)
                    return 1
        return 0
    except (RuntimeError, TimeoutError, OSError) as exc:
        print(f"pykbroker local-cluster: cannot start: {exc}", file=sys.stderr)
        return 1
    finally:
        print("stopping the cluster", flush=True)
        for broker in reversed(brokers):
            broker.stop()
        zookeeper.stop()
