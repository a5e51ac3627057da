"""Connection limits, as Kafka's ConnectionQuotas: how many connections may be open and how fast new ones
may come, broker-wide, per listener and per address.

- ``max.connections.per.ip`` (``max.connections.per.ip.overrides`` per address): a connection over its
  address's limit is closed at once.
- ``max.connections`` (broker-wide, and ``listener.name.X.max.connections`` per listener): when either
  is reached the listener's acceptor stops accepting until a connection closes; new clients wait in the
  kernel's accept backlog, as with Kafka's Acceptor.
- ``max.connection.creation.rate`` (broker-wide and per listener): after an accept that puts the rate
  over its limit the acceptor waits the throttle time Kafka computes, (rate - limit) / limit times the
  measured window, at most one window (``quota.window.size.seconds``), before accepting again. The rate is
  measured as Kafka's Rate: accepts over the last ``quota.window.num`` windows of
  ``quota.window.size.seconds``, divided by the time they cover (at least all windows but one).
- ``connection_creation_rate`` of an ``ip`` client-quota entity (KIP-612; the entity with no name is the
  default for every address): a connection that puts its address's rate over the quota is not admitted
  and not counted in any rate; the server holds its socket, unserved, for the throttle time and then
  closes it (Kafka's DelayedCloseSocket), so a client reconnecting in a loop is slowed to the quota.

Limits are read from the broker's dynamic config on every use, so a change through
IncrementalAlterConfigs applies to the next connection. The counters are this object's own.
As in Kafka, on a broker with more than one listener the inter-broker listener
(``inter.broker.listener.name``, else the first) is exempt from the broker-wide limits: only its own
listener-level limits apply to it, so followers can always connect; it is not counted in the broker-wide
creation rate either. When the broker is then over ``max.connections`` (or the limit was lowered), the
least recently used connections of the other listeners are closed until it is not (Kafka's Processor
closeExcessConnections with Selector.lowestPriorityChannel).
"""

from __future__ import annotations

import asyncio
import ipaddress
import logging
import socket
import time
from collections import Counter, deque
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from pykbroker.dynamic_config import DynamicBrokerConfig

log = logging.getLogger("pykbroker.connection_quotas")

_UNLIMITED = 2**31 - 1  # Kafka's default for every connection limit (Int.MaxValue)
IP_CONNECTION_RATE = "connection_creation_rate"  # the client-quota key of an ``ip`` entity (KIP-612)


class Admitted(Protocol):
    """What the quotas need of a connection: its address and listener, to count and to log; when it was last
    read from or written to, to find the least recently used."""

    ip: str
    listener_name: str

    @property
    def last_active(self) -> float: ...


