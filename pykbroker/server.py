"""The asyncio server: bind listeners, accept and serve connections, shut down gracefully on SIGTERM/SIGINT.

Each listener has an acceptor task (Kafka's Acceptor): it accepts only when ConnectionQuotas allows
(max.connections, max.connection.creation.rate), so clients over the limits wait in the kernel's backlog.
A connection over its address's connection_creation_rate quota is held unserved for the throttle time,
then closed.
"""

from __future__ import annotations

import asyncio
import errno
import logging
import os
import signal
import socket
import time
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from pykbroker.broker import Broker
from pykbroker.config import Config, ConfigError, Listener
from pykbroker.connection import Connection
from pykbroker.connection_quotas import ConnectionQuotas
from pykbroker.metrics import BrokerMetrics

if TYPE_CHECKING:
    from pykbroker.console import Console
from pykbroker.request_channel import RequestChannel
from pykbroker.security.listeners import listener_security

log = logging.getLogger("pykbroker.server")

# How long a graceful shutdown waits for in-flight requests before closing sockets anyway.
SHUTDOWN_GRACE_SECONDS = 10.0
# Connections the kernel completes and queues for each listener while the acceptor waits (its listen backlog).
LISTEN_BACKLOG = 1024
# After accept() fails for want of descriptors (EMFILE), the acceptor retries after this long.
ACCEPT_RETRY_SECONDS = 0.1
# The reaper's longest sleep: how soon a lowered max.connections closes the excess connections.
EXCESS_CHECK_SECONDS = 1.0


