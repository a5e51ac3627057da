"""Kafka's ZooKeeper layout: every znode path and its JSON, one class per znode, as Apache Kafka 3.9.1 writes them.

Paths are relative to the chroot of ``zookeeper.connect``. Encoders give the bytes Kafka writes, byte for byte:
compact JSON (Jackson's), Kafka's field names and versions, and Kafka's key order. Kafka builds most of these
documents from Scala or Java hash maps, so its key order is the iteration order of those maps, which this
module reproduces (``_scala_mutable_map``, ``_scala_immutable_map``, ``_java_properties``) rather than
hard-coding one observed order: the partition maps of a topic znode depend on the partition numbers.
Decoders accept any key order and whitespace, as Kafka's do, and raise ``ZNodeDecodeError`` on bad input.

Checked against a real Kafka 3.9.1 cluster by tests/replication/metadata/zk/test_znodes.py, using the dump made by
compat_tests/jvm/kafka39/dump_zk_layout.py. Znodes Kafka 3.9.1 only reads (reassignment and preferred-replica
election requests, ISR-change and log-dir-event notifications) were written with these bytes and consumed by
the 3.9.1 controller.

Surprises in Kafka's layout (all verified against 3.9.1):
- /controller is version 2 and carries ``kraftControllerEpoch`` (-1 outside a KRaft migration).
- /cluster/id has its ``version`` as the *string* "1"; /latest_producer_id_block has its block bounds as strings.
- /feature is version 2 (no ``min_version_level``); with ZooKeeper-era features it is ``{"features":{}}``.
- /brokers/ids/<id> is created and then rewritten once at start-up, so a live broker's znode has version 1.
- A topic without configs still gets ``/config/topics/<t>`` with ``{"version":1,"config":{}}``.
- /config/users/<default> exists with null data when only the <default>/clients/<default> entity has a quota;
  every entity path inside a config_change notification uses sanitized names (``users/<default>/clients/x``).
- Literal ACL change notifications are the plain string ``TOPIC:name`` (upper case), prefixed ones are JSON.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from wire import java

__all__ = [
    "ZNodeDecodeError", "Endpoint", "sanitize", "desanitize", "DEFAULT_ENTITY", "PERSISTENT_PATHS",
    "ClusterIdZNode", "BrokerIdsZNode", "BrokerIdZNode", "BrokerInfo", "BrokerSequenceIdZNode", "QuorumVoterZNode",
    "OfflineReplicasZNode",
    "TopicsZNode", "TopicZNode", "TopicAssignment", "TopicPartitionsZNode", "TopicPartitionZNode",
    "TopicPartitionStateZNode", "PartitionState", "ControllerZNode", "ControllerRegistration",
    "ControllerEpochZNode", "ConfigEntityTypeZNode", "ConfigEntityZNode", "ConfigEntityChangeNotificationZNode",
    "ConfigEntityChangeNotificationSequenceZNode", "DeleteTopicsZNode", "DeleteTopicsTopicZNode",
    "ReassignPartitionsZNode", "PreferredReplicaElectionZNode", "IsrChangeNotificationZNode",
    "IsrChangeNotificationSequenceZNode", "LogDirEventNotificationZNode", "LogDirEventNotificationSequenceZNode",
    "ProducerIdBlockZNode", "ProducerIdBlock", "FeatureZNode", "FinalizedFeatures", "AclEntry", "ResourceZNode",
    "LiteralAclChangeZNode", "ExtendedAclChangeZNode", "ConsumerPathZNode", "ACL_RESOURCE_TYPES",
]


class ZNodeDecodeError(ValueError):
    """A znode's data is not what Kafka writes there (bad JSON, a missing field, an unknown version)."""


# -- Kafka's JSON: Jackson's compact output in the iteration order of the map Kafka built -------------------

def _json(obj: Any) -> bytes:
    """Jackson's ``writeValueAsBytes``: no spaces, UTF-8, non-ASCII left as is."""
    return json.dumps(obj, separators=(",", ":"), ensure_ascii=False).encode("utf-8")


def _parse(data: bytes | None, what: str) -> Any:
    if data is None:
        raise ZNodeDecodeError(f"{what}: no data")
    try:
        return json.loads(data)
    except (ValueError, UnicodeDecodeError) as exc:
        raise ZNodeDecodeError(f"{what}: not JSON ({exc})") from None


def _object(data: bytes | None, what: str) -> dict:
    value = _parse(data, what)
    if not isinstance(value, dict):
        raise ZNodeDecodeError(f"{what}: expected a JSON object")
    return value


def _field(obj: Mapping, key: str, kind: type | tuple[type, ...], what: str) -> Any:
    value = obj.get(key)
    if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
        raise ZNodeDecodeError(f"{what}: field '{key}' missing or not {getattr(kind, '__name__', kind)}")
    return value


