"""pykbroker: a Kafka broker in Python that speaks the real Kafka wire protocol.

``pykbroker.embedded()`` runs one inside the calling process (see ``pykbroker.embedded_broker``).
Nothing heavy is imported here: ``python -m pykbroker.cli`` starts as fast as before.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pykbroker.embedded_broker import EmbeddedBroker

__all__ = ["embedded"]


def embedded(properties: dict[str, str] | None = None, **kwargs) -> EmbeddedBroker:
    """A broker on a thread of this process, for ``with``: ``with pykbroker.embedded() as broker:``."""
    from pykbroker.embedded_broker import embedded as make

    return make(properties, **kwargs)
