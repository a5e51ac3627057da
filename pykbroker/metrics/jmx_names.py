"""Kafka's JMX MBean names rendered as Prometheus names, as the widely used JMX exporter rules do.

An operator's dashboards and alerts know Kafka by the names Prometheus' JMX exporter gives its MBeans
with the common broker rules (``lowercaseOutputName: true``, one rule per MBean shape):

- ``kafka.<domain><type=T, name=N, k=v, ...><>Count|Value`` → ``kafka_<domain>_<t>_<n>{k="v", ...}``
  (a histogram's ``Count`` → ``..._count``);
- ``...><>NNthPercentile`` of a histogram → ``kafka_<domain>_<t>_<n>{..., quantile="0.NN"}``;
- a Kafka-metrics MBean, no ``name`` key (``kafka.server<type=socket-server-metrics, listener=L,
  networkProcessor=P><>connection-count``) → ``kafka_<domain>_<t>_<attribute>{listener=..., ...}``.

Names and label names are lower-cased and every character outside ``[a-zA-Z0-9_:]`` becomes ``_``
(runs of ``_`` collapse into one), as the exporter sanitizes them. The broker derives the names it
serves from MBean names with ``prometheus_name``; the tests map Kafka 4.4's MBeans, read with its own
JmxTool, through the same function and compare.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

__all__ = ["MBean", "prometheus_name", "parse_object_name", "sanitize"]

_UNSAFE = re.compile(r"[^a-zA-Z0-9_:]")
_RUNS = re.compile(r"__+")
_PERCENTILE = re.compile(r"(\d+)thPercentile")


def sanitize(name: str) -> str:
    """The exporter's safe name: lower case, unsafe characters as ``_``, no runs of ``_``."""
    return _RUNS.sub("_", _UNSAFE.sub("_", name)).lower()


@dataclass(frozen=True)
class MBean:
    """One MBean's object name: ``domain:type=...,name=...,key=value,...`` (keys in Kafka's order).

    ``label_keys`` are the keys whose values vary per instance (``topic``, ``request``, ``listener``);
    they become Prometheus labels. ``histogram``: its ``Count`` is rendered with ``_count``.
    """

    domain: str
    type: str
    name: str | None = None
    label_keys: tuple[str, ...] = ()
    histogram: bool = False

    def object_name(self, **labels: str) -> str:
        parts = [f"type={self.type}"] + ([f"name={self.name}"] if self.name is not None else [])
        parts += [f"{k}={labels.get(k, '*')}" for k in self.label_keys]
        return f"{self.domain}:{','.join(parts)}"


def prometheus_name(domain: str, mbean_type: str, name: str | None, attribute: str,
                    histogram: bool = False) -> str | None:
    """The exporter's metric name for one MBean attribute; None for attributes the rules do not export
    (a meter's rates, a histogram's mean/min/max)."""
    if not domain.startswith("kafka."):
        return None
    base = f"kafka_{domain[len('kafka.'):]}_{mbean_type}"
    if name is None:  # Kafka-metrics MBeans: the attribute names the metric
        return sanitize(f"{base}_{attribute}")
    if attribute == "Value":
        return sanitize(f"{base}_{name}")
    if attribute == "Count":
        return sanitize(f"{base}_{name}" + ("_count" if histogram else ""))
    if _PERCENTILE.fullmatch(attribute):
        return sanitize(f"{base}_{name}")
    return None


def quantile_label(attribute: str) -> str | None:
    """``99thPercentile`` → ``0.99`` (the exporter's ``0.$N``); None for other attributes."""
    m = _PERCENTILE.fullmatch(attribute)
    return f"0.{m.group(1)}" if m else None


def parse_object_name(object_name: str) -> tuple[str, dict[str, str]]:
    """``kafka.server:type=X,name=Y,topic=t`` → (``kafka.server``, {type: X, name: Y, topic: t}), in order."""
    domain, _, keys = object_name.partition(":")
    props: dict[str, str] = {}
    for item in keys.split(","):
        k, _, v = item.partition("=")
        props[k] = v
    return domain, props