def _int_list(value: Any, what: str) -> list[int]:
    if not isinstance(value, list) or not all(isinstance(x, int) and not isinstance(x, bool) for x in value):
        raise ZNodeDecodeError(f"{what}: expected a list of integers")
    return list(value)


def _signed(x: int) -> int:
    x &= 0xFFFFFFFF
    return x - (1 << 32) if x & 0x80000000 else x


def _spread(h: int) -> int:
    """``h ^ (h >>> 16)``: the bit spreading of Scala's mutable.HashMap and Java's ConcurrentHashMap."""
    return _signed(h ^ ((h & 0xFFFFFFFF) >> 16))


def _scala_mutable_map(items: Iterable[tuple[str, Any]], table_size: int = 16) -> dict[str, Any]:
    """The iteration order of a Scala 2.13 ``mutable.HashMap`` of string keys holding ``items``.

    Buckets are ``spread(hash) & (size - 1)``, each kept sorted by signed hash; the table starts at
    ``table_size`` and doubles when an insert would reach 0.75 of it. Iteration walks buckets in order.
    """
    items = list(items)
    size = table_size
    while len(items) >= size * 0.75:
        size *= 2
    hashed = [(_spread(java.string_hash(k)), k, v) for k, v in items]
    hashed.sort(key=lambda e: (e[0] & (size - 1), e[0]))
    return {k: v for _, k, v in hashed}


def _scala_improve(h: int) -> int:
    """``scala.collection.Hashing.improve``: the hash an immutable Scala HashMap (CHAMP) indexes by."""
    h = _signed(h + ~_signed(h << 9))
    h = _signed(h ^ ((h & 0xFFFFFFFF) >> 14))
    h = _signed(h + _signed(h << 4))
    return _signed(h ^ ((h & 0xFFFFFFFF) >> 10))


def _scala_immutable_map(items: Iterable[tuple[str, Any]]) -> dict[str, Any]:
    """The iteration order of a Scala 2.13 immutable ``Map`` of string keys built from ``items`` in order.

    Up to four entries it is a Map1..Map4, which keeps insertion order; past that a CHAMP trie, which
    iterates a node's own entries by their 5-bit hash fragment, then its sub-nodes.
    """
    items = list(items)
    if len(items) <= 4:
        return dict(items)

    def walk(entries: list[tuple[int, str, Any]], shift: int) -> list[tuple[int, str, Any]]:
        by_fragment: dict[int, list] = {}
        for e in entries:
            by_fragment.setdefault(((e[0] & 0xFFFFFFFF) >> shift) & 31, []).append(e)
        own = [es[0] for _, es in sorted(by_fragment.items()) if len(es) == 1]
        nested = [e for _, es in sorted(by_fragment.items()) if len(es) > 1 for e in walk(es, shift + 5)]
        return own + nested

    return {k: v for _, k, v in walk([(_scala_improve(java.string_hash(k)), k, v) for k, v in items], 0)}


def _java_properties(items: Iterable[tuple[str, str]]) -> dict[str, str]:
    """The iteration order of a ``java.util.Properties`` (a ConcurrentHashMap inside) into which ``items`` were put
    in order; a key put again keeps its place and takes the later value."""
    items = list(items)
    values = dict(items)
    return {k: values[k] for k in java.concurrent_hash_map_order(k for k, _ in items)}


# -- names --------------------------------------------------------------------------------------------------

DEFAULT_ENTITY = "<default>"
_UNRESERVED = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789.-_")


def sanitize(name: str) -> str:
    """Kafka's ``Sanitizer.sanitize``: a user or client id as it appears in a znode path (URL-encoding
    of UTF-8 bytes, with ``*`` and space written %2A and %20)."""
    return "".join(ch if ch in _UNRESERVED else "".join(f"%{b:02X}" for b in ch.encode("utf-8")) for ch in name)


def desanitize(name: str) -> str:
    """Kafka's ``Sanitizer.desanitize`` (URL decoding)."""
    from urllib.parse import unquote

    return unquote(name, encoding="utf-8", errors="strict")


# -- /cluster -----------------------------------------------------------------------------------------------

class ClusterIdZNode:
    """``/cluster/id``: ``{"version":"1","id":"<22-char base64 uuid>"}``, written once by the first broker."""

    path = "/cluster/id"

    @staticmethod
    def encode(cluster_id: str) -> bytes:
        return _json({"version": "1", "id": cluster_id})

    @staticmethod
    def decode(data: bytes | None) -> str:
        return _field(_object(data, ClusterIdZNode.path), "id", str, ClusterIdZNode.path)


