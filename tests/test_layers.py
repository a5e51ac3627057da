"""The layers of docs/architecture.md hold: imports point down only, and ZooKeeper stays in the metadata layer."""

from __future__ import annotations

import functools

from tools import import_layers
from tools.import_layers import cycles, layer, upward_imports

graph = functools.cache(import_layers.graph)


def test_no_module_imports_a_layer_above_its_own():
    assert upward_imports(graph()) == []


def test_the_metadata_layer_imports_only_storage_and_wire_below_it():
    g = graph()
    metadata = {m for m in g if layer(m) == layer("replication.metadata")}
    assert metadata, "the metadata layer moved: update tools/import_layers.LAYERS"
    outside = {(m, d) for m in metadata for d in g[m] if d not in metadata and layer(d) >= layer(m)}
    assert outside == set()


def test_the_zookeeper_client_is_imported_only_by_the_metadata_layer():
    """The controller too reads and writes ZooKeeper through the metadata layer (its ZkControllerStore, as
    Kafka's KafkaController through KafkaZkClient)."""
    g = graph()
    users = {m for m, deps in g.items() if "replication.metadata.zk.client" in deps
             and not m.startswith("replication.metadata.")}
    assert users == set()


def test_cluster_metadata_and_delegation_tokens_do_not_import_each_other():
    assert not any("pykbroker.security.delegation_tokens" in c for c in cycles(graph()))


def test_the_layer_rules_see_an_upward_import():
    g = {"replication.metadata.image": {"pykbroker.broker"}, "pykbroker.broker": set()}
    assert upward_imports(g) == [("replication.metadata.image", "pykbroker.broker")]
    assert cycles({"a": {"b"}, "b": {"a"}, "c": {"a"}}) == [["a", "b"]]
