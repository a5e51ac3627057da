"""The cluster's metadata in ZooKeeper, laid out as Kafka's ZooKeeper mode laid it out: a ``MetadataWriter``
that publishes a ``MetadataImage`` whenever ZooKeeper's contents change, whoever changed them.

What lives where (znode classes in ``replication.metadata.zk.znodes``):
- the cluster id: ``/cluster/id`` (created by the first broker to start);
- live brokers: the ephemeral ``/brokers/ids/<id>`` registrations; the controller: ``/controller``;
- topics: ``/brokers/topics/<t>`` (assignment and topic id), ``.../partitions/<p>/state`` (leader, ISR, epochs;
  the znode version is the partition epoch) and ``/config/topics/<t>`` (its configs, ``{}`` when none);
- dynamic broker configs: ``/config/brokers/<id>`` and ``/config/brokers/<default>``;
- group configs (KIP-848's GROUP resources, which Kafka keeps only in KRaft): ``/config/groups/<group id>``
  (sanitized), in the same form and with the same change notifications as the other entities;
- client quotas: ``/config/users/<u>``, ``/config/clients/<c>``, ``/config/users/<u>/clients/<c>``,
  ``/config/ips/<ip>`` (``<default>`` for default entities, names sanitized), values as Kafka writes them
  (LONG/INT quotas as integers, DOUBLE ones as Java doubles: ``50.0``);
- SCRAM credentials: in ``/config/users/<u>`` beside the user's quotas, in Kafka's stored form
  ``salt=<b64>,stored_key=<b64>,server_key=<b64>,iterations=<n>``; the image holds them as
  ``ScramCredential`` (the salted password is not kept, as in Kafka);
- every config write is followed by a ``/config/changes/config_change_<seq>`` notification naming the entity;
- finalized features: ``/feature`` (version 2); their epoch is the zxid of that znode's last change: like a
  KRaft cluster's epoch (the metadata offset of the change) a number that only rises, across broker and
  ZooKeeper restarts, where the znode version Kafka's ZooKeeper mode used starts at 0. The first
  broker to start creates it with the levels a new Kafka 4.4 cluster finalizes (``features.BOOTSTRAP_FINALIZED``);
  a cluster created by an earlier pykbroker is moved to them at start-up (``features.upgraded_levels``).

How the image stays current: the topic list, each topic znode, each partition state, the broker list,
``/controller`` and ``/feature`` are watched; config entities are reread when a change notification names
them (Kafka's mechanism, so configs written by Kafka's own tools arrive too). Watch events are handled one
at a time (a lock), each rereading the current znode, so images never go back in time. After a session
expiry everything is reloaded and watched again, and this broker registers again. Writes are async, and
the image reflects a write when it returns. Writes that can race are conditional on znode versions.

Topic creation, new partitions and deletion go as in Kafka: this store writes the topic's znodes (or the
deletion request) and the controller (``replication.controller.zk_controller``) writes partition states and carries
deletions out; the store waits for the image to show the result. Built ``with_controller=False`` (a
single writer, tests), the store writes the initial states itself (leader = first replica, ISR = all
replicas, leader epoch 0) and deletes directly. ``alter_partition`` is conditional on the partition epoch
(the state znode's version). A deletion removes the state znodes before the topic znode; the image drops the
topic whole, as Kafka 4.4's one RemoveTopicRecord does: a state znode found gone is not applied, and a topic read
with states missing while its deletion is pending is left out, so no image shows it leader-less.

A request's topics go together, as Kafka 4.4 commits a CreateTopics' or DeleteTopics' records in one batch and a
broker lists them all, with their leaders, or none: the topics (or deletion requests) asked for in one pass of the
event loop are one multi, the controller writes their states (or deletes them) in one, a topic whose states are
not all written yet is left out of the image (partitions added: the topic as it was) until they are, every such
topic then read again together, and a topic found gone makes the topic list reread, so the others its multi
removed go in the same image.
"""

from __future__ import annotations

import asyncio
import base64
import logging
import time
import uuid
from collections.abc import Callable, Collection, Mapping
from dataclasses import replace
from decimal import Decimal
from types import MappingProxyType
from typing import Any

from replication.metadata.credentials import ScramCredential, credential_from_salted_password
from replication.metadata.features import BOOTSTRAP_FINALIZED, upgraded_levels
from replication.metadata.image import (
    BrokerImage,
    Endpoint,
    MetadataImage,
    MetadataListener,
    PartitionCountChanged,
    PartitionState,
    PublishedImage,
    TopicState,
    config_change,
)
from replication.metadata.quota_entities import CLIENT_ID, IP, IP_KEYS, USER, USER_AND_CLIENT_KEYS
from replication.metadata.zk.broker_registration import BrokerRegistration, live_brokers, quorum_voters
from replication.metadata.zk.client import (
    BadVersionError,
    CreateOp,
    NodeExistsError,
    NoNodeError,
    SetDataOp,
    ZooKeeperClient,
    ZooKeeperMultiError,
)
from replication.metadata.zk.cluster_id import generate_cluster_id, get_or_create_cluster_id
from replication.metadata.zk.znodes import (
    DEFAULT_ENTITY,
    PERSISTENT_PATHS,
    BrokerInfo,
    ConfigEntityChangeNotificationSequenceZNode,
    ConfigEntityChangeNotificationZNode,
    ConfigEntityZNode,
    ControllerZNode,
    DeleteTopicsTopicZNode,
    FeatureZNode,
    OfflineReplicasZNode,
    TopicPartitionStateZNode,
    TopicPartitionsZNode,
    TopicPartitionZNode,
    TopicsZNode,
    TopicZNode,
    ZNodeDecodeError,
    desanitize,
    sanitize,
)
from replication.metadata.zk.znodes import Endpoint as ZkEndpoint

log = logging.getLogger("pykbroker.zk.metadata")

__all__ = ["CHANGE_EXPIRATION_MS", "ZooKeeperMetadataStore", "java_double_string", "parse_scram_credential",
           "quota_entity_path", "quota_value_string", "scram_credential_string"]

SCRAM_MECHANISM_NAMES = {1: "SCRAM-SHA-256", 2: "SCRAM-SHA-512"}
GROUPS = "groups"  # the config entity type of GROUP resources
CLIENT_METRICS = "client-metrics"  # the config entity type of CLIENT_METRICS resources (KIP-714 subscriptions)
CHANGE_EXPIRATION_MS = 15 * 60 * 1000  # Kafka's ZkNodeChangeNotificationListener.changeExpirationMs
_EMPTY: Mapping = MappingProxyType({})
# The longest an admin request waits for this broker's image to show a topic as ZooKeeper has it (catch_up): watches
# bring it within milliseconds; longer, the request goes on with the image as it is.
CATCH_UP_TIMEOUT_S = 5.0
# The most a multi creating a request's topics carries (paths and data): ZooKeeper refuses requests over 1 MB
# (jute.maxbuffer); beyond it the topics go in several multis.
CREATE_MULTI_BYTES = 512 * 1024


