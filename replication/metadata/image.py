"""The cluster metadata image: an immutable snapshot of everything brokers agree on.

A metadata store (the embedded single-node store, or ZooKeeper in a cluster) publishes a new
``MetadataImage`` after every committed change; handlers read the image current when their request
started, coordinators and the replica manager read it too, and the broker applies the difference
between two images (partitions to lead, follow or delete, configs to reload). Nothing here changes
after construction: a change builds a new image that shares every untouched topic with the old one.
Writes go through the store's ``MetadataWriter`` methods, never through an image.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, Protocol

from wire import ErrorCode

__all__ = ["BrokerImage", "Endpoint", "MetadataImage", "MetadataListener", "MetadataWriter", "PartitionCountChanged",
           "PartitionState",
           "TopicState", "PublishedImage", "INTERNAL_TOPICS", "NO_LEADER", "config_change", "live_endpoints",
           "partition_leader_view"]

NO_LEADER = -1
INTERNAL_TOPICS = frozenset(("__consumer_offsets", "__transaction_state", "__share_group_state"))
_EMPTY: Mapping = MappingProxyType({})


@dataclass(frozen=True, slots=True)
class PartitionState:
    """Leader, replicas and ISR of one partition, with the epochs that fence stale leaders and ISR writes.
    While it is reassigned, ``replicas`` is the full set and ``adding_replicas``/``removing_replicas`` say
    which of them join and which leave.

    ``elr`` and ``last_known_elr``: KIP-966's eligible leader replicas (replicas out of the ISR that may still
    lead cleanly) and the last ones known when the partition lost its leader; only a single node's
    offline-dir handling sets them (ZooKeeper mode has none, as Kafka 3.9)."""

    partition: int
    leader: int
    leader_epoch: int
    replicas: tuple[int, ...]
    isr: tuple[int, ...]
    partition_epoch: int = 0
    adding_replicas: tuple[int, ...] = ()
    removing_replicas: tuple[int, ...] = ()
    elr: tuple[int, ...] = ()
    last_known_elr: tuple[int, ...] = ()

    def __post_init__(self) -> None:
        object.__setattr__(self, "replicas", tuple(self.replicas))
        object.__setattr__(self, "isr", tuple(self.isr))
        object.__setattr__(self, "adding_replicas", tuple(self.adding_replicas))
        object.__setattr__(self, "removing_replicas", tuple(self.removing_replicas))
        object.__setattr__(self, "elr", tuple(self.elr))
        object.__setattr__(self, "last_known_elr", tuple(self.last_known_elr))

    def offline_replicas(self, live_brokers: Mapping[int, object]) -> list[int]:
        return [r for r in self.replicas if r not in live_brokers]


@dataclass(frozen=True, slots=True)
class TopicState:
    """A topic: its stable non-zero id, partitions (index = partition id) and explicitly set configs."""

    name: str
    topic_id: uuid.UUID
    partitions: tuple[PartitionState, ...]
    configs: Mapping[str, str] = field(default_factory=lambda: _EMPTY)

    def __post_init__(self) -> None:
        object.__setattr__(self, "partitions", tuple(self.partitions))
        object.__setattr__(self, "configs", MappingProxyType(dict(self.configs)))

    @property
    def internal(self) -> bool:
        return self.name in INTERNAL_TOPICS


@dataclass(frozen=True, slots=True)
class Endpoint:
    """One listener of a broker, as clients on that listener must reach it."""

    listener: str
    host: str
    port: int
    security_protocol: str = "PLAINTEXT"


@dataclass(frozen=True, slots=True)
class BrokerImage:
    """A live (registered) broker: its id, endpoints by listener and rack."""

    node_id: int
    endpoints: tuple[Endpoint, ...]
    rack: str | None = None

    def endpoint(self, listener: str) -> Endpoint | None:
        for e in self.endpoints:
            if e.listener == listener:
                return e
        return None


@dataclass(frozen=True, slots=True)
class MetadataImage:
    """Everything the brokers of a cluster agree on, at store offset ``offset``."""

    cluster_id: str
    offset: int = 0
    topics: Mapping[str, TopicState] = field(default_factory=lambda: _EMPTY)
    topics_by_id: Mapping[uuid.UUID, TopicState] = field(default_factory=lambda: _EMPTY)
    brokers: Mapping[int, BrokerImage] = field(default_factory=lambda: _EMPTY)
    # Every broker that ever registered, live or not, as last registered: the metadata quorum's voters (a
    # cluster only; a single node's voter is itself).
    voters: Mapping[int, BrokerImage] = field(default_factory=lambda: _EMPTY)
    controller_id: int = NO_LEADER
    # (topic, partition) -> the live brokers whose replica of it is in an offline log dir (a cluster only: each
    # broker's own on a single node are its replica manager's).
    offline_replicas: Mapping[tuple[str, int], tuple[int, ...]] = field(default_factory=lambda: _EMPTY)
    # user -> SCRAM mechanism type (1: SHA-256, 2: SHA-512) -> (iterations, salt hex, salted password hex)
    scram_credentials: Mapping[str, Mapping[int, tuple[int, str, str]]] = field(default_factory=lambda: _EMPTY)
    # Client quotas: entity (frozenset of (type, name or None for the default)) -> quota key -> value.
    client_quotas: Mapping[frozenset, Mapping[str, float]] = field(default_factory=lambda: _EMPTY)
    # Dynamic broker configs by BROKER resource name: "" is the cluster-wide default, "<node id>" one broker.
    broker_configs: Mapping[str, Mapping[str, str]] = field(default_factory=lambda: _EMPTY)
    # Group configs (KIP-848 GROUP config resources) by group id: the values set (an emptied group keeps {}).
    group_configs: Mapping[str, Mapping[str, str]] = field(default_factory=lambda: _EMPTY)
    # Client-metrics subscriptions (KIP-714 CLIENT_METRICS config resources) by name: their configs.
    client_metrics_configs: Mapping[str, Mapping[str, str]] = field(default_factory=lambda: _EMPTY)
    # Finalized feature levels (KIP-584), and the store offset of their last change (ApiVersions' epoch).
    finalized_features: Mapping[str, int] = field(default_factory=lambda: _EMPTY)
    features_epoch: int = 1

    def topic(self, name: str) -> TopicState | None:
        return self.topics.get(name)

    def partition(self, topic: str, partition: int) -> PartitionState | None:
        t = self.topics.get(topic)
        if t is None or not 0 <= partition < len(t.partitions):
            return None
        return t.partitions[partition]

    def live_broker_ids(self) -> list[int]:
        return sorted(self.brokers)


def config_change(configs: Mapping[str, str], base: Mapping[str, str] | None = None
                  ) -> Callable[[Mapping[str, str]], dict[str, str]]:
    """A config entity's change, to apply to what the store holds when it writes (again after a conflict).

    ``base`` None: the entity's configs become ``configs`` (AlterConfigs replaces the whole set). Otherwise the
    caller made ``configs`` from ``base`` (its image): only the keys it set, changed or removed are changed, so an
    incremental alteration of other keys written meanwhile (through another broker) is kept, as Kafka's controller,
    which applies each request to what it has committed, keeps it."""
    if base is None:
        return lambda _old: dict(configs)
    changed = {k: configs.get(k) for k in base.keys() | configs.keys() if base.get(k) != configs.get(k)}

    def apply(old: Mapping[str, str]) -> dict[str, str]:
        new = dict(old)
        for key, value in changed.items():
            if value is None:
                new.pop(key, None)
            else:
                new[key] = value
        return new
    return apply


def live_endpoints(image: MetadataImage, listener: str) -> list[tuple[BrokerImage, Endpoint]]:
    """The registered brokers reachable on ``listener`` (as Kafka, brokers without it are left out), by id."""
    out = []
    for node_id in sorted(image.brokers):
        b = image.brokers[node_id]
        e = b.endpoint(listener)
        if e is not None:
            out.append((b, e))
    return out


def partition_leader_view(image: MetadataImage, p: PartitionState, listener: str,
                          lost: Collection[int] = ()) -> tuple[int, int, list[int]]:
    """(error code, leader id, offline replicas) of ``p`` as Kafka's metadata cache answers on ``listener``:
    a leader that is not registered is LEADER_NOT_AVAILABLE, one without that listener LISTENER_NOT_FOUND
    (both with leader -1); replicas of unregistered brokers are offline, and so are ``lost`` ones (their
    log dir is offline)."""
    offline = [r for r in p.replicas if r not in image.brokers or r in lost]
    leader = image.brokers.get(p.leader)
    if leader is None:
        return ErrorCode.LEADER_NOT_AVAILABLE, NO_LEADER, offline
    if leader.endpoint(listener) is None:
        return ErrorCode.LISTENER_NOT_FOUND, NO_LEADER, offline
    return ErrorCode.NONE, p.leader, offline


class MetadataListener(Protocol):
    def __call__(self, old: MetadataImage, new: MetadataImage) -> None: ...


class PublishedImage:
    """A store's current image and the listeners it tells of new ones; the image's parts as properties, for
    callers that read the live store rather than a request's image. Stores set ``_image`` and ``_listeners``."""

    _image: MetadataImage
    _listeners: list[MetadataListener]

    @property
    def image(self) -> MetadataImage:
        return self._image

    def subscribe(self, listener: MetadataListener) -> None:
        """Call ``listener(old, new)`` after every committed change."""
        self._listeners.append(listener)

    @property
    def topics(self) -> Mapping[str, TopicState]:
        return self._image.topics

    @property
    def topics_by_id(self) -> Mapping[uuid.UUID, TopicState]:
        return self._image.topics_by_id

    @property
    def scram_credentials(self) -> Mapping[str, Mapping[int, Any]]:
        return self._image.scram_credentials

    @property
    def client_quotas(self) -> Mapping[frozenset, Mapping[str, float]]:
        return self._image.client_quotas

    @property
    def broker_configs(self) -> Mapping[str, Mapping[str, str]]:
        return self._image.broker_configs

    @property
    def finalized_features(self) -> Mapping[str, int]:
        return self._image.finalized_features

    @property
    def features_epoch(self) -> int:
        return self._image.features_epoch

    @property
    def offset(self) -> int:
        """Count of published changes: a store's equivalent of the metadata log's end offset."""
        return self._image.offset


