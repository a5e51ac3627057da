"""Cluster metadata of the embedded single-node store: topics, partitions, topic ids, topic configs, SCRAM
credentials, client quotas, dynamic broker configs and finalized features, published as a ``MetadataImage``;
and the ACLs and delegation tokens (their information, never their HMACs) that the authorizer and the token
manager keep in memory, behind their small store interfaces (``AclStore``, ``TokenStore``).

On disk: ``<first log dir>/__cluster_metadata.json`` (compact JSON), rewritten atomically (temp file, fsync,
rename, fsync dir) once for all the changes of one pass of the event loop (group commit: a request's topics
together), each answered once written; ``meta.properties`` in every log dir holds the cluster id and node id in
Kafka's format. Access is from the event loop only (single writer).
"""

from __future__ import annotations

import asyncio
import base64
import json
import logging
import time
import uuid
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from types import MappingProxyType

from replication.metadata.acl import AclBinding
from replication.metadata.features import BOOTSTRAP_FINALIZED, upgraded_levels
from replication.metadata.image import (
    BrokerImage,
    MetadataImage,
    MetadataListener,
    PartitionCountChanged,
    PartitionState,
    PublishedImage,
    TopicState,
    config_change,
)
from replication.metadata.tokens import TokenInformation
from storage.file_records import atomic_write

__all__ = ["PartitionState", "TopicState", "EmbeddedMetadataStore", "load_or_create_cluster_id"]

METADATA_FILE = "__cluster_metadata.json"
META_PROPERTIES = "meta.properties"

log = logging.getLogger("pykbroker.metadata_store")


def new_uuid() -> uuid.UUID:
    """A random UUID that is never the zero UUID nor Kafka's reserved metadata-topic id (1)."""
    while True:
        u = uuid.uuid4()
        if u.int > 1:
            return u


def uuid_to_kafka_string(u: uuid.UUID) -> str:
    """Kafka's Uuid.toString(): url-safe base64 without padding."""
    return base64.urlsafe_b64encode(u.bytes).decode().rstrip("=")


def uuid_from_kafka_string(s: str) -> uuid.UUID:
    return uuid.UUID(bytes=base64.urlsafe_b64decode(s + "=" * (-len(s) % 4)))


def _read_properties(path: Path) -> dict[str, str]:
    props: dict[str, str] = {}
    for line in path.read_text().splitlines():
        line = line.strip()
        if line and not line.startswith("#") and "=" in line:
            k, v = line.split("=", 1)
            props[k.strip()] = v.strip()
    return props


def load_or_create_cluster_id(log_dirs: Iterable[str], node_id: int, wanted: str | None = None) -> str:
    """Read or write ``meta.properties`` in every log dir; all dirs must agree on the cluster id and node id."""
    found: dict[str, str] = {}
    dirs = [Path(d) for d in log_dirs]
    for d in dirs:
        p = d / META_PROPERTIES
        if p.exists():
            props = _read_properties(p)
            if "node.id" in props and int(props["node.id"]) != node_id:
                raise RuntimeError(f"{p}: node.id {props['node.id']} does not match the configured node.id {node_id}; "
                                   "point log.dirs at this node's own directory")
            if "cluster.id" in props:
                found[str(d)] = props["cluster.id"]
    ids = set(found.values())
    if len(ids) > 1:
        raise RuntimeError(f"log dirs belong to different clusters: {found}")
    cluster_id = ids.pop() if ids else (wanted or uuid_to_kafka_string(new_uuid()))
    if wanted and wanted != cluster_id:
        raise RuntimeError(f"cluster.id {wanted} does not match {cluster_id} stored in meta.properties")
    for i, d in enumerate(dirs):
        p = d / META_PROPERTIES
        if str(d) not in found:
            try:
                d.mkdir(parents=True, exist_ok=True)
                props = _read_properties(p) if p.exists() else {}
                body = (f"#\n#{time.strftime('%a %b %d %H:%M:%S UTC %Y', time.gmtime())}\n"
                        f"node.id={node_id}\n"
                        f"directory.id={props.get('directory.id') or uuid_to_kafka_string(new_uuid())}\n"
                        f"version=1\ncluster.id={cluster_id}\n")
                atomic_write(p, body.encode())
            except OSError as exc:
                if i == 0:  # the metadata dir: without it the broker cannot run (Kafka stops too)
                    raise
                # As Kafka with a failed log dir at start: the log manager takes it offline, the others serve.
                log.error("cannot write %s (the log manager will take %s offline): %s", p, d, exc)
    return cluster_id


