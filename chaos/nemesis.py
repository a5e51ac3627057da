"""The nemesis: faults on a ``ClusterProcesses`` cluster, each bounded and healed before the next.

Kinds (``KINDS``):
- ``kill-leader``: ``kill -9`` of the leader of a random partition of the workload topic, restarted after a hold.
- ``kill-controller``: ``kill -9`` of the broker holding ``/controller`` (Metadata's controller id).
- ``kill-coordinator``: ``kill -9`` of the broker coordinating the workload's consumer group.
- ``pause-isr``: SIGSTOP of a broker for 1.5 x ``replica.lag.time.max.ms`` (dropped from ISRs, stays
  registered), then SIGCONT.
- ``pause-session``: SIGSTOP for 1.5 x the ZooKeeper session timeout (its session expires, its
  leaderships move; it comes back to a fenced world), then SIGCONT.
- ``restart-zookeeper``: ``kill -9`` of ZooKeeper, restarted after a hold of 1-5 s.
Network partitions (a ``ProxiedCluster``'s ``Network``; clients keep reaching every broker unless said):
- ``partition-zk``: a partition leader cut from ZooKeeper both ways for 1.5 x the session timeout (its
  session expires; the controller moves its leaderships while it still serves clients).
- ``partition-leader``: a partition leader cut from ZooKeeper and every other broker, both ways (the
  split brain: it still answers clients, but can neither replicate nor shrink its ISR).
- ``partition-followers``: a partition leader cut from the other brokers both ways, not from ZooKeeper
  (its followers fall out of the ISR; acks=all with min.insync.replicas=2 is refused).
- ``partition-one-way``: a partition leader's bytes to ZooKeeper and the other brokers dropped, or theirs to
  it (chosen at random); the other direction flows.
- ``partition-halves``: brokers and ZooKeeper split into two random non-empty sides, cut both ways.
- ``partition-clients``: one broker unreachable from every client both ways (brokers still reach it).
- ``disk-full``: a partition leader's log dir (a tmpfs of the ``ProxiedCluster``) filled up to ENOSPC; its
  writes fail, the dir goes offline and its partitions move to other replicas. Healed by freeing the space
  and, when the dir went offline, restarting the broker (a dir stays offline until then, as in Kafka).
- ``disk-readonly``: a partition leader's log dir (a ``chaos.flaky_fs`` FUSE mount of a ``ProxiedCluster``
  with ``flaky_dirs``) answers EROFS to every change, as a filesystem remounted read-only: its only dir
  goes offline and the broker halts, as Kafka's does. Healed by making it writable and starting the broker.
- ``clock-jump``: a partition leader's wall clock jumped forwards or backwards (seconds to an hour; a
  ``ProxiedCluster`` with ``clock_shift``), held, then jumped back. Its monotonic clock is left alone.
Every fault is recorded in the history with its start and heal time; ``heal_all`` undoes anything left.
"""

from __future__ import annotations

import os
import random
import signal
import time
from collections.abc import Callable
from typing import Any

from confluent_kafka.admin import AdminClient

from chaos.cluster import ZOOKEEPER, node_name
from chaos.history import Fault, History
from chaos.network import CLIENT
from pykbroker.testing import BrokerProcess, ClusterProcesses

KINDS = ("kill-leader", "kill-controller", "kill-coordinator", "pause-isr", "pause-session", "restart-zookeeper",
         "partition-zk", "partition-leader", "partition-followers", "partition-one-way", "partition-halves",
         "partition-clients", "disk-full", "disk-readonly", "clock-jump")
PARTITION_KINDS = tuple(k for k in KINDS if k.startswith("partition-"))


