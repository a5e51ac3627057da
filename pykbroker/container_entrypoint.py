"""The image's entry point (see the repository's Dockerfile): the broker with its properties taken from
``KAFKA_*`` environment variables, as the Confluent and Apache images take theirs.

``KAFKA_LOG_RETENTION_MS=60000`` sets ``log.retention.ms``; ``KAFKA_LISTENERS`` and
``KAFKA_ADVERTISED_LISTENERS`` set where the broker listens inside the container and what clients outside
are told (the host and port Docker maps). The defaults serve ``localhost:9092`` with data under
``/var/lib/pykbroker``; command-line arguments are passed on to ``pykbroker``.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping

from pykbroker import cli
from pykbroker.testcontainers import env_to_property

IMAGE_DEFAULTS = {"listeners": "PLAINTEXT://0.0.0.0:9092", "advertised.listeners": "PLAINTEXT://localhost:9092",
                  "log.dirs": "/var/lib/pykbroker", "group.initial.rebalance.delay.ms": "0"}


def overrides(environ: Mapping[str, str]) -> list[str]:
    """``--override`` values: the image's defaults, then every ``KAFKA_*`` variable that names a property."""
    properties = dict(IMAGE_DEFAULTS)
    for name, value in sorted(environ.items()):
        prop = env_to_property(name)
        if prop is not None:
            properties[prop] = value
    return [f"{k}={v}" for k, v in properties.items()]


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    return cli.main([*(a for o in overrides(os.environ) for a in ("--override", o)), *args])


if __name__ == "__main__":
    sys.exit(main())
