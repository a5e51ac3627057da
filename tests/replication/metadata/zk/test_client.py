"""ZooKeeperClient over a real ZooKeeper: chroot, conditional writes, multi, watches on the loop, session
expiry and a server restart."""

from __future__ import annotations

import asyncio
import threading

import pytest

from pykbroker.config import Config
from pykbroker.testing import ZooKeeperProcess
from replication.metadata.zk.client import (
    BadVersionError,
    CheckOp,
    ConnectionLoss,
    CreateOp,
    NodeExistsError,
    NoNodeError,
    SetDataOp,
    ZooKeeperClient,
    ZooKeeperConnectionTimeout,
    ZooKeeperMultiError,
    split_chroot,
)
from tests.replication.metadata.zk.zk_helpers import expire_session, run


def test_split_chroot():
    assert split_chroot("h1:2181,h2:2181/kafka") == ("h1:2181,h2:2181", "/kafka")
    assert split_chroot("h1:2181/a/b/") == ("h1:2181", "/a/b")
    assert split_chroot("h1:2181") == ("h1:2181", None)


def test_chroot_is_created_and_paths_are_relative_to_it(zk_server, chroot):
    async def main():
        zk = ZooKeeperClient(f"{zk_server.connect}{chroot}/nested", session_timeout_ms=6000)
        await zk.start()
        try:
            await zk.create("/brokers/ids", make_parents=True)
            assert await zk.get_children("/brokers") == ["ids"]
        finally:
            await zk.close()
        raw = ZooKeeperClient(zk_server.connect)
        await raw.start()
        try:
            assert await raw.exists(f"{chroot}/nested/brokers/ids") is not None
            for path in (chroot, f"{chroot}/nested", f"{chroot}/nested/brokers"):
                assert (await raw.get(path))[0] is None, path  # Kafka's parents carry null data
        finally:
            await raw.close()

    run(main())


def test_from_config_uses_the_zookeeper_properties(zk_server, chroot):
    config = Config({"zookeeper.connect": f"{zk_server.connect}{chroot}", "zookeeper.session.timeout.ms": "4000"})
    zk = ZooKeeperClient.from_config(config)
    assert (zk.hosts, zk.chroot, zk.session_timeout_ms, zk.connection_timeout_ms) == \
        (zk_server.connect, chroot, 4000, 4000)

    async def main():
        await zk.start()
        try:
            assert zk.kazoo._session_timeout == 4000  # negotiated with the server
        finally:
            await zk.close()

    run(main())


def test_conditional_writes_and_missing_nodes(zk_server, chroot):
    async def main():
        zk = ZooKeeperClient(f"{zk_server.connect}{chroot}")
        await zk.start()
        try:
            assert await zk.get("/x") is None
            assert await zk.get_children("/x") is None
            await zk.create("/x", b"1")
            with pytest.raises(NodeExistsError):
                await zk.create("/x", b"again")
            data, stat = await zk.get("/x")
            assert (data, stat.version) == (b"1", 0)
            stat = await zk.set("/x", b"2", version=0)
            assert stat.version == 1
            with pytest.raises(BadVersionError):
                await zk.set("/x", b"stale", version=0)
            with pytest.raises(BadVersionError):
                await zk.delete("/x", version=0)
            with pytest.raises(NoNodeError):
                await zk.create("/missing/parent/child")
            seq = await zk.create("/config/changes/config_change_", b"{}", sequential=True, make_parents=True)
            assert seq == "/config/changes/config_change_0000000000"
            await zk.delete("/x", version=1)
            assert await zk.exists("/x") is None
            await zk.create("/tree/a/b", make_parents=True)
            await zk.delete("/tree", recursive=True)
            assert await zk.exists("/tree") is None
        finally:
            await zk.close()

    run(main())


def test_multi_is_all_or_nothing_and_fences_on_a_version(zk_server, chroot):
    async def main():
        zk = ZooKeeperClient(f"{zk_server.connect}{chroot}")
        await zk.start()
        try:
            await zk.create("/controller_epoch", b"1")
            await zk.create("/state", b"a")
            results = await zk.multi([CheckOp("/controller_epoch", 0), SetDataOp("/state", b"b", 0),
                                      CreateOp("/new", b"n")])
            assert results[2] == "/new"
            with pytest.raises(ZooKeeperMultiError) as failed:
                await zk.multi([CheckOp("/controller_epoch", 5), SetDataOp("/state", b"c", 1),
                                CreateOp("/other", b"o")])
            assert failed.value.index == 0 and isinstance(failed.value.error, BadVersionError)
            assert (await zk.get("/state"))[0] == b"b"
            assert await zk.exists("/other") is None
        finally:
            await zk.close()

    run(main())


