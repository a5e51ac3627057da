"""Kafka Streams 4.4 applications as real JVM processes (compat_tests/jvm/streams/StreamsCountApp.java).

``StreamsApp`` runs one instance of the counting application (input value -> selectKey -> repartition ->
count -> [join with a table] -> output); ``produce_keys`` writes its input, ``produce_labels`` its table, and
``CommittedCounts`` reads its output as a read_committed consumer, the way the tests judge it: every key's
final count is exact and no key's counts ever go backwards or repeat (at_least_once: every input counted, and
no count goes backwards).
"""

from __future__ import annotations

import shutil
import subprocess
import threading
import time
from pathlib import Path

from confluent_kafka import Consumer, Producer, TopicPartition

HERE = Path(__file__).resolve().parent / "jvm" / "streams"
APP = HERE / "StreamsCountApp.java"
FETCH_JARS = HERE / "fetch_jars.sh"


def streams_jars() -> Path | None:
    """Kafka Streams 4.4's jars (fetched with Maven on first use), or None without java or Maven."""
    if shutil.which("java") is None:
        return None
    try:
        out = subprocess.run(["bash", str(FETCH_JARS)], capture_output=True, text=True, timeout=900, check=True)
    except (subprocess.SubprocessError, OSError):
        return None
    return Path(out.stdout.strip().splitlines()[-1])


def _items(joined: str) -> frozenset[str]:
    return frozenset() if joined == "-" else frozenset(joined.split(","))


class IqMetadata:
    """What one instance reports for interactive queries: per client (application.server) its active and standby
    topic partitions and stores; per key the active host, the standby hosts and the partition."""

    def __init__(self) -> None:
        self.clients: dict[str, tuple[frozenset[str], frozenset[str], frozenset[str]]] = {}
        self.keys: dict[str, tuple[str, frozenset[str], int]] = {}
        self.error: str | None = None