# -- /brokers -----------------------------------------------------------------------------------------------

class BrokerIdsZNode:
    """``/brokers/ids``: the parent of the live brokers' ephemeral registrations (null data)."""

    path = "/brokers/ids"


class BrokerSequenceIdZNode:
    """``/brokers/seqid``: sequence for generated broker ids (null data; created at start-up)."""

    path = "/brokers/seqid"


class QuorumVoterZNode:
    """``/pykbroker/voters/<id>`` (pykbroker's own, persistent): every broker that ever registered, with its
    latest registration's JSON (``BrokerIdZNode``'s). These are the cluster's metadata-quorum voters as
    DescribeQuorum shows them: a KRaft quorum's voter set (``controller.quorum.voters``) stays whole while a
    voter is down, where ``/brokers/ids`` loses a broker with its session."""

    parent = "/pykbroker/voters"

    @staticmethod
    def path(broker_id: int) -> str:
        return f"{QuorumVoterZNode.parent}/{broker_id}"


class OfflineReplicasZNode:
    """``/pykbroker/offline_replicas/<id>`` (pykbroker's own, ephemeral in the broker's session): the partitions
    whose replica on broker ``id`` is in an offline log dir, ``{"version":1,"partitions":{"<topic>":[0,...]}}``.
    Kafka's KRaft brokers register their offline dirs and its controller marks their replicas offline for every
    broker's Metadata; these znodes tell every broker the same."""

    parent = "/pykbroker/offline_replicas"

    @staticmethod
    def path(broker_id: int) -> str:
        return f"{OfflineReplicasZNode.parent}/{broker_id}"

    @staticmethod
    def encode(partitions: Iterable[tuple[str, int]]) -> bytes:
        by_topic: dict[str, list[int]] = {}
        for topic, partition in sorted(partitions):
            by_topic.setdefault(topic, []).append(partition)
        return _json({"version": 1, "partitions": by_topic})

    @staticmethod
    def decode(data: bytes | None) -> tuple[tuple[str, int], ...]:
        what = "offline replicas"
        topics = _field(_object(data, what), "partitions", dict, what)
        out: list[tuple[str, int]] = []
        for topic, partitions in topics.items():
            if not isinstance(partitions, list) or not all(isinstance(p, int) for p in partitions):
                raise ZNodeDecodeError(f"{what}: partitions of {topic!r} are not a list of ints")
            out.extend((topic, p) for p in partitions)
        return tuple(out)


@dataclass(frozen=True)
class Endpoint:
    """One advertised listener: ``NAME://host:port`` with its security protocol."""

    listener_name: str
    host: str | None
    port: int
    security_protocol: str = "PLAINTEXT"

    @property
    def connection_string(self) -> str:
        host = self.host or ""
        if ":" in host:  # Utils.formatAddress brackets IPv6 literals
            host = f"[{host}]"
        return f"{self.listener_name}://{host}:{self.port}"


@dataclass(frozen=True)
class BrokerInfo:
    """A decoded broker registration."""

    broker_id: int
    endpoints: tuple[Endpoint, ...]
    rack: str | None = None
    jmx_port: int = -1
    timestamp_ms: int = 0
    features: Mapping[str, Mapping[str, int]] = field(default_factory=dict)
    version: int = 5


class BrokerIdZNode:
    """``/brokers/ids/<id>`` (ephemeral): a live broker's registration, JSON version 5.

    ``host``/``port`` repeat the first PLAINTEXT endpoint (null and -1 without one) for old clients;
    ``rack`` is present only when set; ``features`` are the broker's supported features (empty in
    ZooKeeper mode).
    """

    @staticmethod
    def path(broker_id: int) -> str:
        return f"/brokers/ids/{broker_id}"

    @staticmethod
    def encode(broker_id: int, endpoints: Sequence[Endpoint], *, rack: str | None = None, jmx_port: int = -1,
               timestamp_ms: int, features: Mapping[str, Mapping[str, int]] | None = None) -> bytes:
        plaintext = next((e for e in endpoints if e.security_protocol == "PLAINTEXT"), None)
        items: list[tuple[str, Any]] = [
            ("version", 5), ("host", plaintext.host if plaintext else None), ("port", plaintext.port if plaintext else -1),
            ("endpoints", [e.connection_string for e in endpoints]), ("jmx_port", jmx_port),
            ("timestamp", str(timestamp_ms)),
        ]
        if rack is not None:
            items.append(("rack", rack))
        items.append(("listener_security_protocol_map",
                      _scala_immutable_map((e.listener_name, e.security_protocol) for e in endpoints)))
        items.append(("features", {name: dict(v) for name, v in (features or {}).items()}))
        # mutable.Map(6 entries) is sized for them: a table of 16
        return _json(_scala_mutable_map(items, 16))

    @staticmethod
    def decode(broker_id: int, data: bytes | None) -> BrokerInfo:
        what = BrokerIdZNode.path(broker_id)
        obj = _object(data, what)
        version = _field(obj, "version", int, what)
        if version < 1:
            raise ZNodeDecodeError(f"{what}: unsupported registration version {version}")
        endpoints: tuple[Endpoint, ...]
        if version == 1:
            endpoints = (Endpoint("PLAINTEXT", _field(obj, "host", str, what), _field(obj, "port", int, what)),)
        else:
            protocols = obj.get("listener_security_protocol_map") or {}
            if not isinstance(protocols, dict):
                raise ZNodeDecodeError(f"{what}: listener_security_protocol_map is not an object")
            endpoints = tuple(_parse_endpoint(s, protocols, what) for s in _field(obj, "endpoints", list, what))
        rack = obj.get("rack")
        timestamp = obj.get("timestamp", "0")
        try:
            timestamp_ms = int(timestamp)
        except (TypeError, ValueError):
            raise ZNodeDecodeError(f"{what}: bad timestamp {timestamp!r}") from None
        features = obj.get("features") or {}
        return BrokerInfo(broker_id, endpoints, rack if isinstance(rack, str) else None,
                          int(obj.get("jmx_port", -1)), timestamp_ms, features, version)