class Server:
    """Owns the listening sockets and the broker's lifetime."""

    def __init__(self, config: Config) -> None:
        self.config = config
        self.broker: Broker | None = None
        self._sockets: list[socket.socket] = []
        self._acceptors: list[asyncio.Task] = []
        self._stopping = asyncio.Event()
        self._signals = 0
        self._idle_reaper: asyncio.Task | None = None
        self.quotas: ConnectionQuotas | None = None
        self.channel: RequestChannel | None = None
        self.metrics: BrokerMetrics | None = None
        self.console: Console | None = None  # while console.listener is set
        self.schema_registry: Any = None  # a schema_registry.SchemaRegistry while schema.registry.listeners is set
        self._throttled_sockets: set[socket.socket] = set()  # accepted over an ip's rate, closed after its delay

    async def start(self) -> None:
        started = time.monotonic()
        security = listener_security(self.config)  # a ConfigError here stops the start, as in Kafka
        check_log_dirs(self.config.log_dirs)
        self.broker = broker = Broker(self.config)
        broker.listener_security = security  # dynamic key and trust store changes reload these contexts
        self.metrics = BrokerMetrics.install(broker)  # before any request: the request path records into it
        await broker.start()
        listeners = self.config.listeners
        protected = (self.config["inter.broker.listener.name"] or listeners[0].name) if len(listeners) > 1 else None
        self.quotas = ConnectionQuotas(broker.dynamic_config, protected,
                                       client_quotas=lambda: broker.metadata.image.client_quotas)
        self.channel = RequestChannel(self.config["queued.max.requests"], self.config["queued.max.request.bytes"])
        loop = asyncio.get_running_loop()
        for lst in self.config.listeners:
            sec = security[lst.name]
            socks = bind_listener(lst.name, lst.host, lst.port)
            addr = socks[0].getsockname()
            broker.bound_listeners[lst.name] = Listener(lst.name, lst.host, addr[1])
            self._sockets += socks
            self._acceptors += [loop.create_task(self._accept(sock, lst, sec)) for sock in socks]
            log.info("listening on %s://%s:%d (%s%s)", lst.name, lst.host or "0.0.0.0", addr[1], sec.protocol,
                     f", SASL mechanisms {','.join(sec.mechanisms)}" if sec.sasl else "")
        await broker.register()
        if self.metrics is not None:
            await self.metrics.start(self)
            if self.config["console.listener"]:
                from pykbroker.console import Console

                self.console = Console(broker, self.metrics.recorder)
                await self.console.start()
        if self.config["schema.registry.listeners"]:
            self.schema_registry = broker.schema_registry_for_decoding()  # the one Iceberg topics may use already
            await self.schema_registry.start()
        idle_ms = self.config["connections.max.idle.ms"]
        self._idle_reaper = loop.create_task(self._close_idle_connections(idle_ms / 1000 if idle_ms >= 0 else None))
        if self.config.inert:
            log.info("accepted, no effect in pykbroker: %s", ", ".join(self.config.inert))
        log.info("pykbroker started: node.id=%d cluster.id=%s log.dirs=%s in %.0f ms",
                 broker.node_id, broker.cluster_id, ",".join(self.config.log_dirs),
                 (time.monotonic() - started) * 1000)

    def request_stop(self) -> None:
        """First signal: graceful stop. Second: exit at once."""
        self._signals += 1
        if self._signals == 1:
            log.info("shutting down (send the signal again to force)")
            self._stopping.set()
        else:
            log.warning("second signal: forcing exit")
            os._exit(1)

    async def serve_forever(self, on_started: Callable[[Server], None] | None = None) -> None:
        """Start, call ``on_started`` (the CLI's ready line), serve until a signal, stop."""
        loop = asyncio.get_running_loop()
        # Handlers first: a signal that arrives while we start must still mean a graceful stop.
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(sig, self.request_stop)
        try:
            await self.start()
        except BaseException:
            # A start that failed half-way (a broker id still registered, ZooKeeper out of reach) must not
            # leave listeners serving or ZooKeeper's threads keeping the process alive.
            log.error("start failed; stopping what was started")
            try:
                await self.stop(controlled=False)
            except Exception:  # noqa: BLE001 - the start's own error is the one to report
                log.exception("stopping after the failed start failed too")
            raise
        if on_started is not None:
            on_started(self)
        await self._stopping.wait()
        await self.stop()

    async def _accept(self, sock: socket.socket, lst: Listener, sec) -> None:
        """One listener socket's acceptor: wait for the quotas, accept, admit, start the connection."""
        loop = asyncio.get_running_loop()
        quotas, channel, broker = self.quotas, self.channel, self.broker
        assert quotas is not None and channel is not None and broker is not None
        while True:
            await quotas.wait_to_accept(lst.name)
            try:
                client, address = await loop.sock_accept(sock)
            except OSError as exc:  # out of descriptors, say: the backlog keeps the clients meanwhile
                log.warning("accepting on listener %s failed: %s", lst.name, exc)
                await asyncio.sleep(ACCEPT_RETRY_SECONDS)
                continue
            quotas.record_accept(lst.name)
            throttle_s = quotas.ip_throttle_s(address[0], lst.name)
            if throttle_s > 0:  # over its address's connection_creation_rate: held unserved, then closed
                self._throttled_sockets.add(client)
                loop.call_later(throttle_s, self._close_throttled, client)
                continue
            conn = Connection(broker, lst, sec, quotas, channel, address[0])
            if not quotas.admit(conn):
                client.close()
                continue
            self._close_excess_connections()
            if sec.ssl_context is None:
                await self._start_connection(conn, client, None)
            else:  # the TLS handshake must not hold up the next accept
                loop.create_task(self._start_connection(conn, client, sec.ssl_context))

    def _close_excess_connections(self) -> None:
        """Over max.connections (the inter-broker listener got in past it, or the limit was lowered): close
        other listeners' least recently used connections."""
        assert self.quotas is not None
        for conn in self.quotas.excess_connections():
            if not isinstance(conn, Connection) or conn.transport is None:  # still starting: the most recent anyway
                continue
            log.info("closing the least recently used connection from %s on listener %s: the broker is over "
                     "max.connections (%d open)", conn.peer, conn.listener_name, self.quotas.count())
            conn.close()
            self.quotas.release(conn)

    def _close_throttled(self, client: socket.socket) -> None:
        if client in self._throttled_sockets:
            self._throttled_sockets.discard(client)
            client.close()

    async def _start_connection(self, conn: Connection, client: socket.socket, ssl_context) -> None:
        try:
            await asyncio.get_running_loop().connect_accepted_socket(lambda: conn, client, ssl=ssl_context)
        except (OSError, ConnectionError) as exc:  # a failed TLS handshake, a client already gone
            log.info("connection from %s on listener %s failed before it started: %s", conn.ip,
                     conn.listener_name, exc)
            self.quotas.release(conn)  # type: ignore[union-attr]
            client.close()

    async def _close_idle_connections(self, idle_s: float | None) -> None:
        """connections.max.idle.ms (None: -1, never): close connections with no reads or writes for that long,
        as Kafka's Selector does (a connection with a request in progress, a long poll say, is left alone).
        Also closes the connections over max.connections."""
        quotas = self.quotas
        assert quotas is not None
        loop = asyncio.get_running_loop()
        while True:
            await asyncio.sleep(EXCESS_CHECK_SECONDS if idle_s is None
                                else min(max(idle_s / 10, 0.05), EXCESS_CHECK_SECONDS))
            self._close_excess_connections()  # a lowered max.connections takes effect here
            if idle_s is None:
                continue
            now = loop.time()
            for conn in list(quotas.connections):
                idle = conn.idle_for(now)
                if idle is not None and idle > idle_s:
                    log.debug("closing the connection from %s on listener %s: idle for %.0f ms "
                              "(connections.max.idle.ms)", conn.peer, conn.listener.name, idle * 1000)
                    conn.close(abort=conn.writer is not None and conn.writer.blocked)

    async def stop(self, *, controlled: bool = True) -> None:
        """Stop accepting, answer long polls, let in-flight requests finish, close the broker; ``controlled``:
        a cluster broker first hands its partitions over (controlled shutdown)."""
        if self._idle_reaper is not None:
            self._idle_reaper.cancel()
        for task in self._acceptors:
            task.cancel()
        for sock in self._sockets:
            sock.close()
        for client in list(self._throttled_sockets):
            self._close_throttled(client)
        broker = self.broker
        if broker is not None:
            if controlled:
                await broker.controlled_shutdown()  # a cluster's partitions move before anything stops
            broker.replica_manager.begin_shutdown()  # long polls (consumers', followers') answer now
            deadline = time.monotonic() + SHUTDOWN_GRACE_SECONDS
            connections = self.quotas.connections if self.quotas is not None else set()
            while any(c.busy for c in connections) and time.monotonic() < deadline:
                await asyncio.sleep(0.02)
            for conn in list(connections):
                conn.close()
        if self.console is not None:
            await self.console.close()
        if self.schema_registry is not None:
            await self.schema_registry.close()
        if self.metrics is not None:
            await self.metrics.close()
        if broker is not None:
            await broker.shutdown()
        log.info("pykbroker stopped")


