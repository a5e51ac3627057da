"""Known, accepted differences between pykbroker and Apache Kafka 4.4, each with its reason.

A difference found by the differential tests fails unless its ``(scenario, observation key)`` is here; one
that only a cluster shows (a scenario's cluster mode: 3 pykbroker brokers judged by a 3-node Kafka 4.4 KRaft
cluster) is listed as ``("cluster:<scenario>", key)``: the ZooKeeper-only facts a client can see.
Keep the list short and the reasons honest.
"""

from __future__ import annotations

ALLOWED: dict[tuple[str, str], str] = {
    **{("api_versions_bytes", f"v{version} {kind} features order"): "The order of ApiVersions' features "
       "(replication/metadata/features.py, issue 31, lists them by name; Kafka in its map's order); the features "
       "themselves are compared." for version in (3, 4, 5) for kind in ("supported", "finalized")},
    ("broker_config_definitions", "cluster.id"): "Ours alone: the embedded store's cluster id (Kafka keeps it in "
    "meta.properties).",
    ("cluster:registrations", "unregister controller 1"): "Whether node 1 is the active controller (which "
    "cannot unregister itself) changes from run to run on both clusters; one node, where it always is, judges it.",
    # Kafka 4.4's tools on a 3-broker cluster (test_cluster_kafka_tools): the judge's own KRaft configuration (a
    # combined broker+controller node names its controller listener, voters and roles; its config file sets
    # advertised.listeners, the cluster kit does not).
    **{("cluster:kafka_tools", f"configs --all {name}"): "KRaft's own configuration in the judge's config file "
       "(controller listener, voters, roles, advertised.listeners); pykbroker's brokers are not given these."
       for name in ("advertised.listeners", "controller.listener.names", "controller.quorum.voters",
                    "inter.broker.listener.name", "listener.security.protocol.map", "process.roles")},
    ("cluster:kafka_tools", "configs --all listeners"): "The judge's CONTROLLER listener; and pykbroker's default "
    "listener is PLAINTEXT://localhost:9092 (Kafka's :9092, every interface): a broker started without "
    "listeners does not open itself to the network.",
    ("cluster:kafka_tools", "voter listeners"): "A KRaft voter is reached on its CONTROLLER listener; pykbroker's "
    "brokers, the voters it shows, on the listener asked through.",
    ("broker_config_definitions", "group.share.enable"): "Kafka 4.1-4.3's internal switch for share groups, gone in "
    "4.4; still accepted so that their configs start.",
    # The metrics of a KRaft controller (test_differential_metrics' cluster mode) that are its metadata quorum's
    # own: pykbroker's controller is the broker holding ZooKeeper's /controller, with no metadata log to apply.
    **{("cluster:metrics", f"controller family kafka_controller_{name}"): "The KRaft quorum controller's event "
       "queue (pykbroker's ZooKeeper controller handles its events on one task, unmeasured)."
       for name in ("controllereventmanager_avgidleratio", "controllereventmanager_eventqueueprocessingtimems",
                    "controllereventmanager_eventqueueprocessingtimems_count", "controllereventmanager_eventqueuetimems",
                    "controllereventmanager_eventqueuetimems_count", "kafkacontroller_eventqueueoperationsstartedcount",
                    "kafkacontroller_eventqueueoperationstimedoutcount")},
    **{("cluster:metrics", f"controller family kafka_controller_kafkacontroller_{name}"): "KRaft's metadata log "
       "and voters (offsets, timestamps and errors of applied records, static voters, controllers seen through the "
       "quorum): pykbroker's metadata is ZooKeeper's znodes."
       for name in ("ignoredstaticvoters", "lastappliedrecordlagms", "lastappliedrecordoffset",
                    "lastappliedrecordtimestamp", "lastcommittedrecordoffset", "metadataerrorcount",
                    "newactivecontrollerscount")},
    **{("cluster:metrics", f"controller family kafka_controller_kafkacontroller_{name}"): "KRaft's broker "
       "lifecycle at the controller (registration states, fencing, controlled shutdown and heartbeats): a "
       "pykbroker broker is alive while its ZooKeeper session lasts, with no heartbeats to the controller."
       for name in ("brokerregistrationstate", "controlledshutdownbrokercount", "fencedbrokercount",
                    "timedoutbrokerheartbeatcount", "timesincelastheartbeatreceivedms")},
    ("cluster:metrics", "controller family kafka_controller_controllerstats_electionfromeligibleleaderreplicaspersec"):
    "KIP-966's elections from eligible leader replicas are KRaft's controller's; pykbroker's ZooKeeper controller "
    "keeps no ELR (only one node's log-dir hand-over does) and elects from the ISR (unclean: outside it, counted in "
    "UncleanLeaderElectionsPerSec).",
}


def allowed(mode: str, scenario: str, key: str) -> bool:
    """Whether a difference of ``scenario``'s observation ``key`` in ``mode`` ("single" or "cluster") is accepted."""
    return (scenario, key) in ALLOWED or (mode == "cluster" and (f"cluster:{scenario}", key) in ALLOWED)
