"""Cluster metadata of the embedded single-node store: topics, partitions, topic ids, topic configs, SCRAM
credentials, client quotas and dynamic broker configs.

On disk: ``<first log dir>/__cluster_metadata.json``, rewritten atomically (temp file, fsync, rename,
fsync dir) on every change; ``meta.properties`` in every log dir holds the cluster id and node id in
Kafka's format. Access is from the event loop only (single writer).
"""

from __future__ import annotations

import base64
import json
import os
import time
import uuid
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from pykbroker.features import BOOTSTRAP_FINALIZED

__all__ = ["PartitionState", "TopicState", "EmbeddedMetadataStore", "load_or_create_cluster_id",
           "write_atomically"]

METADATA_FILE = "__cluster_metadata.json"
META_PROPERTIES = "meta.properties"


def write_atomically(path: Path, data: bytes) -> None:
    """Write temp, fsync, rename over ``path``, fsync the directory."""
    tmp = path.with_name(path.name + ".tmp")
    with open(tmp, "wb") as f:
        f.write(data)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)
    dir_fd = os.open(path.parent, os.O_RDONLY)
    try:
        os.fsync(dir_fd)
    finally:
        os.close(dir_fd)


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
    for d in dirs:
        d.mkdir(parents=True, exist_ok=True)
        p = d / META_PROPERTIES
        if str(d) not in found:
            props = _read_properties(p) if p.exists() else {}
            body = (f"#\n#{time.strftime('%a %b %d %H:%M:%S UTC %Y', time.gmtime())}\n"
                    f"node.id={node_id}\n"
                    f"directory.id={props.get('directory.id') or uuid_to_kafka_string(new_uuid())}\n"
                    f"version=1\ncluster.id={cluster_id}\n")
            write_atomically(p, body.encode())
    return cluster_id


@dataclass
class PartitionState:
    """Leader, replicas and ISR of one partition, with the epochs that fence stale leaders."""

    partition: int
    leader: int
    leader_epoch: int
    replicas: list[int]
    isr: list[int]
    partition_epoch: int = 0


@dataclass
class TopicState:
    """A topic: its stable non-zero id, partitions and explicitly set configs."""

    name: str
    topic_id: uuid.UUID
    partitions: list[PartitionState]
    configs: dict[str, str] = field(default_factory=dict)

    @property
    def internal(self) -> bool:
        return self.name in ("__consumer_offsets", "__transaction_state", "__share_group_state")