class Nemesis:
    def __init__(self, cluster: Any, history: History, clock: Callable[[], float], rng: random.Random,
                 *, topic: str, group: str, lag_ms: int, session_ms: int,
                 hold: tuple[float, float] | None = None) -> None:
        """``hold``: every fault held a uniform (min, max) seconds instead of its kind's own hold (a high-cadence
        campaign of short faults: pauses and cuts then stay under replica.lag.time.max.ms)."""
        self.cluster, self.history, self.clock, self.rng = cluster, history, clock, rng
        self.hold = hold
        self.topic, self.group, self.lag_ms, self.session_ms = topic, group, lag_ms, session_ms
        self.admin = AdminClient({"bootstrap.servers": cluster.bootstrap, "log_level": 2})
        self.paused: set[int] = set()
        self.slow_heals: list[str] = []
        self.stuck_starts: list[str] = []  # restarts that neither registered nor exited (killed, started again)

    # --- choosing victims ---------------------------------------------------------------------------
    def leader_of_random_partition(self) -> int:
        md = self.admin.list_topics(self.topic, timeout=10).topics[self.topic]
        leaders = [p.leader for p in md.partitions.values() if p.leader >= 0]
        return self.rng.choice(leaders) if leaders else self.random_broker()

    def controller(self) -> int:
        controller = self.admin.list_topics(timeout=10).controller_id
        return controller if controller in self.cluster.brokers else self.random_broker()

    def coordinator(self) -> int:
        try:
            return self.admin.describe_consumer_groups([self.group])[self.group].result(10).coordinator.id
        except Exception:  # noqa: BLE001 - the group is not there (yet): any broker
            return self.random_broker()

    def random_broker(self) -> int:
        return self.rng.choice(sorted(self.cluster.brokers))

    # --- faults -------------------------------------------------------------------------------------
    def run(self, kind: str) -> Fault:
        """Inject one fault of ``kind``, hold it, heal it, record it; then wait for a healthy cluster."""
        if kind.startswith("kill-"):
            victim = {"kill-leader": self.leader_of_random_partition, "kill-controller": self.controller,
                      "kill-coordinator": self.coordinator}[kind]()
            fault = self._begin(Fault(kind, f"broker {victim}", self.clock()))
            self.cluster.broker(victim).kill()
            time.sleep(self._hold(self.rng.uniform(1.0, 1.5 * self.session_ms / 1000)))
            self.restart(victim)
        elif kind.startswith("pause-"):
            victim = self.random_broker()
            hold = self._hold(1.5 * (self.lag_ms if kind == "pause-isr" else self.session_ms) / 1000)
            fault = self._begin(Fault(kind, f"broker {victim}", self.clock(), note=f"SIGSTOP for {hold:.1f}s"))
            pid = self.cluster.broker(victim).proc.pid
            os.kill(pid, signal.SIGSTOP)
            self.paused.add(victim)
            try:
                time.sleep(hold)
            finally:
                os.kill(pid, signal.SIGCONT)
                self.paused.discard(victim)
        elif kind in PARTITION_KINDS:
            fault = self.partition(kind)
        elif kind == "disk-full":
            fault = self.disk_full()
        elif kind == "clock-jump":
            fault = self.clock_jump()
        elif kind == "disk-readonly":
            fault = self.disk_readonly()
        elif kind == "restart-zookeeper":
            fault = self._begin(Fault(kind, "zookeeper", self.clock()))
            self.cluster.zookeeper.kill()
            time.sleep(self._hold(self.rng.uniform(1.0, 5.0)))
            self.cluster.zookeeper.start(timeout=60)
        else:
            raise ValueError(f"unknown fault kind {kind!r}; known: {', '.join(KINDS)}")
        fault.end = self.clock()
        self.wait_healthy(fault)
        return fault

    def partition(self, kind: str) -> Fault:
        """Cut links of the cluster's network as ``kind`` says, hold, heal."""
        network = getattr(self.cluster, "network", None)
        if network is None:
            raise ValueError(f"{kind} needs a ProxiedCluster (a network to cut)")
        victim = self.leader_of_random_partition()
        me = node_name(victim)
        peers = [node_name(i) for i in sorted(self.cluster.brokers) if i != victim]
        hold = self.rng.uniform(1.5 * self.lag_ms, 1.5 * self.session_ms) / 1000
        if kind == "partition-zk":
            hold = 1.5 * self.session_ms / 1000
            cuts, what = [(me, ZOOKEEPER, True)], f"{me} x zookeeper"
        elif kind == "partition-leader":
            cuts, what = [(me, other, True) for other in [ZOOKEEPER, *peers]], f"{me} x zookeeper, {', '.join(peers)}"
        elif kind == "partition-followers":
            cuts, what = [(me, other, True) for other in peers], f"{me} x {', '.join(peers)}"
        elif kind == "partition-one-way":
            inbound = self.rng.random() < 0.5
            cuts = [((other, me) if inbound else (me, other)) + (False,) for other in [ZOOKEEPER, *peers]]
            what = f"zookeeper, {', '.join(peers)} -> {me}" if inbound else f"{me} -> zookeeper, {', '.join(peers)}"
        elif kind == "partition-halves":
            nodes = [*([ZOOKEEPER] if self.cluster.zookeeper is not None else []),
                     *(node_name(i) for i in sorted(self.cluster.brokers))]
            self.rng.shuffle(nodes)
            cut_at = self.rng.randint(1, len(nodes) - 1)
            left, right = nodes[:cut_at], nodes[cut_at:]
            cuts = [(a, b, True) for a in left for b in right]
            what = f"{{{', '.join(sorted(left))}}} x {{{', '.join(sorted(right))}}}"
        elif kind == "partition-clients":
            cuts, what = [(CLIENT, me, True)], f"clients x {me}"
        else:
            raise ValueError(f"unknown partition kind {kind!r}")
        hold = self._hold(hold)
        fault = self._begin(Fault(kind, me, self.clock(), note=f"{what} for {hold:.1f}s"))
        try:
            for a, b, both in cuts:
                network.cut(a, b, both=both)
            time.sleep(hold)
        finally:
            network.heal()
        return fault

    def disk_full(self) -> Fault:
        """Fill a leader's log dir, hold, free it; restart the broker if its dir went offline meanwhile."""
        disks = getattr(self.cluster, "disks", None)
        if not disks:
            raise ValueError("disk-full needs a ProxiedCluster with disk_mb (a tmpfs log dir per broker)")
        victim = self.leader_of_random_partition()
        broker = self.cluster.broker(victim)
        hold = self._hold(self.rng.uniform(1.5 * self.lag_ms, 1.5 * self.session_ms) / 1000)
        log_start = broker.log_path.stat().st_size
        fault = self._begin(Fault("disk-full", f"broker {victim}", self.clock(), note=f"held {hold:.1f}s"))
        filler = disks[victim] / "chaos-filler"
        try:
            with open(filler, "wb") as f:
                chunk = b"\0" * (1 << 20)
                try:
                    while True:
                        f.write(chunk)
                        f.flush()
                except OSError:
                    pass  # ENOSPC: full
            time.sleep(hold)
        finally:
            filler.unlink(missing_ok=True)
        if not broker.alive or b"offline log dir" in _read_from(broker.log_path, log_start):
            broker.kill()
            self.restart(victim)
            fault.note += "; log dir went offline: broker restarted"
        return fault

    def disk_readonly(self) -> Fault:
        """Turn a leader's log dir read-only, hold, make it writable; start the broker if it halted (or restart
        it if its dir went offline without a halt: a dir stays offline until the broker restarts)."""
        flaky = getattr(self.cluster, "flaky", None)
        if not flaky:
            raise ValueError("disk-readonly needs a ProxiedCluster with flaky_dirs (a FUSE log dir per broker)")
        victim = self.leader_of_random_partition()
        broker = self.cluster.broker(victim)
        hold = self._hold(self.rng.uniform(1.5 * self.lag_ms, 1.5 * self.session_ms) / 1000)
        log_start = broker.log_path.stat().st_size
        fault = self._begin(Fault("disk-readonly", f"broker {victim}", self.clock(), note=f"EROFS for {hold:.1f}s"))
        try:
            flaky[victim].set("erofs")
            time.sleep(hold)
        finally:
            flaky[victim].set("ok")
        said = _read_from(broker.log_path, log_start)
        if not broker.alive or b"is now offline" in said:
            broker.kill()
            self.restart(victim)
            fault.note += "; " + ("broker halted (all log dirs failed): started again" if b"all log dirs" in said
                                  else "log dir went offline: broker restarted")
        return fault

    def clock_jump(self) -> Fault:
        """Jump a leader's wall clock by seconds or up to an hour, either way; hold; jump it back."""
        clocks = getattr(self.cluster, "clocks", None)
        if clocks is None:
            raise ValueError("clock-jump needs a ProxiedCluster with clock_shift (an LD_PRELOAD clock per broker)")
        victim = self.leader_of_random_partition()
        size_s = self.rng.uniform(1.0, 30.0) if self.rng.random() < 0.5 else self.rng.uniform(60.0, 3600.0)
        shift_ms = int(self.rng.choice((1, -1)) * size_s * 1000)
        hold = self._hold(self.rng.uniform(1.5 * self.lag_ms, 1.5 * self.session_ms) / 1000)
        fault = self._begin(Fault("clock-jump", f"broker {victim}", self.clock(),
                                  note=f"wall clock {shift_ms / 1000:+.0f}s for {hold:.1f}s, then back"))
        try:
            clocks.shift(victim, shift_ms)
            time.sleep(hold)
        finally:
            clocks.shift(victim, 0)
        return fault

    def _hold(self, default: float) -> float:
        return self.rng.uniform(*self.hold) if self.hold else default

    def _begin(self, fault: Fault) -> Fault:
        """Record the fault as it starts (end -1 until healed: an unhealed fault stays open in the history)."""
        self.history.add(fault)
        return fault

    def restart(self, node_id: int, timeout: float = 90.0) -> None:
        """Start a killed broker until it is registered. One restarted before ZooKeeper expired its old
        session finds its /brokers/ids znode owned by that session and exits (as Kafka's does: "node
        already exists and owner does not match"); like a supervisor, start it again."""
        if hasattr(self.cluster, "restart_broker"):  # not pykbroker (Kafka 4.1 for comparison): its own way back
            self.cluster.restart_broker(node_id, timeout)
            return
        broker = self.cluster.broker(node_id)
        deadline = time.monotonic() + timeout
        mark = f"broker {node_id} registered at /brokers/ids/{node_id}".encode()
        attempt_deadline = 0.0
        while True:
            if not broker.alive or time.monotonic() > attempt_deadline:
                if broker.alive:  # alive but never registered: a start that failed without exiting; again
                    self.stuck_starts.append(f"broker {node_id} at {self.clock():.1f}s")
                    broker.kill()
                log_start = broker.log_path.stat().st_size if broker.log_path.exists() else 0
                broker.start(timeout=60)
                attempt_deadline = time.monotonic() + 1.5 * self.session_ms / 1000 + 10
            if broker.alive and mark in _read_from(broker.log_path, log_start):
                return
            if time.monotonic() > deadline:
                raise TimeoutError(f"broker {node_id} not registered {timeout}s after its restart")
            time.sleep(0.5)

    def wait_healthy(self, fault: Fault, timeout: float = 90.0) -> None:
        """Until every broker is registered and every partition of the workload topic has a full ISR."""
        deadline = time.monotonic() + timeout
        try:
            self.cluster.wait_for_brokers(len(self.cluster.brokers), timeout=timeout)
        except TimeoutError as exc:
            self.slow_heals.append(f"{fault.kind} at {fault.start:.1f}s: {exc}")
            return
        while time.monotonic() < deadline:
            try:
                md = self.admin.list_topics(self.topic, timeout=5).topics[self.topic]
                if all(p.leader >= 0 and sorted(p.isrs) == sorted(p.replicas) for p in md.partitions.values()):
                    fault.note = (fault.note + f"; healthy {self.clock() - fault.end:.1f}s after heal").lstrip("; ")
                    return
            except Exception:  # noqa: BLE001 - metadata not answered now; ask again
                pass
            time.sleep(0.2)
        self.slow_heals.append(f"{fault.kind} at {fault.start:.1f}s: ISRs not full {timeout}s after the heal")

    def heal_all(self) -> None:
        """Heal the network, SIGCONT every paused broker, start every dead one and ZooKeeper."""
        network = getattr(self.cluster, "network", None)
        if network is not None:
            network.heal()
        clocks = getattr(self.cluster, "clocks", None)
        if clocks is not None:
            clocks.reset()
        for node_id in list(self.paused):
            proc = self.cluster.broker(node_id).proc
            if proc is not None:
                os.kill(proc.pid, signal.SIGCONT)
            self.paused.discard(node_id)
        if self.cluster.zookeeper is not None and not self.cluster.zookeeper.alive:
            self.cluster.zookeeper.start(timeout=60)
        for broker in self.cluster.brokers.values():
            if not broker.alive:
                self.restart(broker_id(self.cluster, broker))


def _read_from(path, offset: int) -> bytes:
    with open(path, "rb") as f:
        f.seek(offset)
        return f.read()


def broker_id(cluster: ClusterProcesses, broker: BrokerProcess) -> int:
    return next(i for i, b in cluster.brokers.items() if b is broker)
