"""The Grafana dashboard: committed as generated, and every metric it queries is one the broker serves."""

from __future__ import annotations

import json
import re

from pykbroker.metrics.collector import KAFKA_MBEANS, NOT_FROM_JMX
from pykbroker.metrics.jmx_names import prometheus_name
from tools.grafana import dashboard


def test_the_committed_json_is_the_generators_output():
    assert dashboard.OUT.read_text() == dashboard.render(), "run: python tools/grafana/dashboard.py"


def test_every_queried_metric_is_served():
    served = {prometheus_name(b.domain, b.type, b.name, a, b.histogram) for b, a in KAFKA_MBEANS} | set(NOT_FROM_JMX)
    board = json.loads(dashboard.OUT.read_text())
    exprs = [t["expr"] for p in board["panels"] for t in p.get("targets", [])]
    exprs += [v["query"]["query"] for v in board["templating"]["list"] if isinstance(v.get("query"), dict)]
    queried = {name for e in exprs for name in re.findall(r"\bkafka_[a-z0-9_]+", e)}
    assert len(queried) > 30
    assert sorted(queried - served) == []


def test_panels_do_not_overlap():
    board = json.loads(dashboard.OUT.read_text())
    taken: set[tuple[int, int]] = set()
    for p in board["panels"]:
        g = p["gridPos"]
        cells = {(x, y) for x in range(g["x"], g["x"] + g["w"]) for y in range(g["y"], g["y"] + g["h"])}
        assert not cells & taken, p["title"]
        assert g["x"] + g["w"] <= 24
        taken |= cells