def _frozen(d: Mapping) -> Mapping:
    return MappingProxyType(dict(d))


# -- Kafka's value formats --------------------------------------------------------------------------------

def scram_credential_string(c: ScramCredential) -> str:
    """Kafka's ``ScramCredentialUtils.credentialToString``."""
    b64 = base64.b64encode
    return (f"salt={b64(c.salt).decode()},stored_key={b64(c.stored_key).decode()},"
            f"server_key={b64(c.server_key).decode()},iterations={c.iterations}")


def parse_scram_credential(text: str) -> ScramCredential:
    """Kafka's ``ScramCredentialUtils.credentialFromString``."""
    fields = dict(part.split("=", 1) for part in text.split(",") if "=" in part)
    try:
        return ScramCredential(int(fields["iterations"]), base64.b64decode(fields["salt"]),
                               base64.b64decode(fields["stored_key"]), base64.b64decode(fields["server_key"]))
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
    return f"{'-' if sign else ''}{text[0]}.{text[1:] or '0'}E{len(text) - 1 + int(exponent)}"


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


def _topic_uuid(topic_id: str | None) -> uuid.UUID:
    if topic_id is None:  # a topic created before Kafka 2.8 has none until a controller adds one
        return uuid.UUID(int=0)
    return uuid.UUID(bytes=base64.urlsafe_b64decode(topic_id + "=" * (-len(topic_id) % 4)))


def _sequence(child: str) -> int:
    try:
        return int(child.rsplit("_", 1)[1])
    except (IndexError, ValueError):
        return -1


