"""The cluster's metadata in ZooKeeper, laid out as Kafka's ZooKeeper mode laid it out, with a view kept current
by watches.

What lives where (znode classes in ``replication.zk.znodes``):
- topics: ``/brokers/topics/<t>`` (assignment and topic id), ``.../partitions/<p>/state`` (leader, ISR, epochs;
  the znode version is the partition epoch) and ``/config/topics/<t>`` (its configs, ``{}`` when none);
- dynamic broker configs: ``/config/brokers/<id>`` and ``/config/brokers/<default>``;
- client quotas: ``/config/users/<u>``, ``/config/clients/<c>``, ``/config/users/<u>/clients/<c>``,
  ``/config/ips/<ip>`` (``<default>`` for default entities, names sanitized), values as Kafka writes them
  (LONG/INT quotas as integers, DOUBLE ones as Java doubles: ``50.0``);
- SCRAM credentials: in ``/config/users/<u>`` beside the user's quotas, as Kafka's ``ScramCredentialUtils``
  writes them: ``salt=<b64>,stored_key=<b64>,server_key=<b64>,iterations=<n>`` (the salted password
  itself is not kept, as in Kafka);
- every config write is followed by a ``/config/changes/config_change_<seq>`` notification naming the entity;
- finalized features: ``/feature`` (version 2).

The view (``topics``, ``topics_by_id``, ``broker_configs``, ``client_quotas``, ``scram_credentials``,
``finalized_features``) is loaded at ``start()`` and kept current by ZooKeeper watches, so writes made by any
broker (or by Kafka's own tools) show up: the topic list, each topic znode and each partition state are
watched; config entities are reread when a change notification names them (Kafka's mechanism); ``/feature``
is watched. After a session expiry everything is reloaded and watched again. Writes are async and change
the view as soon as ZooKeeper accepted them. Writes that can race are conditional on znode versions.

Partition states at topic creation are what Kafka's controller writes then (leader = first replica, ISR =
all replicas, leader epoch 0), with the controller epoch given by the caller; once the cluster controller
exists it should own that step.

The view's shapes follow ``EmbeddedMetadataStore`` except ``scram_credentials``, whose values are
``ScramCredential`` (salt, stored key, server key, iterations), Kafka's stored form.
"""

from __future__ import annotations

import asyncio
import base64
import hashlib
import hmac
import logging
import time
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from pykbroker.metadata_store import PartitionState, TopicState
from pykbroker.quotas import CLIENT_ID, IP, IP_KEYS, USER, USER_AND_CLIENT_KEYS
from replication.zk.client import (
    BadVersionError,
    CreateOp,
    NodeExistsError,
    NoNodeError,
    SetDataOp,
    ZooKeeperClient,
    ZooKeeperMultiError,
)
from replication.zk.cluster_id import generate_cluster_id
from replication.zk.znodes import (
    DEFAULT_ENTITY,
    PERSISTENT_PATHS,
    ConfigEntityChangeNotificationSequenceZNode,
    ConfigEntityChangeNotificationZNode,
    ConfigEntityZNode,
    DeleteTopicsTopicZNode,
    FeatureZNode,
    TopicPartitionStateZNode,
    TopicPartitionsZNode,
    TopicPartitionZNode,
    TopicsZNode,
    TopicZNode,
    ZNodeDecodeError,
    desanitize,
    sanitize,
)

log = logging.getLogger("pykbroker.zk.metadata")

__all__ = ["ScramCredential", "ZooKeeperMetadataStore", "java_double_string", "quota_entity_path",
           "scram_credential_string"]

SCRAM_MECHANISM_NAMES = {1: "SCRAM-SHA-256", 2: "SCRAM-SHA-512"}
CHANGE_EXPIRATION_MS = 15 * 60 * 1000  # Kafka's ZkNodeChangeNotificationListener.changeExpirationMs
_SCRAM_HASH = {1: "sha256", 2: "sha512"}


@dataclass(frozen=True)
class ScramCredential:
    """A SCRAM credential as Kafka stores it (RFC 5802's server-side values)."""

    salt: bytes
    stored_key: bytes
    server_key: bytes
    iterations: int


def scram_credential(mechanism: int, iterations: int, salt: bytes, salted_password: bytes) -> ScramCredential:
    """The stored form of a salted password (what AlterUserScramCredentials sends)."""
    digest = _SCRAM_HASH[mechanism]
    client_key = hmac.new(salted_password, b"Client Key", digest).digest()
    return ScramCredential(salt, hashlib.new(digest, client_key).digest(),
                           hmac.new(salted_password, b"Server Key", digest).digest(), iterations)


