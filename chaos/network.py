"""Network partitions on loopback: a fault-injecting TCP proxy in front of every broker and of ZooKeeper.

Every link of a campaign's cluster goes through a ``Network``: clients and brokers reach broker ``n``
through its proxy (the broker advertises the proxy's port), and broker ``n`` reaches ZooKeeper through a
proxy of its own. Each connection has a source and a destination node name (``broker-1``, ``zookeeper``,
``client``); a broker's proxy tells a connection from broker ``m`` from a client's by the process owning
the connecting socket (``/proc/net/tcp`` and ``/proc/<pid>/fd``).

``cut(src, dst)`` stops the bytes flowing from ``src`` to ``dst`` (one way; cut both for a full partition):
they are held, not dropped, as a real network's lost segments are retransmitted by TCP, so a connection
that outlives the partition resumes intact at ``heal()``; one that times out meanwhile is closed by its
owner as it would be. New connections are accepted and held the same way.
"""

from __future__ import annotations

import asyncio
import contextlib
import multiprocessing
import os
import threading
from collections.abc import Callable
from concurrent.futures import Future

__all__ = ["CLIENT", "Network", "socket_owner"]

CLIENT = "client"
_CHUNK = 64 * 1024


def _inode_of_connection(port: int, remote_port: int) -> str | None:
    """The inode of the TCP socket from local port ``port`` to ``remote_port`` (the connecting end), if any."""
    local, remote = f":{port:04X}", f":{remote_port:04X}"
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            with open(table) as f:
                next(f, None)
                for line in f:
                    parts = line.split()
                    if len(parts) > 9 and parts[1].endswith(local) and parts[2].endswith(remote):
                        return parts[9]
        except OSError:
            continue
    return None


def socket_owner(port: int, remote_port: int, pids: dict[int, str]) -> str | None:
    """Which of ``pids`` (pid -> node name) owns the TCP socket from local port ``port`` to ``remote_port``."""
    inode = _inode_of_connection(port, remote_port)
    if inode is None or inode == "0":
        return None
    link = f"socket:[{inode}]"
    for pid, name in pids.items():
        try:
            fds = os.listdir(f"/proc/{pid}/fd")
        except OSError:
            continue
        for fd in fds:
            try:
                if os.readlink(f"/proc/{pid}/fd/{fd}") == link:
                    return name
            except OSError:
                continue
    return None


class _Engine:
    """The proxies on 127.0.0.1, run by one event loop thread (in the network's own process)."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self.loop.run_forever, name="chaos-network", daemon=True)
        self._thread.start()
        self._blocked: set[tuple[str, str]] = set()
        self._changed: asyncio.Condition | None = None
        self._servers: list[asyncio.AbstractServer] = []
        self._writers: set[asyncio.StreamWriter] = set()
        self.accepted: list[tuple[str, str]] = []  # (source, destination) of every connection so far
        self._call(self._init())

    async def _init(self) -> None:
        self._changed = asyncio.Condition()

    def _call(self, coro) -> object:
        fut: Future = asyncio.run_coroutine_threadsafe(coro, self.loop)
        return fut.result(30)

    # --- proxies ------------------------------------------------------------------------------------
    def proxy(self, dst: str, upstream_port: int, *, source: str | None = None,
              owners: dict[int, str] | str | None = None) -> int:
        """Listen on a free port and forward to ``127.0.0.1:upstream_port`` as node ``dst``. A connection's
        source is ``source`` if given, else the node of ``owners`` owning the connecting socket, else
        ``client``. ``owners``: pid -> node name, or a cluster root directory (its pykbroker brokers, named
        ``broker-<node.id>``). Returns the proxy's port."""
        async def start() -> int:
            async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
                await self._connection(reader, writer, dst, upstream_port, source, owners)
            server = await asyncio.start_server(handle, "127.0.0.1", 0)
            self._servers.append(server)
            return server.sockets[0].getsockname()[1]
        return self._call(start())  # type: ignore[return-value]

    async def _connection(self, reader, writer, dst: str, upstream_port: int, source: str | None,
                          owners: dict[int, str] | str | None) -> None:
        src = source
        if src is None:
            peer_port, own_port = writer.get_extra_info("peername")[1], writer.get_extra_info("sockname")[1]
            src = (socket_owner(peer_port, own_port, candidates(owners)) if owners else None) or CLIENT
        self.accepted.append((src, dst))
        self._writers.add(writer)
        try:
            up_reader, up_writer = await asyncio.open_connection("127.0.0.1", upstream_port)
        except OSError:
            self._writers.discard(writer)
            writer.close()  # upstream down: the client sees the connection closed, as a refused connect
            return
        self._writers.add(up_writer)
        pumps = [asyncio.ensure_future(self._pump(reader, up_writer, src, dst)),
                 asyncio.ensure_future(self._pump(up_reader, writer, dst, src))]
        await asyncio.wait(pumps, return_when=asyncio.FIRST_COMPLETED)
        for p in pumps:
            p.cancel()
        for w in (writer, up_writer):
            self._writers.discard(w)
            w.close()

    async def _pump(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, src: str, dst: str) -> None:
        """Copy ``src``'s bytes to ``dst``, holding each chunk while the link is cut."""
        assert self._changed is not None
        try:
            while True:
                data = await reader.read(_CHUNK)
                async with self._changed:
                    await self._changed.wait_for(lambda: (src, dst) not in self._blocked)
                if not data:
                    return
                writer.write(data)
                await writer.drain()
        except (OSError, asyncio.IncompleteReadError):
            return

    # --- faults -------------------------------------------------------------------------------------
    def cut(self, src: str, dst: str, *, both: bool = False) -> None:
        """Stop ``src``'s bytes to ``dst`` (and ``dst``'s to ``src`` with ``both``)."""
        links = {(src, dst), (dst, src)} if both else {(src, dst)}
        self._call(self._update(lambda: self._blocked.update(links)))

    def isolate(self, node: str, others: list[str]) -> None:
        """Cut ``node`` from each of ``others``, both ways."""
        for other in others:
            self.cut(node, other, both=True)

    def heal(self) -> None:
        """Every link flows again; held bytes are delivered."""
        self._call(self._update(self._blocked.clear))

    def blocked(self) -> set[tuple[str, str]]:
        return set(self._blocked)

    def accepted_links(self) -> list[tuple[str, str]]:
        return list(self.accepted)

    async def _update(self, change: Callable[[], object]) -> None:
        assert self._changed is not None
        async with self._changed:
            change()
            self._changed.notify_all()

    def close(self) -> None:
        """Heal, stop listening, close every proxied connection and the loop."""
        async def stop() -> None:
            await self._update(self._blocked.clear)
            for s in self._servers:
                s.close()
            for w in list(self._writers):
                w.close()
        try:
            self._call(stop())
        finally:
            self.loop.call_soon_threadsafe(self.loop.stop)
            self._thread.join(10)



