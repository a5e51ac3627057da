"""The ``dispatch`` fuzz target: whole request frames through a real in-process Broker's Dispatcher.

Beyond the decoders, this reaches every handler and the domain code behind it (topics, logs, groups,
transactions, configs) and the response encoders, with the broker's state growing as a long-running
broker's would. A finding is an error the dispatcher had to catch (a handler that raised: logged as
"error handling ...", answered UNKNOWN_SERVER_ERROR) or anything that escapes it but CloseConnection.
Each input gets at most INPUT_TIMEOUT_S (long polls and rebalances are cut short: not findings).
"""

from __future__ import annotations

import asyncio
import logging
import tempfile

from pykbroker.broker import Broker
from pykbroker.config import Config, Listener
from pykbroker.context import ANONYMOUS
from pykbroker.dispatch import CloseConnection, Dispatcher
from pykbroker.response_writer import ResponseWriter

INPUT_TIMEOUT_S = 0.2


class Crash(AssertionError):
    """A handler failed on this input."""


class _Transport:
    """Takes every write; never blocks (the writer's flow control is tested elsewhere)."""

    def write(self, data) -> None:
        pass

    def is_closing(self) -> bool:
        return False

    def get_write_buffer_size(self) -> int:
        return 0


class _Failures(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.ERROR)
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        if record.exc_info is not None:
            self.records.append(record)


class _Harness:
    def __init__(self) -> None:
        self.tmp = tempfile.TemporaryDirectory(prefix="fuzz-dispatch-")
        self.loop = asyncio.new_event_loop()
        config = Config({"listeners": "PLAINTEXT://127.0.0.1:9092", "log.dirs": f"{self.tmp.name}/logs",
                         "group.initial.rebalance.delay.ms": "0", "log.segment.bytes": str(1 << 20)})
        self.broker = Broker(config)
        self.loop.run_until_complete(self._start(config))
        self.failures = _Failures()
        logging.getLogger().setLevel(logging.CRITICAL)  # quiet: findings are collected, not printed
        connection_log = logging.getLogger("pykbroker.connection")
        connection_log.setLevel(logging.ERROR)
        connection_log.propagate = False
        connection_log.addHandler(self.failures)

    async def _start(self, config: Config) -> None:
        await self.broker.start()
        register = getattr(self.broker, "register", None)
        if register is not None:
            await register()
        listener = config.listeners[0]
        self.broker.bound_listeners[listener.name] = Listener(listener.name, listener.host, listener.port)
        self.writer = ResponseWriter(_Transport(), None, lambda: None)  # type: ignore[arg-type]
        self.dispatcher = Dispatcher(self.broker, listener, "127.0.0.1:1", self.writer)

    def run(self, data: bytes) -> None:
        self.failures.records.clear()
        try:
            self.loop.run_until_complete(asyncio.wait_for(self.dispatcher.dispatch(data, ANONYMOUS),
                                                          INPUT_TIMEOUT_S))
        except (CloseConnection, TimeoutError):
            pass
        self.writer.flush()
        if self.failures.records:
            record = self.failures.records[0]
            raise Crash(record.getMessage()) from record.exc_info[1]  # type: ignore[index]


_harness: _Harness | None = None


def dispatch(data: bytes) -> None:
    global _harness
    if _harness is None:
        _harness = _Harness()
    _harness.run(data)
