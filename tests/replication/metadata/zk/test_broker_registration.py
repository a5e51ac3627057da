"""Broker registration over a real ZooKeeper: Kafka's JSON in an ephemeral znode, the broker epoch, a
registration held by another (or a killed) session, and re-registration after session expiry."""

from __future__ import annotations

import asyncio

import pytest

from replication.metadata.zk.broker_registration import (
    BrokerIdInUseError,
    BrokerRegistration,
    ExistingRegistration,
    existing_registration_verdict,
    live_brokers,
)
from replication.metadata.zk.client import ZooKeeperClient
from replication.metadata.zk.znodes import PERSISTENT_PATHS, BrokerIdZNode, Endpoint
from tests.replication.metadata.zk.zk_helpers import expire_session, run
from tests.replication.metadata.zk.zk_member import spawn_member

ENDPOINTS = [Endpoint("PLAINTEXT", "127.0.0.1", 9092), Endpoint("SSL", "127.0.0.1", 9093, "SSL")]


def test_existing_registration_verdict():
    assert existing_registration_verdict(0x10, 0x10) is ExistingRegistration.OURS
    assert existing_registration_verdict(0x10, 0x11) is ExistingRegistration.OWNED_BY_OTHER_SESSION


def test_registration_is_kafkas_json_in_an_ephemeral_znode(zk_server, chroot):
    async def main():
        zk = ZooKeeperClient(f"{zk_server.connect}{chroot}")
        await zk.start()
        try:
            registration = BrokerRegistration(zk, 1, ENDPOINTS, rack="r1", clock=lambda: 1700000000.0)
            epoch = await registration.register()
            data, stat = await zk.get("/brokers/ids/1")
            assert stat.ephemeralOwner == zk.session_id and epoch == stat.czxid
            assert data == BrokerIdZNode.encode(1, ENDPOINTS, rack="r1", timestamp_ms=1700000000000)
            assert b'"listener_security_protocol_map":{"PLAINTEXT":"PLAINTEXT","SSL":"SSL"}' in data
            for path in PERSISTENT_PATHS:
                assert await zk.exists(path) is not None, path
            brokers = await live_brokers(zk)
            assert list(brokers) == [1] and brokers[1][1] == epoch
            assert brokers[1][0].rack == "r1" and brokers[1][0].endpoints == tuple(ENDPOINTS)
            await zk.create("/brokers/ids/7", b"garbage", ephemeral=True)
            assert list(await live_brokers(zk)) == [1]
            await registration.deregister()
            assert await zk.exists("/brokers/ids/1") is None
        finally:
            await zk.close()

    run(main())


def test_an_id_held_by_another_session_is_refused_as_kafka_does(zk_server, chroot):
    async def main():
        first, second = (ZooKeeperClient(f"{zk_server.connect}{chroot}") for _ in range(2))
        await first.start()
        await second.start()
        try:
            await BrokerRegistration(first, 1, ENDPOINTS).register()
            with pytest.raises(BrokerIdInUseError, match="does not match current session"):
                await BrokerRegistration(second, 1, ENDPOINTS).register()
            # registering again in the owning session is fine (a create retried after a lost connection)
            await BrokerRegistration(first, 1, ENDPOINTS).register()
        finally:
            await first.close()
            await second.close()

    run(main())


def test_a_killed_brokers_registration_is_waited_out_until_its_session_expires(zk_server, chroot):
    connect = f"{zk_server.connect}{chroot}"
    member, _ = spawn_member(connect, 1, 1500)
    try:
        member.kill()  # kill -9: the session lives on until the server expires it
        member.wait()

        async def main():
            zk = ZooKeeperClient(connect)
            await zk.start()
            try:
                with pytest.raises(BrokerIdInUseError):
                    await BrokerRegistration(zk, 1, ENDPOINTS).register()
                loop = asyncio.get_running_loop()
                started = loop.time()
                await BrokerRegistration(zk, 1, ENDPOINTS).register(stale_wait_s=10)
                assert loop.time() - started < 1.5 + 5.0  # within the dead session's timeout (plus slack)
                assert (await zk.get("/brokers/ids/1"))[1].ephemeralOwner == zk.session_id
            finally:
                await zk.close()

        run(main())
    finally:
        if member.poll() is None:
            member.kill()
            member.wait()


def test_the_broker_registers_again_after_its_session_expired(zk_server, chroot):
    async def main():
        zk = ZooKeeperClient(f"{zk_server.connect}{chroot}", session_timeout_ms=4000)
        await zk.start()
        try:
            registration = BrokerRegistration(zk, 3, ENDPOINTS)
            old_epoch = await registration.register()
            await asyncio.to_thread(expire_session, zk_server.connect, zk)
            loop = asyncio.get_running_loop()
            deadline = loop.time() + 15
            while registration.broker_epoch == old_epoch and loop.time() < deadline:
                await asyncio.sleep(0.05)
            data, stat = await zk.get("/brokers/ids/3")
            assert stat.ephemeralOwner == zk.session_id
            assert registration.broker_epoch == stat.czxid > old_epoch
        finally:
            await zk.close()

    run(main())
