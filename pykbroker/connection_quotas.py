"""Connection limits, as Kafka's ConnectionQuotas: how many connections may be open and how fast new ones
may come, broker-wide, per listener and per address.

- ``max.connections.per.ip`` (``max.connections.per.ip.overrides`` per address): a connection over its
  address's limit is closed at once.
- ``max.connections`` (broker-wide, and ``listener.name.X.max.connections`` per listener): when either
  is reached the listener's acceptor stops accepting until a connection closes; new clients wait in the
  kernel's accept backlog, as with Kafka's Acceptor.
- ``max.connection.creation.rate`` (broker-wide and per listener): after an accept that puts the rate
  over its limit the acceptor waits the throttle time Kafka computes, (rate - limit) / limit times the
  measured window, before accepting again. The rate is measured as Kafka's Rate: accepts over the last
  ``quota.window.num`` windows of ``quota.window.size.seconds``, divided by the time they cover (at
  least all windows but one).

Limits are read from the broker's dynamic config on every use, so a change through
IncrementalAlterConfigs applies to the next connection. The counters are this object's own.
As in Kafka, on a broker with more than one listener the inter-broker listener
(``inter.broker.listener.name``, else the first) is exempt from the broker-wide limits: only its own
listener-level limits apply to it, so followers can always connect. (Kafka then closes the least recently
used connection of another listener; not done here.)
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections import Counter, deque
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from pykbroker.dynamic_config import DynamicBrokerConfig

log = logging.getLogger("pykbroker.connection_quotas")

_UNLIMITED = 2**31 - 1  # Kafka's default for every connection limit (Int.MaxValue)


class Admitted(Protocol):
    """What the quotas need of a connection: its address and listener, to count and to log."""

    ip: str
    listener_name: str


class _Rate:
    """Events per second over a sliding set of sample windows (Kafka's Rate with SampledStat)."""

    def __init__(self, samples: int, window_s: float) -> None:
        self.samples = samples
        self.window_s = window_s
        self._times: deque[float] = deque()

    def record(self, now: float) -> None:
        self._times.append(now)

    def measure(self, now: float) -> tuple[float, float]:
        """(events per second, the seconds they are counted over)."""
        horizon = now - self.samples * self.window_s
        times = self._times
        while times and times[0] < horizon:
            times.popleft()
        oldest_window = (times[0] // self.window_s) * self.window_s if times else now
        elapsed = max(now - oldest_window, (self.samples - 1) * self.window_s)
        return len(times) / elapsed, elapsed


class ConnectionQuotas:
    """Counts open connections (broker, listener, address) and paces their creation.

    Also the set of admitted connections that are still open (for the idle reaper and shutdown).
    Lives on the event loop; no locks.
    """

    def __init__(self, dynamic_config: DynamicBrokerConfig, protected_listener: str | None = None,
                 clock=time.monotonic) -> None:
        """``protected_listener``: the inter-broker listener when the broker has several (else None)."""
        self._dynamic_config = dynamic_config
        self._protected_listener = protected_listener
        self._clock = clock
        self._per_ip: Counter[str] = Counter()
        self._per_listener: Counter[str] = Counter()
        self._accepted_rates: dict[str | None, _Rate] = {}  # listener name (None: broker-wide) -> accept rate
        self._slot_freed = asyncio.Event()
        self.connections: set = set()
        self.throttled_ms = 0  # total time acceptors waited for max.connection.creation.rate
        self.blocked_accepts = 0  # times an acceptor waited for max.connections

    # -- limits ----------------------------------------------------------------------------------------
    def max_connections_per_ip(self, ip: str) -> int:
        config = self._dynamic_config.current
        return config.max_connections_per_ip_overrides.get(ip, config["max.connections.per.ip"])

    def _listener_limit(self, listener_name: str, name: str) -> tuple[int, int]:
        """(broker-wide, listener) values of ``name``; a listener without its own value has no listener limit."""
        static = self._dynamic_config.static
        if name in static.listener_properties.get(listener_name.lower(), {}):
            listener_limit = static.listener_value(listener_name, name)
        else:
            listener_limit = _UNLIMITED
        return self._dynamic_config.current[name], listener_limit

    # -- the acceptor's side ------------------------------------------------------------------------------
    async def wait_to_accept(self, listener_name: str) -> None:
        """Return when ``listener_name``'s acceptor may accept its next connection."""
        while True:
            broker_max, listener_max = self._listener_limit(listener_name, "max.connections")
            if listener_name == self._protected_listener:
                broker_max = _UNLIMITED
            if len(self.connections) >= broker_max or self._per_listener[listener_name] >= listener_max:
                self.blocked_accepts += 1
                log.info("max.connections reached on listener %s (%d open in the broker, %d on the listener): "
                         "waiting for a connection to close before accepting more", listener_name,
                         len(self.connections), self._per_listener[listener_name])
                self._slot_freed.clear()
                await self._slot_freed.wait()
                continue
            throttle_s = self._creation_throttle_s(listener_name)
            if throttle_s > 0:
                self.throttled_ms += int(throttle_s * 1000)
                log.debug("max.connection.creation.rate reached on listener %s: accepting again in %.0f ms",
                          listener_name, throttle_s * 1000)
                await asyncio.sleep(throttle_s)
                continue
            return

    def _creation_throttle_s(self, listener_name: str) -> float:
        broker_rate, listener_rate = self._listener_limit(listener_name, "max.connection.creation.rate")
        now = self._clock()
        throttle = 0.0
        if listener_name == self._protected_listener:
            broker_rate = 0  # not checked below
        for key, limit in ((None, broker_rate), (listener_name, listener_rate)):
            rate = self._accepted_rates.get(key)
            if rate is None or limit <= 0:
                continue
            measured, elapsed = rate.measure(now)
            if measured > limit:
                throttle = max(throttle, (measured - limit) / limit * elapsed)
        return throttle

    def record_accept(self, listener_name: str) -> None:
        """A connection was accepted on ``listener_name`` (counts toward the creation rates)."""
        config = self._dynamic_config.current
        now = self._clock()
        for key in (None, listener_name):
            rate = self._accepted_rates.get(key)
            if rate is None:
                rate = self._accepted_rates[key] = _Rate(config["quota.window.num"],
                                                         config["quota.window.size.seconds"])
            rate.record(now)

    # -- the connection's side ----------------------------------------------------------------------------
    def admit(self, conn: Admitted) -> bool:
        """Count a just-accepted ``conn``; False (nothing counted) when its address is at its limit."""
        limit = self.max_connections_per_ip(conn.ip)
        if self._per_ip[conn.ip] >= limit:
            log.info("Rejected connection from %s on listener %s, address already has the configured maximum of "
                     "%d connections.", conn.ip, conn.listener_name, limit)  # Kafka's words
            return False
        self._per_ip[conn.ip] += 1
        self._per_listener[conn.listener_name] += 1
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
        self._per_listener[conn.listener_name] -= 1
        self._slot_freed.set()

    def count(self, ip: str | None = None) -> int:
        """Open admitted connections, from ``ip`` or in all."""
        return len(self.connections) if ip is None else self._per_ip.get(ip, 0)
