"""``pykbroker local-cluster``: ZooKeeper and N brokers on this machine, for trying a cluster (``make cluster``).

Broker ``i`` (1..N) listens on ``base-port + i - 1`` (9092, 9093, 9094 by default) with its data under
``<data>/broker-<i>`` and serves its console on ``127.0.0.1:<console-port + i - 1>`` (8080, 8081, 8082;
``--console-port 0``: none; each shows the whole cluster); ZooKeeper listens on a free port with its data under ``<data>/zookeeper``. Each
process logs to a file beside its data, and one line per process says where it listens and its pid.

The cluster outlives any one broker, so a failover can be watched: a broker that exits or is killed
(``kill -9 <pid>``, or ``kill 2`` typed here) is reported with its exit code, and the others and ZooKeeper
keep running. Commands typed on standard input, one a line:

    status       every broker: running (pid) or stopped
    kill N       kill -9 broker N (a crash)
    stop N       stop broker N gracefully
    start N      start broker N again (same id, port and data)
    help         this list

Ctrl-C (or SIGTERM) stops the brokers, then ZooKeeper; a rerun with the same data dir brings the same
cluster back.
"""

from __future__ import annotations

import argparse
import queue
import signal
import sys
import threading
from collections.abc import Callable
from pathlib import Path

from pykbroker.testing import BrokerProcess, ZooKeeperProcess

__all__ = ["main"]

COMMANDS = "commands: status | kill N | stop N | start N | help (Ctrl-C stops the cluster)"


def _read_commands(lines: queue.Queue[str]) -> None:
    """Feed standard input's lines to the main loop (a daemon thread: it never blocks the exit)."""
    for line in sys.stdin:
        lines.put(line)


class LocalCluster:
    """The running processes and what the commands do to them."""

    def __init__(self, root: Path, brokers: int, base_port: int, overrides: dict[str, str],
                 console_port: int = 0) -> None:
        self.console_port = console_port
        self.zookeeper = ZooKeeperProcess(root / "zookeeper")
        self.root = root
        self.base_port = base_port
        self.overrides = overrides
        self.brokers: dict[int, BrokerProcess] = {}
        self.count = brokers
        self.reported: set[int] = set()  # brokers whose exit was reported (or that were stopped on purpose)

    def start(self) -> None:
        self.zookeeper.start()
        print(f"zookeeper listening on {self.zookeeper.connect} (log {self.zookeeper.log_path})", flush=True)
        for node_id in range(1, self.count + 1):
            console = {"console.listener": f"127.0.0.1:{self.console_port + node_id - 1}"} if self.console_port else {}
            self.brokers[node_id] = BrokerProcess(self.root / f"broker-{node_id}", {
                "node.id": str(node_id), "zookeeper.connect": self.zookeeper.connect, **console, **self.overrides},
                port=self.base_port + node_id - 1, log_path=self.root / f"broker-{node_id}.log")
            self.start_broker(node_id)

    def start_broker(self, node_id: int) -> None:
        broker = self.brokers[node_id]
        broker.start()
        self.reported.discard(node_id)
        assert broker.proc is not None
        console = broker.overrides.get("console.listener")
        print(f"broker {node_id} listening on {broker.bootstrap} (pid {broker.proc.pid}, log {broker.log_path}"
              + (f", console http://{console}/" if console else "") + ")", flush=True)

    def report_exits(self) -> None:
        for node_id, broker in self.brokers.items():
            if node_id not in self.reported and broker.proc is not None and not broker.alive:
                self.reported.add(node_id)
                print(f"broker {node_id} exited with code {broker.proc.returncode} (see {broker.log_path}); the "
                      f"others keep running; type 'start {node_id}' to start it again", file=sys.stderr, flush=True)

    def command(self, line: str) -> None:
        words = line.split()
        if not words:
            return
        actions: dict[str, Callable[[int], None]] = {"kill": self._kill, "stop": self._stop,
                                                     "start": self._start}
        if words == ["status"]:
            for node_id, broker in self.brokers.items():
                state = f"running (pid {broker.proc.pid})" if broker.alive and broker.proc else "stopped"
                print(f"broker {node_id} on {broker.bootstrap}: {state}", flush=True)
        elif len(words) == 2 and words[0] in actions and words[1].isdigit() and int(words[1]) in self.brokers:
            actions[words[0]](int(words[1]))
        else:
            print(COMMANDS, flush=True)

    def _kill(self, node_id: int) -> None:
        broker = self.brokers[node_id]
        if broker.alive and broker.proc is not None:
            broker.proc.kill()  # kill -9; reported as an exit by the next check
        else:
            print(f"broker {node_id} is not running", flush=True)

    def _stop(self, node_id: int) -> None:
        self.reported.add(node_id)
        code = self.brokers[node_id].stop()
        print(f"broker {node_id} stopped (exit code {code})", flush=True)

    def _start(self, node_id: int) -> None:
        if self.brokers[node_id].alive:
            print(f"broker {node_id} is already running", flush=True)
            return
        try:
            self.start_broker(node_id)
        except (RuntimeError, TimeoutError, OSError) as exc:
            self.reported.add(node_id)
            print(f"broker {node_id} did not start: {str(exc)[-2000:]}", file=sys.stderr, flush=True)

    def stop(self) -> None:
        for broker in reversed(list(self.brokers.values())):
            broker.stop()
        self.zookeeper.stop()


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(prog="pykbroker local-cluster", description=__doc__.splitlines()[0],
                                 epilog=COMMANDS)
    ap.add_argument("--brokers", type=int, default=3, help="how many brokers (default 3)")
    ap.add_argument("--base-port", type=int, default=9092, help="port of broker 1 (default 9092)")
    ap.add_argument("--console-port", type=int, default=8080,
                    help="console port of broker 1, the next ones after it (default 8080; 0: no console)")
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

    cluster = LocalCluster(root, args.brokers, args.base_port, overrides, args.console_port)
    lines: queue.Queue[str] = queue.Queue()
    try:
        cluster.start()
        bootstrap = ",".join(b.bootstrap for b in cluster.brokers.values())
        print(f"cluster ready: bootstrap.servers={bootstrap}; {COMMANDS}", flush=True)
        threading.Thread(target=_read_commands, args=(lines,), daemon=True).start()
        while not stop.is_set():
            try:
                cluster.command(lines.get(timeout=0.5))
            except queue.Empty:
                pass
            cluster.report_exits()
        return 0
    except (RuntimeError, TimeoutError, OSError) as exc:
        print(f"pykbroker local-cluster: cannot start: {exc}", file=sys.stderr)
        return 1
    finally:
        print("stopping the cluster", flush=True)
        cluster.stop()