class _Rate:
    """Events per second over a sliding set of sample windows (Kafka's Rate with SampledStat)."""

    def __init__(self, samples: int, window_s: float) -> None:
        self.samples = samples
        self.window_s = window_s
        self._times: deque[float] = deque()

    def record(self, now: float) -> None:
        self._times.append(now)

    def unrecord(self) -> None:
        """Take back the last event recorded (a connection that was throttled after all)."""
        if self._times:
            self._times.pop()

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
                 clock=time.monotonic,
                 client_quotas: Callable[[], Mapping[frozenset, Mapping[str, float]]] | None = None) -> None:
        """``protected_listener``: the inter-broker listener when the broker has several (else None);
        ``client_quotas``: the metadata's client quotas, where ``ip`` entities carry connection rates."""
        self._dynamic_config = dynamic_config
        self._protected_listener = protected_listener
        self._clock = clock
        self._client_quotas = client_quotas
        self._ip_rates_source: object = None  # the client-quota map _ip_rate_quotas was computed from
        self._ip_rate_quotas: dict[str | None, int] = {}  # address (None: default) -> connections per second
        self._per_ip: Counter[str] = Counter()
        self._per_listener: Counter[str] = Counter()
        self._accepted_rates: dict[str | None, _Rate] = {}  # listener name (None: broker-wide) -> accept rate
        self._ip_accept_rates: dict[str, _Rate] = {}  # address -> accept rate, for addresses under a quota
        self._slot_freed = asyncio.Event()
        self.connections: set = set()
        self.throttled_ms = 0  # total time acceptors waited for max.connection.creation.rate
        self.blocked_accepts = 0  # times an acceptor waited for max.connections
        self.ip_throttled = 0  # connections held and closed for their address's connection_creation_rate

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
            throttle = max(throttle, self._throttle_s(rate, limit, now))
        return throttle

    def _throttle_s(self, rate: _Rate, limit: float, now: float) -> float:
        """Kafka's QuotaUtils.boundedThrottleTime: the wait that brings ``rate`` back to ``limit``, at most one
        quota window."""
        measured, elapsed = rate.measure(now)
        if measured <= limit:
            return 0.0
        return min((measured - limit) / limit * elapsed, rate.window_s)

    def _new_rate(self) -> _Rate:
        config = self._dynamic_config.current
        return _Rate(config["quota.window.num"], config["quota.window.size.seconds"])

    def _rate_keys(self, listener_name: str) -> tuple[str | None, ...]:
        """The creation rates an accept on ``listener_name`` counts in (the inter-broker one: its own only)."""
        return (listener_name,) if listener_name == self._protected_listener else (None, listener_name)

    def record_accept(self, listener_name: str) -> None:
        """A connection was accepted on ``listener_name`` (counts toward the creation rates)."""
        now = self._clock()
        for key in self._rate_keys(listener_name):
            rate = self._accepted_rates.get(key)
            if rate is None:
                rate = self._accepted_rates[key] = self._new_rate()
            rate.record(now)

    # -- per-address creation rate (KIP-612) ------------------------------------------------------------
    def connection_rate_for_ip(self, ip: str) -> int:
        """The address's ``connection_creation_rate`` quota: its own, else the default ip entity's, else none."""
        quotas = self._client_quotas() if self._client_quotas is not None else {}
        if quotas is not self._ip_rates_source:
            self._ip_rates_source = quotas
            self._ip_rate_quotas = {}
            for entity, values in quotas.items():
                (kind, name), = entity if len(entity) == 1 else ((None, None),)
                if kind == "ip" and IP_CONNECTION_RATE in values:
                    self._ip_rate_quotas[_address(name)] = int(values[IP_CONNECTION_RATE])
        return self._ip_rate_quotas.get(ip, self._ip_rate_quotas.get(None, _UNLIMITED))

    def ip_throttle_s(self, ip: str, listener_name: str) -> float:
        """Record a connection from ``ip`` just accepted on ``listener_name`` against its address's quota.

        0 when it may go on; otherwise the seconds to hold its socket before closing it, and the accept is
        taken back from every creation rate (Kafka's recordIpConnectionMaybeThrottle).
        """
        limit = self.connection_rate_for_ip(ip)
        if limit >= _UNLIMITED:
            self._ip_accept_rates.pop(ip, None)
            return 0.0
        rate = self._ip_accept_rates.get(ip)
        if rate is None:
            rate = self._ip_accept_rates[ip] = self._new_rate()
        now = self._clock()
        rate.record(now)
        throttle = self._throttle_s(rate, limit, now)
        if throttle <= 0:
            return 0.0
        rate.unrecord()
        for key in self._rate_keys(listener_name):
            if key in self._accepted_rates:
                self._accepted_rates[key].unrecord()
        self.ip_throttled += 1
        log.debug("connection_creation_rate of %s reached on listener %s: closing the connection in %.0f ms",
                  ip, listener_name, throttle * 1000)
        return throttle

    # -- over max.connections --------------------------------------------------------------------------------
    def excess_connections(self) -> list[Admitted]:
        """Connections to close because the broker holds more than ``max.connections``: least recently used
        first, never the inter-broker listener's (Kafka's maxConnectionsExceeded on a processor of another
        listener, each closing its lowest priority channel)."""
        broker_max = self._dynamic_config.current["max.connections"]
        over = len(self.connections) - broker_max
        if over <= 0:
            return []
        others = [c for c in self.connections if c.listener_name != self._protected_listener]
        return sorted(others, key=lambda c: c.last_active)[:over]

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


def _address(name: str | None) -> str | None:
    """An ``ip`` entity's name as the address connections come from (Kafka's InetAddress.getByName)."""
    if name is None:
        return None
    try:
        return str(ipaddress.ip_address(name))
    except ValueError:
        pass
    try:
        return socket.gethostbyname(name)  # a host name: Kafka quotas the address it resolves to
    except OSError:
        return name