def _parse_endpoint(s: Any, protocols: Mapping[str, str], what: str) -> Endpoint:
    if not isinstance(s, str) or "://" not in s:
        raise ZNodeDecodeError(f"{what}: bad endpoint {s!r}")
    name, rest = s.split("://", 1)
    host, sep, port = rest.rpartition(":")
    if not sep or not port.lstrip("-").isdigit():
        raise ZNodeDecodeError(f"{what}: bad endpoint {s!r}")
    return Endpoint(name, host.strip("[]"), int(port), protocols.get(name, name))


class TopicsZNode:
    """``/brokers/topics``: one child per topic."""

    path = "/brokers/topics"


@dataclass(frozen=True)
class TopicAssignment:
    """A decoded topic znode: replicas per partition (and any reassignment in flight), and the topic id."""

    partitions: Mapping[int, list[int]]
    topic_id: str | None = None
    adding_replicas: Mapping[int, list[int]] = field(default_factory=dict)
    removing_replicas: Mapping[int, list[int]] = field(default_factory=dict)


class TopicZNode:
    """``/brokers/topics/<topic>``: the replica assignment, JSON version 3 with the topic id (base64 Uuid).

    ``adding_replicas``/``removing_replicas`` list only partitions being reassigned.
    """

    @staticmethod
    def path(topic: str) -> str:
        return f"/brokers/topics/{topic}"

    @staticmethod
    def encode(partitions: Mapping[int, Sequence[int]], topic_id: str | None, *,
               adding_replicas: Mapping[int, Sequence[int]] | None = None,
               removing_replicas: Mapping[int, Sequence[int]] | None = None) -> bytes:
        def partition_map(m: Mapping[int, Sequence[int]] | None) -> dict:
            return _scala_mutable_map((str(p), list(r)) for p, r in (m or {}).items())

        items = [("version", 3), ("partitions", partition_map(partitions)),
                 ("adding_replicas", partition_map({p: r for p, r in (adding_replicas or {}).items() if r})),
                 ("removing_replicas", partition_map({p: r for p, r in (removing_replicas or {}).items() if r}))]
        if topic_id is not None:
            items.append(("topic_id", topic_id))
        # mutable.Map(4 entries) is sized for them: a table of 8
        return _json(_scala_mutable_map(items, 8))

    @staticmethod
    def decode(topic: str, data: bytes | None) -> TopicAssignment:
        what = TopicZNode.path(topic)
        obj = _object(data, what)

        def partition_map(key: str) -> dict[int, list[int]]:
            m = obj.get(key) or {}
            if not isinstance(m, dict):
                raise ZNodeDecodeError(f"{what}: {key} is not an object")
            try:
                return {int(p): _int_list(r, what) for p, r in m.items()}
            except ValueError as exc:
                raise ZNodeDecodeError(f"{what}: {exc}") from None

        topic_id = obj.get("topic_id")
        if topic_id is not None and not isinstance(topic_id, str):
            raise ZNodeDecodeError(f"{what}: topic_id is not a string")
        return TopicAssignment(partition_map("partitions"), topic_id, partition_map("adding_replicas"),
                               partition_map("removing_replicas"))


class TopicPartitionsZNode:
    """``/brokers/topics/<topic>/partitions`` (null data)."""

    @staticmethod
    def path(topic: str) -> str:
        return f"/brokers/topics/{topic}/partitions"


