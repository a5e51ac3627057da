"""Broker registration: the ephemeral ``/brokers/ids/<id>`` znode that says a broker is alive.

As Kafka's ``KafkaZkClient.registerBroker`` (a "checked ephemeral create"):
- the broker creates ``/brokers/ids/<id>`` (ephemeral, Kafka's version 5 JSON) in its own session;
- if the znode exists and its ephemeral owner is this very session (a create retried after a lost
  connection), the registration stands;
- if another session owns it (the same id is live elsewhere, or a previous run of this broker was killed
  and its session has not expired yet), Kafka refuses to start: ``BrokerIdInUseError``. ``register`` can
  instead wait up to ``stale_wait_s`` for that znode to go (an old session expires after
  ``zookeeper.session.timeout.ms``), which is what a supervisor restarting a killed broker needs;
- the registration's ``czxid`` is the broker epoch (Kafka's ``brokerEpoch``), carried in controller
  requests so that a stale registration's requests can be fenced;
- after a session expiry the new session registers again (Kafka's ``afterInitializingSession``).
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from enum import Enum

from replication.metadata.zk.client import NodeExistsError, ZooKeeperClient
from replication.metadata.zk.znodes import (
    PERSISTENT_PATHS,
    BrokerIdsZNode,
    BrokerIdZNode,
    BrokerInfo,
    Endpoint,
    QuorumVoterZNode,
    ZNodeDecodeError,
)

log = logging.getLogger("pykbroker.zk.registration")

__all__ = ["BrokerIdInUseError", "BrokerRegistration", "ExistingRegistration", "existing_registration_verdict",
           "live_brokers", "quorum_voters"]


class BrokerIdInUseError(RuntimeError):
    """``/brokers/ids/<id>`` belongs to another ZooKeeper session (Kafka: "node already exists and owner
    does not match current session")."""


class ExistingRegistration(Enum):
    """What an existing ``/brokers/ids/<id>`` means for a broker that wants to register."""

    OURS = "ours"                    # our own session made it (a retried create): keep it
    OWNED_BY_OTHER_SESSION = "other"  # someone else's, or a dead run's whose session has not expired yet


def existing_registration_verdict(ephemeral_owner: int, session_id: int) -> ExistingRegistration:
    """Kafka's rule for a create that found the znode already there."""
    return ExistingRegistration.OURS if ephemeral_owner == session_id else ExistingRegistration.OWNED_BY_OTHER_SESSION


@dataclass
class BrokerRegistration:
    """A broker's registration; ``register()`` once the session is up, then it follows new sessions."""

    zk: ZooKeeperClient
    broker_id: int
    endpoints: Sequence[Endpoint]
    rack: str | None = None
    features: Mapping[str, Mapping[str, int]] | None = None
    clock: Callable[[], float] = time.time
    broker_epoch: int = -1

    @property
    def path(self) -> str:
        return BrokerIdZNode.path(self.broker_id)

    def encode(self) -> bytes:
        return BrokerIdZNode.encode(self.broker_id, self.endpoints, rack=self.rack,
                                    timestamp_ms=int(self.clock() * 1000), features=self.features)

    async def register(self, stale_wait_s: float = 0.0) -> int:
        """Register; returns the broker epoch. Raises ``BrokerIdInUseError`` when another session holds the
        id for longer than ``stale_wait_s``. Also re-registers after every later session expiry."""
        for path in PERSISTENT_PATHS:
            await self.zk.ensure_path(path)
        deadline = asyncio.get_running_loop().time() + stale_wait_s
        while True:
            try:
                await self.zk.create(self.path, self.encode(), ephemeral=True)
            except NodeExistsError:
                if await self._existing_is_ours():
                    break
                remaining = deadline - asyncio.get_running_loop().time()
                if remaining <= 0:
                    raise BrokerIdInUseError(
                        f"Error while creating ephemeral at {self.path}, node already exists and owner does not "
                        f"match current session 0x{self.zk.session_id or 0:x}") from None
                log.info("broker %d: %s is held by another session; waiting up to %.1fs for it to expire",
                         self.broker_id, self.path, remaining)
                await self._wait_gone(remaining)
                continue
            break
        found = await self.zk.get(self.path)
        assert found is not None
        await self._remember_voter(found[0])
        self.broker_epoch = found[1].czxid
        self.zk.on_new_session(self._follow)
        log.info("broker %d registered at %s with broker epoch %d (%s)", self.broker_id, self.path,
                 self.broker_epoch, ", ".join(e.connection_string for e in self.endpoints))
        return self.broker_epoch

    async def _remember_voter(self, registration: bytes | None) -> None:
        """This broker's persistent voter znode, with the registration just made (see ``QuorumVoterZNode``)."""
        path = QuorumVoterZNode.path(self.broker_id)
        try:
            await self.zk.create(path, registration, make_parents=True)
        except NodeExistsError:
            await self.zk.set(path, registration or b"")

    async def _existing_is_ours(self) -> bool:
        found = await self.zk.get(self.path)
        if found is None:
            return False  # gone meanwhile: the caller's next create decides
        verdict = existing_registration_verdict(found[1].ephemeralOwner, self.zk.session_id or 0)
        return verdict is ExistingRegistration.OURS

    async def _wait_gone(self, timeout: float) -> None:
        gone = asyncio.Event()
        if await self.zk.exists(self.path, watch=lambda _event: gone.set()) is None:
            return
        try:
            async with asyncio.timeout(timeout):
                await gone.wait()
        except TimeoutError:
            pass

    async def _follow(self) -> None:
        """A new session replaced an expired one: register again (the old ephemeral went with it)."""
        try:
            await self.register()
        except Exception:
            log.exception("broker %d: re-registration after session expiry failed", self.broker_id)

    async def deregister(self) -> None:
        """Delete the registration (a clean shutdown; closing the session does the same)."""
        found = await self.zk.get(self.path)
        if found is not None and found[1].ephemeralOwner == self.zk.session_id:
            await self.zk.delete(self.path, found[1].version)


async def live_brokers(zk: ZooKeeperClient, watch=None) -> dict[int, tuple[BrokerInfo, int]]:
    """The registered brokers: id -> (registration, broker epoch). ``watch`` fires on the next change of
    the set of ids. Registrations that cannot be read (gone meanwhile, or garbage) are left out."""
    return await _registrations(zk, BrokerIdsZNode.path, BrokerIdZNode.path, watch)


async def quorum_voters(zk: ZooKeeperClient, watch=None) -> dict[int, tuple[BrokerInfo, int]]:
    """Every broker that ever registered (``QuorumVoterZNode``), live or not: id -> (its latest registration,
    the czxid of its voter znode). ``watch`` fires when one more broker registers for the first time (the
    first of all creates the parent)."""
    if await zk.exists(QuorumVoterZNode.parent, watch=watch) is None:
        return {}
    return await _registrations(zk, QuorumVoterZNode.parent, QuorumVoterZNode.path, watch)


async def _registrations(zk: ZooKeeperClient, parent: str, path: Callable[[int], str], watch
                         ) -> dict[int, tuple[BrokerInfo, int]]:
    children = await zk.get_children(parent, watch=watch) or []
    out: dict[int, tuple[BrokerInfo, int]] = {}
    for child in children:
        if not child.isdigit():
            continue
        found = await zk.get(path(int(child)))
        if found is None or found[0] is None:
            continue
        try:
            out[int(child)] = (BrokerIdZNode.decode(int(child), found[0]), found[1].czxid)
        except ZNodeDecodeError as exc:
            log.warning("ignoring unreadable registration %s: %s", path(int(child)), exc)
    return out