class ZooKeeperMetadataStore(PublishedImage):
    """The ``MetadataWriter`` of a broker in a ZooKeeper cluster; ``await start()`` before use."""

    def __init__(self, zk: ZooKeeperClient, node_id: int, *, with_controller: bool = True,
                 controller_epoch: Callable[[], int] = lambda: 0, clock: Callable[[], float] = time.time,
                 admin_timeout_s: float = 30.0) -> None:
        """``with_controller``: a controller (``replication.controller.zk_controller``) writes partition states and carries
        out deletions, as in Kafka; without one this store does both itself. ``controller_epoch()`` is
        written into the partition states this store writes; ``clock`` ages change notifications;
        ``admin_timeout_s`` bounds the wait for the controller in create/delete/add-partitions."""
        self.zk = zk
        self.node_id = node_id
        self.with_controller = with_controller
        self.admin_timeout_s = admin_timeout_s
        self._waiters: list[tuple[Callable[[MetadataImage], bool], asyncio.Future]] = []
        self.controller_epoch = controller_epoch
        self.clock = clock
        self._image = MetadataImage("")
        self._listeners: list[MetadataListener] = []
        self._lock = asyncio.Lock()
        self._last_change = -1  # sequence number of the last config change notification applied
        self._registration: BrokerRegistration | None = None
        # This broker's offline replicas as last announced (written again in a new session: the znode is ephemeral).
        self._own_offline: tuple[int, tuple[tuple[str, int], ...]] | None = None
        self._topic_watches: dict[str, Callable[[Any], None]] = {}
        self._partition_watches: dict[tuple[str, int], Callable[[Any], None]] = {}
        # Partitions whose state znode fired and that have not been read again yet (one reread for them all).
        self._changed_partitions: dict[tuple[str, int], None] = {}
        self._changed_topics: dict[str, None] = {}  # topic znodes whose watch fired, reread together
        # Topics (or partitions added to them) left out of the image until the controller wrote their states.
        self._unready: set[str] = set()
        self._deletion_requests: dict[str, asyncio.Future] = {}  # asked for in this pass of the loop (one multi)
        self._tasks: set[asyncio.Task] = set()
        # Topics asked for in this pass of the loop (one multi): name, assignments, configs, topic id, the answer.
        self._creations: list[tuple[str, list[list[int]], Mapping[str, str], str, asyncio.Future]] = []

    def _publish(self, **changes: Any) -> None:
        old = self._image
        new = replace(old, offset=old.offset + 1, **changes)
        self._image = new
        for listener in self._listeners:
            try:
                listener(old, new)
            except Exception:
                log.exception("metadata listener failed")
        for waiter in [w for w in self._waiters if w[0](new)]:
            self._waiters.remove(waiter)
            if not waiter[1].done():
                waiter[1].set_result(None)

    async def wait_for(self, predicate: Callable[[MetadataImage], bool], timeout_s: float) -> bool:
        """Wait until an image satisfies ``predicate``; False if none did within ``timeout_s``."""
        if predicate(self._image):
            return True
        waiter = (predicate, asyncio.get_running_loop().create_future())
        self._waiters.append(waiter)
        try:
            async with asyncio.timeout(timeout_s):
                await waiter[1]
            return True
        except TimeoutError:
            return False
        finally:
            if waiter in self._waiters:
                self._waiters.remove(waiter)

    # -- loading and watching ----------------------------------------------------------------------------
    async def start(self) -> None:
        """Make sure Kafka's persistent paths exist, read (or create) the cluster id, load everything, watch."""
        for path in PERSISTENT_PATHS:
            await self.zk.ensure_path(path)
        cluster_id = await get_or_create_cluster_id(self.zk)
        self._image = replace(self._image, cluster_id=cluster_id)
        await self._finalize_features()
        self.zk.on_new_session(self._reload)
        await self._reload()

    async def _reload(self) -> None:
        """Read everything afresh (at start and in a new session: every watch is armed again)."""
        if self._own_offline is not None:
            await self._write_offline_replicas(*self._own_offline)
        async with self._lock:
            # The change notifications first: a config changed while the rest is read comes with a newer
            # notification and is applied after (reading them last could count a change as seen whose entity
            # was read before it was written).
            changes = await self.zk.get_children(ConfigEntityChangeNotificationZNode.path,
                                                 watch=self._config_changes) or []
            self._last_change = max((_sequence(c) for c in changes), default=-1)
            names = await self.zk.get_children(TopicsZNode.path, watch=self._topics_changed) or []
            # all reads in flight at once: kazoo pipelines them over the one connection
            read = await asyncio.gather(*(self._read_topic(name) for name in names))
            topics = {t.name: t for t in read if t is not None}
            brokers = await self._read_brokers()
            voters = await self._read_voters()
            controller_id = await self._read_controller()
            offline_replicas = await self._read_offline_replicas()
            configs = await self._read_all_configs()
            features, features_epoch = await self._read_features()
            self._publish(topics=_frozen(topics), topics_by_id=_frozen({t.topic_id: t for t in topics.values()}),
                          brokers=brokers, voters=voters, controller_id=controller_id,
                          offline_replicas=offline_replicas, **configs,
                          finalized_features=features, features_epoch=features_epoch)

    def _in_task(self, coro_fn: Callable[..., Any], *args: Any) -> None:
        """Run a watch's reread as a task, one at a time with the others."""
        async def run() -> None:
            async with self._lock:
                await coro_fn(*args)

        asyncio.ensure_future(run())

    # topics
    def _topics_changed(self, _event: Any) -> None:
        self._in_task(self._load_topics)

    async def _load_topics(self) -> None:
        names = set(await self.zk.get_children(TopicsZNode.path, watch=self._topics_changed) or [])
        image = self._image
        topics = dict(image.topics)
        for gone in set(topics) - names:
            self._forget_watches(gone)
            del topics[gone]
        added = sorted(names - set(topics))
        read = await asyncio.gather(*(self._read_topic(name) for name in added))
        if None in read and any(t is not None for t in read):
            # Some have their states and others not: the controller's multi giving a CreateTopics' topics their
            # leaders may have landed between the reads. Read after those that found it, the others find it too
            # if it was theirs; if they still have none, it was not (the controller has not decided them yet).
            unready = [i for i, t in enumerate(read) if t is None]
            for i, topic in zip(unready, await asyncio.gather(*(self._read_topic(added[i]) for i in unready)),
                                strict=True):
                read[i] = topic
        for topic in read:
            if topic is not None:
                topics[topic.name] = topic
        if topics.keys() != image.topics.keys():
            self._publish(topics=_frozen(topics), topics_by_id=_frozen({t.topic_id: t for t in topics.values()}))

    def _topic_watch(self, name: str) -> Callable[[Any], None]:
        """The one watch callable of a topic znode (the same object every time, so a reread re-arms the
        watch instead of stacking a second callback)."""
        watch = self._topic_watches.get(name)
        if watch is None:
            def watch(_event: Any, name: str = name) -> None:
                if not self._changed_topics:
                    self._in_task(self._load_changed_topics)
                self._changed_topics[name] = None

            self._topic_watches[name] = watch
        return watch

    def _partition_watch(self, name: str, partition: int) -> Callable[[Any], None]:
        watch = self._partition_watches.get((name, partition))
        if watch is None:
            def watch(_event: Any, name: str = name, partition: int = partition) -> None:
                if not self._changed_partitions:
                    self._in_task(self._load_changed_partitions)
                self._changed_partitions[(name, partition)] = None

            self._partition_watches[(name, partition)] = watch
        return watch

    def _forget_watches(self, name: str) -> None:
        self._topic_watches.pop(name, None)
        for key in [k for k in self._partition_watches if k[0] == name]:
            del self._partition_watches[key]

    async def _read_topic(self, name: str) -> TopicState | None:
        """A topic as ZooKeeper has it now (watches armed), or None when it is gone or unreadable."""
        found = await self.zk.get(TopicZNode.path(name), watch=self._topic_watch(name))
        if found is None or found[0] is None:
            self._unready.discard(name)
            return None
        try:
            assignment = TopicZNode.decode(name, found[0])
        except ZNodeDecodeError as exc:
            log.warning("ignoring unreadable topic %s: %s", name, exc)
            return None
        states = await asyncio.gather(*(self._read_state(name, p, assignment.partitions[p],
                                                         assignment.adding_replicas.get(p, ()),
                                                         assignment.removing_replicas.get(p, ()))
                                        for p in sorted(assignment.partitions)))
        partitions = list(states)
        self._unready.discard(name)
        if None in states:
            if await self.zk.exists(DeleteTopicsTopicZNode.path(name)) is not None:
                return None  # being deleted (its state znodes go first): gone at once, never leader-less
            # States the controller has not written yet: Kafka 4.4 commits a topic's (or new partitions') records
            # in one batch, so no broker lists it without leaders. A new topic is left out, partitions added to a
            # known one are, until every state is there (their watches reread all such topics together).
            self._unready.add(name)
            known = self._image.topics.get(name)
            if known is None or known.topic_id != _topic_uuid(assignment.topic_id):
                return None
            partitions = [s if s is not None else known.partitions[p]
                          for p, s in zip(sorted(assignment.partitions), states[:len(known.partitions)], strict=False)]
        config = await self.zk.get(ConfigEntityZNode.path("topics", name))
        configs = ConfigEntityZNode.decode(config[0]) if config is not None else {}
        return TopicState(name, _topic_uuid(assignment.topic_id), tuple(p for p in partitions if p is not None), configs)

    async def _read_state(self, name: str, partition: int, replicas: list[int], adding: Any = (),
                          removing: Any = ()) -> PartitionState | None:
        """A partition's state (``replicas`` and the moving ones from the topic znode); None when its state znode
        is missing (the controller has not written it yet, or the topic is being deleted) or unreadable, the
        znode's creation then watched."""
        path = TopicPartitionStateZNode.path(name, partition)
        found = await self.zk.get(path, watch=self._partition_watch(name, partition))
        if found is None and await self.zk.exists(path, watch=self._partition_watch(name, partition)) is not None:
            # Created between the two reads: the exists watch would only fire on its next change, so read it now.
            found = await self.zk.get(path, watch=self._partition_watch(name, partition))
        if found is not None:
            try:
                s = TopicPartitionStateZNode.decode(found[0], found[1].version, path)
                return PartitionState(partition, s.leader, s.leader_epoch, tuple(replicas), tuple(s.isr), s.zk_version,
                                      tuple(adding), tuple(removing))
            except ZNodeDecodeError as exc:
                log.warning("ignoring unreadable %s: %s", path, exc)
        return None

    async def _load_topic(self, name: str) -> None:
        await self._load_topics_named([name])

    async def _load_changed_topics(self) -> None:
        """Reread every topic whose znode fired since the last reread, at once, in one image: a CreatePartitions
        or a reassignment of many topics changes their znodes together (one after another, ten topics of 24
        partitions took 0.6 s of rereads before the last one's new partitions showed)."""
        changed, self._changed_topics = list(self._changed_topics), {}
        await self._load_topics_named(changed)

    async def _load_topics_named(self, names: list[str]) -> None:
        read = await asyncio.gather(*(self._read_topic(name) for name in names))
        image = self._image
        topics = dict(image.topics)
        by_id = dict(image.topics_by_id)
        changed = gone = False
        for name, topic in zip(names, read, strict=True):
            old = topics.pop(name, None)
            if old is not None:
                by_id.pop(old.topic_id, None)
            if topic is not None:
                topics[name] = topic
                by_id[topic.topic_id] = topic
                changed = True
            elif old is not None:
                self._forget_watches(name)
                changed = gone = True
        if gone:
            # A DeleteTopics of several topics goes in one ZooKeeper multi, as Kafka 4.4 removes them in one batch:
            # every topic that multi removed leaves this image with the one whose watch fired first.
            listed = set(await self.zk.get_children(TopicsZNode.path) or [])
            for name in [n for n in topics if n not in listed]:
                by_id.pop(topics.pop(name).topic_id, None)
                self._forget_watches(name)
        if changed:
            self._publish(topics=_frozen(topics), topics_by_id=_frozen(by_id))

    async def _load_changed_partitions(self) -> None:
        """Reread every partition whose state znode fired since the last reread, all reads at once, and publish
        one image with them: a new topic's states (the controller writes them in one multi) or a failed broker's
        leaderships arrive together, one image for all of them rather than one per partition. A state znode
        found gone is not applied: only a deletion removes one (children before the topic znode), and Kafka 4.4
        removes a topic from the image in one record, so the partitions keep their leaders until the topic's
        own reread drops it whole (never leader-less in between, which handlers answered NOT_LEADER_OR_FOLLOWER
        where Kafka answers UNKNOWN_TOPIC_OR_PARTITION)."""
        changed, self._changed_partitions = list(self._changed_partitions), {}
        unready = any(name in self._unready for name, _ in changed)
        image = self._image
        wanted = [(image.topics[name], partition) for name, partition in changed
                  if name in image.topics and partition < len(image.topics[name].partitions)]
        read = await asyncio.gather(*(self._read_state(
            topic.name, partition, list(current.replicas), current.adding_replicas, current.removing_replicas)
            for topic, partition in wanted for current in (topic.partitions[partition],)))
        states: dict[str, list[PartitionState]] = {}
        for (topic, partition), state in zip(wanted, read, strict=True):
            if state is None:
                continue  # the topic is being deleted (see above)
            latest = self._image.topics.get(topic.name)
            if latest is None or latest.topic_id != topic.topic_id or partition >= len(latest.partitions):
                continue  # the topic went (or was recreated) meanwhile: its own reread publishes it
            if state.partition_epoch < latest.partitions[partition].partition_epoch:
                continue  # read before a newer version was published (this broker's own ISR write): stale, never applied
            if state != latest.partitions[partition]:
                states.setdefault(topic.name, []).append(state)
        if states:
            self._put_partitions(states)
        if unready:  # a state of a topic (or of partitions) left out: every such topic read again, in one image
            await self._load_topics_named(sorted(self._unready))

    def _put_partition(self, name: str, state: PartitionState) -> None:
        self._put_partitions({name: [state]})

    def _put_partitions(self, states: Mapping[str, list[PartitionState]]) -> None:
        """Publish one image with ``states`` (topic name: new partition states) in place of the old ones."""
        topics, by_id = dict(self._image.topics), dict(self._image.topics_by_id)
        for name, changed in states.items():
            partitions = list(topics[name].partitions)
            for state in changed:
                partitions[state.partition] = state
            topic = topics[name] = replace(topics[name], partitions=tuple(partitions))
            by_id[topic.topic_id] = topic
        self._publish(topics=_frozen(topics), topics_by_id=_frozen(by_id))

    # brokers and the controller
    def _brokers_changed(self, _event: Any) -> None:
        async def load() -> None:
            self._publish(brokers=await self._read_brokers())
        self._in_task(load)

    async def _read_brokers(self) -> Mapping[int, BrokerImage]:
        return _broker_images(await live_brokers(self.zk, watch=self._brokers_changed))

    def _voters_changed(self, _event: Any) -> None:
        async def load() -> None:
            self._publish(voters=await self._read_voters())
        self._in_task(load)

    async def _read_voters(self) -> Mapping[int, BrokerImage]:
        return _broker_images(await quorum_voters(self.zk, watch=self._voters_changed))

    def _controller_changed(self, _event: Any) -> None:
        async def load() -> None:
            controller_id = await self._read_controller()
            if controller_id != self._image.controller_id:
                self._publish(controller_id=controller_id)
        self._in_task(load)

    async def _read_controller(self) -> int:
        if await self.zk.exists(ControllerZNode.path, watch=self._controller_changed) is None:
            return -1
        found = await self.zk.get(ControllerZNode.path)
        try:
            return ControllerZNode.decode(found[0]).broker_id if found is not None else -1
        except ZNodeDecodeError:
            return -1

    # replicas in offline log dirs
    def _offline_replicas_changed(self, _event: Any) -> None:
        async def load() -> None:
            self._publish(offline_replicas=await self._read_offline_replicas())
        self._in_task(load)

    async def _read_offline_replicas(self) -> Mapping[tuple[str, int], tuple[int, ...]]:
        """Every broker's ``OfflineReplicasZNode`` (watched: the set of brokers and each one's partitions)."""
        watch = self._offline_replicas_changed
        if await self.zk.exists(OfflineReplicasZNode.parent, watch=watch) is None:
            return _frozen({})
        out: dict[tuple[str, int], tuple[int, ...]] = {}
        for child in await self.zk.get_children(OfflineReplicasZNode.parent, watch=watch) or []:
            if not child.isdigit():
                continue
            found = await self.zk.get(OfflineReplicasZNode.path(int(child)), watch=watch)
            try:
                partitions = OfflineReplicasZNode.decode(found[0]) if found is not None else ()
            except ZNodeDecodeError:
                log.warning("ignoring unreadable %s", OfflineReplicasZNode.path(int(child)))
                continue
            for tp in partitions:
                out[tp] = tuple(sorted({*out.get(tp, ()), int(child)}))
        return _frozen(out)

    async def set_offline_replicas(self, broker_id: int, partitions: Collection[tuple[str, int]]) -> None:
        """Tell every broker that ``broker_id``'s replicas of ``partitions`` are in offline log dirs (an
        ephemeral znode of this session: gone with the broker, whose replicas are then offline anyway)."""
        self._own_offline = (broker_id, tuple(partitions))
        await self._write_offline_replicas(*self._own_offline)

    async def _write_offline_replicas(self, broker_id: int, partitions: Collection[tuple[str, int]]) -> None:
        path, data = OfflineReplicasZNode.path(broker_id), OfflineReplicasZNode.encode(partitions)
        try:
            await self.zk.create(path, data, ephemeral=True, make_parents=True)
        except NodeExistsError:
            await self.zk.set(path, data)

    # configs, quotas, credentials
    async def _read_all_configs(self) -> dict[str, Mapping]:
        broker_configs: dict[str, Mapping[str, str]] = {}
        quotas: dict[frozenset, Mapping[str, float]] = {}
        credentials: dict[str, Mapping[int, ScramCredential]] = {}
        group_configs: dict[str, Mapping[str, str]] = {}
        for group in await self.zk.get_children(f"/config/{GROUPS}") or []:
            found = await self.zk.get(ConfigEntityZNode.path(GROUPS, group))
            _apply_group(group, ConfigEntityZNode.decode(found[0]) if found is not None else {}, group_configs)
        client_metrics: dict[str, Mapping[str, str]] = {}
        for name in await self.zk.get_children(f"/config/{CLIENT_METRICS}") or []:
            found = await self.zk.get(ConfigEntityZNode.path(CLIENT_METRICS, name))
            _apply_group(name, ConfigEntityZNode.decode(found[0]) if found is not None else {}, client_metrics)
        entities = [("brokers", c) for c in await self.zk.get_children("/config/brokers") or []]
        entities += [("clients", c) for c in await self.zk.get_children("/config/clients") or []]
        entities += [("ips", c) for c in await self.zk.get_children("/config/ips") or []]
        for user in await self.zk.get_children("/config/users") or []:
            entities.append(("users", user))
            entities += [("users", f"{user}/clients/{c}")
                         for c in await self.zk.get_children(f"/config/users/{user}/clients") or []]
        for config_type, entity_path in entities:
            found = await self.zk.get(ConfigEntityZNode.path(config_type, entity_path))
            config = ConfigEntityZNode.decode(found[0]) if found is not None else {}
            _apply_entity(config_type, entity_path, config, broker_configs, quotas, credentials)
        return {"broker_configs": _frozen(broker_configs), "client_quotas": _frozen(quotas),
                "scram_credentials": _frozen(credentials), "group_configs": _frozen(group_configs),
                "client_metrics_configs": _frozen(client_metrics)}

    async def _load_entity(self, config_type: str, entity_path: str) -> None:
        """Reread one config entity into a new image."""
        found = await self.zk.get(ConfigEntityZNode.path(config_type, entity_path))
        config = ConfigEntityZNode.decode(found[0]) if found is not None else {}
        image = self._image
        if config_type == "topics":
            topic = image.topics.get(entity_path)
            if topic is None or dict(topic.configs) == config:
                return
            topic = replace(topic, configs=config)
            self._publish(topics=_frozen({**image.topics, topic.name: topic}),
                          topics_by_id=_frozen({**image.topics_by_id, topic.topic_id: topic}))
            return
        if config_type == GROUPS:
            group_configs = dict(image.group_configs)
            _apply_group(entity_path, config, group_configs)
            self._publish(group_configs=_frozen(group_configs))
            return
        if config_type == CLIENT_METRICS:
            client_metrics = dict(image.client_metrics_configs)
            _apply_group(entity_path, config, client_metrics)
            self._publish(client_metrics_configs=_frozen(client_metrics))
            return
        broker_configs, quotas = dict(image.broker_configs), dict(image.client_quotas)
        credentials = dict(image.scram_credentials)
        _apply_entity(config_type, entity_path, config, broker_configs, quotas, credentials)
        self._publish(broker_configs=_frozen(broker_configs), client_quotas=_frozen(quotas),
                      scram_credentials=_frozen(credentials))

    def _config_changes(self, _event: Any) -> None:
        self._in_task(self._apply_config_changes)

    async def _apply_config_changes(self) -> None:
        """Kafka's ZkNodeChangeNotificationListener: reread the entity of each new notification, in order,
        and delete notifications already applied that are older than ``CHANGE_EXPIRATION_MS``."""
        changes = await self.zk.get_children(ConfigEntityChangeNotificationZNode.path, watch=self._config_changes) or []
        now_ms = int(self.clock() * 1000)
        for child in sorted(changes, key=_sequence):
            seq = _sequence(child)
            path = f"{ConfigEntityChangeNotificationZNode.path}/{child}"
            if seq > self._last_change:
                found = await self.zk.get(path)
                self._last_change = seq
                if found is not None:
                    try:
                        config_type, _, name = ConfigEntityChangeNotificationSequenceZNode.decode(found[0]).partition("/")
                    except ZNodeDecodeError as exc:
                        log.warning("ignoring config change %s: %s", child, exc)
                    else:
                        await self._load_entity(config_type, name)
            stat = await self.zk.exists(path)
            if stat is not None and stat.ctime < now_ms - CHANGE_EXPIRATION_MS:
                try:
                    await self.zk.delete(path)
                except NoNodeError:
                    pass  # another broker purged it

    # features
    def _features_changed(self, _event: Any) -> None:
        async def load() -> None:
            features, epoch = await self._read_features()
            self._publish(finalized_features=features, features_epoch=epoch)
        self._in_task(load)

    async def _finalize_features(self) -> None:
        """Create ``/feature`` at a new cluster's levels, or move an earlier pykbroker's levels up to them
        (conditional writes: brokers starting together agree on one result)."""
        while True:
            found = await self.zk.get(FeatureZNode.path)
            try:
                if found is None:
                    await self.zk.create(FeatureZNode.path, FeatureZNode.encode(BOOTSTRAP_FINALIZED))
                    log.info("finalized features of the new cluster: %s", dict(BOOTSTRAP_FINALIZED))
                    return
                current = dict(FeatureZNode.decode(found[0]).features)
                upgraded = upgraded_levels(current)
                if upgraded is None:
                    return
                await self.zk.set(FeatureZNode.path, FeatureZNode.encode(upgraded), found[1].version)
                log.info("finalized features upgraded from %s to %s (those of a new Kafka 4.4 cluster)",
                         current, upgraded)
                return
            except (BadVersionError, NodeExistsError):
                continue  # another broker wrote it first: look again

    async def _read_features(self) -> tuple[Mapping[str, int], int]:
        """Finalized features and their epoch (the zxid of /feature's last change)."""
        found = await self.zk.get(FeatureZNode.path, watch=self._features_changed)
        if found is None:
            await self.zk.exists(FeatureZNode.path, watch=self._features_changed)
            return _EMPTY, -1
        return _frozen(FeatureZNode.decode(found[0]).features), found[1].mzxid

    # -- writing -------------------------------------------------------------------------------------------
    async def create_topic(self, name: str, assignments: list[list[int]], configs: Mapping[str, str]) -> TopicState:
        """Create a topic as Kafka's AdminZkClient does: its config znode and its assignment, in one multi (with
        the other topics asked for in the same pass of the event loop, a CreateTopics' topics: the controller
        finds them together and gives them their leaders in one multi, as Kafka 4.4 commits them in one batch).
        With a controller, wait (up to ``admin_timeout_s``) until it has written every partition's state,
        as Kafka's CreateTopics waits for leaders; without one, write those states here (leader = first
        replica, ISR = all replicas). Returns the topic as the image has it. Raises ``KeyError`` if it exists."""
        topic_id = generate_cluster_id()  # Kafka's Uuid.randomUuid, as for the cluster id
        future = asyncio.get_running_loop().create_future()
        if not self._creations:
            asyncio.get_running_loop().call_soon(self._spawn, self._write_creations)
        self._creations.append((name, assignments, configs, topic_id, future))
        await future
        log.info("created topic %s (id %s) with %d partitions", name, topic_id, len(assignments))
        await self._wait_for_watches(name, lambda image: _states_written(image, name, len(assignments)))
        created = self._image.topics.get(name)
        if created is None:  # no controller wrote its states in time: not in the image yet, no leaders
            created = TopicState(name, _topic_uuid(topic_id), tuple(
                PartitionState(p, -1, 0, tuple(replicas), (), 0) for p, replicas in enumerate(assignments)),
                dict(configs))
        return created

    async def add_partitions(self, name: str, assignments: list[list[int]], expected: int | None = None) -> TopicState:
        """Append partitions: the topic znode is rewritten conditionally on its version, with the new
        partitions' states in the same multi (without a controller). ``PartitionCountChanged`` when the topic has
        not ``expected`` partitions (another broker added some meanwhile)."""
        while True:
            found = await self.zk.get(TopicZNode.path(name))
            if found is None:
                raise KeyError(name)
            current = TopicZNode.decode(name, found[0])
            start = len(current.partitions)
            if expected is not None and start != expected:
                raise PartitionCountChanged(start)
            partitions = {**current.partitions, **{start + i: r for i, r in enumerate(assignments)}}
            epoch = self.controller_epoch()
            ops: list = [SetDataOp(TopicZNode.path(name), TopicZNode.encode(
                partitions, current.topic_id, adding_replicas=current.adding_replicas,
                removing_replicas=current.removing_replicas), found[1].version)]
            for i, replicas in enumerate(assignments if not self.with_controller else ()):
                ops += [CreateOp(TopicPartitionZNode.path(name, start + i)),
                        CreateOp(TopicPartitionStateZNode.path(name, start + i),
                                 TopicPartitionStateZNode.encode(replicas[0], 0, replicas, epoch))]
            try:
                await self.zk.multi(ops)
                break
            except ZooKeeperMultiError as exc:
                if not isinstance(exc.error, BadVersionError):
                    raise
                # the topic changed meanwhile: recompute from its new assignment
        await self._wait_for_watches(name, lambda image: _states_written(image, name, len(partitions)))
        return self._image.topics[name]

    async def _wait_for_watches(self, name: str, written: Callable[[MetadataImage], bool]) -> None:
        """Until this broker's image shows a write of topic ``name`` (``written``), up to ``admin_timeout_s``. The
        watches bring it (the topic list's, the topic's, its partition states'): rereading the topic here too cost
        a ZooKeeper read per topic under the store's lock, one after another, before a request of ten topics could
        answer (0.3 s of its 0.7 s). After the timeout (no controller wrote the states) the topic is reread, so the
        caller finds it in the image as ZooKeeper has it."""
        if await self.wait_for(written, self.admin_timeout_s):
            return
        async with self._lock:
            await self._load_topic(name)

    async def catch_up(self, names: Collection[str]) -> None:
        """Until this image has topics ``names`` as ZooKeeper has them (present or gone, same topic id, same
        configs), up to ``CATCH_UP_TIMEOUT_S``: a topic another broker created, deleted or altered a moment ago
        reaches this one by its watches, and a CreateTopics, DeleteTopics, CreatePartitions or AlterConfigs here must
        not decide on what it was before (Kafka's brokers forward them to the controller: an incremental alteration
        through another broker right after one here lost it). A topic whose states the controller has not written
        yet is left out of the image meanwhile: not waited for."""
        names = list(dict.fromkeys(names))
        found = await asyncio.gather(*(asyncio.gather(self.zk.get(TopicZNode.path(name)),
                                                      self.zk.get(ConfigEntityZNode.path("topics", name)))
                                       for name in names))
        wanted: dict[str, tuple[uuid.UUID, dict[str, str]] | None] = {}
        for name, (znode, config) in zip(names, found, strict=True):
            try:
                wanted[name] = None if znode is None or znode[0] is None else (
                    _topic_uuid(TopicZNode.decode(name, znode[0]).topic_id),
                    ConfigEntityZNode.decode(config[0]) if config is not None else {})
            except ZNodeDecodeError:
                continue

        def caught_up(image: MetadataImage) -> bool:
            for name, topic in wanted.items():
                shown = image.topics.get(name)
                if shown is None:
                    if topic is not None and name not in self._unready:
                        return False
                elif topic is None or shown.topic_id != topic[0] or dict(shown.configs) != topic[1]:
                    return False
            return True

        hidden = [name for name, topic in wanted.items()
                  if topic is not None and name not in self._image.topics and name in self._unready]
        if hidden:  # read before the controller wrote their states, which may be there now: read again
            async with self._lock:
                await self._load_topics_named(hidden)
        await self.wait_for(caught_up, min(CATCH_UP_TIMEOUT_S, self.admin_timeout_s))

    async def delete_topic(self, name: str) -> TopicState:
        """Delete a topic as Kafka does: ``/admin/delete_topics/<t>`` asks for it; the controller removes the
        topic's znodes and config, then the request (this store waits for that up to ``admin_timeout_s``; a
        deletion that cannot finish, a replica being offline, stays pending as in Kafka). Without a
        controller this store does the removal. Returns the topic as it was; ``KeyError`` if unknown.

        The wait ends when this broker's image no longer has the topic of the id deleted: a client may create the
        name again at once (a producer's Metadata with auto.create.topics.enable), and the watch's reread then finds
        the new topic, never the name missing. Waiting for the name held the answer for ``admin_timeout_s`` (30 s)
        and, as a connection's requests are served in order, the admin's next DeleteTopics behind it: Kafka 4.4
        answers at once (confluent-kafka-javascript's fetch_offsets test timed out deleting its second topic)."""
        topic = self._image.topics.get(name)
        requested = self._request_deletion(name)  # written in the next pass: the read below finds the topic deleted
        try:
            found = await self.zk.get(TopicZNode.path(name))
        finally:
            await requested  # KeyError: no such topic
        deleted_id: uuid.UUID | None = None
        if found is not None:
            try:
                deleted_id = _topic_uuid(TopicZNode.decode(name, found[0]).topic_id)
            except (ZNodeDecodeError, ValueError):  # unreadable: the name's absence is all there is to wait for
                pass
        if self.with_controller:
            def gone(image: MetadataImage) -> bool:
                now = image.topics.get(name)
                return now is None or (deleted_id is not None and now.topic_id != deleted_id)
            await self.wait_for(gone, self.admin_timeout_s)
            return topic if topic is not None else TopicState(name, uuid.UUID(int=0), ())
        await self.zk.delete(TopicZNode.path(name), recursive=True)
        try:
            await self.zk.delete(ConfigEntityZNode.path("topics", name))
        except NoNodeError:
            pass
        try:
            await self.zk.delete(DeleteTopicsTopicZNode.path(name))
        except NoNodeError:
            pass  # the controller finished it for us
        log.info("deleted topic %s", name)
        async with self._lock:
            await self._load_topic(name)
        return topic if topic is not None else TopicState(name, uuid.UUID(int=0), ())

    async def _write_creations(self) -> None:
        """The topics asked for in one pass of the loop: one multi (up to ``CREATE_MULTI_BYTES``: ZooKeeper refuses
        a request over 1 MB), or (one exists) a multi each."""
        batch, self._creations = self._creations, []
        try:
            ops = await asyncio.gather(*(self._creation_ops(*creation[:4]) for creation in batch))
            chunks: list[list[int]] = [[]]
            size = 0
            for i, topic_ops in enumerate(ops):
                topic_size = sum(len(op.path) + len(getattr(op, "data", None) or b"") for op in topic_ops)
                if chunks[-1] and size + topic_size > CREATE_MULTI_BYTES:
                    chunks.append([])
                    size = 0
                chunks[-1].append(i)
                size += topic_size
            results: list[BaseException | None] = [None] * len(batch)
            for chunk in chunks:
                try:
                    await self.zk.multi([op for i in chunk for op in ops[i]])
                except ZooKeeperMultiError:
                    for i in chunk:
                        try:
                            await self.zk.multi(ops[i])
                        except ZooKeeperMultiError as exc:
                            if not isinstance(exc.error, NodeExistsError):
                                raise
                            results[i] = KeyError(batch[i][0])
        except Exception as exc:  # noqa: BLE001 - each asker gets it
            results = [exc] * len(batch)
        for creation, result in zip(batch, results, strict=True):
            if result is None:
                creation[4].set_result(None)
            else:
                creation[4].set_exception(result)

    async def _creation_ops(self, name: str, assignments: list[list[int]], configs: Mapping[str, str],
                            topic_id: str) -> list:
        """The multi's operations creating one topic (its config znode set first when an old topic left one)."""
        epoch = self.controller_epoch()
        ops: list = [CreateOp(TopicZNode.path(name), TopicZNode.encode(dict(enumerate(assignments)), topic_id))]
        if not self.with_controller:
            ops.append(CreateOp(TopicPartitionsZNode.path(name)))
            for p, replicas in enumerate(assignments):
                ops += [CreateOp(TopicPartitionZNode.path(name, p)),
                        CreateOp(TopicPartitionStateZNode.path(name, p),
                                 TopicPartitionStateZNode.encode(replicas[0], 0, replicas, epoch))]
        config_path = ConfigEntityZNode.path("topics", name)
        if await self.zk.exists(config_path) is None:
            ops.insert(0, CreateOp(config_path, ConfigEntityZNode.encode(configs)))
        elif await self.zk.exists(TopicZNode.path(name)) is None:  # left by an old topic of that name
            await self.zk.set(config_path, ConfigEntityZNode.encode(configs))
        return ops

    def _spawn(self, coro_fn: Callable[[], Any]) -> None:
        task = asyncio.ensure_future(coro_fn())
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    def _request_deletion(self, name: str) -> asyncio.Future:
        """Ask for ``name``'s deletion (``KeyError`` if there is no such topic): the requests of one pass of the
        event loop (a DeleteTopics' topics, asked for together) are created in one multi, so the controller
        finds them together and deletes them in one multi (Kafka 4.4 removes them in one batch of records)."""
        future = self._deletion_requests.get(name)
        if future is None:
            if not self._deletion_requests:
                asyncio.get_running_loop().call_soon(self._spawn, self._write_deletion_requests)
            future = self._deletion_requests[name] = asyncio.get_running_loop().create_future()
        return future

    async def _write_deletion_requests(self) -> None:
        batch, self._deletion_requests = self._deletion_requests, {}
        names = list(batch)
        try:
            found = await asyncio.gather(*(self.zk.exists(TopicZNode.path(name)) for name in names))
            known = [name for name, stat in zip(names, found, strict=True) if stat is not None]
            try:
                if known:
                    await self.zk.multi([CreateOp(DeleteTopicsTopicZNode.path(name)) for name in known])
            except ZooKeeperMultiError:  # one asked for already (or the parent missing): each alone
                for name in known:
                    try:
                        await self.zk.create(DeleteTopicsTopicZNode.path(name), make_parents=True)
                    except NodeExistsError:
                        pass
        except Exception as exc:  # noqa: BLE001 - each asker gets it
            for future in batch.values():
                if not future.done():
                    future.set_exception(exc)
            return
        for name, stat in zip(names, found, strict=True):
            if not batch[name].done():
                if stat is None:
                    batch[name].set_exception(KeyError(name))
                else:
                    batch[name].set_result(None)

    async def alter_partition(self, topic: str, partition: int, state: PartitionState) -> PartitionState | None:
        """Write one partition's leader and ISR if its partition epoch (the state znode's version) is still
        ``state.partition_epoch - 1``; returns the committed state with its new epoch, None if refused."""
        path = TopicPartitionStateZNode.path(topic, partition)
        data = TopicPartitionStateZNode.encode(state.leader, state.leader_epoch, list(state.isr), self.controller_epoch())
        try:
            stat = await self.zk.set(path, data, state.partition_epoch - 1)
        except (BadVersionError, NoNodeError):
            return None
        committed = replace(state, partition_epoch=stat.version)
        async with self._lock:
            current = self._image.partition(topic, partition)
            if current is not None and current.partition_epoch < committed.partition_epoch:
                self._put_partition(topic, replace(committed, replicas=current.replicas,
                                                   adding_replicas=current.adding_replicas,
                                                   removing_replicas=current.removing_replicas))
        return committed

    async def _write_entity(self, config_type: str, entity_path: str,
                            change: Callable[[dict[str, str]], dict[str, str]]) -> None:
        """Read-modify-write of one config entity, then a change notification: every config write goes through
        here. The write is conditional on the version read; when another broker wrote in between (BadVersion),
        ``change`` is applied again to what it wrote."""
        path = ConfigEntityZNode.path(config_type, entity_path)
        while True:
            found = await self.zk.get(path)
            data = ConfigEntityZNode.encode(change(ConfigEntityZNode.decode(found[0]) if found else {}))
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
        async with self._lock:
            await self._load_entity(config_type, entity_path)

    async def set_topic_configs(self, name: str, configs: Mapping[str, str],
                                base: Mapping[str, str] | None = None) -> None:
        if await self.zk.exists(TopicZNode.path(name)) is None:
            raise KeyError(name)
        await self._write_entity("topics", name, config_change(configs, base))

    async def set_broker_configs(self, changes: Mapping[str, Mapping[str, str]],
                                 bases: Mapping[str, Mapping[str, str]] | None = None) -> None:
        """Change the dynamic configs of each BROKER resource ("" is the cluster default)."""
        for resource_name, configs in changes.items():
            await self._write_entity("brokers", resource_name or DEFAULT_ENTITY,
                                     config_change(configs, None if bases is None else bases.get(resource_name, {})))

    async def set_group_configs(self, group_id: str, configs: Mapping[str, str],
                                base: Mapping[str, str] | None = None) -> None:
        """Change a GROUP resource's configs (none left: the entity is emptied, as Kafka deletes them)."""
        await self._write_entity(GROUPS, sanitize(group_id), config_change(configs, base))

    async def set_client_metrics_configs(self, name: str, configs: Mapping[str, str],
                                         base: Mapping[str, str] | None = None) -> None:
        """Change a CLIENT_METRICS resource's configs in ``/config/client-metrics/<name>``."""
        await self._write_entity(CLIENT_METRICS, sanitize(name), config_change(configs, base))

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
            credential = credential_from_salted_password(SCRAM_MECHANISM_NAMES[mechanism], iterations, salt,
                                                         salted_password)
            by_user.setdefault(user, []).append((mechanism, credential))
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

    async def set_finalized_features(self, levels: Mapping[str, int]) -> None:
        """Replace the finalized feature levels in /feature (conditional on its version)."""
        await self.update_finalized_features(lambda _current: levels)

    async def update_finalized_features(self, change: Callable[[Mapping[str, int]], Mapping[str, int]]
                                        ) -> tuple[Mapping[str, int], Mapping[str, int]]:
        """Read-modify-write of /feature, conditional on its version: brokers changing features at once (each
        answering its own UpdateFeatures) never lose each other's change, as Kafka's one controller ensures."""
        while True:
            found = await self.zk.get(FeatureZNode.path)
            old = FeatureZNode.decode(found[0]).features if found is not None else {}
            new = {k: v for k, v in change(old).items() if v > 0}
            if new == {k: v for k, v in old.items() if v > 0}:
                return old, new
            try:
                if found is None:
                    await self.zk.create(FeatureZNode.path, FeatureZNode.encode(new))
                    stat = await self.zk.exists(FeatureZNode.path)
                    epoch = stat.mzxid if stat is not None else -1
                else:
                    epoch = (await self.zk.set(FeatureZNode.path, FeatureZNode.encode(new), found[1].version)).mzxid
                break
            except (BadVersionError, NodeExistsError):
                continue  # changed meanwhile: apply the change to what is there now
        async with self._lock:
            if epoch > self._image.features_epoch or self._image.features_epoch < 0:
                self._publish(finalized_features=_frozen(new), features_epoch=epoch)
        return old, new

    async def register_broker(self, broker: BrokerImage) -> None:
        """This broker's ephemeral ``/brokers/ids/<id>`` (registered again in every new session)."""
        self._registration = BrokerRegistration(
            self.zk, broker.node_id, [ZkEndpoint(e.listener, e.host, e.port, e.security_protocol)
                                      for e in broker.endpoints], rack=broker.rack)
        # A broker restarted right after a crash finds its old registration until that session expires: it
        # waits for it (Kafka refuses to start instead, and the operator has to retry).
        await self._registration.register(stale_wait_s=1.5 * self.zk.session_timeout_ms / 1000)
        async with self._lock:
            self._publish(brokers=await self._read_brokers(), voters=await self._read_voters())