class TopicPartitionZNode:
    """``/brokers/topics/<topic>/partitions/<partition>`` (null data)."""

    @staticmethod
    def path(topic: str, partition: int) -> str:
        return f"/brokers/topics/{topic}/partitions/{partition}"


@dataclass(frozen=True)
class PartitionState:
    """A decoded partition state: leader (-1: none), leader epoch, ISR, the controller epoch that wrote it,
    the leader recovery state (0 RECOVERED, 1 RECOVERING) and the znode version (Kafka's partition epoch)."""

    leader: int
    leader_epoch: int
    isr: list[int]
    controller_epoch: int
    leader_recovery_state: int = 0
    zk_version: int = -1


class TopicPartitionStateZNode:
    """``/brokers/topics/<topic>/partitions/<partition>/state``: leader and ISR, JSON version 1.

    Updates are conditional on the znode version, which is the partition epoch. ``leader_recovery_state``
    appears only while RECOVERING (after an unclean election).
    """

    @staticmethod
    def path(topic: str, partition: int) -> str:
        return f"/brokers/topics/{topic}/partitions/{partition}/state"

    @staticmethod
    def encode(leader: int, leader_epoch: int, isr: Sequence[int], controller_epoch: int,
               leader_recovery_state: int = 0) -> bytes:
        items = [("version", 1), ("leader", leader), ("leader_epoch", leader_epoch),
                 ("controller_epoch", controller_epoch), ("isr", list(isr))]
        if leader_recovery_state != 0:
            items.append(("leader_recovery_state", leader_recovery_state))
        return _json(_scala_immutable_map(items))

    @staticmethod
    def decode(data: bytes | None, zk_version: int = -1, what: str = "partition state") -> PartitionState:
        obj = _object(data, what)
        return PartitionState(_field(obj, "leader", int, what), _field(obj, "leader_epoch", int, what),
                              _int_list(obj.get("isr"), what), _field(obj, "controller_epoch", int, what),
                              int(obj.get("leader_recovery_state", 0)), zk_version)


# -- the controller -----------------------------------------------------------------------------------------

@dataclass(frozen=True)
class ControllerRegistration:
    broker_id: int
    timestamp_ms: int
    kraft_controller_epoch: int = -1


class ControllerZNode:
    """``/controller`` (ephemeral): the elected controller, JSON version 2 (``kraftControllerEpoch`` is -1
    unless a KRaft controller holds it during a migration)."""

    path = "/controller"

    @staticmethod
    def encode(broker_id: int, timestamp_ms: int, kraft_controller_epoch: int = -1) -> bytes:
        return _json({"version": 2, "brokerid": broker_id, "timestamp": str(timestamp_ms),
                      "kraftControllerEpoch": kraft_controller_epoch})

    @staticmethod
    def decode(data: bytes | None) -> ControllerRegistration:
        obj = _object(data, ControllerZNode.path)
        try:
            timestamp = int(obj.get("timestamp", "0"))
        except (TypeError, ValueError):
            raise ZNodeDecodeError(f"{ControllerZNode.path}: bad timestamp") from None
        return ControllerRegistration(_field(obj, "brokerid", int, ControllerZNode.path), timestamp,
                                      int(obj.get("kraftControllerEpoch", -1)))


class ControllerEpochZNode:
    """``/controller_epoch``: the controller epoch as a decimal string (not JSON); bumped conditionally on
    its znode version by every new controller."""

    path = "/controller_epoch"

    @staticmethod
    def encode(epoch: int) -> bytes:
        return str(epoch).encode("ascii")

    @staticmethod
    def decode(data: bytes | None) -> int:
        try:
            return int((data or b"").decode("ascii"))
        except (UnicodeDecodeError, ValueError):
            raise ZNodeDecodeError(f"/controller_epoch: not an integer: {data!r}") from None


# -- /config ------------------------------------------------------------------------------------------------

class ConfigEntityTypeZNode:
    """``/config/<type>``: ``topics``, ``clients``, ``users``, ``brokers``, ``ips`` (null data)."""

    TYPES = ("topics", "clients", "users", "brokers", "ips")

    @staticmethod
    def path(entity_type: str) -> str:
        return f"/config/{entity_type}"


