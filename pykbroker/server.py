"""The asyncio server: bind listeners, serve connections, shut down gracefully on SIGTERM/SIGINT."""

from __future__ import annotations

import asyncio
import logging
import os
import signal
import time
from collections.abc import Callable

from pykbroker.broker import Broker
from pykbroker.config import Config, Listener
from pykbroker.connection import Connection
from pykbroker.security.listeners import listener_security

log = logging.getLogger("pykbroker.server")

# How long a graceful shutdown waits for in-flight requests before closing sockets anyway.
SHUTDOWN_GRACE_SECONDS = 10.0


class Server:
    """Owns the listening sockets and the broker's lifetime."""

    def __init__(self, config: Config) -> None:
        self.config = config
        self.broker: Broker | None = None
        self._servers: list[asyncio.base_events.Server] = []
        self._stopping = asyncio.Event()
        self._signals = 0
        self._idle_reaper: asyncio.Task | None = None

    async def start(self) -> None:
        started = time.monotonic()
        security = listener_security(self.config)  # a ConfigError here stops the start, as in Kafka
        self.broker = broker = Broker(self.config)
        broker.listener_security = security  # dynamic key and trust store changes reload these contexts
        await broker.start()
        loop = asyncio.get_running_loop()
        for lst in self.config.listeners:
            host = lst.host or None
            sec = security[lst.name]
            srv = await loop.create_server(lambda lst=lst, sec=sec: Connection(broker, lst, sec), host, lst.port,
                                           reuse_address=True, backlog=1024, ssl=sec.ssl_context)
            sock = srv.sockets[0]
            addr = sock.getsockname()
            broker.bound_listeners[lst.name] = Listener(lst.name, lst.host, addr[1])
            self._servers.append(srv)
            log.info("listening on %s://%s:%d (%s%s)", lst.name, lst.host or "0.0.0.0", addr[1], sec.protocol,
                     f", SASL mechanisms {','.join(sec.mechanisms)}" if sec.sasl else "")
        await broker.register()
        idle_ms = self.config["connections.max.idle.ms"]
        if idle_ms >= 0:
            self._idle_reaper = loop.create_task(self._close_idle_connections(idle_ms / 1000))
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
        await self.start()
        if on_started is not None:
            on_started(self)
        await self._stopping.wait()
        await self.stop()

    async def _close_idle_connections(self, idle_s: float) -> None:
        """connections.max.idle.ms: close connections with no reads or writes for that long, as Kafka's
        Selector does (a connection with a request in progress, a long poll say, is left alone)."""
        broker = self.broker
        assert broker is not None
        loop = asyncio.get_running_loop()
        while True:
            await asyncio.sleep(min(max(idle_s / 10, 0.05), 30.0))
            now = loop.time()
            for conn in [c for c in broker.connections if not c.busy and now - c.last_active > idle_s]:
                log.debug("closing the connection from %s on listener %s: idle for %.0f ms (connections.max.idle.ms)",
                         conn.peer, conn.listener.name, (now - conn.last_active) * 1000)
                conn.close()

    async def stop(self) -> None:
        if self._idle_reaper is not None:
            self._idle_reaper.cancel()
        for srv in self._servers:
            srv.close()
        broker = self.broker
        if broker is not None:
            await broker.controlled_shutdown()  # a cluster's partitions move before anything stops
            broker.replica_manager.begin_shutdown()  # long polls (consumers', followers') answer now
            deadline = time.monotonic() + SHUTDOWN_GRACE_SECONDS
            while any(c.busy for c in broker.connections) and time.monotonic() < deadline:
                await asyncio.sleep(0.02)
            for conn in list(broker.connections):
                conn.close()
        for srv in self._servers:
            await srv.wait_closed()
        if broker is not None:
            await broker.shutdown()
        log.info("pykbroker stopped")


def run(config: Config, on_started: Callable[[Server], None] | None = None) -> None:
    """Run a broker until SIGTERM/SIGINT (uvloop when installed); ``on_started`` once it listens."""
    try:
        import uvloop

        runner = uvloop.run
    except ImportError:  # pragma: no cover - uvloop is a dependency on Linux
        runner = asyncio.run
    runner(Server(config).serve_forever(on_started))
