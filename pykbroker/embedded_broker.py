"""A broker inside the test process: ``pykbroker.embedded()`` runs a ``Server`` on a thread of its own
with its own event loop, for Python tests that want no subprocess.

    with pykbroker.embedded() as broker:
        producer = Producer({"bootstrap.servers": broker.bootstrap})

It listens on 127.0.0.1 on a free port (port 0, bound by the server itself) with a temporary data dir,
unless told otherwise, on asyncio's own event loop unless given a ``loop_factory`` (``uvloop.new_event_loop``, as
``pykbroker`` runs). ``stop()`` (or leaving the ``with``) shuts the broker down as SIGTERM would,
stops the loop's executor threads, closes the loop and removes the temporary dir: nothing of it is left
in the process (threads, sockets, open files).
"""

from __future__ import annotations

import asyncio
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from pykbroker.config import Config

if TYPE_CHECKING:
    from pykbroker.server import Server

__all__ = ["EmbeddedBroker", "embedded"]

# Defaults for a test broker: a consumer group's first join answers at once (Kafka waits 3 s).
TEST_DEFAULTS = {"group.initial.rebalance.delay.ms": "0"}


class EmbeddedBroker:
    """One pykbroker ``Server`` on a daemon thread; ``bootstrap`` is its address once started."""

    def __init__(self, properties: dict[str, str] | None = None, *, data_dir: str | Path | None = None,
                 port: int = 0, host: str = "127.0.0.1",
                 loop_factory: Callable[[], asyncio.AbstractEventLoop] = asyncio.new_event_loop) -> None:
        self._tmp: tempfile.TemporaryDirectory | None = None
        if data_dir is None:
            self._tmp = tempfile.TemporaryDirectory(prefix="pykbroker-embedded-")
            data_dir = self._tmp.name
        self.data_dir = Path(data_dir)
        self.properties = {"listeners": f"PLAINTEXT://{host}:{port}", "log.dirs": str(self.data_dir / "logs"),
                           **TEST_DEFAULTS, **{k: str(v) for k, v in (properties or {}).items()}}
        self.host = host
        self._loop_factory = loop_factory  # uvloop.new_event_loop for a loop as ``pykbroker`` runs
        self.port: int | None = None
        self.server: Server | None = None  # while running
        self._thread: threading.Thread | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._stop_requested: asyncio.Event | None = None
        self._ready = threading.Event()
        self._error: BaseException | None = None
        self.startup_seconds: float | None = None

    @property
    def bootstrap(self) -> str:
        """"host:port" of the first listener: ``bootstrap.servers`` for any client."""
        if self.port is None:
            raise RuntimeError("the embedded broker is not running")
        return f"{self.host}:{self.port}"

    bootstrap_servers = bootstrap

    def start(self, timeout: float = 30.0) -> EmbeddedBroker:
        """Start the broker and return once it accepts connections; raises what stopped its start."""
        if self._thread is not None:
            raise RuntimeError("the embedded broker is already running")
        config = Config(self.properties)  # a ConfigError is raised here, in the caller's thread
        started = time.monotonic()
        self._ready.clear()
        self._error = None
        self._thread = threading.Thread(target=self._run, args=(config,), name="pykbroker-embedded", daemon=True)
        self._thread.start()
        if not self._ready.wait(timeout):
            self.stop()
            raise TimeoutError(f"the embedded broker did not start within {timeout}s")
        if self._error is not None:
            error, self._error = self._error, None
            self._thread.join()
            self._thread = None
            raise error
        self.startup_seconds = time.monotonic() - started
        return self

    def _run(self, config: Config) -> None:
        loop = self._loop = self._loop_factory()
        try:
            loop.run_until_complete(self._serve(config))
        except BaseException as exc:  # reported to start() when the start failed
            if not self._ready.is_set():
                self._error = exc
        finally:
            try:
                loop.run_until_complete(loop.shutdown_asyncgens())
                loop.run_until_complete(loop.shutdown_default_executor())  # asyncio.to_thread's threads
            finally:
                loop.close()
                self._ready.set()

    async def _serve(self, config: Config) -> None:
        from pykbroker.server import Server

        self._stop_requested = asyncio.Event()
        self.server = server = Server(config)
        try:
            await server.start()
        except BaseException:
            await server.stop()
            raise
        assert server.broker is not None
        self.port = next(iter(server.broker.bound_listeners.values())).port
        self._ready.set()
        await self._stop_requested.wait()
        await server.stop()

    def stop(self, timeout: float = 30.0) -> None:
        """Graceful shutdown; then the loop, its threads and the temporary data dir are gone."""
        thread, loop = self._thread, self._loop
        if thread is not None and loop is not None and thread.is_alive() and self._stop_requested is not None:
            try:
                loop.call_soon_threadsafe(self._stop_requested.set)
            except RuntimeError:  # the loop closed already
                pass
        if thread is not None:
            thread.join(timeout)
            if thread.is_alive():
                raise TimeoutError(f"the embedded broker did not stop within {timeout}s")
        self._thread = self._loop = self.server = self._stop_requested = None
        self.port = None

    def close(self) -> None:
        self.stop()
        if self._tmp is not None:
            self._tmp.cleanup()
            self._tmp = None

    def __enter__(self) -> EmbeddedBroker:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.close()


def embedded(properties: dict[str, str] | None = None, **kwargs) -> EmbeddedBroker:
    """An ``EmbeddedBroker`` to use in a ``with``: started on entry, stopped and cleaned up on exit.
    ``properties``: broker properties (Kafka's names); ``data_dir``, ``port``, ``host`` as keywords."""
    return EmbeddedBroker(properties, **kwargs)