class StreamsApp:
    """One instance of the counting application; its stdout (Streams' warnings included) goes to ``log_path``."""

    def __init__(self, jars: Path, bootstrap: str, application_id: str, input_topic: str, output_topic: str,
                 root: Path, name: str, props: dict[str, str] | None = None) -> None:
        self.jars = jars
        self.bootstrap = bootstrap
        self.application_id = application_id
        self.input_topic = input_topic
        self.output_topic = output_topic
        self.root = root
        self.name = name
        self.props = dict(props or {})
        self.log_path = root / f"{name}.log"
        self.proc: subprocess.Popen | None = None
        self.states: list[tuple[float, str]] = []
        self.errors: list[str] = []
        self.restores: list[tuple[float, str, int, int]] = []  # (when, changelog partition, from offset, to offset)
        self.restored: list[tuple[float, str, int]] = []  # (when, changelog partition, records restored)
        self._meta: list[str] = []  # the "APP META"/"APP KEY" lines of the metadata answer being read
        self._meta_done = threading.Event()
        self._reader: threading.Thread | None = None

    def start(self) -> StreamsApp:
        state_dir = self.root / f"{self.name}-state"
        state_dir.mkdir(parents=True, exist_ok=True)
        command = ["java", "-Xmx256m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1",
                   f"-Dlog4j2.configurationFile={HERE / 'log4j2.properties'}", "-cp", f"{self.jars}/*", str(APP),
                   self.bootstrap, self.application_id, self.input_topic, self.output_topic, str(state_dir),
                   *(f"{k}={v}" for k, v in self.props.items())]
        self.states.clear()
        self.proc = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                     stdin=subprocess.PIPE, text=True, bufsize=1)
        self._reader = threading.Thread(target=self._read, args=(self.proc,), daemon=True)
        self._reader.start()
        return self

    def _read(self, proc: subprocess.Popen) -> None:
        assert proc.stdout is not None
        with open(self.log_path, "a") as log:
            for line in proc.stdout:
                log.write(line)
                log.flush()
                if line.startswith("APP STATE "):
                    self.states.append((time.monotonic(), line.split()[2]))
                elif line.startswith("APP ERROR "):
                    self.errors.append(line[len("APP ERROR "):].strip())
                elif line.startswith("APP RESTORE "):
                    _, _, partition, start, end = line.split()
                    self.restores.append((time.monotonic(), partition, int(start), int(end)))
                elif line.startswith("APP META END"):
                    self._meta_done.set()
                elif line.startswith(("APP META ", "APP KEY ")):
                    self._meta.append(line.strip())
                elif line.startswith("APP RESTORED "):
                    _, _, partition, records = line.split()
                    self.restored.append((time.monotonic(), partition, int(records)))

    @property
    def state(self) -> str | None:
        return self.states[-1][1] if self.states else None

    def wait_for_state(self, state: str, timeout: float = 120.0, fail_on_error: bool = False) -> None:
        """Until the instance is in ``state``; with ``fail_on_error`` an uncaught exception ends the wait too."""
        deadline = time.monotonic() + timeout
        while self.state != state:
            if fail_on_error and self.errors:
                raise RuntimeError(f"Streams instance {self.name} failed: {self.errors[0]}")
            if self.proc is None or self.proc.poll() is not None:
                raise RuntimeError(f"Streams instance {self.name} exited; its log:\n{self.log()}")
            if time.monotonic() > deadline:
                raise TimeoutError(f"Streams instance {self.name} is {self.state}, not {state}, after {timeout} s;"
                                   f" its log:\n{self.log()}")
            time.sleep(0.1)

    def query_metadata(self, keys: int, timeout: float = 60.0) -> IqMetadata:
        """The instance's interactive-query metadata (application.server must be set): every client of
        metadataForAllStreamsClients and queryMetadataForKey("counts", ...) of the first ``keys`` keys."""
        assert self.proc is not None and self.proc.stdin is not None
        self._meta.clear()
        self._meta_done.clear()
        self.proc.stdin.write(f"metadata {keys}\n")
        self.proc.stdin.flush()
        if not self._meta_done.wait(timeout):
            raise TimeoutError(f"Streams instance {self.name} gave no metadata in {timeout} s:\n{self.log()}")
        found = IqMetadata()
        for line in self._meta:
            kind, rest = line.split(" ", 2)[1], line.split(" ", 2)[2]
            if kind == "META" and rest.startswith("ERROR "):
                found.error = rest
            elif kind == "META":
                host, active, standby, stores = rest.split(" ")
                found.clients[host] = (_items(active), _items(standby), _items(stores))
            else:
                key, host, standbys, partition = rest.split(" ")
                found.keys[key] = (host, _items(standbys), int(partition))
        return found

    def log(self, last: int = 60) -> str:
        try:
            return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-last:])
        except OSError:
            return ""

    def stop(self, timeout: float = 60.0) -> None:
        """Close the application cleanly (stdin closed: KafkaStreams.close)."""
        if self.proc is None:
            return
        if self.proc.poll() is None:
            assert self.proc.stdin is not None
            self.proc.stdin.close()
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self._join()

    def kill(self) -> None:
        """kill -9, as a crash."""
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
        self._join()

    def _join(self) -> None:
        if self._reader is not None:
            self._reader.join(10)
        if self.proc is not None and self.proc.stdin is not None and not self.proc.stdin.closed:
            self.proc.stdin.close()
        self.proc = None


def key_name(i: int) -> str:
    return f"key-{i:04d}"


def produce_keys(bootstrap: str, topic: str, keys: int, rounds: int, first_round: int = 0) -> int:
    """Write ``rounds`` records for each of ``keys`` keys (value = the key's name, random record keys so that
    the application must repartition); how many were written."""
    producer = Producer({"bootstrap.servers": bootstrap, "acks": "all", "enable.idempotence": True,
                         "linger.ms": 5})
    failures: list[str] = []

    def delivered(err, _msg) -> None:
        if err is not None:
            failures.append(str(err))

    written = 0
    for r in range(first_round, first_round + rounds):
        for i in range(keys):
            producer.produce(topic, key=f"r{r}-{i}".encode(), value=key_name(i).encode(), on_delivery=delivered)
            written += 1
            if written % 1000 == 0:
                producer.poll(0)
    assert producer.flush(120) == 0, "input records still unacknowledged after 120 s"
    assert not failures, failures[:5]
    return written


def label(i: int) -> str:
    return f"label-{i:04d}"