class EmbeddedMetadataStore:
    """Topics of a single-node cluster, durable in the first log dir."""

    def __init__(self, data_dir: str | Path, node_id: int) -> None:
        self.path = Path(data_dir) / METADATA_FILE
        self.node_id = node_id
        self.topics: dict[str, TopicState] = {}
        self.topics_by_id: dict[uuid.UUID, TopicState] = {}
        # user -> SCRAM mechanism type (1: SHA-256, 2: SHA-512) -> (iterations, salt hex, salted password hex)
        self.scram_credentials: dict[str, dict[int, tuple[int, str, str]]] = {}
        # Client quotas: entity (frozenset of (type, name or None for the default)) -> quota key -> value.
        self.client_quotas: dict[frozenset, dict[str, float]] = {}
        # Dynamic broker configs by BROKER resource name: "" is the cluster-wide default, "<node id>" one broker.
        self.broker_configs: dict[str, dict[str, str]] = {}
        # Group configs (GROUP resources, e.g. share.auto.offset.reset) by group id.
        self.group_configs: dict[str, dict[str, str]] = {}
        # Finalized feature levels (KIP-584), and the store offset of their last change (ApiVersions' epoch).
        self.finalized_features: dict[str, int] = dict(BOOTSTRAP_FINALIZED)
        self.features_epoch = 1
        # Count of committed metadata changes: this store's equivalent of the metadata log's end offset.
        self.offset = 0
        self._load()

    def _load(self) -> None:
        if not self.path.exists():
            return
        doc = json.loads(self.path.read_text())
        self.offset = int(doc.get("offset", 0))
        for t in doc.get("topics", []):
            topic = TopicState(
                name=t["name"],
                topic_id=uuid_from_kafka_string(t["topic_id"]),
                partitions=[PartitionState(**p) for p in t["partitions"]],
                configs=dict(t.get("configs", {})),
            )
            self._index(topic)
        for user, by_mechanism in doc.get("scram_credentials", {}).items():
            self.scram_credentials[user] = {int(m): tuple(v) for m, v in by_mechanism.items()}  # type: ignore[misc]
        for q in doc.get("client_quotas", []):
            self.client_quotas[frozenset((t, n) for t, n in q["entity"])] = {k: float(v) for k, v in q["values"].items()}
        self.broker_configs = {name: dict(configs) for name, configs in doc.get("broker_configs", {}).items()}
        self.group_configs = {name: dict(configs) for name, configs in doc.get("group_configs", {}).items()}
        if "finalized_features" in doc:
            self.finalized_features = {k: int(v) for k, v in doc["finalized_features"].items()}
            self.features_epoch = int(doc.get("features_epoch", 1))

    def _index(self, topic: TopicState) -> None:
        self.topics[topic.name] = topic
        self.topics_by_id[topic.topic_id] = topic

    def _save(self) -> None:
        doc = {
            "version": 1,
            "offset": self.offset + 1,
            "topics": [
                {
                    "name": t.name,
                    "topic_id": uuid_to_kafka_string(t.topic_id),
                    "partitions": [p.__dict__ for p in t.partitions],
                    "configs": t.configs,
                }
                for t in self.topics.values()
            ],
            "scram_credentials": {user: {str(m): list(v) for m, v in by_mechanism.items()}
                                  for user, by_mechanism in self.scram_credentials.items()},
            "client_quotas": [{"entity": sorted(entity, key=lambda e: e[0]), "values": values}
                              for entity, values in self.client_quotas.items()],
            "broker_configs": self.broker_configs,
            "group_configs": self.group_configs,
            "finalized_features": self.finalized_features,
            "features_epoch": self.features_epoch,
        }
        write_atomically(self.path, json.dumps(doc, indent=1).encode())
        self.offset += 1

    def create_topic(self, name: str, assignments: list[list[int]], configs: dict[str, str]) -> TopicState:
        """Create a topic with one replica list per partition; the first replica leads."""
        if name in self.topics:
            raise KeyError(name)
        partitions = [PartitionState(i, replicas[0], 0, list(replicas), list(replicas))
                      for i, replicas in enumerate(assignments)]
        topic = TopicState(name, new_uuid(), partitions, dict(configs))
        self._index(topic)
        self._save()
        return topic

    def add_partitions(self, name: str, assignments: list[list[int]]) -> TopicState:
        topic = self.topics[name]
        start = len(topic.partitions)
        for i, replicas in enumerate(assignments):
            topic.partitions.append(PartitionState(start + i, replicas[0], 0, list(replicas), list(replicas)))
        self._save()
        return topic

    def delete_topic(self, name: str) -> TopicState:
        topic = self.topics.pop(name)
        del self.topics_by_id[topic.topic_id]
        self._save()
        return topic

    def set_topic_configs(self, name: str, configs: dict[str, str]) -> None:
        self.topics[name].configs = dict(configs)
        self._save()

    def set_broker_configs(self, changes: Mapping[str, Mapping[str, str]]) -> None:
        """Replace the dynamic configs of each BROKER resource named in ``changes`` (in one write)."""
        for resource_name, configs in changes.items():
            if configs:
                self.broker_configs[resource_name] = dict(configs)
            else:
                self.broker_configs.pop(resource_name, None)
        self._save()

    def alter_client_quotas(self, alterations: list[tuple[frozenset, dict[str, float | None]]]) -> None:
        """Set (or, with None, remove) quota values of each entity; an entity without values is forgotten."""
        for entity, changes in alterations:
            values = dict(self.client_quotas.get(entity, {}))
            for key, value in changes.items():
                if value is None:
                    values.pop(key, None)
                else:
                    values[key] = value
            if values:
                self.client_quotas[entity] = values
            else:
                self.client_quotas.pop(entity, None)
        self._save()

    def set_group_configs(self, group_id: str, configs: dict[str, str]) -> None:
        """Replace the configs of one group (IncrementalAlterConfigs on a GROUP resource); empty removes them."""
        if configs:
            self.group_configs[group_id] = dict(configs)
        else:
            self.group_configs.pop(group_id, None)
        self._save()

    def set_finalized_features(self, levels: dict[str, int]) -> None:
        """Replace the finalized feature levels (UpdateFeatures); the change's offset becomes their epoch."""
        self.finalized_features = dict(levels)
        self.features_epoch = self.offset + 1
        self._save()

    def alter_scram_credentials(self, deletions: list[tuple[str, int]],
                                upsertions: list[tuple[str, int, int, bytes, bytes]]) -> None:
        """Remove (user, mechanism) credentials and store (user, mechanism, iterations, salt, salted password)."""
        for user, mechanism in deletions:
            by_mechanism = self.scram_credentials.get(user, {})
            by_mechanism.pop(mechanism, None)
            if not by_mechanism:
                self.scram_credentials.pop(user, None)
        for user, mechanism, iterations, salt, salted_password in upsertions:
            self.scram_credentials.setdefault(user, {})[mechanism] = (iterations, salt.hex(), salted_password.hex())
        self._save()
