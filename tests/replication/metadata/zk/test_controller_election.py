"""Controller election over a real ZooKeeper: one winner, epochs bumped conditionally, failover when the
controller closes, expires or is killed with SIGKILL, and a deposed controller's writes fenced."""

from __future__ import annotations

import asyncio

import pytest

from replication.metadata.zk.client import BadVersionError, SetDataOp, ZooKeeperClient, ZooKeeperMultiError
from replication.metadata.zk.controller_election import (
    ControllerElection,
    ControllerMovedError,
    must_resign,
    next_controller_epoch,
    won_election,
)
from replication.metadata.zk.znodes import ControllerEpochZNode, ControllerZNode
from tests.replication.metadata.zk.zk_helpers import expire_session, run
from tests.replication.metadata.zk.zk_member import spawn_member


def test_rules():
    assert next_controller_epoch(0) == 1
    assert won_election(1, 1, 5, 5) and not won_election(1, 2, 5, 5) and not won_election(1, 1, 6, 5)
    assert must_resign(True, 2, 1) and must_resign(True, -1, 1)
    assert not must_resign(True, 1, 1) and not must_resign(False, 2, 1)


async def wait_until(predicate, timeout: float = 30.0) -> float:
    """Seconds until ``predicate()`` held; raises TimeoutError."""
    loop = asyncio.get_running_loop()
    started = loop.time()
    while not predicate():
        if loop.time() - started > timeout:
            raise TimeoutError
        await asyncio.sleep(0.02)
    return loop.time() - started


async def brokers(connect: str, ids, session_timeout_ms: int = 4000):
    out = []
    for broker_id in ids:
        zk = ZooKeeperClient(connect, session_timeout_ms=session_timeout_ms)
        await zk.start()
        elected: list[int] = []
        resigned: list[bool] = []
        election = ControllerElection(zk, broker_id, on_elected=lambda epoch, _v, e=elected: e.append(epoch),
                                      on_resigned=lambda r=resigned: r.append(True))
        out.append((zk, election, elected, resigned))
    return out


def test_one_winner_then_failover_on_close_with_the_epoch_bumped(zk_server, chroot):
    async def main():
        members = await brokers(f"{zk_server.connect}{chroot}", [1, 2, 3])
        try:
            await asyncio.gather(*(m[1].start() for m in members))
            active = [m for m in members if m[1].is_active]
            assert len(active) == 1
            zk, winner, elected, _ = active[0]
            assert elected == [1] and winner.epoch == 1 and winner.epoch_zk_version == 1
            await wait_until(lambda: all(m[1].active_controller_id == winner.broker_id for m in members))
            data, stat = await zk.get("/controller")
            assert ControllerZNode.decode(data).broker_id == winner.broker_id and stat.ephemeralOwner == zk.session_id
            assert (await zk.get("/controller_epoch"))[0] == b"1"

            await winner.close()
            await zk.close()
            rest = [m for m in members if m is not active[0]]
            await wait_until(lambda: sum(m[1].is_active for m in rest) == 1, timeout=10)
            new = next(m for m in rest if m[1].is_active)
            assert new[1].epoch == 2 and new[2] == [2]
            await wait_until(lambda: all(m[1].active_controller_id == new[1].broker_id for m in rest))
            assert ControllerEpochZNode.decode((await new[0].get("/controller_epoch"))[0]) == 2
        finally:
            for zk, election, _, _ in members:
                await election.close()
                await zk.close()

    run(main())


def test_a_deposed_controllers_writes_are_fenced(zk_server, chroot):
    async def main():
        members = await brokers(f"{zk_server.connect}{chroot}", [1, 2])
        try:
            await members[0][1].start()
            await members[1][1].start()
            zk1, first, _, resigned = members[0]
            assert first.is_active
            await zk1.create("/brokers/topics/t/partitions/0/state", b"{}", make_parents=True)
            await first.fenced_multi([SetDataOp("/brokers/topics/t/partitions/0/state", b"v1", 0)])
            stale_fence = first.fence()

            await asyncio.to_thread(expire_session, zk_server.connect, zk1)
            await wait_until(lambda: members[1][1].is_active and resigned)
            assert members[1][1].epoch == 2
            with pytest.raises(ControllerMovedError):
                first.fence()  # it knows it resigned
            # a write prepared before the failover (the deposed controller did not notice yet) is refused
            await zk1.wait_connected(10)
            with pytest.raises(ZooKeeperMultiError) as refused:
                await zk1.multi([stale_fence, SetDataOp("/brokers/topics/t/partitions/0/state", b"stale", 1)])
            assert refused.value.index == 0 and isinstance(refused.value.error, BadVersionError)
            assert (await zk1.get("/brokers/topics/t/partitions/0/state"))[0] == b"v1"
            await members[1][1].fenced_multi([SetDataOp("/brokers/topics/t/partitions/0/state", b"v2", 1)])
        finally:
            for zk, election, _, _ in members:
                await election.close()
                await zk.close()

    run(main())


def test_a_killed_controller_is_replaced_within_the_session_timeout(zk_server, chroot):
    connect = f"{zk_server.connect}{chroot}"
    session_timeout_ms = 2000
    member, lines = spawn_member(connect, 1, session_timeout_ms)
    try:
        assert lines[-1] == "ready 1" and "elected 1" in lines

        async def main():
            (zk, election, elected, _), = await brokers(connect, [2], session_timeout_ms)
            try:
                await election.start()
                assert election.active_controller_id == 1 and not election.is_active
                member.kill()  # kill -9: no goodbye to ZooKeeper
                took = await wait_until(lambda: election.is_active, timeout=15)
                assert elected == [2] and election.epoch == 2
                # ZooKeeper expires the dead session after its timeout (checked every tick), no later
                assert took < session_timeout_ms / 1000 + 5.0, took  # slack for a loaded machine
                print(f"controller failover after kill -9 took {took:.2f}s (session timeout {session_timeout_ms} ms)")
            finally:
                await election.close()
                await zk.close()

        run(main())
    finally:
        if member.poll() is None:
            member.kill()
        member.wait()


def test_a_controller_whose_session_expired_elects_itself_again_when_alone(zk_server, chroot):
    async def main():
        (zk, election, elected, resigned), = await brokers(f"{zk_server.connect}{chroot}", [5])
        try:
            await election.start()
            assert elected == [1]
            await asyncio.to_thread(expire_session, zk_server.connect, zk)
            await wait_until(lambda: resigned and elected == [1, 2])
            assert election.is_active and election.epoch == 2
        finally:
            await election.close()
            await zk.close()

    run(main())
