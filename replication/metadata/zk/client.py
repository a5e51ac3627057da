"""A broker's ZooKeeper session (Kafka's ZooKeeperClient): kazoo underneath, asyncio on top.

- ``zookeeper.connect`` may end in a chroot (``host:2181,host2:2181/kafka``); like Kafka, the chroot is created
  first through a short session without it, then every path of the real session is relative to it.
- ``zookeeper.session.timeout.ms`` is the session timeout asked of the server; ``zookeeper.connection.timeout.ms``
  (default: the session timeout) bounds the wait for the first connection.
- Every request is kazoo's asynchronous call completed on the event loop: nothing blocks the loop. Only
  start and stop, which kazoo does synchronously, run in a worker thread.
- Watches fire once (ZooKeeper's semantics); their callbacks run on the event loop with kazoo's
  ``WatchedEvent``. Session callbacks run on the loop too: ``on_session_expired`` when the session is lost
  (its ephemeral znodes and watches are gone), ``on_new_session`` when kazoo has a new session in its place,
  which is where a broker registers itself again (Kafka's ``afterInitializingSession``).
- Requests made while disconnected (or between an expired session and its successor) wait for the
  connection at most ``zookeeper.connection.timeout.ms``, then fail with ``ZooKeeperConnectionTimeout``
  (Kafka's ZooKeeperClientTimeoutException); a request in flight when the connection drops fails with
  ``ConnectionLoss``. Reads (``get``, ``get_children``, ``exists``) are retried across a connection loss;
  writes are not (the caller knows whether a retry is safe).
- Conditional writes: ``set``/``delete`` take the expected znode version (-1: any), and ``multi`` runs
  create/set/delete/check operations atomically (Kafka fences a controller's writes with a ``CheckOp`` on
  the controller epoch znode's version).
"""

from __future__ import annotations

import asyncio
import functools
import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from kazoo.client import KazooClient, KazooState
from kazoo.exceptions import (
    BadVersionError,
    ConnectionClosedError,
    ConnectionLoss,
    NodeExistsError,
    NoNodeError,
    NotEmptyError,
    RolledBackError,
    SessionExpiredError,
    ZookeeperError,
)
from kazoo.handlers.threading import KazooTimeoutError
from kazoo.protocol.states import WatchedEvent, ZnodeStat

log = logging.getLogger("pykbroker.zk")

__all__ = [
    "ZooKeeperClient", "ZooKeeperConnectionTimeout", "ZooKeeperMultiError", "CreateOp", "SetDataOp", "DeleteOp",
    "CheckOp", "Op", "split_chroot", "BadVersionError", "ConnectionClosedError", "ConnectionLoss", "NodeExistsError", "NoNodeError",
    "NotEmptyError", "SessionExpiredError", "ZookeeperError", "WatchedEvent", "ZnodeStat",
]

Watch = Callable[[WatchedEvent], Any]


class ZooKeeperConnectionTimeout(ConnectionError):
    """No connection to ZooKeeper within ``zookeeper.connection.timeout.ms`` (Kafka's
    ``ZooKeeperClientTimeoutException``)."""


@dataclass(frozen=True)
class CreateOp:
    path: str
    data: bytes | None = None
    ephemeral: bool = False
    sequential: bool = False


@dataclass(frozen=True)
class SetDataOp:
    path: str
    data: bytes | None
    version: int = -1


@dataclass(frozen=True)
class DeleteOp:
    path: str
    version: int = -1


@dataclass(frozen=True)
class CheckOp:
    """Fails the whole multi unless ``path`` is at ``version``."""

    path: str
    version: int


Op = CreateOp | SetDataOp | DeleteOp | CheckOp


class ZooKeeperMultiError(ZookeeperError):
    """A ``multi`` was refused: ``index`` is the operation that failed, ``error`` ZooKeeper's reason
    (``BadVersionError`` for a failed check or conditional write, ``NodeExistsError``, ``NoNodeError``...)."""

    def __init__(self, index: int, op: Op, error: Exception) -> None:
        super().__init__(f"multi failed at operation {index} ({op}): {type(error).__name__}")
        self.index, self.op, self.error = index, op, error


def split_chroot(connect: str) -> tuple[str, str | None]:
    """``"h1:2181,h2:2181/kafka"`` -> ``("h1:2181,h2:2181", "/kafka")``; no chroot -> ``(connect, None)``."""
    i = connect.find("/")
    if i < 0:
        return connect, None
    chroot = connect[i:].rstrip("/")
    return connect[:i], chroot or None