def produce_labels(bootstrap: str, topic: str, keys: int) -> None:
    """The table the application joins with: ``label(i)`` for each key, partitioned as Kafka's Java producer
    (and Streams) partitions a key, so that it is co-partitioned with the counts."""
    producer = Producer({"bootstrap.servers": bootstrap, "acks": "all", "enable.idempotence": True,
                         "partitioner": "murmur2_random"})
    for i in range(keys):
        producer.produce(topic, key=key_name(i).encode(), value=label(i).encode())
    assert producer.flush(60) == 0, "table records still unacknowledged after 60 s"


class CommittedCounts:
    """A read_committed consumer of the output topic, polling on its own thread: each key's counts in the order
    they were committed, and when records arrived (``stall_after`` finds the longest pause)."""

    def __init__(self, bootstrap: str, topic: str, partitions: int) -> None:
        self.consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "unused-assigned-manually",
                                  "isolation.level": "read_committed", "enable.auto.commit": False,
                                  "auto.offset.reset": "earliest"})
        self.consumer.assign([TopicPartition(topic, p, 0) for p in range(partitions)])
        self.counts: dict[str, list[int]] = {}
        self.labels: dict[str, str] = {}  # each key's latest table value, when the application joins with one
        self.arrivals: list[float] = []  # when each batch of records arrived (monotonic)
        self.last_at: float | None = None
        self._lock = threading.Lock()
        self._closed = threading.Event()
        self._thread = threading.Thread(target=self._poll, daemon=True)
        self._thread.start()

    def _poll(self) -> None:
        while not self._closed.is_set():
            records = [m for m in self.consumer.consume(1000, 0.1) if not m.error()]
            if not records:
                continue
            with self._lock:
                for msg in records:
                    key, value = msg.key().decode(), msg.value().decode()
                    if " " in value:  # "<table value> <count>"
                        self.labels[key], value = value.rsplit(" ", 1)
                    self.counts.setdefault(key, []).append(int(value))
                self.last_at = time.monotonic()
                self.arrivals.append(self.last_at)

    def wait_for_totals(self, keys: int, total: int, timeout: float) -> None:
        """Until every key's latest count is ``total`` (the output is complete)."""
        deadline = time.monotonic() + timeout
        while not self.complete(keys, total):
            if time.monotonic() > deadline:
                with self._lock:
                    missing = [key_name(i) for i in range(keys) if self.latest(key_name(i)) != total]
                raise TimeoutError(f"{len(missing)} keys not at {total} after {timeout} s, e.g. "
                                   f"{[(k, self.latest(k)) for k in missing[:5]]}")
            time.sleep(0.2)

    def wait_for_at_least(self, keys: int, total: int, timeout: float, quiet: float = 5.0) -> None:
        """Until every key's latest count is at least ``total`` and nothing arrived for ``quiet`` seconds
        (at_least_once: a count may go past the number of inputs after a crash)."""
        deadline = time.monotonic() + timeout
        while True:
            with self._lock:
                low = [k for k in (key_name(i) for i in range(keys)) if (self.latest(k) or 0) < total]
                settled = not low and self.last_at is not None and time.monotonic() - self.last_at > quiet
            if settled:
                return
            if time.monotonic() > deadline:
                raise TimeoutError(f"{len(low)} keys below {total} after {timeout} s, e.g. "
                                   f"{[(k, self.latest(k)) for k in low[:5]]}")
            time.sleep(0.2)

    def latest(self, key: str) -> int | None:
        values = self.counts.get(key)
        return values[-1] if values else None

    def complete(self, keys: int, total: int) -> bool:
        with self._lock:
            return len(self.counts) == keys and all(values[-1] == total for values in self.counts.values())

    def stall_after(self, since: float) -> float:
        """The longest time after ``since`` without committed output (up to the last record)."""
        with self._lock:
            times = [since] + [t for t in self.arrivals if t > since]
        return max((b - a for a, b in zip(times, times[1:], strict=False)), default=0.0)

    def anomalies(self, repeats: bool = False) -> list[str]:
        """Counts that went backwards or repeated (a duplicate or lost update under exactly-once); with
        ``repeats`` (at_least_once) only counts that went backwards."""
        out = []
        with self._lock:
            for key, values in self.counts.items():
                for before, after in zip(values, values[1:], strict=False):
                    if after < before or (after == before and not repeats):
                        out.append(f"{key}: {before} then {after}")
                        break
        return out

    def close(self) -> None:
        self._closed.set()
        self._thread.join(10)
        self.consumer.close()