class PartitionCountChanged(Exception):
    """``add_partitions`` refused: the topic no longer has the partition count the caller planned from (another
    request added partitions meanwhile); ``count`` is the one it has."""

    def __init__(self, count: int) -> None:
        super().__init__(f"the topic has {count} partitions")
        self.count = count


class MetadataWriter(Protocol):
    """The writes a metadata store takes; each publishes a new image once committed."""

    @property
    def image(self) -> MetadataImage: ...

    def subscribe(self, listener: MetadataListener) -> None: ...

    async def create_topic(self, name: str, assignments: list[list[int]], configs: Mapping[str, str]) -> TopicState: ...

    async def add_partitions(self, name: str, assignments: list[list[int]], expected: int | None = None) -> TopicState:
        """Append partitions; ``expected``: the count the caller planned from (``PartitionCountChanged`` when the
        topic has another by the time the store writes: Kafka's controller refuses the later of two requests)."""
        ...

    async def delete_topic(self, name: str) -> TopicState: ...

    async def catch_up(self, names: Collection[str]) -> None:
        """Until this broker's image has topics ``names`` as the store has them now (present or not, same id),
        bounded: admin writes decide on what the cluster has, as Kafka's controller does, where a broker of a
        cluster learns of another's writes a moment later. A single node's image is the store's: at once."""
        ...

    # the config setters: ``base``, the configs the caller made ``configs`` from (see ``config_change``)
    async def set_topic_configs(self, name: str, configs: Mapping[str, str],
                                base: Mapping[str, str] | None = None) -> None: ...

    async def set_broker_configs(self, changes: Mapping[str, Mapping[str, str]],
                                 bases: Mapping[str, Mapping[str, str]] | None = None) -> None: ...

    async def set_group_configs(self, group_id: str, configs: Mapping[str, str],
                                base: Mapping[str, str] | None = None) -> None: ...

    async def set_client_metrics_configs(self, name: str, configs: Mapping[str, str],
                                         base: Mapping[str, str] | None = None) -> None: ...

    async def alter_client_quotas(self, alterations: list[tuple[frozenset, dict[str, float | None]]]) -> None: ...

    async def set_finalized_features(self, levels: Mapping[str, int]) -> None: ...

    async def update_finalized_features(self, change: Callable[[Mapping[str, int]], Mapping[str, int]]
                                        ) -> tuple[Mapping[str, int], Mapping[str, int]]:
        """Apply ``change`` to the levels as the store has them (again, if another writer got in between) and
        store its result; returns (old, new). What ``change`` raises propagates, and nothing is written."""
        ...

    async def alter_scram_credentials(self, deletions: list[tuple[str, int]],
                                      upsertions: list[tuple[str, int, int, bytes, bytes]]) -> None: ...

    async def alter_partition(self, topic: str, partition: int, state: PartitionState) -> PartitionState | None: ...

    async def register_broker(self, broker: BrokerImage) -> None: ...