class ConfigEntityZNode:
    """``/config/<type>/<name>`` (and ``/config/users/<user>/clients/<client>``): dynamic configs and quotas,
    ``{"version":1,"config":{...}}`` with every value a string. Names of users and clients are sanitized;
    ``<default>`` is the default entity. SCRAM credentials live here too (``/config/users/<user>``, keys
    ``SCRAM-SHA-256``/``SCRAM-SHA-512``)."""

    @staticmethod
    def path(entity_type: str, name: str) -> str:
        """``name`` is the entity path below the type, already sanitized (``alice/clients/client-a``)."""
        return f"/config/{entity_type}/{name}"

    @staticmethod
    def encode(config: Mapping[str, str]) -> bytes:
        return _json({"version": 1, "config": _java_properties((k, str(v)) for k, v in config.items())})

    @staticmethod
    def decode(data: bytes | None) -> dict[str, str]:
        """Kafka reads null or unparseable data as no configs."""
        if data is None:
            return {}
        obj = _object(data, "config entity")
        config = obj.get("config") or {}
        if not isinstance(config, dict):
            raise ZNodeDecodeError("config entity: 'config' is not an object")
        return {k: v if isinstance(v, str) else json.dumps(v) for k, v in config.items()}


class ConfigEntityChangeNotificationZNode:
    """``/config/changes``: parent of the config change notifications."""

    path = "/config/changes"


class ConfigEntityChangeNotificationSequenceZNode:
    """``/config/changes/config_change_<10-digit seq>`` (persistent sequential):
    ``{"version":2,"entity_path":"<type>/<sanitized name>"}``. Brokers reread the entity it names."""

    prefix = "config_change_"
    create_path = "/config/changes/config_change_"

    @staticmethod
    def encode(entity_path: str) -> bytes:
        return _json({"version": 2, "entity_path": entity_path})

    @staticmethod
    def decode(data: bytes | None) -> str:
        obj = _object(data, "config change")
        if obj.get("version") != 2:
            raise ZNodeDecodeError(f"config change: unsupported version {obj.get('version')}")
        return _field(obj, "entity_path", str, "config change")


# -- /admin -------------------------------------------------------------------------------------------------

class DeleteTopicsZNode:
    """``/admin/delete_topics``: parent of pending topic deletions."""

    path = "/admin/delete_topics"


class DeleteTopicsTopicZNode:
    """``/admin/delete_topics/<topic>``: a deletion request (null data), removed when the deletion is done."""

    @staticmethod
    def path(topic: str) -> str:
        return f"/admin/delete_topics/{topic}"


def _partitions_json(partitions: Iterable[tuple[str, int]]) -> list[dict]:
    return [{"topic": t, "partition": p} for t, p in partitions]


def _decode_partitions(data: bytes | None, what: str) -> list[tuple[str, int]]:
    obj = _object(data, what)
    out = []
    for entry in _field(obj, "partitions", list, what):
        if not isinstance(entry, dict):
            raise ZNodeDecodeError(f"{what}: partition entry is not an object")
        out.append((_field(entry, "topic", str, what), _field(entry, "partition", int, what)))
    return out


class ReassignPartitionsZNode:
    """``/admin/reassign_partitions``: a legacy reassignment request (ZooKeeper-era tools), version 1;
    the controller applies and deletes it."""

    path = "/admin/reassign_partitions"

    @staticmethod
    def encode(reassignments: Mapping[tuple[str, int], Sequence[int]]) -> bytes:
        return _json({"version": 1, "partitions": [{"topic": t, "partition": p, "replicas": list(r)}
                                                   for (t, p), r in reassignments.items()]})

    @staticmethod
    def decode(data: bytes | None) -> dict[tuple[str, int], list[int]]:
        what = ReassignPartitionsZNode.path
        obj = _object(data, what)
        out = {}
        for entry in _field(obj, "partitions", list, what):
            if not isinstance(entry, dict):
                raise ZNodeDecodeError(f"{what}: partition entry is not an object")
            out[(_field(entry, "topic", str, what), _field(entry, "partition", int, what))] = \
                _int_list(entry.get("replicas"), what)
        return out


class PreferredReplicaElectionZNode:
    """``/admin/preferred_replica_election``: partitions whose preferred replica should lead, version 1."""

    path = "/admin/preferred_replica_election"

    @staticmethod
    def encode(partitions: Iterable[tuple[str, int]]) -> bytes:
        return _json({"version": 1, "partitions": _partitions_json(partitions)})

    @staticmethod
    def decode(data: bytes | None) -> list[tuple[str, int]]:
        return _decode_partitions(data, PreferredReplicaElectionZNode.path)


# -- notifications ------------------------------------------------------------------------------------------

class IsrChangeNotificationZNode:
    """``/isr_change_notification``: parent of ISR change notifications (created at start-up)."""

    path = "/isr_change_notification"