class ZooKeeperClient:
    """One ZooKeeper session; paths are relative to the chroot of ``connect``."""

    def __init__(self, connect: str, *, session_timeout_ms: int = 9_000, connection_timeout_ms: int | None = None,
                 name: str = "broker") -> None:
        self.connect = connect
        self.hosts, self.chroot = split_chroot(connect)
        self.session_timeout_ms = session_timeout_ms
        self.connection_timeout_ms = connection_timeout_ms if connection_timeout_ms is not None else session_timeout_ms
        self.name = name
        self._kazoo: KazooClient | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._connected: asyncio.Event | None = None
        self._closing = False
        self._session_id: int | None = None
        self._expired_callbacks: list[Callable[[], Any]] = []
        self._new_session_callbacks: list[Callable[[], Any]] = []
        self._wrappers: dict[tuple[str, Watch], Callable[[WatchedEvent], None]] = {}

    @classmethod
    def from_config(cls, config: Any, name: str = "broker") -> ZooKeeperClient:
        """From a broker ``Config`` (``zookeeper.connect``, ``zookeeper.session.timeout.ms``,
        ``zookeeper.connection.timeout.ms``)."""
        if not config.zookeeper_connect:
            raise ValueError("zookeeper.connect is not set")
        return cls(config.zookeeper_connect, session_timeout_ms=config.zookeeper_session_timeout_ms,
                   connection_timeout_ms=config.zookeeper_connection_timeout_ms, name=name)

    # -- the session --------------------------------------------------------------------------------------

    @property
    def session_id(self) -> int | None:
        """The current session's id (None before the first connection)."""
        return self._session_id

    @property
    def connected(self) -> bool:
        return self._connected is not None and self._connected.is_set()

    @property
    def kazoo(self) -> KazooClient:
        """The underlying kazoo client (for tests and recipes); prefer this class's methods."""
        assert self._kazoo is not None, "start() first"
        return self._kazoo

    def on_session_expired(self, callback: Callable[[], Any]) -> None:
        """``callback()`` on the loop when the session is lost (ephemeral znodes and watches gone).
        Adding the same callback again has no effect."""
        if callback not in self._expired_callbacks:
            self._expired_callbacks.append(callback)

    def on_new_session(self, callback: Callable[[], Any]) -> None:
        """``callback()`` on the loop when a new session replaced an expired one (re-register, re-watch).
        Coroutine functions are scheduled as tasks. Adding the same callback again has no effect."""
        if callback not in self._new_session_callbacks:
            self._new_session_callbacks.append(callback)

    async def start(self) -> None:
        """Create the chroot if missing, then open the session; raises ``ZooKeeperConnectionTimeout``."""
        self._loop = asyncio.get_running_loop()
        self._connected = asyncio.Event()
        timeout_s = self.connection_timeout_ms / 1000
        if self.chroot:
            await asyncio.to_thread(self._create_chroot, timeout_s)
        self._kazoo = KazooClient(hosts=self.connect, timeout=self.session_timeout_ms / 1000,
                                  connection_retry={"max_tries": -1, "max_delay": 1.0},
                                  logger=logging.getLogger("kazoo.client"))
        self._kazoo.add_listener(self._on_state)
        try:
            await asyncio.to_thread(self._kazoo.start, timeout_s)
        except KazooTimeoutError:
            await asyncio.to_thread(self._stop_kazoo)
            raise ZooKeeperConnectionTimeout(
                f"no connection to ZooKeeper at {self.hosts} within {self.connection_timeout_ms} ms") from None
        self._session_id = self._kazoo.client_id[0]
        self._connected.set()
        log.info("ZooKeeper session 0x%x established with %s (chroot %s, session timeout %d ms)",
                 self._session_id, self.hosts, self.chroot or "/", self.session_timeout_ms)

    def _create_chroot(self, timeout_s: float) -> None:
        assert self.chroot is not None
        bootstrap = KazooClient(hosts=self.hosts, timeout=self.session_timeout_ms / 1000)
        try:
            bootstrap.start(timeout_s)
        except KazooTimeoutError:
            bootstrap.close()
            raise ZooKeeperConnectionTimeout(
                f"no connection to ZooKeeper at {self.hosts} within {self.connection_timeout_ms} ms") from None
        try:
            if bootstrap.exists(self.chroot) is None:
                current = ""
                for part in filter(None, self.chroot.split("/")):  # every level with null data, as Kafka's
                    current += "/" + part
                    try:
                        bootstrap.create(current, None)
                    except NodeExistsError:
                        pass  # there already, or another broker made it first
                log.info("created the ZooKeeper chroot %s", self.chroot)
        finally:
            bootstrap.stop()
            bootstrap.close()

    def _stop_kazoo(self) -> None:
        if self._kazoo is not None:
            self._kazoo.stop()
            self._kazoo.close()

    async def close(self) -> None:
        """End the session: its ephemeral znodes go at once."""
        self._closing = True
        if self._kazoo is not None:
            await asyncio.to_thread(self._stop_kazoo)
            self._kazoo = None
        if self._connected is not None:
            self._connected.clear()

    def _on_state(self, state: str) -> None:
        """kazoo's connection listener (kazoo's thread): hand the change to the loop."""
        if self._loop is None or self._loop.is_closed():
            return
        session_id = self._kazoo.client_id[0] if state == KazooState.CONNECTED and self._kazoo is not None \
            and self._kazoo.client_id else None
        try:
            self._loop.call_soon_threadsafe(self._state_changed, state, session_id)
        except RuntimeError:  # loop closed meanwhile
            pass

    def _state_changed(self, state: str, session_id: int | None) -> None:
        assert self._connected is not None
        if state == KazooState.CONNECTED:
            self._connected.set()
            if session_id is not None and self._session_id is not None and session_id != self._session_id:
                log.info("new ZooKeeper session 0x%x replaces expired 0x%x", session_id, self._session_id)
                self._session_id = session_id
                self._run_callbacks(self._new_session_callbacks)
            elif session_id is not None:
                self._session_id = session_id
        elif state == KazooState.SUSPENDED:
            self._connected.clear()
            log.info("ZooKeeper connection lost (session 0x%x); reconnecting", self._session_id or 0)
        elif state == KazooState.LOST:
            self._connected.clear()
            self._wrappers.clear()  # the session's watches died with it
            if not self._closing:
                log.warning("ZooKeeper session 0x%x expired", self._session_id or 0)
                self._run_callbacks(self._expired_callbacks)

    def _run_callbacks(self, callbacks: Sequence[Callable[[], Any]]) -> None:
        for callback in callbacks:
            try:
                result = callback()
                if asyncio.iscoroutine(result):
                    asyncio.ensure_future(result)
            except Exception:
                log.exception("ZooKeeper session callback %r failed", callback)

    async def wait_connected(self, timeout: float | None = None) -> None:
        assert self._connected is not None, "start() first"
        async with asyncio.timeout(timeout):
            await self._connected.wait()

    async def _request(self, call: Callable[[], Any]) -> Any:
        """Send a request once connected. As Kafka's ZooKeeperClient, a request waits for a lost connection
        (or a new session) at most ``zookeeper.connection.timeout.ms``, then fails with
        ``ZooKeeperConnectionTimeout`` instead of hanging while ZooKeeper is away."""
        if not self.connected:
            try:
                await self.wait_connected(self.connection_timeout_ms / 1000)
            except TimeoutError:
                raise ZooKeeperConnectionTimeout(
                    f"Timed out waiting for connection to ZooKeeper at {self.hosts} "
                    f"({self.connection_timeout_ms} ms)") from None
        return await self._future(call())

    # -- bridging kazoo's completions and watches to the loop -----------------------------------------------

    def _future(self, async_result: Any) -> asyncio.Future:
        loop = self._loop
        assert loop is not None
        future = loop.create_future()

        def transfer(result: Any) -> None:
            if future.done():
                return
            if result.successful():
                future.set_result(result.value)
            else:
                future.set_exception(result.exception)

        async_result.rawlink(lambda result: loop.call_soon_threadsafe(transfer, result))
        return future

    def _watcher(self, path: str, watch: Watch | None) -> Callable[[WatchedEvent], None] | None:
        """kazoo's side of ``watch``. The same callable always gets the same wrapper, so watching a path
        again with it before it fired sets one watch, not two (kazoo keeps a set of watchers per path)."""
        if watch is None:
            return None
        key = (path, watch)
        wrapper = self._wrappers.get(key)
        if wrapper is not None:
            return wrapper
        loop = self._loop
        assert loop is not None

        def fire(event: WatchedEvent) -> None:
            try:
                loop.call_soon_threadsafe(self._run_watch, key, event)
            except RuntimeError:
                pass

        self._wrappers[key] = fire
        return fire

    def _run_watch(self, key: tuple[str, Watch], event: WatchedEvent) -> None:
        self._wrappers.pop(key, None)
        watch = key[1]
        try:
            result = watch(event)
            if asyncio.iscoroutine(result):
                asyncio.ensure_future(result)
        except Exception:
            log.exception("ZooKeeper watch callback for %s failed", event.path)

    async def _read(self, call: Callable[[], Any]) -> Any:
        """A read, retried after a connection loss once the session is back."""
        while True:
            try:
                return await self._request(call)
            except ConnectionLoss:
                continue  # the next attempt waits for the connection (bounded by the connection timeout)

    # -- requests ---------------------------------------------------------------------------------------

    async def get(self, path: str, watch: Watch | None = None) -> tuple[bytes | None, ZnodeStat] | None:
        """(data, stat) of ``path``, or None when it does not exist (a watch is then not set: use exists)."""
        try:
            return await self._read(lambda: self.kazoo.get_async(path, self._watcher(path, watch)))
        except NoNodeError:
            return None

    async def get_children(self, path: str, watch: Watch | None = None) -> list[str] | None:
        """Child names of ``path`` (unsorted, as ZooKeeper returns them), or None when it does not exist."""
        try:
            return await self._read(lambda: self.kazoo.get_children_async(path, self._watcher(path, watch)))
        except NoNodeError:
            return None

    async def exists(self, path: str, watch: Watch | None = None) -> ZnodeStat | None:
        """The stat of ``path`` or None; a watch fires on its creation, change or deletion."""
        return await self._read(lambda: self.kazoo.exists_async(path, self._watcher(path, watch)))

    async def create(self, path: str, data: bytes | None = None, *, ephemeral: bool = False,
                     sequential: bool = False, make_parents: bool = False) -> str:
        """Create ``path`` (null data by default, as Kafka's parents); returns the created path (with the
        sequence suffix for ``sequential``). Raises ``NodeExistsError`` / ``NoNodeError`` (missing parent)."""
        if make_parents:
            parent = path.rsplit("/", 1)[0]
            if parent:
                await self.ensure_path(parent)
        return await self._request(lambda: self.kazoo.create_async(path, data, ephemeral=ephemeral,
                                                                  sequence=sequential))

    async def ensure_path(self, path: str) -> None:
        """Create ``path`` and its missing parents, each with null data (Kafka's makeSurePersistentPathExists)."""
        parts = [p for p in path.split("/") if p]
        current = ""
        for part in parts:
            current += "/" + part
            if await self.exists(current) is None:
                try:
                    await self._request(functools.partial(self.kazoo.create_async, current, None))
                except NodeExistsError:
                    pass

    async def set(self, path: str, data: bytes, version: int = -1) -> ZnodeStat:
        """Set ``path``'s data if its version is ``version`` (-1: any); raises ``BadVersionError``/``NoNodeError``."""
        return await self._request(lambda: self.kazoo.set_async(path, data, version))

    async def delete(self, path: str, version: int = -1, *, recursive: bool = False) -> None:
        """Delete ``path`` (at ``version``; -1: any). ``recursive`` deletes its subtree first, children before
        parents (not atomic; a child someone else deleted meanwhile is fine), as Kafka's deleteRecursive."""
        if recursive:
            for child in await self.get_children(path) or []:
                try:
                    await self.delete(f"{path.rstrip('/')}/{child}", recursive=True)
                except NoNodeError:
                    pass
        await self._request(lambda: self.kazoo.delete_async(path, version))

    async def multi(self, ops: Sequence[Op]) -> list[Any]:
        """All of ``ops`` atomically, or none: raises ``ZooKeeperMultiError`` naming the failed operation.
        Returns each operation's result (created path, stat, True)."""
        tx = self.kazoo.transaction()
        for op in ops:
            if isinstance(op, CreateOp):
                tx.create(op.path, op.data or b"", ephemeral=op.ephemeral, sequence=op.sequential)
                if op.data is None:  # kazoo's transactions refuse null data, which Kafka's parents carry
                    tx.operations[-1] = tx.operations[-1]._replace(data=None)
            elif isinstance(op, SetDataOp):
                tx.set_data(op.path, op.data, op.version)
            elif isinstance(op, DeleteOp):
                tx.delete(op.path, op.version)
            elif isinstance(op, CheckOp):
                tx.check(op.path, op.version)
            else:
                raise TypeError(f"not a ZooKeeper operation: {op!r}")
        results = await self._request(tx.commit_async)
        for i, result in enumerate(results):
            if isinstance(result, Exception) and not isinstance(result, RolledBackError):
                raise ZooKeeperMultiError(i, ops[i], result)
        return results

