"""The scrape: the recorder's counts and the broker's state as Prometheus families with Kafka's names.

Each family is declared by Kafka's MBean (``KAFKA_MBEANS``); its Prometheus name comes from
pykbroker.metrics.jmx_names, the JMX exporter's rules, so it is the name an operator's Kafka
dashboards already use. Meters (``...PerSec``) are running counts (the exporter's ``Count``: use
``rate()``), gauges are values read now, histograms are quantiles of the last samples plus ``_count``.

Not from Kafka's MBeans: consumer-group lag, which Kafka's broker does not export; it has the name the
widely used kafka_exporter gives it (``kafka_consumergroup_lag{consumergroup, topic, partition}``). And
pykbroker's own, for topics written into Iceberg tables (``pykbroker_iceberg_*``): the table's lag behind
each partition led here, in records and in seconds, and the commits made.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Iterator, Sequence
from typing import Any

from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric, UnknownMetricFamily
from prometheus_client.registry import Collector

from pykbroker.metrics import state
from pykbroker.metrics.jmx_names import MBean, prometheus_name, sanitize
from pykbroker.metrics.recorder import REQUEST_TIMES, Recorder

__all__ = ["BrokerCollector", "KAFKA_MBEANS", "NOT_FROM_JMX", "QUANTILES"]

# The percentiles Kafka's histograms expose (50thPercentile ... 999thPercentile).
QUANTILES = ("50", "75", "95", "98", "99", "999")


def _bean(domain: str, type_: str, name: str | None, *labels: str, histogram: bool = False) -> MBean:
    return MBean(domain, type_, name, labels, histogram)


_TOPIC_METERS = ("BytesInPerSec", "BytesOutPerSec", "MessagesInPerSec", "TotalProduceRequestsPerSec",
                 "TotalFetchRequestsPerSec", "FailedProduceRequestsPerSec", "FailedFetchRequestsPerSec")
_TOPIC_FIELDS = ("bytes_in", "bytes_out", "messages_in", "total_produce", "total_fetch", "failed_produce",
                 "failed_fetch")

# Every MBean served, by the attribute read: Count (meters), Value (gauges), percentiles (histograms).
KAFKA_MBEANS: list[tuple[MBean, str]] = [
    *[(_bean("kafka.server", "BrokerTopicMetrics", m), "Count") for m in _TOPIC_METERS],
    *[(_bean("kafka.server", "BrokerTopicMetrics", m, "topic"), "Count") for m in _TOPIC_METERS],
    (_bean("kafka.network", "RequestMetrics", "RequestsPerSec", "request", "version"), "Count"),
    *[(_bean("kafka.network", "RequestMetrics", t, "request", histogram=True), a)
      for t in (*REQUEST_TIMES, "RequestBytes") for a in ("Count", *(f"{q}thPercentile" for q in QUANTILES))],
    *[(_bean("kafka.server", "ReplicaManager", g), "Value")
      for g in ("UnderReplicatedPartitions", "UnderMinIsrPartitionCount", "AtMinIsrPartitionCount", "LeaderCount",
                "PartitionCount", "OfflineReplicaCount")],
    (_bean("kafka.server", "ReplicaManager", "IsrShrinksPerSec"), "Count"),
    (_bean("kafka.server", "ReplicaManager", "IsrExpandsPerSec"), "Count"),
    *[(_bean("kafka.cluster", "Partition", g, "topic", "partition"), "Value")
      for g in ("UnderReplicated", "UnderMinIsr", "InSyncReplicasCount", "ReplicasCount")],
    *[(_bean("kafka.controller", "KafkaController", g), "Value")
      for g in ("OfflinePartitionsCount", "ActiveControllerCount", "GlobalTopicCount", "GlobalPartitionCount",
                "ActiveBrokerCount", "PreferredReplicaImbalanceCount")],
    (_bean("kafka.controller", "ControllerStats", "UncleanLeaderElectionsPerSec"), "Count"),
    *[(_bean("kafka.log", "Log", g, "topic", "partition"), "Value")
      for g in ("Size", "LogStartOffset", "LogEndOffset", "NumLogSegments")],
    *[(_bean("kafka.log", "LogFlushStats", "LogFlushRateAndTimeMs", histogram=True), a)
      for a in ("Count", *(f"{q}thPercentile" for q in QUANTILES))],
    *[(_bean("kafka.coordinator.group", "GroupMetadataManager", f"NumGroups{s}"), "Value")
      for s in ("", *state.CLASSIC_STATES)],
    (_bean("kafka.coordinator.group", "GroupMetadataManager", "NumOffsets"), "Value"),
    (_bean("kafka.server", "group-coordinator-metrics", None, "protocol"), "group-count"),
    (_bean("kafka.server", "group-coordinator-metrics", None, "state"), "consumer-group-count"),
    *[(_bean("kafka.server", "socket-server-metrics", None, "listener", "networkProcessor"), a)
      for a in ("connection-count", "connection-creation-total", "connection-close-total")],
    (_bean("kafka.network", "SocketServer", "NetworkProcessorAvgIdlePercent"), "Value"),
    (_bean("kafka.network", "RequestChannel", "RequestQueueSize"), "Value"),
    *[(_bean("kafka.server", q, None, "user", "client-id"), "throttle-time") for q in ("Produce", "Fetch", "Request")],
]

# Families served that are not Kafka MBeans (their origin in the module docstring).
NOT_FROM_JMX = ("kafka_consumergroup_lag", "kafka_consumergroup_current_offset", "pykbroker_iceberg_lag_records",
                "pykbroker_iceberg_lag_seconds", "pykbroker_iceberg_commits")


def _name(bean: MBean, attribute: str) -> str:
    name = prometheus_name(bean.domain, bean.type, bean.name, attribute, bean.histogram)
    assert name is not None, (bean, attribute)
    return name


def _labels(bean: MBean) -> list[str]:
    return [sanitize(k) for k in bean.label_keys]


def _percentile(sorted_values: Sequence[float], q: str) -> float:
    """Kafka's (Yammer's) snapshot quantile: the value at position q * (n + 1), interpolated."""
    n = len(sorted_values)
    if n == 0:
        return 0.0
    pos = float(f"0.{q}") * (n + 1)
    if pos < 1:
        return sorted_values[0]
    if pos >= n:
        return sorted_values[-1]
    lower = sorted_values[int(pos) - 1]
    upper = sorted_values[int(pos)]
    return lower + (pos - int(pos)) * (upper - lower)


class BrokerCollector(Collector):
    """prometheus_client collector over one broker's Recorder and state (see the module docstring)."""

    def __init__(self, broker: Any, recorder: Recorder, server: Any = None) -> None:
        self.broker = broker
        self.recorder = recorder
        self.server = server  # the Server (connections, request channel), once it listens
        self._idle_sample = (time.monotonic(), time.thread_time())
        self._idle_ratio = 1.0

    # -- families ---------------------------------------------------------------------------------------
    def _gauge(self, bean: MBean, attribute: str = "Value", doc: str = "") -> GaugeMetricFamily:
        return GaugeMetricFamily(_name(bean, attribute), doc or bean.object_name(), labels=_labels(bean))

    def _count(self, bean: MBean, doc: str = "") -> UnknownMetricFamily:
        return UnknownMetricFamily(_name(bean, "Count"), doc or bean.object_name() + " Count",
                                   labels=_labels(bean))

    def collect(self) -> Iterable[Metric]:
        yield from self._topic_metrics()
        yield from self._request_metrics()
        parts = state.partitions(self.broker)
        yield from self._replica_metrics(parts)
        yield from self._log_metrics(parts)
        yield from self._group_metrics()
        yield from self._network_metrics()
        yield from self._quota_metrics()
        yield from self._remote_log_metrics()
        yield from self._iceberg_metrics()
        yield from self._client_metrics_metrics()

    def _topic_metrics(self) -> Iterator[Metric]:
        rec = self.recorder
        all_topics = rec.all_topics
        for meter, field in zip(_TOPIC_METERS, _TOPIC_FIELDS, strict=True):
            # One family for the MBean of all topics (no labels) and those of each topic, as the exporter has it.
            bean = MBean("kafka.server", "BrokerTopicMetrics", meter, ("topic",))
            name = _name(bean, "Count")
            family = Metric(name, bean.object_name() + " Count (and the MBean without topic: all topics)", "unknown")
            family.add_sample(name, {}, getattr(all_topics, field))
            lazy = meter.startswith("Failed")  # as Kafka's, a topic's failure meters exist once marked
            for topic, stats in list(rec.topics.items()):
                count = getattr(stats, field)
                if count or not lazy:
                    family.add_sample(name, {"topic": topic}, count)
            yield family

    def _request_metrics(self) -> Iterator[Metric]:
        rec = self.recorder
        requests = self._count(MBean("kafka.network", "RequestMetrics", "RequestsPerSec", ("request", "version")))
        apis = sorted(((stats.name, stats) for stats in list(rec.requests.values())), key=lambda x: x[0])
        for api, stats in apis:
            for version, n in stats.versions().items():
                requests.add_metric([api, str(version)], n)
        yield requests
        columns = [*REQUEST_TIMES, "RequestBytes"]
        times = {api: stats.times_ms() for api, stats in apis}
        for i, metric in enumerate(columns):
            bean = MBean("kafka.network", "RequestMetrics", metric, ("request",), histogram=True)
            quantiles = GaugeMetricFamily(_name(bean, "50thPercentile"), bean.object_name() + " percentiles",
                                          labels=["request", "quantile"])
            count = self._count(bean)
            for api, stats in apis:
                values: list[float] = sorted(stats.sizes() if metric == "RequestBytes"
                                             else (sample[i] for sample in times[api]))
                for q in QUANTILES:
                    quantiles.add_metric([api, f"0.{q}"], _percentile(values, q))
                count.add_metric([api], stats.count)
            yield quantiles
            yield count

    def _remote_log_metrics(self) -> Iterator[Metric]:
        """Tiered storage (only when remote.log.storage.system.enable is on, as Kafka registers them): the
        RemoteLogManager's BrokerTopicMetrics meters (all topics), and per topic the bytes in remote storage
        (RemoteLogSizeBytes) and those not copied yet (RemoteCopyLagBytes: it grows while the store is down)."""
        rlm = getattr(self.broker, "remote_log_manager", None)
        if rlm is None:
            return
        for meter, value in (("RemoteCopyBytesPerSec", rlm.copy_bytes), ("RemoteCopyRequestsPerSec", rlm.copy_segments),
                             ("RemoteCopyErrorsPerSec", rlm.copy_failures), ("RemoteFetchBytesPerSec", rlm.fetch_bytes),
                             ("RemoteFetchRequestsPerSec", rlm.fetch_requests),
                             ("RemoteFetchErrorsPerSec", rlm.fetch_failures),
                             ("RemoteDeleteRequestsPerSec", rlm.deleted_segments),
                             ("BuildRemoteLogAuxStateRequestsPerSec", rlm.aux_state_builds),
                             ("BuildRemoteLogAuxStateErrorsPerSec", rlm.aux_state_failures)):
            c = self._count(MBean("kafka.server", "BrokerTopicMetrics", meter))
            c.add_metric([], value)
            yield c
        # Kafka's RLMQuotaMetrics (Kafka metrics of group RemoteLogManager): how long copies waited for the copy
        # quota and remote fetches were answered empty by the fetch quota.
        for sensor_name, sensor in (("remote-copy-throttle-time", rlm.copy_throttle_time),
                                    ("remote-fetch-throttle-time", rlm.fetch_throttle_time)):
            for stat, value in (("avg", sensor.avg()), ("max", sensor.max())):
                g = self._gauge(MBean("kafka.server", "RemoteLogManager", None), f"{sensor_name}-{stat}")
                g.add_metric([], value)
                yield g
        sizes: dict[str, int] = {}
        lags: dict[str, int] = {}
        for p in list(self.broker.replica_manager.partitions.values()):
            log_ = p.log
            if log_ is None or not log_.remote_log_enabled or not p.is_leader:
                continue
            sizes[p.topic] = sizes.get(p.topic, 0) + rlm.remote_size(p.topic_id, p.partition, log_)
            highest = log_.highest_offset_in_remote_storage
            lags[p.topic] = lags.get(p.topic, 0) + sum(
                s.size for s in log_.segments.snapshot()[:-1] if s.base_offset > highest)
        for name, values in (("RemoteLogSizeBytes", sizes), ("RemoteCopyLagBytes", lags)):
            g = self._gauge(MBean("kafka.server", "BrokerTopicMetrics", name, ("topic",)))
            for topic, value in sorted(values.items()):
                g.add_metric([topic], value)
            yield g

    def _replica_metrics(self, parts: list[state.PartitionView]) -> Iterator[Metric]:
        rm = "ReplicaManager"
        values = {
            "UnderReplicatedPartitions": sum(p.under_replicated for p in parts),
            "UnderMinIsrPartitionCount": sum(p.under_min_isr for p in parts),
            "AtMinIsrPartitionCount": sum(p.at_min_isr for p in parts),
            "LeaderCount": sum(p.leader for p in parts),
            "PartitionCount": len(parts),
            "OfflineReplicaCount": sum(p.offline for p in parts),
        }
        for name, value in values.items():
            g = self._gauge(MBean("kafka.server", rm, name))
            g.add_metric([], value)
            yield g
        for name, value in (("IsrShrinksPerSec", self.recorder.isr_shrinks),
                            ("IsrExpandsPerSec", self.recorder.isr_expands)):
            c = self._count(MBean("kafka.server", rm, name))
            c.add_metric([], value)
            yield c
        per_partition = {
            "UnderReplicated": lambda p: int(p.under_replicated),
            "UnderMinIsr": lambda p: int(p.under_min_isr),
            "InSyncReplicasCount": lambda p: len(p.isr) if p.leader else 0,
            "ReplicasCount": lambda p: len(p.replicas) if p.leader else 0,
        }
        for name, fn in per_partition.items():
            g = self._gauge(MBean("kafka.cluster", "Partition", name, ("topic", "partition")))
            for p in parts:  # as Kafka: registered for every partition hosted here, counted by its leader (0 else)
                g.add_metric([p.topic, str(p.partition)], fn(p))
            yield g
        yield from self._controller_metrics()

    def _controller_metrics(self) -> Iterator[Metric]:
        """The controller's gauges as a KRaft node shows them: every node of the judge's (combined) cluster is a
        controller and reports the cluster-wide counts of its metadata image; one is the active controller."""
        broker = self.broker
        image = broker.metadata.image
        live = set(image.brokers)
        offline = imbalanced = partition_count = 0
        for topic in image.topics.values():
            for p in topic.partitions:
                partition_count += 1
                if p.leader < 0 or p.leader not in live:
                    offline += 1
                if not p.replicas or p.leader != p.replicas[0]:  # Kafka's hasPreferredLeader, false
                    imbalanced += 1
        values = {"OfflinePartitionsCount": offline, "ActiveControllerCount": int(image.controller_id == broker.node_id),
                  "GlobalTopicCount": len(image.topics), "GlobalPartitionCount": partition_count,
                  "ActiveBrokerCount": len(live), "PreferredReplicaImbalanceCount": imbalanced}
        for name, value in values.items():
            g = self._gauge(MBean("kafka.controller", "KafkaController", name))
            g.add_metric([], value)
            yield g
        controller = getattr(broker, "controller", None)
        c = self._count(MBean("kafka.controller", "ControllerStats", "UncleanLeaderElectionsPerSec"))
        c.add_metric([], getattr(controller, "unclean_elections", 0))  # elections this broker's controller made
        yield c

    def _log_metrics(self, parts: list[state.PartitionView]) -> Iterator[Metric]:
        fields = {"Size": "size", "LogStartOffset": "log_start_offset", "LogEndOffset": "log_end_offset",
                  "NumLogSegments": "num_segments"}
        for name, field in fields.items():
            g = self._gauge(MBean("kafka.log", "Log", name, ("topic", "partition")))
            for p in parts:
                if not p.offline:
                    g.add_metric([p.topic, str(p.partition)], getattr(p, field))
            yield g
        bean = MBean("kafka.log", "LogFlushStats", "LogFlushRateAndTimeMs", histogram=True)
        values = sorted(self.recorder.flush_times_ms)
        q = GaugeMetricFamily(_name(bean, "50thPercentile"), bean.object_name() + " percentiles",
                              labels=["quantile"])
        for quantile in QUANTILES:
            q.add_metric([f"0.{quantile}"], _percentile(values, quantile))
        yield q
        c = self._count(bean)
        c.add_metric([], self.recorder.flushes)
        yield c

    def _group_metrics(self) -> Iterator[Metric]:
        groups = state.groups(self.broker)
        gmm = "GroupMetadataManager"
        classic = [g for g in groups if g.type == "classic"]
        total = self._gauge(MBean("kafka.coordinator.group", gmm, "NumGroups"))
        total.add_metric([], len(groups))
        yield total
        for s in state.CLASSIC_STATES:
            g = self._gauge(MBean("kafka.coordinator.group", gmm, f"NumGroups{s}"))
            g.add_metric([], sum(1 for x in classic if x.state == s))
            yield g
        offsets = self._gauge(MBean("kafka.coordinator.group", gmm, "NumOffsets"))
        offsets.add_metric([], sum(len(g.offsets) for g in groups))
        yield offsets
        by_protocol = self._gauge(MBean("kafka.server", "group-coordinator-metrics", None, ("protocol",)),
                                  "group-count")
        for protocol in ("classic", "consumer"):
            by_protocol.add_metric([protocol], sum(1 for g in groups if g.type == protocol))
        yield by_protocol
        by_state = self._gauge(MBean("kafka.server", "group-coordinator-metrics", None, ("state",)),
                               "consumer-group-count")
        for s in ("Empty", "Assigning", "Reconciling", "Stable", "Dead"):  # Kafka's tag values
            by_state.add_metric([s], sum(1 for g in groups if g.type == "consumer" and g.state == s))
        yield by_state
        lag = GaugeMetricFamily("kafka_consumergroup_lag", "Group lag: high watermark - committed offset "
                                "(kafka_exporter's name)", labels=["consumergroup", "topic", "partition"])
        current = GaugeMetricFamily("kafka_consumergroup_current_offset", "Committed offset (kafka_exporter's name)",
                                    labels=["consumergroup", "topic", "partition"])
        for group in groups:
            for (topic, partition), (committed, group_lag) in sorted(group.offsets.items()):
                current.add_metric([group.group_id, topic, str(partition)], committed)
                if group_lag is not None:
                    lag.add_metric([group.group_id, topic, str(partition)], group_lag)
        yield lag
        yield current

    def _network_metrics(self) -> Iterator[Metric]:
        rec = self.recorder
        bean = MBean("kafka.server", "socket-server-metrics", None, ("listener", "networkProcessor"))
        count = self._gauge(bean, "connection-count")
        created = UnknownMetricFamily(_name(bean, "connection-creation-total"), bean.object_name(),
                                      labels=_labels(bean))
        closed = UnknownMetricFamily(_name(bean, "connection-close-total"), bean.object_name(), labels=_labels(bean))
        per_listener: dict[str, int] = {}
        server = self.server
        quotas = getattr(server, "quotas", None)
        if quotas is not None:
            for conn in list(quotas.connections):
                per_listener[conn.listener_name] = per_listener.get(conn.listener_name, 0) + 1
        listeners = set(per_listener) | set(rec.connections_created) | {lst.name for lst in self.broker.config.listeners}
        for name in sorted(listeners):
            count.add_metric([name, "0"], per_listener.get(name, 0))
            created.add_metric([name, "0"], rec.connections_created.get(name, 0))
            closed.add_metric([name, "0"], rec.connections_closed.get(name, 0))
        yield count
        yield created
        yield closed
        idle = self._gauge(MBean("kafka.network", "SocketServer", "NetworkProcessorAvgIdlePercent"))
        idle.add_metric([], self.idle_ratio())
        yield idle
        channel = getattr(server, "channel", None)
        queue = self._gauge(MBean("kafka.network", "RequestChannel", "RequestQueueSize"))
        queue.add_metric([], getattr(channel, "queued", 0))
        yield queue

    def idle_ratio(self) -> float:
        """The event loop's idle share since the previous call (the share of wall time its thread spent
        off the CPU): pykbroker's one event loop is what Kafka's network and handler threads are."""
        now, cpu = time.monotonic(), time.thread_time()
        then, cpu_then = self._idle_sample
        if now - then >= 0.5:
            self._idle_ratio = min(max(1.0 - (cpu - cpu_then) / (now - then), 0.0), 1.0)
            self._idle_sample = (now, cpu)
        return self._idle_ratio

    def _quota_metrics(self) -> Iterator[Metric]:
        now = time.monotonic()
        families = {}
        for quota_type in ("Produce", "Fetch", "Request"):
            bean = MBean("kafka.server", quota_type, None, ("user", "client-id"))
            families[quota_type] = Metric(_name(bean, "throttle-time"), bean.object_name() + " throttle-time", "gauge")
        for (quota_type, user, client_id), stats in list(self.recorder.throttles.items()):
            # Kafka's throttle-time sensor: the average throttle over its window (11 one-second samples).
            recent = [ms for t, ms in stats.recent if now - t <= 11.0]
            # As Kafka's JmxReporter, which leaves tags with empty values out of the MBean name.
            labels = {k: v for k, v in (("user", user), ("client_id", client_id)) if v}
            family = families[quota_type]
            family.add_sample(family.name, labels, sum(recent) / len(recent) if recent else 0.0)
        yield from families.values()

    def _client_metrics_metrics(self) -> Iterator[Metric]:
        """Kafka's client telemetry metrics (kafka.server:type=client-metrics): instances, unknown subscription ids
        and, per live instance, throttled requests and pushes received or refused by the receiver."""
        manager = getattr(self.broker, "client_metrics", None)
        if manager is None:
            return
        from pykbroker.client_metrics.manager import INSTANCE_COUNT_NAMES
        from replication.metadata.embedded_store import uuid_to_kafka_string
        bean = MBean("kafka.server", "client-metrics")
        instances = self._gauge(bean, "instance-count")
        instances.add_metric([], manager.instance_count())
        yield instances
        unknown = UnknownMetricFamily(_name(bean, "unknown-subscription-request-count"), bean.object_name())
        unknown.add_metric([], manager.unknown_subscription_requests)
        yield unknown
        if not manager.instance_counts:
            return
        per_instance = MBean("kafka.server", "client-metrics", None, ("client_instance_id",))
        families = [UnknownMetricFamily(_name(per_instance, n), per_instance.object_name(), labels=_labels(per_instance))
                    for n in INSTANCE_COUNT_NAMES]
        for instance_id, counts in list(manager.instance_counts.items()):
            for family, count in zip(families, counts, strict=True):
                family.add_metric([uuid_to_kafka_string(instance_id)], count)
        yield from families

    def _iceberg_metrics(self) -> Iterator[Metric]:
        service = getattr(self.broker, "iceberg", None)
        if service is None:
            return
        labels = ["topic", "partition"]
        records = GaugeMetricFamily("pykbroker_iceberg_lag_records", "Stable records of a partition led here not "
                                    "yet committed to its topic's Iceberg table", labels=labels)
        seconds = GaugeMetricFamily("pykbroker_iceberg_lag_seconds", "Age of the oldest stable record of a partition "
                                    "led here not yet committed to its Iceberg table", labels=labels)
        for (topic, partition), lag in sorted(service.lag().items()):
            records.add_metric([topic, str(partition)], lag.records)
            seconds.add_metric([topic, str(partition)], lag.seconds)
        commits = CounterMetricFamily("pykbroker_iceberg_commits", "Snapshots committed to a topic's Iceberg table by "
                                      "this broker", labels=["topic"])
        for topic, translator in sorted(service.translators.items()):
            commits.add_metric([topic], translator.commits)
        yield records
        yield seconds
        yield commits