def scram_credential_string(c: ScramCredential) -> str:
    """Kafka's ``ScramCredentialUtils.credentialToString``."""
    b64 = base64.b64encode
    return (f"salt={b64(c.salt).decode()},stored_key={b64(c.stored_key).decode()},"
            f"server_key={b64(c.server_key).decode()},iterations={c.iterations}")


def parse_scram_credential(text: str) -> ScramCredential:
    fields = dict(part.split("=", 1) for part in text.split(",") if "=" in part)
    try:
        return ScramCredential(base64.b64decode(fields["salt"]), base64.b64decode(fields["stored_key"]),
                               base64.b64decode(fields["server_key"]), int(fields["iterations"]))
    except (KeyError, ValueError) as exc:
        raise ZNodeDecodeError(f"bad SCRAM credential: {exc}") from None


def java_double_string(value: float) -> str:
    """``Double.toString``: ``50.0``, ``0.5``, ``1.0E7``, ``1.5E-4`` (shortest digits that read back)."""
    if value != value:
        return "NaN"
    if value in (float("inf"), float("-inf")):
        return "Infinity" if value > 0 else "-Infinity"
    if value == 0:
        return "-0.0" if str(value).startswith("-") else "0.0"
    if 1e-3 <= abs(value) < 1e7:
        return repr(float(value))  # plain notation in this range, as Java's
    sign, digits, exponent = Decimal(repr(float(value))).normalize().as_tuple()
    text = "".join(map(str, digits))
    mantissa = f"{text[0]}.{text[1:] or '0'}"
    return f"{'-' if sign else ''}{mantissa}E{len(text) - 1 + exponent}"


def quota_value_string(key: str, value: float) -> str:
    """A quota value as Kafka's ZooKeeper admin manager writes it: LONG and INT quotas as integers."""
    kind = USER_AND_CLIENT_KEYS.get(key) or IP_KEYS.get(key)
    if kind in ("LONG", "INT"):
        return str(int(value + 1e-6))
    return java_double_string(float(value))


def quota_entity_path(entity: frozenset) -> tuple[str, str]:
    """(config type, sanitized entity path) of a client quota entity: a frozenset of (type, name or None)."""
    names = dict(entity)

    def name(kind: str) -> str:
        return DEFAULT_ENTITY if names[kind] is None else sanitize(names[kind])

    if IP in names:
        return "ips", DEFAULT_ENTITY if names[IP] is None else names[IP]
    if USER in names and CLIENT_ID in names:
        return "users", f"{name(USER)}/clients/{name(CLIENT_ID)}"
    if USER in names:
        return "users", name(USER)
    return "clients", name(CLIENT_ID)


def _entity_from_path(config_type: str, path: str) -> frozenset | None:
    """The quota entity of a config entity path (``alice/clients/c1`` under ``users``)."""

    def unname(n: str) -> str | None:
        return None if n == DEFAULT_ENTITY else desanitize(n)

    parts = path.split("/")
    if config_type == "ips" and len(parts) == 1:
        return frozenset({(IP, None if parts[0] == DEFAULT_ENTITY else parts[0])})
    if config_type == "clients" and len(parts) == 1:
        return frozenset({(CLIENT_ID, unname(parts[0]))})
    if config_type == "users" and len(parts) == 1:
        return frozenset({(USER, unname(parts[0]))})
    if config_type == "users" and len(parts) == 3 and parts[1] == "clients":
        return frozenset({(USER, unname(parts[0])), (CLIENT_ID, unname(parts[2]))})
    return None


