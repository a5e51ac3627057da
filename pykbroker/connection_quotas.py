"""Connection limits, as Kafka's ConnectionQuotas: how many connections each address may hold open.

``max.connections.per.ip`` (with ``max.connections.per.ip.overrides`` per address) is read from the
broker's dynamic config on every admission, so a change through IncrementalAlterConfigs applies to the
next connection, as in Kafka. The counters are this object's own: nothing else edits them.
"""

from __future__ import annotations

import logging
from collections import Counter
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from pykbroker.dynamic_config import DynamicBrokerConfig

log = logging.getLogger("pykbroker.connection_quotas")


class Admitted(Protocol):
    """What the quotas need of a connection: its address and listener, to count and to log."""

    ip: str
    listener_name: str


class ConnectionQuotas:
    """Counts open connections per address and refuses those over the address's limit.

    Also the set of admitted connections that are still open (for the idle reaper and shutdown).
    Lives on the event loop; no locks.
    """

    def __init__(self, dynamic_config: DynamicBrokerConfig) -> None:
        self._dynamic_config = dynamic_config
        self._per_ip: Counter[str] = Counter()
        self.connections: set = set()

    def max_connections_per_ip(self, ip: str) -> int:
        config = self._dynamic_config.current
        return config.max_connections_per_ip_overrides.get(ip, config["max.connections.per.ip"])

    def admit(self, conn: Admitted) -> bool:
        """Count ``conn`` against its address; False (nothing counted) when the address is at its limit."""
        limit = self.max_connections_per_ip(conn.ip)
        if self._per_ip[conn.ip] >= limit:
            log.info("Rejected connection from %s on listener %s, address already has the configured maximum of "
                     "%d connections.", conn.ip, conn.listener_name, limit)  # Kafka's words
            return False
        self._per_ip[conn.ip] += 1
        self.connections.add(conn)
        return True

    def release(self, conn: Admitted) -> None:
        """``conn`` closed: its slot is free again (nothing happens for a connection never admitted)."""
        if conn not in self.connections:
            return
        self.connections.discard(conn)
        self._per_ip[conn.ip] -= 1
        if self._per_ip[conn.ip] <= 0:
            del self._per_ip[conn.ip]

    def count(self, ip: str | None = None) -> int:
        """Open admitted connections, from ``ip`` or in all."""
        return len(self.connections) if ip is None else self._per_ip.get(ip, 0)