def candidates(owners: dict[int, str] | str) -> dict[int, str]:
    """pid -> node name: ``owners`` itself, or the brokers under the root directory ``owners``: pykbroker
    processes whose log dir is there (given with --override) or whose properties file is (as BrokerProcess
    starts them), and Kafka processes (``kafka.Kafka <config>``) whose config file is, named
    ``broker-<node.id>``."""
    if isinstance(owners, dict):
        return owners
    out: dict[int, str] = {}
    root = owners.rstrip("/") + "/"
    prefix = f"log.dirs={root}"
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                args = [a for a in f.read().decode(errors="replace").split("\0") if a]
        except OSError:
            continue
        node = None
        if "pykbroker.cli" in args and any(a.startswith(prefix) for a in args):
            node = next((a.split("=", 1)[1] for a in args if a.startswith("node.id=")), None)
        elif ("kafka.Kafka" in args or "pykbroker.cli" in args) and args[-1].startswith(root):
            node = _kafka_node_id(args[-1])
        if node is not None:
            out[int(pid)] = f"broker-{node}"
    return out


def _kafka_node_id(config: str) -> str | None:
    try:
        with open(config) as f:
            return next((line.split("=", 1)[1].strip() for line in f if line.startswith("node.id=")), None)
    except OSError:
        return None


def _serve(conn) -> None:
    """The network's process: run an engine, answer the parent's calls until it says close (or goes away)."""
    engine = _Engine()
    while True:
        try:
            op, args, kwargs = conn.recv()
        except (EOFError, OSError):
            op, args, kwargs = "close", (), {}
        try:
            result = getattr(engine, op)(*args, **kwargs)
            reply = ("ok", result)
        except Exception as exc:  # noqa: BLE001 - handed back to the caller
            reply = ("error", repr(exc))
        if op == "close":
            with contextlib.suppress(OSError):
                conn.send(reply)
            return
        conn.send(reply)


class Network:
    """The proxies, run in a process of their own so that the campaign's busy Python threads cannot starve
    them (one GIL: a proxy thread inside the campaign held ZooKeeper pings back long enough to expire every
    broker's session at once in a 5-broker run). Methods may be called from any thread."""

    def __init__(self) -> None:
        ctx = multiprocessing.get_context("spawn")
        self._conn, child = ctx.Pipe()
        self._proc = ctx.Process(target=_serve, args=(child,), name="chaos-network", daemon=True)
        self._proc.start()
        child.close()
        self._lock = threading.Lock()

    def _ask(self, op: str, *args, **kwargs):
        with self._lock:
            self._conn.send((op, args, kwargs))
            status, result = self._conn.recv()
        if status == "error":
            raise RuntimeError(f"network {op}: {result}")
        return result

    def proxy(self, dst: str, upstream_port: int, *, source: str | None = None,
              owners: dict[int, str] | str | None = None) -> int:
        """See ``_Engine.proxy``: a proxy to ``upstream_port`` as node ``dst``; returns its port."""
        return self._ask("proxy", dst, upstream_port, source=source, owners=owners)

    def cut(self, src: str, dst: str, *, both: bool = False) -> None:
        """Stop ``src``'s bytes to ``dst`` (and ``dst``'s to ``src`` with ``both``)."""
        self._ask("cut", src, dst, both=both)

    def isolate(self, node: str, others: list[str]) -> None:
        """Cut ``node`` from each of ``others``, both ways."""
        self._ask("isolate", node, others)

    def heal(self) -> None:
        """Every link flows again; held bytes are delivered."""
        self._ask("heal")

    @property
    def blocked(self) -> set[tuple[str, str]]:
        return self._ask("blocked")

    @property
    def accepted(self) -> list[tuple[str, str]]:
        """(source, destination) of every connection accepted so far."""
        return self._ask("accepted_links")

    def close(self) -> None:
        """Heal, stop listening, close every proxied connection, end the process."""
        if self._proc.is_alive():
            with contextlib.suppress(OSError, EOFError, RuntimeError):
                self._ask("close")
        self._proc.join(10)
        if self._proc.is_alive():
            self._proc.kill()
            self._proc.join(5)
        self._conn.close()

    def __enter__(self) -> Network:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