class IsrChangeNotificationSequenceZNode:
    """``/isr_change_notification/isr_change_<seq>``: partitions whose ISR a broker changed, version 1
    (brokers before inter-broker protocol 2.7; newer ones send AlterPartition to the controller)."""

    prefix = "isr_change_"
    create_path = "/isr_change_notification/isr_change_"

    @staticmethod
    def encode(partitions: Iterable[tuple[str, int]]) -> bytes:
        return _json({"version": 1, "partitions": _partitions_json(partitions)})

    @staticmethod
    def decode(data: bytes | None) -> list[tuple[str, int]]:
        return _decode_partitions(data, "isr change notification")


class LogDirEventNotificationZNode:
    """``/log_dir_event_notification``: parent of log directory failure notifications."""

    path = "/log_dir_event_notification"


class LogDirEventNotificationSequenceZNode:
    """``/log_dir_event_notification/log_dir_event_<seq>``: ``{"version":1,"broker":id,"event":1}``, a broker
    telling the controller one of its log dirs failed (event 1 is the only one)."""

    prefix = "log_dir_event_"
    create_path = "/log_dir_event_notification/log_dir_event_"
    LOG_DIR_FAILURE_EVENT = 1

    @staticmethod
    def encode(broker_id: int) -> bytes:
        return _json({"version": 1, "broker": broker_id, "event": LogDirEventNotificationSequenceZNode.LOG_DIR_FAILURE_EVENT})

    @staticmethod
    def decode(data: bytes | None) -> int:
        return _field(_object(data, "log dir event"), "broker", int, "log dir event")


# -- producer ids, features ---------------------------------------------------------------------------------

@dataclass(frozen=True)
class ProducerIdBlock:
    """Producer ids ``first .. last`` (inclusive) owned by ``broker_id``."""

    broker_id: int
    first: int
    last: int

    @property
    def size(self) -> int:
        return self.last - self.first + 1


class ProducerIdBlockZNode:
    """``/latest_producer_id_block``: the last block handed out, version 1, bounds as decimal strings.
    Created empty at start-up; every allocation is a conditional set on its znode version."""

    path = "/latest_producer_id_block"

    @staticmethod
    def encode(block: ProducerIdBlock) -> bytes:
        return _json({"version": 1, "broker": block.broker_id, "block_start": str(block.first),
                      "block_end": str(block.last)})

    @staticmethod
    def decode(data: bytes | None) -> ProducerIdBlock | None:
        """None for the empty znode Kafka creates at start-up (no block allocated yet)."""
        if not data:
            return None
        what = ProducerIdBlockZNode.path
        obj = _object(data, what)
        if obj.get("version") != 1:
            raise ZNodeDecodeError(f"{what}: unsupported version {obj.get('version')}")
        try:
            return ProducerIdBlock(_field(obj, "broker", int, what), int(obj["block_start"]), int(obj["block_end"]))
        except (KeyError, TypeError, ValueError):
            raise ZNodeDecodeError(f"{what}: bad block bounds") from None


@dataclass(frozen=True)
class FinalizedFeatures:
    """Cluster-wide finalized feature levels; ``enabled`` is the znode's status (1 enabled, 0 disabled)."""

    features: Mapping[str, int]
    enabled: bool = True
    version: int = 2


class FeatureZNode:
    """``/feature``: finalized features (KIP-584), version 2: ``{"features":{name:{"max_version_level":n}},
    "version":2,"status":1}`` (version 1 also had ``min_version_level``)."""

    path = "/feature"

    @staticmethod
    def encode(features: Mapping[str, int], enabled: bool = True) -> bytes:
        feature_map = _scala_immutable_map((name, {"max_version_level": level}) for name, level in features.items())
        # mutable.Map(3 entries): a table of 8
        return _json(_scala_mutable_map([("version", 2), ("status", 1 if enabled else 0), ("features", feature_map)], 8))

    @staticmethod
    def decode(data: bytes | None) -> FinalizedFeatures:
        what = FeatureZNode.path
        obj = _object(data, what)
        version = _field(obj, "version", int, what)
        if version not in (1, 2):
            raise ZNodeDecodeError(f"{what}: unsupported version {version}")
        status = _field(obj, "status", int, what)
        if status not in (0, 1):
            raise ZNodeDecodeError(f"{what}: malformed status {status}")
        features = {}
        for name, levels in _field(obj, "features", dict, what).items():
            if not isinstance(levels, dict) or not isinstance(levels.get("max_version_level"), int):
                raise ZNodeDecodeError(f"{what}: max_version_level absent for {name}")
            if levels["max_version_level"] < 1:
                raise ZNodeDecodeError(f"{what}: max_version_level of {name} below 1")
            features[name] = levels["max_version_level"]
        return FinalizedFeatures(features, status == 1, version)


# -- ACLs (AclAuthorizer) -----------------------------------------------------------------------------------

