"""Known, accepted differences between pykbroker and Apache Kafka 4.1, each with its reason.

A difference found by the differential tests fails unless its ``(scenario, observation key)`` is here.
Keep the list short and the reasons honest.
"""

from __future__ import annotations

ALLOWED: dict[tuple[str, str], str] = {
    ("api_versions", "supported.share.version"): "Share groups (KIP-932) are not implemented.",
}