def test_watches_fire_once_on_the_event_loop(zk_server, chroot):
    async def main():
        loop_thread = threading.get_ident()
        zk = ZooKeeperClient(f"{zk_server.connect}{chroot}")
        await zk.start()
        events: asyncio.Queue = asyncio.Queue()

        def watch(event):
            assert threading.get_ident() == loop_thread
            events.put_nowait((event.type, event.path))

        try:
            await zk.create("/brokers/ids", make_parents=True)
            assert await zk.get_children("/brokers/ids", watch=watch) == []
            assert await zk.exists("/brokers/ids/1", watch=watch) is None
            await zk.create("/brokers/ids/1", b"{}", ephemeral=True)
            got = {await asyncio.wait_for(events.get(), 10), await asyncio.wait_for(events.get(), 10)}
            assert got == {("CHILD", "/brokers/ids"), ("CREATED", "/brokers/ids/1")}
            await zk.set("/brokers/ids/1", b"{}")  # the exists watch fired already: no second event
            await asyncio.sleep(0.2)
            assert events.empty()
        finally:
            await zk.close()

    run(main())


def test_session_expiry_is_reported_and_a_new_session_follows(zk_server, chroot):
    async def main():
        zk = ZooKeeperClient(f"{zk_server.connect}{chroot}", session_timeout_ms=4000)
        await zk.start()
        expired, renewed = asyncio.Event(), asyncio.Event()
        zk.on_session_expired(expired.set)
        zk.on_new_session(renewed.set)
        old_session = zk.session_id
        try:
            await zk.create("/brokers/ids/1", b"{}", ephemeral=True, make_parents=True)
            await asyncio.to_thread(expire_session, zk_server.connect, zk)
            await asyncio.wait_for(expired.wait(), 15)
            await asyncio.wait_for(renewed.wait(), 15)
            assert zk.session_id != old_session
            assert await zk.exists("/brokers/ids/1") is None  # the old session's ephemeral went with it
            await zk.create("/brokers/ids/1", b"{}", ephemeral=True)
        finally:
            await zk.close()

    run(main())


def test_a_server_restart_within_the_session_timeout_keeps_the_session(tmp_path):
    async def main(server: ZooKeeperProcess):
        # a generous connection timeout: the restart may be slow on a loaded machine, and this test is about
        # the session surviving it
        zk = ZooKeeperClient(server.connect, session_timeout_ms=30_000, connection_timeout_ms=30_000)
        await zk.start()
        expired = asyncio.Event()
        zk.on_session_expired(expired.set)
        session = zk.session_id
        try:
            await zk.create("/ephemeral", b"x", ephemeral=True)
            await asyncio.to_thread(server.restart, hard=True)
            got = await zk.get("/ephemeral")  # waits for the reconnection, then reads
            assert got is not None and got[0] == b"x", (
                f"the ephemeral znode is gone: session 0x{session or 0:x} -> 0x{zk.session_id or 0:x}, expired: "
                f"{expired.is_set()}; ZooKeeper's log:\n{server.log()}")
            assert zk.session_id == session and not expired.is_set()
        finally:
            await zk.close()

    with ZooKeeperProcess(tmp_path / "zk") as server:
        run(main(server), limit=120)  # the restart (up to 30 s) and the reconnection (up to 30 s) report first


def test_no_server_gives_a_connection_timeout(tmp_path):
    from pykbroker.testing import free_port

    async def main():
        zk = ZooKeeperClient(f"127.0.0.1:{free_port()}", session_timeout_ms=4000, connection_timeout_ms=500)
        with pytest.raises(ZooKeeperConnectionTimeout):
            await zk.start()

    run(main())


def test_multi_creates_null_data_znodes_as_kafka_does(zk_server, chroot):
    async def main():
        zk = ZooKeeperClient(f"{zk_server.connect}{chroot}")
        await zk.start()
        try:
            await zk.multi([CreateOp("/parent"), CreateOp("/parent/empty", b"")])
            assert (await zk.get("/parent"))[0] is None
            assert (await zk.get("/parent/empty"))[0] == b""
        finally:
            await zk.close()

    run(main())


def test_requests_while_zookeeper_is_away_time_out_then_work_again(tmp_path):
    async def main(server: ZooKeeperProcess):
        zk = ZooKeeperClient(server.connect, session_timeout_ms=10_000, connection_timeout_ms=1000)
        await zk.start()
        try:
            await zk.create("/a", b"1")
            await asyncio.to_thread(server.kill)
            loop = asyncio.get_running_loop()
            started = loop.time()
            with pytest.raises((ZooKeeperConnectionTimeout, ConnectionLoss)):
                await zk.get("/a")
            with pytest.raises(ZooKeeperConnectionTimeout):
                await zk.set("/a", b"2")
            assert loop.time() - started < 5  # bounded by the connection timeout, not hanging
            await asyncio.to_thread(server.start)
            await zk.wait_connected(30)  # a restarted ZooKeeper may take a while to serve on a busy machine
            await zk.set("/a", b"3")
            assert (await zk.get("/a"))[0] == b"3"
        finally:
            await zk.close()

    with ZooKeeperProcess(tmp_path / "zk") as server:
        run(main(server))
