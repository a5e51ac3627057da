"""A small blocking admin client for tests: create, delete and list topics with Kafka's own APIs.

    admin = KafkaAdmin("127.0.0.1:9092")
    admin.create_topic("orders", partitions=3, config={"cleanup.policy": "compact"})

It speaks the wire protocol with our codec (``pykbroker.testing.RawClient``), so a test suite needs no
Kafka client library to set topics up. CreateTopics and DeleteTopics go to the controller (found with
Metadata, as Kafka's AdminClient does), so it works against one broker or a cluster.
"""

from __future__ import annotations

import time

from pykbroker.testing import RawClient
from wire import ErrorCode
from wire.messages import CreateTopicsRequest, DeleteTopicsRequest, MetadataRequest
from wire.messages.create_topics_request import CreatableTopic, CreatableTopicConfig

__all__ = ["KafkaAdmin", "KafkaAdminError"]

# Versions every pykbroker and Kafka 4.4 serve.
_METADATA_VERSION = 12
_CREATE_TOPICS_VERSION = 7
_DELETE_TOPICS_VERSION = 5


class KafkaAdminError(Exception):
    """A Kafka error code answered to an admin request."""

    def __init__(self, topic: str, error_code: int, message: str | None = None) -> None:
        self.topic = topic
        self.error = ErrorCode(error_code)
        super().__init__(f"{topic}: {self.error.name}" + (f" ({message})" if message else ""))


class KafkaAdmin:
    """Topic administration against ``bootstrap`` ("host:port[,host:port...]")."""

    def __init__(self, bootstrap: str, timeout: float = 30.0) -> None:
        self.bootstrap = bootstrap
        self.timeout = timeout

    def _client(self, address: str | None = None) -> RawClient:
        last: OSError | None = None
        for candidate in [address] if address else self.bootstrap.split(","):
            try:
                return RawClient(candidate, timeout=self.timeout, client_id="pykbroker-admin")
            except OSError as exc:
                last = exc
        raise ConnectionError(f"no broker of {self.bootstrap} answers: {last}")

    def _metadata(self, topics: list[str] | None):
        from wire.messages.metadata_request import MetadataRequestTopic

        request = MetadataRequest(topics=None if topics is None else [MetadataRequestTopic(name=t) for t in topics],
                                  allow_auto_topic_creation=False)
        with self._client() as c:
            return c.request(request, _METADATA_VERSION)

    def _controller(self) -> str:
        """host:port of the controller, as Metadata names it."""
        response = self._metadata([])
        for b in response.brokers:
            if b.node_id == response.controller_id:
                return f"{b.host}:{b.port}"
        return self.bootstrap.split(",")[0]

    def _to_controller(self, request, version: int):
        """Send to the controller; again to the new one while the answer is NOT_CONTROLLER."""
        deadline = time.monotonic() + self.timeout
        while True:
            with self._client(self._controller()) as c:
                response = c.request(request, version)
            results = response.topics if hasattr(response, "topics") else response.responses
            if (all(t.error_code != ErrorCode.NOT_CONTROLLER for t in results)
                    or time.monotonic() > deadline):
                return response
            time.sleep(0.05)

    def create_topic(self, name: str, partitions: int = 1, replication_factor: int = -1,
                     config: dict[str, str] | None = None, *, wait: bool = True) -> None:
        """Create ``name``; with ``wait``, return once every partition's leader serves it.
        ``replication_factor`` -1 is the broker's ``default.replication.factor``."""
        topic = CreatableTopic(name=name, num_partitions=partitions, replication_factor=replication_factor,
                               configs=[CreatableTopicConfig(name=k, value=str(v)) for k, v in (config or {}).items()])
        response = self._to_controller(CreateTopicsRequest(topics=[topic], timeout_ms=int(self.timeout * 1000)),
                                       _CREATE_TOPICS_VERSION)
        result = response.topics[0]
        if result.error_code != ErrorCode.NONE:
            raise KafkaAdminError(name, result.error_code, result.error_message)
        if wait:
            self.wait_for_leaders(name)

    def wait_for_leaders(self, name: str) -> None:
        """Until every partition of ``name`` has a leader that serves it: Metadata names one and that
        broker answers ListOffsets (Metadata may name a leader a moment before it acts as one)."""
        from wire.messages import ListOffsetsRequest
        from wire.messages.list_offsets_request import ListOffsetsPartition, ListOffsetsTopic

        deadline = time.monotonic() + self.timeout
        while True:
            response = self._metadata([name])
            topic = response.topics[0]
            addresses = {b.node_id: f"{b.host}:{b.port}" for b in response.brokers}
            by_leader: dict[int, list[int]] = {}
            for p in topic.partitions:
                by_leader.setdefault(p.leader_id if p.error_code == ErrorCode.NONE else -1, []).append(p.partition_index)
            ready = topic.error_code == ErrorCode.NONE and topic.partitions and -1 not in by_leader
            for leader, partitions in by_leader.items() if ready else ():
                request = ListOffsetsRequest(replica_id=-1, topics=[ListOffsetsTopic(name=name, partitions=[
                    ListOffsetsPartition(partition_index=i, timestamp=-1) for i in partitions])])
                try:
                    with self._client(addresses[leader]) as c:
                        answer = c.request(request, 8)
                except (OSError, KeyError):
                    ready = False
                    break
                if any(p.error_code != ErrorCode.NONE for t in answer.topics for p in t.partitions):
                    ready = False
                    break
            if ready:
                return
            if time.monotonic() > deadline:
                raise TimeoutError(f"{name}: partitions without a serving leader after {self.timeout}s")
            time.sleep(0.05)

    def delete_topic(self, name: str, *, missing_ok: bool = False) -> None:
        """Delete ``name``; ``missing_ok``: no error when it does not exist."""
        response = self._to_controller(DeleteTopicsRequest(topic_names=[name], timeout_ms=int(self.timeout * 1000)),
                                       _DELETE_TOPICS_VERSION)
        result = response.responses[0]
        if result.error_code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION and missing_ok:
            return
        if result.error_code != ErrorCode.NONE:
            raise KafkaAdminError(name, result.error_code, result.error_message)

    def list_topics(self, *, internal: bool = False) -> list[str]:
        """Names of the topics, sorted; internal ones (``__consumer_offsets``...) only with ``internal``."""
        return sorted(t.name for t in self._metadata(None).topics if internal or not t.is_internal)

    def partitions(self, name: str) -> int:
        """How many partitions ``name`` has."""
        topic = self._metadata([name]).topics[0]
        if topic.error_code != ErrorCode.NONE:
            raise KafkaAdminError(name, topic.error_code)
        return len(topic.partitions)