ACL_RESOURCE_TYPES = ("Topic", "Group", "Cluster", "TransactionalId", "DelegationToken", "User")
"""Kafka's resource type names in ACL paths; the authorizer creates one znode per type under each store."""


@dataclass(frozen=True)
class AclEntry:
    """One ACL: ``principal`` (``User:alice``), ``host`` (``*`` for any), ``operation`` and ``permission_type``
    in Kafka's ZooKeeper spelling (``Read``, ``Write``, ``Describe``, ``Allow``, ``Deny``, ...)."""

    principal: str
    permission_type: str
    host: str
    operation: str


class ResourceZNode:
    """``/kafka-acl/<ResourceType>/<name>`` (literal patterns) and ``/kafka-acl-extended/prefixed/<Type>/<name>``:
    ``{"acls":[{"principal","permissionType","host","operation"}],"version":1}``; updates are conditional on
    the znode version."""

    @staticmethod
    def path(resource_type: str, name: str, pattern_type: str = "LITERAL") -> str:
        if pattern_type.upper() == "LITERAL":
            return f"/kafka-acl/{resource_type}/{name}"
        return f"/kafka-acl-extended/{pattern_type.lower()}/{resource_type}/{name}"

    @staticmethod
    def encode(acls: Iterable[AclEntry]) -> bytes:
        return _json({"acls": [{"principal": a.principal, "permissionType": a.permission_type, "host": a.host,
                                "operation": a.operation} for a in acls], "version": 1})

    @staticmethod
    def decode(data: bytes | None) -> list[AclEntry]:
        if not data:
            return []
        obj = _object(data, "acls")
        out = []
        for a in _field(obj, "acls", list, "acls"):
            if not isinstance(a, dict):
                raise ZNodeDecodeError("acls: entry is not an object")
            out.append(AclEntry(_field(a, "principal", str, "acls"), _field(a, "permissionType", str, "acls"),
                                _field(a, "host", str, "acls"), _field(a, "operation", str, "acls")))
        return out


class LiteralAclChangeZNode:
    """``/kafka-acl-changes/acl_changes_<seq>``: ``RESOURCE_TYPE:name`` (upper-case type, plain text)."""

    prefix = "acl_changes_"
    create_path = "/kafka-acl-changes/acl_changes_"

    @staticmethod
    def encode(resource_type: str, name: str) -> bytes:
        return f"{_upper_resource_type(resource_type)}:{name}".encode()

    @staticmethod
    def decode(data: bytes | None) -> tuple[str, str]:
        text = (data or b"").decode("utf-8", "replace")
        resource_type, sep, name = text.partition(":")
        if not sep:
            raise ZNodeDecodeError(f"acl change: expected ResourceType:ResourceName, got {text!r}")
        return resource_type, name


class ExtendedAclChangeZNode:
    """``/kafka-acl-extended-changes/acl_changes_<seq>``:
    ``{"version":1,"resourceType":"TOPIC","name":...,"patternType":"PREFIXED"}``."""

    prefix = "acl_changes_"
    create_path = "/kafka-acl-extended-changes/acl_changes_"

    @staticmethod
    def encode(resource_type: str, name: str, pattern_type: str) -> bytes:
        return _json({"version": 1, "resourceType": _upper_resource_type(resource_type), "name": name,
                      "patternType": pattern_type.upper()})

    @staticmethod
    def decode(data: bytes | None) -> tuple[str, str, str]:
        obj = _object(data, "acl change")
        return (_field(obj, "resourceType", str, "acl change"), _field(obj, "name", str, "acl change"),
                _field(obj, "patternType", str, "acl change"))


def _upper_resource_type(resource_type: str) -> str:
    """``TransactionalId`` -> ``TRANSACTIONAL_ID`` (the Java enum's name)."""
    out = []
    for i, ch in enumerate(resource_type):
        if ch.isupper() and i and not resource_type[i - 1].isupper():
            out.append("_")
        out.append(ch.upper())
    return "".join(out)


class ConsumerPathZNode:
    """``/consumers``: the old (pre-0.9) consumers' root; Kafka still creates it at start-up."""

    path = "/consumers"


PERSISTENT_PATHS = (
    ConsumerPathZNode.path, BrokerIdsZNode.path, TopicsZNode.path, ConfigEntityChangeNotificationZNode.path,
    DeleteTopicsZNode.path, BrokerSequenceIdZNode.path, IsrChangeNotificationZNode.path, ProducerIdBlockZNode.path,
    LogDirEventNotificationZNode.path, *(ConfigEntityTypeZNode.path(t) for t in ConfigEntityTypeZNode.TYPES),
)
"""The persistent znodes every Kafka broker makes sure exist at start-up (``ZkData.PersistentZkPaths``)."""
