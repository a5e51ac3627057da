"""Writes tools/grafana/pykbroker-dashboard.json: a Grafana dashboard over the broker's Prometheus metrics.

    python tools/grafana/dashboard.py          # rewrite the JSON (committed; a test checks it is current)

The panels use Kafka's metric names as the JMX exporter renders them, so the same dashboard reads Apache
Kafka brokers exported with those rules. Import the JSON in Grafana (Dashboards → Import) and pick the
Prometheus data source that scrapes ``metrics.port``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

OUT = Path(__file__).with_name("pykbroker-dashboard.json")
DS = {"type": "prometheus", "uid": "${datasource}"}


class _Layout:
    """Places panels on Grafana's 24-column grid, left to right, top to bottom."""

    def __init__(self) -> None:
        self.x = 0
        self.y = 0
        self.row_height = 0
        self.next_id = 1

    def place(self, w: int, h: int) -> dict[str, int]:
        if self.x + w > 24:
            self.x, self.y, self.row_height = 0, self.y + self.row_height, 0
        pos = {"x": self.x, "y": self.y, "w": w, "h": h}
        self.x += w
        self.row_height = max(self.row_height, h)
        return pos

    def row(self, title: str) -> dict:
        if self.x:
            self.x, self.y, self.row_height = 0, self.y + self.row_height, 0
        panel = {"type": "row", "title": title, "id": self._id(), "collapsed": False,
                 "gridPos": {"x": 0, "y": self.y, "w": 24, "h": 1}, "panels": []}
        self.y += 1
        return panel

    def _id(self) -> int:
        self.next_id += 1
        return self.next_id - 1

    def panel(self, kind: str, title: str, targets: list[tuple[str, str]], unit: str = "short", w: int = 8,
              h: int = 8, stack: bool = False, description: str = "") -> dict:
        defaults: dict[str, Any] = {"unit": unit}
        if kind == "timeseries" and stack:
            defaults["custom"] = {"stacking": {"mode": "normal"}, "fillOpacity": 30}
        panel: dict[str, Any] = {
            "type": kind, "title": title, "id": self._id(), "datasource": DS, "gridPos": self.place(w, h),
            "description": description,
            "targets": [{"datasource": DS, "expr": expr, "legendFormat": legend, "refId": chr(65 + i)}
                        for i, (expr, legend) in enumerate(targets)],
            "fieldConfig": {"defaults": defaults, "overrides": []},
            "options": {"legend": {"displayMode": "list", "placement": "bottom", "showLegend": True},
                        "tooltip": {"mode": "multi", "sort": "desc"}} if kind == "timeseries" else
                       {"reduceOptions": {"calcs": ["lastNotNull"], "fields": "", "values": False},
                        "colorMode": "value", "graphMode": "area"},
        }
        return panel


