"""A drop-in for testcontainers' ``KafkaContainer``, backed by a local pykbroker process: no Docker.

Code written for testcontainers switches with one changed import:

    from pykbroker.testcontainers import KafkaContainer   # was: from testcontainers.kafka import KafkaContainer

    with KafkaContainer() as kafka:
        producer = KafkaProducer(bootstrap_servers=kafka.get_bootstrap_server())

The methods Python users call are here with the same signatures: the constructor (``image``, ``port``),
``start()``, ``stop()``, the context manager, ``get_bootstrap_server()``, ``get_container_host_ip()``,
``get_exposed_port()``, ``get_logs()``, ``with_env()``, ``with_kraft()``, ``with_cluster_id()``,
``with_bind_ports()``, ``with_exposed_ports()``, ``with_name()``. ``with_env`` maps ``KAFKA_*`` variables to
broker properties as the Confluent and Apache images do (``KAFKA_LOG_RETENTION_MS`` -> ``log.retention.ms``;
``__`` -> ``_``, ``___`` -> ``-``). The image's own networking (listeners, advertised listeners, the
inter-broker listener, KRaft controller settings) is the container's concern, not the broker's: those
variables are accepted and left out, and so are properties pykbroker does not know (Kafka warns and
ignores them too), each with one log line.
"""

from __future__ import annotations

import logging
import re
from typing import Self

from pykbroker.config import is_known_property
from pykbroker.testing import BrokerProcess

__all__ = ["KafkaContainer", "env_to_property"]

log = logging.getLogger("pykbroker.testcontainers")

# Variables the images read for the JVM, logging or their start scripts: never broker properties.
_IMAGE_VARIABLES = {"KAFKA_VERSION", "KAFKA_HEAP_OPTS", "KAFKA_JVM_PERFORMANCE_OPTS", "KAFKA_OPTS",
                    "KAFKA_LOG4J_OPTS", "KAFKA_GC_LOG_OPTS", "KAFKA_LOG4J_ROOT_LOGLEVEL", "KAFKA_LOG4J_LOGGERS",
                    "KAFKA_TOOLS_LOG4J_LOGLEVEL", "KAFKA_JMX_PORT", "KAFKA_JMX_HOSTNAME", "KAFKA_JMX_OPTS"}

# Properties that describe the container's network or its KRaft quorum; the local broker sets its own.
_CONTAINER_PROPERTIES = {"listeners", "advertised.listeners", "listener.security.protocol.map",
                         "inter.broker.listener.name", "process.roles", "node.id", "broker.id",
                         "controller.quorum.voters", "controller.quorum.bootstrap.servers",
                         "controller.listener.names", "zookeeper.connect"}


def env_to_property(name: str) -> str | None:
    """The broker property a ``KAFKA_*`` variable sets in Confluent's and Apache's images, or None."""
    if not name.startswith("KAFKA_") or name in _IMAGE_VARIABLES or name.startswith("KAFKA_JMX_"):
        return None
    rest = name[len("KAFKA_"):].lower()
    # ___ is '-', __ is '_', _ is '.' (in that order, as the images' configure scripts)
    return re.sub(r"_+", lambda m: {1: ".", 2: "_", 3: "-"}.get(len(m.group()), m.group()), rest)


class KafkaContainer:
    """testcontainers' ``KafkaContainer`` API over a local ``pykbroker.testing.BrokerProcess``."""

    def __init__(self, image: str = "confluentinc/cp-kafka:7.6.0", port: int = 9093, **kwargs) -> None:
        self.image = image  # recorded, not pulled: the broker is pykbroker
        self.port = port  # the "container" port; the host port is get_exposed_port(port)
        self.kraft_enabled = False
        self.cluster_id: str | None = None
        self.env: dict[str, str] = {}
        self.ports: dict[int, int | None] = {port: None}
        self.name: str | None = kwargs.get("name")
        self._broker: BrokerProcess | None = None
        # what testcontainers' KafkaContainer sets for a single node
        self.with_env("KAFKA_OFFSETS_TOPIC_REPLICATION_FACTOR", "1")
        self.with_env("KAFKA_OFFSETS_TOPIC_NUM_PARTITIONS", "1")
        self.with_env("KAFKA_GROUP_INITIAL_REBALANCE_DELAY_MS", "0")

    # -- configuration, each returning self as testcontainers' builders do
    def with_env(self, key: str, value: object) -> Self:
        self.env[key] = str(value)
        return self

    def with_kraft(self) -> Self:
        """Accepted: pykbroker's single node needs neither ZooKeeper nor a KRaft quorum."""
        self.kraft_enabled = True
        return self

    def with_cluster_id(self, cluster_id: str) -> Self:
        self.cluster_id = cluster_id
        return self

    def with_exposed_ports(self, *ports: int) -> Self:
        for p in ports:
            self.ports.setdefault(int(p), None)
        return self

    def with_bind_ports(self, container: int, host: int | None = None) -> Self:
        """A fixed host port for ``container`` (the Kafka port): the broker listens on it."""
        self.ports[int(container)] = host
        return self

    def with_name(self, name: str) -> Self:
        self.name = name
        return self

    def broker_properties(self) -> dict[str, str]:
        """The broker properties ``with_env`` amounts to (the ones pykbroker applies)."""
        props: dict[str, str] = {}
        for key, value in self.env.items():
            prop = env_to_property(key)
            if prop is None:
                continue
            if prop in _CONTAINER_PROPERTIES:
                log.info("%s: the container's networking, left to the local broker", key)
            elif not is_known_property(prop):
                log.warning("%s: '%s' is not a broker property pykbroker knows; ignored, as Kafka ignores "
                            "unknown configs", key, prop)
            else:
                props[prop] = value
        return props

    # -- lifetime
    def start(self, timeout: float = 30) -> Self:
        if self._broker is not None:
            return self
        # no bound host port: BrokerProcess picks one, and moves it if another socket takes it first
        broker = BrokerProcess(overrides=self.broker_properties(), port=self.ports.get(self.port))
        if self.cluster_id:
            log.info("with_cluster_id(%s): pykbroker makes its own cluster id", self.cluster_id)
        broker.start(timeout)
        self._broker = broker
        return self

    def stop(self, force: bool = True, delete_volume: bool = True) -> None:
        """Stop the broker and delete its data (a container's removal)."""
        if self._broker is not None:
            self._broker.close()
            self._broker = None

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def __del__(self) -> None:
        try:
            self.stop()
        except Exception:  # interpreter shutdown
            pass

    # -- addresses and logs
    def _running(self) -> BrokerProcess:
        if self._broker is None:
            raise RuntimeError("the container is not started")
        return self._broker

    def get_container_host_ip(self) -> str:
        return "127.0.0.1"

    def get_exposed_port(self, port: int) -> int:
        if int(port) != self.port:
            raise ValueError(f"port {port} is not exposed: only the Kafka port {self.port} is")
        return self._running().port

    def get_bootstrap_server(self) -> str:
        return f"{self.get_container_host_ip()}:{self.get_exposed_port(self.port)}"

    def get_logs(self) -> tuple[bytes, bytes]:
        """(stdout, stderr) as testcontainers gives them; the broker logs everything to one stream."""
        return self._running().log().encode(), b""