class ZooKeeperMetadataStore:
    """Topics, configs, quotas, SCRAM credentials and features of a cluster, in ZooKeeper."""

    def __init__(self, zk: ZooKeeperClient, node_id: int, *, controller_epoch: Callable[[], int] = lambda: 0,
                 clock: Callable[[], float] = time.time) -> None:
        """``controller_epoch()`` is written into new partition states; ``clock`` ages change notifications."""
        self.zk = zk
        self.clock = clock
        self.node_id = node_id
        self.controller_epoch = controller_epoch
        self.topics: dict[str, TopicState] = {}
        self.topics_by_id: dict[uuid.UUID, TopicState] = {}
        self.broker_configs: dict[str, dict[str, str]] = {}
        self.client_quotas: dict[frozenset, dict[str, float]] = {}
        self.scram_credentials: dict[str, dict[int, ScramCredential]] = {}
        self.finalized_features: dict[str, int] = {}
        self.topic_versions: dict[str, int] = {}  # znode version of /brokers/topics/<t>
        self._last_change = -1  # sequence number of the last config change notification applied
        self._listeners: list[Callable[[str, Any], Any]] = []
        self._topic_watches: dict[str, Callable[[Any], None]] = {}
        self._partition_watches: dict[tuple[str, int], Callable[[Any], None]] = {}

    def add_listener(self, listener: Callable[[str, Any], Any]) -> None:
        """``listener(kind, key)`` after the view changed: ("topic", name), ("partition", (name, p)),
        ("topic_deleted", name), ("config", (type, entity path)), ("features", None)."""
        self._listeners.append(listener)

    def _changed(self, kind: str, key: Any) -> None:
        for listener in self._listeners:
            try:
                listener(kind, key)
            except Exception:
                log.exception("metadata listener failed on %s %s", kind, key)

    # -- loading and watching -----------------------------------------------------------------------------

    async def start(self) -> None:
        """Make sure Kafka's persistent paths exist, load everything, and watch."""
        for path in PERSISTENT_PATHS:
            await self.zk.ensure_path(path)
        self.zk.on_new_session(self._reload)
        await self._reload()

    async def _reload(self) -> None:
        self.topics.clear()
        self.topics_by_id.clear()
        await self._load_topics()
        await self._load_configs()
        await self._load_features()

    async def _load_topics(self, _event: Any = None) -> None:
        names = await self.zk.get_children(TopicsZNode.path, watch=self._load_topics) or []
        for gone in set(self.topics) - set(names):
            self._forget_topic(gone)
        for name in names:
            if name not in self.topics:
                await self._load_topic(name)

    def _forget_topic(self, name: str) -> None:
        topic = self.topics.pop(name, None)
        self.topic_versions.pop(name, None)
        self._topic_watches.pop(name, None)
        for key in [k for k in self._partition_watches if k[0] == name]:
            del self._partition_watches[key]
        if topic is not None:
            self.topics_by_id.pop(topic.topic_id, None)
            self._changed("topic_deleted", name)

    async def _load_topic(self, name: str) -> None:
        found = await self.zk.get(TopicZNode.path(name), watch=self._topic_watch(name))
        if found is None or found[0] is None:
            self._forget_topic(name)
            return
        try:
            assignment = TopicZNode.decode(name, found[0])
        except ZNodeDecodeError as exc:
            log.warning("ignoring unreadable topic %s: %s", name, exc)
            return
        old = self.topics.get(name)
        topic_id = _topic_uuid(assignment.topic_id)
        partitions = []
        for p in sorted(assignment.partitions):
            existing = old.partitions[p] if old is not None and p < len(old.partitions) else None
            state = PartitionState(p, -1, 0, list(assignment.partitions[p]), [], 0) if existing is None else existing
            state.replicas = list(assignment.partitions[p])
            partitions.append(state)
        config_found = await self.zk.get(ConfigEntityZNode.path("topics", name))
        configs = ConfigEntityZNode.decode(config_found[0]) if config_found else {}
        topic = TopicState(name, topic_id, partitions, configs)
        if old is not None and old.topic_id != topic_id:
            self.topics_by_id.pop(old.topic_id, None)
        self.topics[name] = topic
        self.topics_by_id[topic_id] = topic
        self.topic_versions[name] = found[1].version
        for state in partitions:
            await self._load_partition(name, state.partition)
        self._changed("topic", name)

    def _topic_watch(self, name: str) -> Callable[[Any], None]:
        """The one watch callable of a topic znode: the same object every time, so rereading a topic
        re-arms its watch instead of stacking a second one."""
        watch = self._topic_watches.get(name)
        if watch is None:
            def watch(_event: Any, name: str = name) -> None:
                asyncio.ensure_future(self._load_topic(name))

            self._topic_watches[name] = watch
        return watch

    def _partition_watch(self, name: str, partition: int) -> Callable[[Any], None]:
        watch = self._partition_watches.get((name, partition))
        if watch is None:
            def watch(event: Any, name: str = name, partition: int = partition) -> None:
                asyncio.ensure_future(self._load_partition(name, partition, event))

            self._partition_watches[(name, partition)] = watch
        return watch

    async def _load_partition(self, name: str, partition: int, _event: Any = None) -> None:
        path = TopicPartitionStateZNode.path(name, partition)
        found = await self.zk.get(path, watch=self._partition_watch(name, partition))
        if found is None:
            # not written yet (the controller writes it after the topic znode): watch for its creation
            await self.zk.exists(path, watch=self._partition_watch(name, partition))
            return
        topic = self.topics.get(name)
        if topic is None or partition >= len(topic.partitions) or found[0] is None:
            return
        try:
            s = TopicPartitionStateZNode.decode(found[0], found[1].version, path)
        except ZNodeDecodeError as exc:
            log.warning("ignoring unreadable %s: %s", path, exc)
            return
        state = topic.partitions[partition]
        state.leader, state.leader_epoch, state.isr, state.partition_epoch = s.leader, s.leader_epoch, s.isr, s.zk_version
        if _event is not None:
            self._changed("partition", (name, partition))

    async def _load_configs(self) -> None:
        self.broker_configs.clear()
        self.client_quotas.clear()
        self.scram_credentials.clear()
        for config_type in ("brokers", "clients", "ips", "users"):
            for child in await self.zk.get_children(f"/config/{config_type}") or []:
                await self._load_entity(config_type, child)
                if config_type == "users":
                    for client in await self.zk.get_children(f"/config/users/{child}/clients") or []:
                        await self._load_entity("users", f"{child}/clients/{client}")
        changes = await self.zk.get_children(ConfigEntityChangeNotificationZNode.path, watch=self._config_changes) or []
        self._last_change = max((_sequence(c) for c in changes), default=-1)

    async def _load_entity(self, config_type: str, entity_path: str) -> None:
        """Reread one config entity into the view."""
        found = await self.zk.get(ConfigEntityZNode.path(config_type, entity_path))
        config = ConfigEntityZNode.decode(found[0]) if found is not None else {}
        if config_type == "topics":
            topic = self.topics.get(entity_path)
            if topic is not None:
                topic.configs = config
        elif config_type == "brokers":
            name = "" if entity_path == DEFAULT_ENTITY else entity_path
            if config:
                self.broker_configs[name] = config
            else:
                self.broker_configs.pop(name, None)
        else:
            entity = _entity_from_path(config_type, entity_path)
            if entity is None:
                return
            quotas = {k: float(v) for k, v in config.items() if k in USER_AND_CLIENT_KEYS or k in IP_KEYS}
            if quotas:
                self.client_quotas[entity] = quotas
            else:
                self.client_quotas.pop(entity, None)
            if config_type == "users" and "/" not in entity_path:
                user = desanitize(entity_path)
                creds = {m: parse_scram_credential(config[name]) for m, name in SCRAM_MECHANISM_NAMES.items()
                         if name in config}
                if creds:
                    self.scram_credentials[user] = creds
                else:
                    self.scram_credentials.pop(user, None)
        self._changed("config", (config_type, entity_path))

    def _config_changes(self, _event: Any) -> None:
        asyncio.ensure_future(self._apply_config_changes())

    async def _apply_config_changes(self) -> None:
        """Kafka's ZkNodeChangeNotificationListener: reread the entity of each new notification, in order,
        and delete notifications already applied that are older than ``CHANGE_EXPIRATION_MS``."""
        changes = await self.zk.get_children(ConfigEntityChangeNotificationZNode.path, watch=self._config_changes) or []
        now_ms = int(self.clock() * 1000)
        for child in sorted(changes, key=_sequence):
            seq = _sequence(child)
            path = f"{ConfigEntityChangeNotificationZNode.path}/{child}"
            if seq <= self._last_change:
                await self._purge_if_obsolete(path, now_ms)
                continue
            found = await self.zk.get(path)
            self._last_change = seq
            if found is None:
                continue
            if found[1].ctime < now_ms - CHANGE_EXPIRATION_MS:
                await self._purge_if_obsolete(path, now_ms)
            try:
                entity_path = ConfigEntityChangeNotificationSequenceZNode.decode(found[0])
            except ZNodeDecodeError as exc:
                log.warning("ignoring config change %s: %s", child, exc)
                continue
            config_type, _, name = entity_path.partition("/")
            await self._load_entity(config_type, name)

    async def _purge_if_obsolete(self, path: str, now_ms: int) -> None:
        stat = await self.zk.exists(path)
        if stat is not None and stat.ctime < now_ms - CHANGE_EXPIRATION_MS:
            try:
                await self.zk.delete(path)
            except NoNodeError:
                pass  # another broker purged it

    async def _load_features(self, _event: Any = None) -> None:
        found = await self.zk.get(FeatureZNode.path, watch=self._load_features)
        if found is None:
            await self.zk.exists(FeatureZNode.path, watch=self._load_features)
            self.finalized_features = {}
        else:
            self.finalized_features = dict(FeatureZNode.decode(found[0]).features)
        if _event is not None:
            self._changed("features", None)

    # -- writes ---------------------------------------------------------------------------------------------

    async def create_topic(self, name: str, assignments: list[list[int]], configs: dict[str, str]) -> TopicState:
        """Create a topic with one replica list per partition (Kafka's AdminZkClient, then the controller's
        initial partition states), atomically. Raises ``KeyError`` if it exists."""
        topic_id = _new_topic_id()
        epoch = self.controller_epoch()
        ops = [CreateOp(TopicZNode.path(name), TopicZNode.encode(dict(enumerate(assignments)), topic_id)),
               CreateOp(TopicPartitionsZNode.path(name))]
        for p, replicas in enumerate(assignments):
            ops += [CreateOp(TopicPartitionZNode.path(name, p)),
                    CreateOp(TopicPartitionStateZNode.path(name, p),
                             TopicPartitionStateZNode.encode(replicas[0], 0, replicas, epoch))]
        config_path = ConfigEntityZNode.path("topics", name)
        if await self.zk.exists(config_path) is None:
            ops.insert(0, CreateOp(config_path, ConfigEntityZNode.encode(configs)))
        else:  # left over by an earlier topic of that name: Kafka overwrites it
            await self.zk.set(config_path, ConfigEntityZNode.encode(configs))
        try:
            await self.zk.multi(ops)
        except ZooKeeperMultiError as exc:
            if isinstance(exc.error, NodeExistsError):
                raise KeyError(name) from None
            raise
        log.info("created topic %s (id %s) with %d partitions", name, topic_id, len(assignments))
        await self._load_topic(name)
        return self.topics[name]

    async def add_partitions(self, name: str, assignments: list[list[int]]) -> TopicState:
        """Append partitions: the topic znode is rewritten conditionally on its version, with the new
        partitions' states in the same multi."""
        while True:
            found = await self.zk.get(TopicZNode.path(name))
            if found is None:
                raise KeyError(name)
            current = TopicZNode.decode(name, found[0])
            start = len(current.partitions)
            partitions = {**current.partitions, **{start + i: r for i, r in enumerate(assignments)}}
            epoch = self.controller_epoch()
            ops: list = [SetDataOp(TopicZNode.path(name), TopicZNode.encode(
                partitions, current.topic_id, adding_replicas=current.adding_replicas,
                removing_replicas=current.removing_replicas), found[1].version)]
            for i, replicas in enumerate(assignments):
                p = start + i
                ops += [CreateOp(TopicPartitionZNode.path(name, p)), CreateOp(
                    TopicPartitionStateZNode.path(name, p), TopicPartitionStateZNode.encode(replicas[0], 0, replicas, epoch))]
            try:
                await self.zk.multi(ops)
                break
            except ZooKeeperMultiError as exc:
                if isinstance(exc.error, BadVersionError):
                    continue  # the topic changed meanwhile: recompute from its new assignment
                raise
        await self._load_topic(name)
        return self.topics[name]

    async def delete_topic(self, name: str) -> TopicState | None:
        """Delete a topic as Kafka does: mark ``/admin/delete_topics/<t>``, remove its znodes and config,
        then the mark. Returns the topic as the view knew it. Raises ``KeyError`` if it does not exist."""
        if await self.zk.exists(TopicZNode.path(name)) is None:
            raise KeyError(name)
        topic = self.topics.get(name)
        try:
            await self.zk.create(DeleteTopicsTopicZNode.path(name), make_parents=True)
        except NodeExistsError:
            pass
        await self.zk.delete(TopicZNode.path(name), recursive=True)
        try:
            await self.zk.delete(ConfigEntityZNode.path("topics", name))
        except NoNodeError:
            pass
        await self.zk.delete(DeleteTopicsTopicZNode.path(name))
        self._forget_topic(name)
        log.info("deleted topic %s", name)
        return topic

    async def _write_entity(self, config_type: str, entity_path: str,
                            change: Callable[[dict[str, str]], dict[str, str]]) -> None:
        """Read-modify-write of one config entity (conditional on its version), then a change notification."""
        path = ConfigEntityZNode.path(config_type, entity_path)
        while True:
            found = await self.zk.get(path)
            config = change(ConfigEntityZNode.decode(found[0]) if found else {})
            data = ConfigEntityZNode.encode(config)
            try:
                if found is None:
                    await self.zk.create(path, data, make_parents=True)
                else:
                    await self.zk.set(path, data, found[1].version)
                break
            except (BadVersionError, NodeExistsError):
                continue
        await self.zk.create(ConfigEntityChangeNotificationSequenceZNode.create_path,
                             ConfigEntityChangeNotificationSequenceZNode.encode(f"{config_type}/{entity_path}"),
                             sequential=True)
        await self._load_entity(config_type, entity_path)

    async def set_topic_configs(self, name: str, configs: dict[str, str]) -> None:
        if name not in self.topics and await self.zk.exists(TopicZNode.path(name)) is None:
            raise KeyError(name)
        await self._write_entity("topics", name, lambda _old: dict(configs))

    async def set_broker_configs(self, changes: Mapping[str, Mapping[str, str]]) -> None:
        """Replace the dynamic configs of each BROKER resource ("" is the cluster default)."""
        for resource_name, configs in changes.items():
            await self._write_entity("brokers", resource_name or DEFAULT_ENTITY, lambda _old, c=configs: dict(c))

    async def alter_client_quotas(self, alterations: list[tuple[frozenset, dict[str, float | None]]]) -> None:
        """Set (or, with None, remove) quota values of each entity; other keys of the znode (a user's SCRAM
        credentials) are kept."""
        for entity, changes in alterations:
            config_type, entity_path = quota_entity_path(entity)

            def change(old: dict[str, str], changes=changes) -> dict[str, str]:
                new = dict(old)
                for key, value in changes.items():
                    if value is None:
                        new.pop(key, None)
                    else:
                        new[key] = quota_value_string(key, value)
                return new

            await self._write_entity(config_type, entity_path, change)

    async def alter_scram_credentials(self, deletions: list[tuple[str, int]],
                                      upsertions: list[tuple[str, int, int, bytes, bytes]]) -> None:
        """Remove (user, mechanism) credentials; store (user, mechanism, iterations, salt, salted password)
        in Kafka's stored form. One write and one notification per user."""
        by_user: dict[str, list[tuple[int, ScramCredential | None]]] = {}
        for user, mechanism in deletions:
            by_user.setdefault(user, []).append((mechanism, None))
        for user, mechanism, iterations, salt, salted_password in upsertions:
            by_user.setdefault(user, []).append((mechanism, scram_credential(mechanism, iterations, salt,
                                                                            salted_password)))
        for user, edits in by_user.items():
            def change(old: dict[str, str], edits=edits) -> dict[str, str]:
                new = dict(old)
                for mechanism, credential in edits:
                    if credential is None:
                        new.pop(SCRAM_MECHANISM_NAMES[mechanism], None)
                    else:
                        new[SCRAM_MECHANISM_NAMES[mechanism]] = scram_credential_string(credential)
                return new

            await self._write_entity("users", sanitize(user), change)

    async def set_finalized_features(self, levels: dict[str, int]) -> None:
        """Replace the finalized feature levels in /feature (conditional on its version)."""
        while True:
            found = await self.zk.get(FeatureZNode.path)
            data = FeatureZNode.encode({k: v for k, v in levels.items() if v > 0})
            try:
                if found is None:
                    await self.zk.create(FeatureZNode.path, data)
                else:
                    await self.zk.set(FeatureZNode.path, data, found[1].version)
                break
            except (BadVersionError, NodeExistsError):
                continue
        self.finalized_features = {k: v for k, v in levels.items() if v > 0}


def _sequence(child: str) -> int:
    try:
        return int(child.rsplit("_", 1)[1])
    except (IndexError, ValueError):
        return -1


def _new_topic_id() -> str:
    """A new topic id, as Kafka's Uuid.randomUuid (the cluster id's rule)."""
    return generate_cluster_id()


def _topic_uuid(topic_id: str | None) -> uuid.UUID:
    if topic_id is None:  # a topic created before Kafka 2.8 has none: Kafka's controller adds one
        return uuid.UUID(int=0)
    return uuid.UUID(bytes=base64.urlsafe_b64decode(topic_id + "=" * (-len(topic_id) % 4)))