def _broker_images(registrations: Mapping[int, tuple[BrokerInfo, int]]) -> Mapping[int, BrokerImage]:
    return _frozen({i: BrokerImage(i, tuple(Endpoint(e.listener_name, e.host or "", e.port, e.security_protocol)
                                            for e in info.endpoints), info.rack)
                    for i, (info, _epoch) in registrations.items()})


def _states_written(image: MetadataImage, name: str, partitions: int) -> bool:
    """Whether the image has ``partitions`` partitions of ``name``, each with a state the controller wrote."""
    topic = image.topics.get(name)
    return topic is not None and len(topic.partitions) >= partitions and all(
        p.leader >= 0 or p.isr for p in topic.partitions)


def _apply_group(entity_path: str, config: Mapping[str, str], group_configs: dict) -> None:
    """Fold one ``/config/groups/<group>`` (or ``/config/client-metrics/<name>``) znode into the image's configs of
    that resource type."""
    group_id = desanitize(entity_path)
    if config:
        group_configs[group_id] = _frozen(config)
    else:
        group_configs.pop(group_id, None)


def _apply_entity(config_type: str, entity_path: str, config: Mapping[str, str],
                  broker_configs: dict, quotas: dict, credentials: dict) -> None:
    """Fold one config entity's znode into the image's maps."""
    if config_type == "brokers":
        name = "" if entity_path == DEFAULT_ENTITY else entity_path
        if config:
            broker_configs[name] = _frozen(config)
        else:
            broker_configs.pop(name, None)
        return
    entity = _entity_from_path(config_type, entity_path)
    if entity is None:
        return
    values = {k: float(v) for k, v in config.items() if k in USER_AND_CLIENT_KEYS or k in IP_KEYS}
    if values:
        quotas[entity] = _frozen(values)
    else:
        quotas.pop(entity, None)
    if config_type == "users" and "/" not in entity_path:
        user = desanitize(entity_path)
        creds = {}
        for mechanism, name in SCRAM_MECHANISM_NAMES.items():
            if name in config:
                try:
                    creds[mechanism] = parse_scram_credential(config[name])
                except ZNodeDecodeError as exc:
                    log.warning("ignoring unreadable %s credential of %s: %s", name, user, exc)
        if creds:
            credentials[user] = _frozen(creds)
        else:
            credentials.pop(user, None)