class EmbeddedMetadataStore(PublishedImage):
    """The metadata of a single-node cluster, durable in the first log dir; publishes a ``MetadataImage``
    after every change. Writes are ``async`` as the ``MetadataWriter`` interface has them (a cluster's
    store waits for ZooKeeper), and commit before they return."""

    def __init__(self, data_dir: str | Path, node_id: int, cluster_id: str = "") -> None:
        self.path = Path(data_dir) / METADATA_FILE
        self.node_id = node_id
        self._listeners: list[MetadataListener] = []
        self._image = MetadataImage(cluster_id, finalized_features=MappingProxyType(dict(BOOTSTRAP_FINALIZED)),
                                    controller_id=node_id)
        # ACL bindings (pykbroker.security.authorizer.AclStore), in the order they were created.
        self._acls: list[AclBinding] = []
        # Delegation tokens by id, as replication.metadata.tokens.TokenInformation.to_json() (no HMAC).
        self._delegation_tokens: dict[str, dict] = {}
        # Topic name -> (the TopicState last written, its JSON in the file): see _commit.
        self._topic_json: dict[str, tuple[TopicState, str]] = {}
        # Deleted topics (id -> name) whose logs may still be in place: the broker renames them after the
        # DeleteTopics answer (as Kafka's brokers do after the commit), so a start after kill -9 deletes the logs
        # of these topics rather than keeping them stray. Written with every commit until forget_deleted_topics.
        self._deleted_topics: dict[uuid.UUID, str] = {}
        self._load()
        # The newest image, written or about to be (every write builds on it); ``_image`` is the one published.
        self._head = self._image
        self._committing: list[asyncio.Future[None]] = []  # writes waiting for the head to be written

    # -- persistence -----------------------------------------------------------------------------------
    def _load(self) -> None:
        if not self.path.exists():
            return
        doc = json.loads(self.path.read_text())
        topics = [TopicState(name=t["name"], topic_id=uuid_from_kafka_string(t["topic_id"]),
                             partitions=tuple(PartitionState(**p) for p in t["partitions"]),
                             configs=t.get("configs", {}))
                  for t in doc.get("topics", [])]
        self._acls = [AclBinding.from_json(a) for a in doc.get("acls", [])]
        self._delegation_tokens = {t["token_id"]: t for t in doc.get("delegation_tokens", [])}
        self._deleted_topics = {uuid_from_kafka_string(t["topic_id"]): t["name"] for t in doc.get("deleted_topics", [])}
        features = dict(self._image.finalized_features)
        features_epoch = self._image.features_epoch
        if "finalized_features" in doc:
            features = {k: int(v) for k, v in doc["finalized_features"].items()}
            features_epoch = int(doc.get("features_epoch", 1))
            upgraded = upgraded_levels(features)
            if upgraded is not None:  # written by an earlier pykbroker: the next commit stores the new levels
                log.info("finalized features upgraded from %s to %s (those of a new Kafka 4.4 cluster)",
                         features, upgraded)
                features = upgraded
        self._image = replace(
            self._image,
            offset=int(doc.get("offset", 0)),
            topics=_frozen({t.name: t for t in topics}),
            topics_by_id=_frozen({t.topic_id: t for t in topics}),
            scram_credentials=_frozen({user: _frozen({int(m): tuple(v) for m, v in by_mechanism.items()})
                                       for user, by_mechanism in doc.get("scram_credentials", {}).items()}),
            client_quotas=_frozen({frozenset((t, n) for t, n in q["entity"]):
                                   _frozen({k: float(v) for k, v in q["values"].items()})
                                   for q in doc.get("client_quotas", [])}),
            broker_configs=_frozen({name: _frozen(configs) for name, configs in doc.get("broker_configs", {}).items()}),
            group_configs=_frozen({name: _frozen(configs) for name, configs in doc.get("group_configs", {}).items()}),
            client_metrics_configs=_frozen({name: _frozen(configs)
                                            for name, configs in doc.get("client_metrics_configs", {}).items()}),
            finalized_features=_frozen(features),
            features_epoch=features_epoch,
        )

    async def _commit(self, new: MetadataImage) -> None:
        """Make ``new`` the head (as the next offset) and return once it is durable and published.

        Group commit: the writes of one pass of the event loop (a CreateTopics request's topics, written together
        by its handler) become one file write and one published image, as Kafka's controller commits a request's
        records in one batch; each waits until that write is done (an error fails them all)."""
        self._head = replace(new, offset=self._head.offset + 1)
        loop = asyncio.get_running_loop()
        done = loop.create_future()
        self._committing.append(done)
        if len(self._committing) == 1:
            loop.call_soon(self._write_head)
        await done

    def _write_head(self) -> None:
        """Persist the head, make it the published image, then tell the listeners; then the writes waiting for
        it return (with the exception, if writing or a listener failed)."""
        waiting, self._committing = self._committing, []
        failure: BaseException | None = None
        try:
            self._persist(self._head)
        except Exception as exc:  # noqa: BLE001 - every write of the batch fails with it
            self._head = self._image
            failure = exc
        else:
            old, self._image = self._image, self._head
            for listener in self._listeners:
                try:
                    listener(old, self._image)
                except Exception as exc:  # noqa: BLE001 - committed; the writers learn that applying it failed
                    log.exception("applying metadata offset %d failed", self._image.offset)
                    failure = failure or exc
        for done in waiting:
            if done.done():
                continue
            if failure is None:
                done.set_result(None)
            else:
                done.set_exception(failure)

    def _persist(self, new: MetadataImage) -> None:
        """Write ``new`` to the metadata file (atomically, fsynced)."""
        doc = {
            "version": 1,
            "offset": new.offset,
            "scram_credentials": {user: {str(m): list(v) for m, v in by_mechanism.items()}
                                  for user, by_mechanism in new.scram_credentials.items()},
            "client_quotas": [{"entity": sorted(entity, key=lambda e: e[0]), "values": dict(values)}
                              for entity, values in new.client_quotas.items()],
            "broker_configs": {name: dict(configs) for name, configs in new.broker_configs.items()},
            "group_configs": {name: dict(configs) for name, configs in new.group_configs.items()},
            "client_metrics_configs": {name: dict(configs) for name, configs in new.client_metrics_configs.items()},
            "finalized_features": dict(new.finalized_features),
            "features_epoch": new.features_epoch,
            "acls": [a.to_json() for a in self._acls],
            "delegation_tokens": list(self._delegation_tokens.values()),
            "deleted_topics": [{"name": name, "topic_id": uuid_to_kafka_string(topic_id)}
                               for topic_id, name in self._deleted_topics.items()],
        }
        # Every commit writes every topic: each topic's JSON is kept while its TopicState is unchanged, and the
        # encoding is compact (json's C encoder serves only indent=None), else creating or deleting topics one by
        # one grows quadratic (100 topics beside 300 others took 3-4 s).
        self._topic_json = {name: self._encoded_topic(t) for name, t in new.topics.items()}
        body = json.dumps(doc, separators=(",", ":"))
        topics = ",".join(encoded for _, encoded in self._topic_json.values())
        atomic_write(self.path, f'{body[:-1]},"topics":[{topics}]}}'.encode())

    def _encoded_topic(self, t: TopicState) -> tuple[TopicState, str]:
        """``t`` and its JSON in the metadata file (as last written when ``t`` is unchanged)."""
        cached = self._topic_json.get(t.name)
        if cached is not None and cached[0] is t:
            return cached
        return t, json.dumps({
            "name": t.name,
            "topic_id": uuid_to_kafka_string(t.topic_id),
            "partitions": [{"partition": p.partition, "leader": p.leader, "leader_epoch": p.leader_epoch,
                            "replicas": list(p.replicas), "isr": list(p.isr), "partition_epoch": p.partition_epoch,
                            **({"elr": list(p.elr), "last_known_elr": list(p.last_known_elr)}
                               if p.elr or p.last_known_elr else {})} for p in t.partitions],
            "configs": dict(t.configs),
        }, separators=(",", ":"))

    def _with_topic(self, topic: TopicState) -> MetadataImage:
        image = self._head
        topics = dict(image.topics)
        by_id = dict(image.topics_by_id)
        topics[topic.name] = topic
        by_id[topic.topic_id] = topic
        return replace(image, topics=_frozen(topics), topics_by_id=_frozen(by_id))

    # -- writing ---------------------------------------------------------------------------------------
    async def create_topic(self, name: str, assignments: list[list[int]], configs: Mapping[str, str]) -> TopicState:
        """Create a topic with one replica list per partition; the first replica leads."""
        if name in self._head.topics:
            raise KeyError(name)
        partitions = tuple(PartitionState(i, replicas[0], 0, tuple(replicas), tuple(replicas))
                           for i, replicas in enumerate(assignments))
        topic = TopicState(name, new_uuid(), partitions, configs)
        await self._commit(self._with_topic(topic))
        return topic

    async def add_partitions(self, name: str, assignments: list[list[int]], expected: int | None = None) -> TopicState:
        topic = self._head.topics[name]
        start = len(topic.partitions)
        if expected is not None and start != expected:
            raise PartitionCountChanged(start)
        added = tuple(PartitionState(start + i, replicas[0], 0, tuple(replicas), tuple(replicas))
                      for i, replicas in enumerate(assignments))
        topic = replace(topic, partitions=topic.partitions + added)
        await self._commit(self._with_topic(topic))
        return topic

    async def catch_up(self, names: Collection[str]) -> None:
        """The image is this store's own: nothing to wait for."""

    async def delete_topic(self, name: str) -> TopicState:
        """Delete a topic; it is remembered in ``deleted_topics`` (in the same write) until its logs are renamed."""
        image = self._head
        topic = image.topics[name]
        topics = {k: v for k, v in image.topics.items() if k != name}
        by_id = {k: v for k, v in image.topics_by_id.items() if k != topic.topic_id}
        self._deleted_topics[topic.topic_id] = name
        try:
            await self._commit(replace(image, topics=_frozen(topics), topics_by_id=_frozen(by_id)))
        except Exception:
            if topic.topic_id in self._image.topics_by_id:  # not deleted after all
                self._deleted_topics.pop(topic.topic_id, None)
            raise
        return topic

    @property
    def deleted_topics(self) -> Mapping[uuid.UUID, str]:
        """Topics deleted (id -> name) whose logs the broker may not have renamed yet (see delete_topic)."""
        return MappingProxyType(self._deleted_topics)

    def forget_deleted_topics(self) -> None:
        """The broker renamed the logs of every topic deleted in the published image: stop naming them (from the
        next write on; a start finding them named again finds no log of theirs)."""
        published = self._image.topics_by_id
        self._deleted_topics = {i: n for i, n in self._deleted_topics.items() if i in published}

    async def set_topic_configs(self, name: str, configs: Mapping[str, str],
                                base: Mapping[str, str] | None = None) -> None:
        t = self._head.topics[name]
        await self._commit(self._with_topic(replace(t, configs=config_change(configs, base)(t.configs))))

    async def alter_partition(self, topic: str, partition: int, state: PartitionState) -> PartitionState | None:
        """Replace one partition's state if its partition epoch is still the one ``state`` was made from
        (``state.partition_epoch`` - 1); the committed state with its new epoch, None if refused."""
        current = self._head.partition(topic, partition)
        if current is None or current.partition_epoch != state.partition_epoch - 1:
            return None
        t = self._head.topics[topic]
        parts = list(t.partitions)
        parts[partition] = state
        await self._commit(self._with_topic(replace(t, partitions=tuple(parts))))
        return state

    async def restart_leaderships(self) -> int:
        """At start: every partition this node led is led again in a new leader epoch, two higher, in one commit;
        the number of partitions. A KRaft controller fences a node's previous registration when it registers again
        (leader none, epoch + 1) and elects it once unfenced (epoch + 1), after a clean stop as after kill -9, so
        a client's cached epoch and the leader-epoch cache see a new leadership, as on Kafka."""
        restarted = 0
        topics = dict(self._head.topics)
        for name, t in self._head.topics.items():
            parts = tuple(replace(p, leader_epoch=p.leader_epoch + 2, partition_epoch=p.partition_epoch + 2)
                          if p.leader == self.node_id else p for p in t.partitions)
            if parts != t.partitions:
                restarted += sum(p.leader == self.node_id for p in parts)
                topics[name] = replace(t, partitions=parts)
        if restarted:
            await self._commit(replace(self._head, topics=_frozen(topics),
                                 topics_by_id=_frozen({t.topic_id: t for t in topics.values()})))
        return restarted

    async def set_broker_configs(self, changes: Mapping[str, Mapping[str, str]],
                                 bases: Mapping[str, Mapping[str, str]] | None = None) -> None:
        """Change the dynamic configs of each BROKER resource named in ``changes`` (in one write)."""
        configs_by_name = dict(self._head.broker_configs)
        for resource_name, given in changes.items():
            configs = config_change(given, None if bases is None else bases.get(resource_name, {}))(
                configs_by_name.get(resource_name, {}))
            if configs:
                configs_by_name[resource_name] = _frozen(configs)
            else:
                configs_by_name.pop(resource_name, None)
        await self._commit(replace(self._head, broker_configs=_frozen(configs_by_name)))

    async def set_group_configs(self, group_id: str, configs: Mapping[str, str],
                                base: Mapping[str, str] | None = None) -> None:
        """Change the configs of one GROUP resource. As Kafka's controller, a group whose configs were all
        removed keeps its (empty) entry: ListConfigResources still lists it."""
        group_configs = dict(self._head.group_configs)
        group_configs[group_id] = _frozen(config_change(configs, base)(group_configs.get(group_id, {})))
        await self._commit(replace(self._head, group_configs=_frozen(group_configs)))

    async def set_client_metrics_configs(self, name: str, configs: Mapping[str, str],
                                         base: Mapping[str, str] | None = None) -> None:
        """Change the configs of one CLIENT_METRICS resource; with none left the subscription is gone."""
        subscriptions = dict(self._head.client_metrics_configs)
        configs = config_change(configs, base)(subscriptions.get(name, {}))
        if configs:
            subscriptions[name] = _frozen(configs)
        else:
            subscriptions.pop(name, None)
        await self._commit(replace(self._head, client_metrics_configs=_frozen(subscriptions)))

    async def alter_client_quotas(self, alterations: list[tuple[frozenset, dict[str, float | None]]]) -> None:
        """Set (or, with None, remove) quota values of each entity; an entity without values is forgotten."""
        quotas = dict(self._head.client_quotas)
        for entity, changes in alterations:
            values = dict(quotas.get(entity, {}))
            for key, value in changes.items():
                if value is None:
                    values.pop(key, None)
                else:
                    values[key] = value
            if values:
                quotas[entity] = _frozen(values)
            else:
                quotas.pop(entity, None)
        await self._commit(replace(self._head, client_quotas=_frozen(quotas)))

    async def set_finalized_features(self, levels: Mapping[str, int]) -> None:
        """Replace the finalized feature levels (UpdateFeatures); the change's offset becomes their epoch."""
        await self._commit(replace(self._head, finalized_features=_frozen(levels), features_epoch=self._head.offset + 1))

    async def update_finalized_features(self, change: Callable[[Mapping[str, int]], Mapping[str, int]]
                                        ) -> tuple[Mapping[str, int], Mapping[str, int]]:
        """``change`` applied to the current levels and stored (one writer: no race); returns (old, new)."""
        old = self._head.finalized_features
        new = dict(change(old))
        if new != dict(old):
            await self.set_finalized_features(new)
        return old, new

    async def alter_scram_credentials(self, deletions: list[tuple[str, int]],
                                      upsertions: list[tuple[str, int, int, bytes, bytes]]) -> None:
        """Remove (user, mechanism) credentials and store (user, mechanism, iterations, salt, salted password)."""
        credentials = {user: dict(by_mechanism) for user, by_mechanism in self._head.scram_credentials.items()}
        for user, mechanism in deletions:
            by_mechanism = credentials.get(user, {})
            by_mechanism.pop(mechanism, None)
            if not by_mechanism:
                credentials.pop(user, None)
        for user, mechanism, iterations, salt, salted_password in upsertions:
            credentials.setdefault(user, {})[mechanism] = (iterations, salt.hex(), salted_password.hex())
        await self._commit(replace(self._head, scram_credentials=_frozen(
            {user: _frozen(by_mechanism) for user, by_mechanism in credentials.items()})))

    async def register_broker(self, broker: BrokerImage) -> None:
        """This node's registration: live while the process runs, so not persisted (published at once)."""
        self._head = replace(self._head, brokers=_frozen({**self._head.brokers, broker.node_id: broker}))
        old = self._image
        self._image = replace(old, brokers=self._head.brokers)
        for listener in self._listeners:
            listener(old, self._image)


    # -- ACLs (pykbroker.security.authorizer.AclStore) --------------------------------------------------
    def load_acls(self) -> list[AclBinding]:
        return list(self._acls)

    async def alter_acls(self, added: Sequence[AclBinding], removed: Sequence[AclBinding]) -> None:
        """Add and remove ACL bindings in one durable change."""
        gone = set(removed)
        self._acls = [a for a in self._acls if a not in gone] + [a for a in added if a not in self._acls]
        await self._commit(self._head)

    # -- delegation tokens (replication.metadata.tokens.TokenStore) -------------------------------
    def load_delegation_tokens(self) -> list[TokenInformation]:
        return [TokenInformation.from_json(t) for t in self._delegation_tokens.values()]

    async def put_delegation_token(self, token: TokenInformation) -> None:
        self._delegation_tokens[token.token_id] = token.to_json()
        await self._commit(self._head)

    async def remove_delegation_token(self, token_id: str) -> None:
        if self._delegation_tokens.pop(token_id, None) is not None:
            await self._commit(self._head)


def _frozen(d: Mapping) -> Mapping:
    return MappingProxyType(dict(d))