def run(config: Config, on_started: Callable[[Server], None] | None = None) -> None:
    """Run a broker until SIGTERM/SIGINT (uvloop when installed); ``on_started`` once it listens."""
    try:
        import uvloop

    except ImportError:  # pragma: no cover - uvloop is a dependency on Linux
        asyncio.run(Server(config).serve_forever(on_started))
    else:
        uvloop.run(Server(config).serve_forever(on_started))


def check_log_dirs(log_dirs: Sequence[str]) -> None:
    """Stop the start, before anything is written, when none of ``log.dirs`` exists (or can be created) as a
    directory this user may write: a ConfigError naming log.dirs and what to do. As Kafka's LogManager, a
    broker with at least one usable dir starts, and the others are handled as failed log dirs."""
    problems: list[str] = []
    for d in log_dirs:
        try:
            os.makedirs(d, exist_ok=True)
            if not os.access(d, os.W_OK | os.X_OK):
                raise PermissionError(errno.EACCES, "not writable by this user")
        except OSError as exc:
            problems.append(f"{d} cannot be used as a log directory ({exc.strerror or exc})")
    if problems and len(problems) == len(log_dirs):
        raise ConfigError(f"log.dirs: {'; '.join(problems)}; set log.dirs to a directory this user can create "
                          "and write, e.g. --override log.dirs=/tmp/pykbroker-data")
    for problem in problems:
        log.warning("log.dirs: %s; the broker starts with its other log dirs and handles this one as failed", problem)


def bind_listener(name: str, host: str, port: int) -> list[socket.socket]:
    """The sockets of listener ``name``; a ConfigError naming it (and how to pick another port) when the
    address is taken or cannot be bound here."""
    try:
        return _bind(host or None, port)
    except OSError as exc:
        where = f"{host or '0.0.0.0'}:{port}"
        if exc.errno == errno.EADDRINUSE:
            why = (f"{where} is already in use (another pykbroker or Kafka?); stop that process or pick another "
                   f"port, e.g. --override listeners={name}://{host}:{port + 1 if port else 0} (port 0: any free one)")
        else:
            why = f"{where} cannot be bound here ({exc.strerror or exc}); set listeners to an address of this host"
        raise ConfigError(f"listeners: listener {name}: {why}") from exc


def _bind(host: str | None, port: int) -> list[socket.socket]:
    """Listening sockets for ``host`` (every address family it resolves to; None: all interfaces)."""
    socks: list[socket.socket] = []
    infos = socket.getaddrinfo(host, port, socket.AF_UNSPEC, socket.SOCK_STREAM, 0, socket.AI_PASSIVE)
    seen = set()
    for family, kind, proto, _, address in infos:
        if (family, address) in seen:
            continue
        seen.add((family, address))
        sock = socket.socket(family, kind, proto)
        try:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            if family == socket.AF_INET6:
                sock.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 1)
            if port == 0 and socks:  # port 0 on several families: one port for all, as a client expects
                address = (address[0], socks[0].getsockname()[1], *address[2:])
            sock.bind(address)
        except OSError:
            sock.close()
            if family == socket.AF_INET6 and host is None:
                continue  # no IPv6 here: IPv4 alone
            for s in socks:
                s.close()
            raise
        sock.listen(LISTEN_BACKLOG)
        sock.setblocking(False)
        socks.append(sock)
    return socks
