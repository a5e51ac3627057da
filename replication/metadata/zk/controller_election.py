"""Controller election through the ephemeral ``/controller`` znode, fenced by ``/controller_epoch``.

As Kafka's ``KafkaController.elect`` and ``KafkaZkClient.registerControllerAndIncrementControllerEpoch``:
- a broker reads ``/controller``; if a controller is registered it follows it (``active_controller_id``);
- otherwise it reads ``/controller_epoch`` (creating it at epoch 0 if missing) and, in one multi, creates the
  ephemeral ``/controller`` and sets ``/controller_epoch`` to epoch + 1 *conditionally on its znode version*.
  Exactly one broker wins. A broker whose multi failed on NodeExists/BadVersion checks whether it won
  anyway (a retried request) and otherwise follows the winner;
- the winner's (epoch, epoch znode version) fence every controller write: ``fenced_multi`` prefixes a
  ``CheckOp`` on ``/controller_epoch`` at that version, so a deposed controller's writes fail
  (``ControllerMovedError``) once another broker has bumped the epoch;
- ``/controller`` is watched: its deletion (the controller's session closed or expired, within
  ``zookeeper.session.timeout.ms`` of its death) makes every broker try again; a change to another id makes
  a controller that lost its znode resign;
- on session expiry a controller resigns at once (its ``/controller`` is gone); the new session tries again.

The rules are pure functions (``next_controller_epoch``, ``won_election``, ``must_resign``); the class only
moves between them and ZooKeeper.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

from replication.metadata.zk.client import (
    BadVersionError,
    CheckOp,
    CreateOp,
    NodeExistsError,
    Op,
    SetDataOp,
    ZooKeeperClient,
    ZooKeeperMultiError,
)
from replication.metadata.zk.znodes import ControllerEpochZNode, ControllerZNode, ZNodeDecodeError

log = logging.getLogger("pykbroker.zk.controller")

__all__ = ["INITIAL_CONTROLLER_EPOCH", "ControllerElection", "ControllerMovedError", "must_resign",
           "next_controller_epoch", "won_election"]

INITIAL_CONTROLLER_EPOCH = 0  # Kafka's KafkaController.InitialControllerEpoch (and its znode version 0)


class ControllerMovedError(RuntimeError):
    """Another broker is (or became) the controller: this one's election or write is void."""


def next_controller_epoch(current_epoch: int) -> int:
    """The epoch a new controller writes."""
    return current_epoch + 1


def won_election(my_id: int, registered_controller_id: int | None, registered_epoch: int, my_new_epoch: int) -> bool:
    """After a multi that failed with NodeExists/BadVersion: did this broker win anyway? Only if ``/controller``
    names it and ``/controller_epoch`` holds the epoch it wrote (any other election writes a larger one)."""
    return registered_controller_id == my_id and registered_epoch == my_new_epoch


def must_resign(was_active: bool, active_controller_id: int, my_id: int) -> bool:
    """A controller resigns when ``/controller`` no longer names it."""
    return was_active and active_controller_id != my_id


Callback = Callable[..., Awaitable[Any] | Any]