def build() -> dict:
    L = _Layout()
    inst = 'instance=~"$instance"'
    panels: list[dict] = []
    add = panels.append

    add(L.row("Cluster"))
    for title, expr in (("Under-replicated partitions", "kafka_server_replicamanager_underreplicatedpartitions"),
                        ("Offline partitions", "kafka_controller_kafkacontroller_offlinepartitionscount"),
                        ("Under min ISR", "kafka_server_replicamanager_underminisrpartitioncount"),
                        ("Active controllers", "kafka_controller_kafkacontroller_activecontrollercount"),
                        ("Partitions", "kafka_server_replicamanager_partitioncount"),
                        ("Leaders", "kafka_server_replicamanager_leadercount")):
        add(L.panel("stat", title, [(f"sum(max by (instance) ({expr}{{{inst}}}))", "")], w=4, h=4))

    add(L.row("Throughput"))
    add(L.panel("timeseries", "Bytes in per topic", [(
        f'sum by (topic) (rate(kafka_server_brokertopicmetrics_bytesinpersec{{{inst},topic=~"$topic"}}[$__rate_interval]))',
        "{{topic}}")], "Bps"))
    add(L.panel("timeseries", "Bytes out per topic", [(
        f'sum by (topic) (rate(kafka_server_brokertopicmetrics_bytesoutpersec{{{inst},topic=~"$topic"}}[$__rate_interval]))',
        "{{topic}}")], "Bps"))
    add(L.panel("timeseries", "Messages in per topic", [(
        f'sum by (topic) (rate(kafka_server_brokertopicmetrics_messagesinpersec{{{inst},topic=~"$topic"}}[$__rate_interval]))',
        "{{topic}}")], "short"))
    add(L.panel("timeseries", "Produce and fetch requests (partitions) and failures", [
        (f'sum(rate(kafka_server_brokertopicmetrics_totalproducerequestspersec{{{inst},topic=""}}[$__rate_interval]))',
         "produce"),
        (f'sum(rate(kafka_server_brokertopicmetrics_failedproducerequestspersec{{{inst},topic=""}}[$__rate_interval]))',
         "produce failed"),
        (f'sum(rate(kafka_server_brokertopicmetrics_totalfetchrequestspersec{{{inst},topic=""}}[$__rate_interval]))',
         "fetch"),
        (f'sum(rate(kafka_server_brokertopicmetrics_failedfetchrequestspersec{{{inst},topic=""}}[$__rate_interval]))',
         "fetch failed")], "reqps", w=12))
    add(L.panel("timeseries", "Requests per API", [(
        f"sum by (request) (rate(kafka_network_requestmetrics_requestspersec{{{inst}}}[$__rate_interval]))",
        "{{request}}")], "reqps", w=12))

    add(L.row("Request time"))
    add(L.panel("timeseries", "Total time p99 per API", [(
        f'max by (request) (kafka_network_requestmetrics_totaltimems{{{inst},quantile="0.99"}})', "{{request}}")],
        "ms", w=12))
    parts = ("requestqueuetimems", "localtimems", "remotetimems", "throttletimems", "responsequeuetimems",
             "responsesendtimems")
    add(L.panel("timeseries", "Time split p50 of $request (queue, local, remote, throttle, response queue, send)", [(
        f'max(kafka_network_requestmetrics_{p}{{{inst},request="$request",quantile="0.50"}})', p.removesuffix("timems"))
        for p in parts], "ms", w=12, stack=True))
    add(L.panel("timeseries", "Time split p99 of $request", [(
        f'max(kafka_network_requestmetrics_{p}{{{inst},request="$request",quantile="0.99"}})', p.removesuffix("timems"))
        for p in parts], "ms", w=12, stack=True))
    add(L.panel("timeseries", "Request size p99 per API", [(
        f'max by (request) (kafka_network_requestmetrics_requestbytes{{{inst},quantile="0.99"}})', "{{request}}")],
        "bytes", w=12))

    add(L.row("Replication"))
    add(L.panel("timeseries", "ISR shrinks and expands", [
        (f"sum(rate(kafka_server_replicamanager_isrshrinkspersec{{{inst}}}[$__rate_interval]))", "shrinks"),
        (f"sum(rate(kafka_server_replicamanager_isrexpandspersec{{{inst}}}[$__rate_interval]))", "expands")], "ops"))
    add(L.panel("timeseries", "Partitions and leaders per broker", [
        (f"kafka_server_replicamanager_partitioncount{{{inst}}}", "partitions {{instance}}"),
        (f"kafka_server_replicamanager_leadercount{{{inst}}}", "leaders {{instance}}")]))
    add(L.panel("timeseries", "Under-replicated / under min ISR / at min ISR", [
        (f"sum(kafka_server_replicamanager_underreplicatedpartitions{{{inst}}})", "under-replicated"),
        (f"sum(kafka_server_replicamanager_underminisrpartitioncount{{{inst}}})", "under min ISR"),
        (f"sum(kafka_server_replicamanager_atminisrpartitioncount{{{inst}}})", "at min ISR"),
        (f"sum(kafka_server_replicamanager_offlinereplicacount{{{inst}}})", "offline replicas")]))

    add(L.row("Logs"))
    add(L.panel("timeseries", "Log size per topic", [(
        f'sum by (topic) (kafka_log_log_size{{{inst},topic=~"$topic"}})', "{{topic}}")], "bytes"))
    add(L.panel("timeseries", "Log end offset per partition", [(
        f'max by (topic, partition) (kafka_log_log_logendoffset{{{inst},topic=~"$topic"}})',
        "{{topic}}-{{partition}}")]))
    add(L.panel("timeseries", "Log start offset per partition", [(
        f'max by (topic, partition) (kafka_log_log_logstartoffset{{{inst},topic=~"$topic"}})',
        "{{topic}}-{{partition}}")]))
    add(L.panel("timeseries", "Log flush time", [
        (f'max(kafka_log_logflushstats_logflushrateandtimems{{{inst},quantile="0.99"}})', "p99"),
        (f'max(kafka_log_logflushstats_logflushrateandtimems{{{inst},quantile="0.50"}})', "p50")], "ms"))
    add(L.panel("timeseries", "Log flushes", [(
        f"sum(rate(kafka_log_logflushstats_logflushrateandtimems_count{{{inst}}}[$__rate_interval]))", "flushes")],
        "ops"))
    add(L.panel("timeseries", "Segments per topic", [(
        f'sum by (topic) (kafka_log_log_numlogsegments{{{inst},topic=~"$topic"}})', "{{topic}}")]))

    add(L.row("Consumer groups"))
    states = ("stable", "preparingrebalance", "completingrebalance", "empty", "dead")
    add(L.panel("timeseries", "Classic groups by state", [(
        f"sum(kafka_coordinator_group_groupmetadatamanager_numgroups{s}{{{inst}}})", s) for s in states],
        stack=True))
    add(L.panel("timeseries", "Consumer (KIP-848) groups by state", [(
        f"sum by (state) (kafka_server_group_coordinator_metrics_consumer_group_count{{{inst}}})", "{{state}}")],
        stack=True))
    add(L.panel("timeseries", "Lag per group", [(
        f'sum by (consumergroup) (kafka_consumergroup_lag{{{inst},consumergroup=~"$group"}})', "{{consumergroup}}")]))
    add(L.panel("table", "Lag per group and partition", [(
        f'max by (consumergroup, topic, partition) (kafka_consumergroup_lag{{{inst},consumergroup=~"$group"}})',
        "")], w=24))

    add(L.row("Network and quotas"))
    add(L.panel("timeseries", "Connections per listener", [(
        f"sum by (listener) (kafka_server_socket_server_metrics_connection_count{{{inst}}})", "{{listener}}")]))
    add(L.panel("timeseries", "Connections created per listener", [(
        f"sum by (listener) (rate(kafka_server_socket_server_metrics_connection_creation_total{{{inst}}}[$__rate_interval]))",
        "{{listener}}")], "ops"))
    add(L.panel("timeseries", "Network / event loop idle", [
        (f"kafka_network_socketserver_networkprocessoravgidlepercent{{{inst}}}", "{{instance}}")], "percentunit"))
    add(L.panel("timeseries", "Request queue size", [
        (f"kafka_network_requestchannel_requestqueuesize{{{inst}}}", "{{instance}}")]))
    add(L.panel("timeseries", "Throttle time per quota type and client", [
        (f"max by (client_id, user) (kafka_server_{t}_throttle_time{{{inst}}})", t + " {{user}} {{client_id}}")
        for t in ("produce", "fetch", "request")], "ms", w=16))

    def variable(name: str, query: str, include_all: bool = True) -> dict:
        return {"name": name, "type": "query", "datasource": DS, "refresh": 2, "includeAll": include_all,
                "multi": include_all, "allValue": ".*" if include_all else None, "sort": 1,
                "query": {"query": query, "refId": name}, "definition": query,
                "current": {"selected": True, "text": "All", "value": "$__all"} if include_all else {}}

    return {
        "title": "pykbroker (Kafka metrics)",
        "uid": "pykbroker-kafka",
        "description": "pykbroker's metrics.port endpoint (Kafka's MBean names as the JMX exporter renders them)",
        "tags": ["kafka", "pykbroker"],
        "timezone": "browser",
        "schemaVersion": 39,
        "version": 1,
        "editable": True,
        "refresh": "10s",
        "time": {"from": "now-1h", "to": "now"},
        "templating": {"list": [
            {"name": "datasource", "type": "datasource", "query": "prometheus", "label": "Prometheus",
             "current": {}, "hide": 0},
            variable("instance", "label_values(kafka_server_replicamanager_partitioncount, instance)"),
            variable("topic", "label_values(kafka_log_log_size, topic)"),
            variable("group", "label_values(kafka_consumergroup_lag, consumergroup)"),
            variable("request", "label_values(kafka_network_requestmetrics_requestspersec, request)",
                     include_all=False),
        ]},
        "annotations": {"list": []},
        "panels": panels,
    }


def render() -> str:
    return json.dumps(build(), indent=2) + "\n"


if __name__ == "__main__":
    OUT.write_text(render())
    print(f"wrote {OUT}")
