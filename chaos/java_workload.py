"""The Java client as a workload: Kafka's own ``VerifiableProducer`` and ``VerifiableConsumer``
(org.apache.kafka.tools, the tools Kafka's system tests drive) from Kafka 4.4's jars, their JSON events
recorded.

Each acknowledged send prints ``{"name":"producer_send_success","value":"<prefix>.<n>","offset":..,
"partition":..}``; a failed one ``producer_send_error`` with the exception. A consumer started with
``--verbose`` prints ``record_data`` (topic, partition, offset, key, value) for each record it returns and
``offsets_committed`` (offsets, success) after each synchronous commit.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
from pathlib import Path

from chaos.history import Commit, Consumed, History, Produced
from chaos.workloads import Clock, Workload, child_event

JVM = Path(__file__).resolve().parent.parent / "compat_tests" / "jvm"


def _pom_kafka_version() -> str | None:
    """The judge's Kafka version (``<kafka.version>`` of compat_tests/jvm/pom.xml), as fetch_jars.sh reads it."""
    try:
        found = re.search(r"<kafka\.version>(.*?)</kafka\.version>", (JVM / "pom.xml").read_text())
    except OSError:
        return None
    return found.group(1) if found else None


def java_jars() -> Path | None:
    """Kafka's jars of the pom's version (compat_tests/jvm/.cache/jars-VERSION, fetched by fetch_jars.sh, which
    ``make deps`` runs), or None without java or without them."""
    version = _pom_kafka_version()
    jars = JVM / ".cache" / f"jars-{version}"
    if shutil.which("java") is None or version is None or not any(jars.glob("kafka-tools-*.jar")):
        return None
    return jars


class JavaToolWorkload(Workload):
    """A workload whose work is one Java tool process (``self.proc``)."""

    proc: subprocess.Popen | None = None
    abandoned = False  # killed because it had not exited ``stop``'s timeout after SIGTERM

    def kill(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()

    def request_stop(self) -> None:
        """SIGTERM: the tool closes its client (a producer delivers or fails what is in flight) and exits."""
        super().request_stop()
        if self.proc is not None and self.proc.poll() is None:
            os.kill(self.proc.pid, signal.SIGTERM)

    def stop(self, timeout: float = 150.0) -> None:
        """Ask, wait ``timeout`` seconds for the tool to exit, then kill it (``abandoned``): what it printed
        until then is in the history and checked; the reader thread ends with the pipe."""
        self.request_stop()
        if self.proc is not None:
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self.abandoned = True
                self.proc.kill()
        self._thread.join(10)
        if self._thread.is_alive():
            self.errors.append(f"{self.name}: did not stop within {timeout}s")


class JavaProducerWorkload(JavaToolWorkload):
    """VerifiableProducer writing ``<prefix>.<n>`` to ``topic`` at ``rate`` records/s until stopped."""

    def __init__(self, name: str, history: History, clock: Clock, bootstrap: str, topic: str, rate: float,
                 jars: Path, config_path: Path, prefix: int = 7) -> None:
        super().__init__(name, history, clock)
        self.topic, self.prefix = topic, prefix
        config_path.write_text("enable.idempotence=true\nretries=2147483647\nlinger.ms=5\ndelivery.timeout.ms=120000\n"
                               "retry.backoff.ms=50\nmax.in.flight.requests.per.connection=5\n")
        self.command = ["java", "-Xmx128m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-cp", f"{jars}/*",
                        "org.apache.kafka.tools.VerifiableProducer", "--bootstrap-server", bootstrap,
                        "--topic", topic, "--max-messages", "-1", "--throughput", str(int(rate)), "--acks", "-1",
                        "--value-prefix", str(prefix), "--producer.config", str(config_path)]
        self.proc: subprocess.Popen | None = None
        self.stderr_path = config_path.with_suffix(".log")

    def _run(self) -> None:
        with open(self.stderr_path, "ab") as err:
            self.proc = subprocess.Popen(self.command, stdout=subprocess.PIPE, stderr=err, text=True)
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            try:
                event = json.loads(line)
            except ValueError:
                continue
            name = event.get("name")
            if name not in ("producer_send_success", "producer_send_error"):
                continue
            value = str(event.get("value"))
            seq = int(value.rsplit(".", 1)[-1])
            now = self.clock()
            if name == "producer_send_success":
                self.history.add(Produced(self.topic, event["partition"], None, value, True, event["offset"],
                                          sent=now, acked=now, producer=self.name, seq=seq))
            else:
                self.history.add(Produced(self.topic, event.get("partition", -1), None, value, False, -1,
                                          f"{event.get('exception')}: {event.get('message')}", sent=now,
                                          acked=now, producer=self.name, seq=seq))
        self.proc.wait()
        self.acked = sum(1 for p in self.history.produced if p.producer == self.name and p.ok)
        if not self._stop.is_set() or not self.acked:
            self.errors.append(f"{self.name}: VerifiableProducer exited with {self.proc.returncode} after "
                               f"{self.acked} acknowledged records; see {self.stderr_path}")



class JavaGroupMember(JavaToolWorkload):
    """One VerifiableConsumer of ``group`` on ``topic``, committing synchronously after every poll; records and
    successful commits go into the history, anything else it prints into ``log_path``. The classic
    protocol: a cluster on ZooKeeper has no KIP-848 groups (Kafka's neither; the client is told
    UNSUPPORTED_VERSION and the tool stops)."""

    def __init__(self, name: str, history: History, clock: Clock, bootstrap: str, topic: str, group: str,
                 jars: Path, log_path: Path, protocol: str = "classic") -> None:
        super().__init__(name, history, clock)
        self.group = group
        self.command = ["java", "-Xmx128m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-cp", f"{jars}/*",
                        "org.apache.kafka.tools.VerifiableConsumer", "--bootstrap-server", bootstrap,
                        "--topic", topic, "--group-id", group, "--group-protocol", protocol, "--verbose",
                        "--reset-policy", "earliest"]
        self.proc: subprocess.Popen | None = None
        self.log_path = log_path
        self.consumed = 0

    def _run(self) -> None:
        with open(self.log_path, "a") as log:
            self.proc = subprocess.Popen(self.command, stdout=subprocess.PIPE, stderr=log, text=True)
            self._read_events(self.proc, log)

    def _read_events(self, proc: subprocess.Popen, log) -> None:
        reader = f"group:{self.group}:{self.name}"
        assert proc.stdout is not None
        for line in proc.stdout:
            event = child_event(line, log)
            if event is None:
                continue
            name = event.get("name")
            if name == "record_data":
                self.consumed += 1
                self.history.add(Consumed(event["topic"], event["partition"], event["offset"], event.get("key"),
                                          str(event["value"]), reader, self.clock()))
            elif name == "offsets_committed" and event.get("success"):
                now = self.clock()
                for o in event.get("offsets", []):
                    self.history.add(Commit(self.group, o["topic"], o["partition"], o["offset"], now))
        proc.wait()
        if not self._stop.is_set() or not self.consumed:
            self.errors.append(f"{self.name}: VerifiableConsumer exited with {proc.returncode} after "
                               f"{self.consumed} records; see {self.log_path}")


__all__ = ["JavaGroupMember", "JavaProducerWorkload", "java_jars"]