class ControllerElection:
    """One broker's part in the election; ``start()`` once its session is up (after registering)."""

    def __init__(self, zk: ZooKeeperClient, broker_id: int, *, on_elected: Callback | None = None,
                 on_resigned: Callback | None = None, clock: Callable[[], float] = time.time) -> None:
        """``on_elected(epoch, epoch_zk_version)`` and ``on_resigned()`` run on the loop (coroutines awaited)."""
        self.zk = zk
        self.broker_id = broker_id
        self.on_elected = on_elected
        self.on_resigned = on_resigned
        self.clock = clock
        self.active_controller_id = -1
        self.epoch = -1
        self.epoch_zk_version = -1
        self._lock = asyncio.Lock()
        self._closed = False

    def listen(self, on_elected: Callback, on_resigned: Callback) -> None:
        """The controller's callbacks, given once by the controller it serves (before ``start``)."""
        if self.on_elected is not None or self.on_resigned is not None:
            raise RuntimeError(f"broker {self.broker_id}'s controller election already has a controller")
        self.on_elected, self.on_resigned = on_elected, on_resigned

    @property
    def is_active(self) -> bool:
        return self.active_controller_id == self.broker_id

    async def start(self) -> None:
        self.zk.on_session_expired(self._session_expired)
        self.zk.on_new_session(self._reelect)
        await self._reelect()

    async def close(self) -> None:
        """Stop taking part; a controller gives up ``/controller`` so another takes over at once."""
        self._closed = True
        async with self._lock:
            if self.is_active:
                found = await self.zk.get(ControllerZNode.path)
                if found is not None and found[1].ephemeralOwner == self.zk.session_id:
                    await self.zk.delete(ControllerZNode.path, found[1].version)
                await self._resign()

    # -- ZooKeeper events ---------------------------------------------------------------------------------

    def _controller_changed(self, event: Any) -> None:
        """The one-shot watch on /controller fired: re-arm it and act, in a task (watches run on the loop)."""
        if not self._closed:
            asyncio.ensure_future(self._reelect())

    def _session_expired(self) -> None:
        if self.is_active:
            log.warning("controller %d: session expired, resigning (epoch %d)", self.broker_id, self.epoch)
            self.active_controller_id = -1
            asyncio.ensure_future(self._notify(self.on_resigned))
        self.active_controller_id = -1

    async def _reelect(self) -> None:
        """Kafka's Reelect: resign if /controller moved away, then elect if nobody holds it."""
        if self._closed:
            return
        async with self._lock:
            current = await self._read_controller(watch=True)
            if must_resign(self.is_active, current, self.broker_id):
                await self._resign()
            self.active_controller_id = current
            if current == -1:
                await self._elect()

    async def _read_controller(self, watch: bool = False) -> int:
        """The registered controller's id, or -1; with ``watch`` the /controller watch is (re)armed."""
        stat = await self.zk.exists(ControllerZNode.path, watch=self._controller_changed if watch else None)
        if stat is None:
            return -1
        found = await self.zk.get(ControllerZNode.path)
        if found is None:
            return -1
        try:
            return ControllerZNode.decode(found[0]).broker_id
        except ZNodeDecodeError:
            log.warning("unreadable %s: %r", ControllerZNode.path, found[0])
            return -1

    async def _read_epoch(self) -> tuple[int, int]:
        """(epoch, znode version) of /controller_epoch, creating it at epoch 0 if missing."""
        found = await self.zk.get(ControllerEpochZNode.path)
        if found is None:
            try:
                await self.zk.create(ControllerEpochZNode.path, ControllerEpochZNode.encode(INITIAL_CONTROLLER_EPOCH))
                return INITIAL_CONTROLLER_EPOCH, 0
            except NodeExistsError:
                found = await self.zk.get(ControllerEpochZNode.path)
                assert found is not None
        return ControllerEpochZNode.decode(found[0]), found[1].version

    async def _elect(self) -> None:
        epoch, version = await self._read_epoch()
        new_epoch = next_controller_epoch(epoch)
        try:
            results = await self.zk.multi([
                CreateOp(ControllerZNode.path, ControllerZNode.encode(self.broker_id, int(self.clock() * 1000)),
                         ephemeral=True),
                SetDataOp(ControllerEpochZNode.path, ControllerEpochZNode.encode(new_epoch), version)])
            new_version = results[1].version
        except ZooKeeperMultiError as exc:
            if not isinstance(exc.error, NodeExistsError | BadVersionError):
                raise
            registered = await self._read_controller()
            registered_epoch, registered_version = await self._read_epoch()
            if not won_election(self.broker_id, registered, registered_epoch, new_epoch):
                self.active_controller_id = registered
                log.info("broker %d: controller election lost to %d", self.broker_id, registered)
                return
            new_version = registered_version
        self.active_controller_id = self.broker_id
        self.epoch, self.epoch_zk_version = new_epoch, new_version
        log.info("broker %d: elected controller with epoch %d (epoch znode version %d)", self.broker_id,
                 new_epoch, new_version)
        await self._notify(self.on_elected, new_epoch, new_version)

    async def _resign(self) -> None:
        log.info("broker %d: resigning as controller (epoch %d)", self.broker_id, self.epoch)
        self.active_controller_id = -1
        await self._notify(self.on_resigned)

    @staticmethod
    async def _notify(callback: Callback | None, *args: Any) -> None:
        if callback is None:
            return
        result = callback(*args)
        if asyncio.iscoroutine(result):
            await result

    # -- fencing ------------------------------------------------------------------------------------------

    def fence(self) -> CheckOp:
        """The check that makes a write valid only while this controller's epoch stands."""
        if not self.is_active:
            raise ControllerMovedError(f"broker {self.broker_id} is not the controller")
        return CheckOp(ControllerEpochZNode.path, self.epoch_zk_version)

    async def fenced_multi(self, ops: Sequence[Op]) -> list[Any]:
        """``ops`` atomically, only if this broker is still the controller of its epoch (Kafka's
        ``MultiRequest`` with a ``CheckOp`` on the controller epoch znode version)."""
        try:
            return (await self.zk.multi([self.fence(), *ops]))[1:]
        except ZooKeeperMultiError as exc:
            if exc.index == 0:
                raise ControllerMovedError(f"controller epoch {self.epoch} of broker {self.broker_id} was "
                                           "superseded") from None
            raise
