"""ACLs in ZooKeeper as Kafka's ``AclAuthorizer`` keeps them, for an authorizer in a cluster.

- Literal patterns live in ``/kafka-acl/<ResourceType>/<name>``, prefixed ones in
  ``/kafka-acl-extended/prefixed/<ResourceType>/<name>``: ``{"acls":[...],"version":1}`` (``ResourceZNode``).
- A change is a read-modify-write conditional on the znode's version (retried when another broker won),
  creating the znode for a resource's first ACL and deleting it with its last; then a sequential change
  notification (``/kafka-acl-changes/acl_changes_<seq>`` with ``TOPIC:name``, or the extended one with JSON)
  tells every broker to reread that resource.
- ``start()`` creates the store's persistent znodes (one per resource type, as Kafka's authorizer does at
  start-up), loads every ACL and watches both notification paths; after a session expiry everything is
  reloaded. Notifications older than 15 minutes that this store has applied are deleted, as Kafka does.

``acls`` maps a ``ResourcePattern`` to its entries; ``subscribe(listener)`` hears ``listener(pattern)`` after
every change of a pattern's entries.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from replication.zk.client import BadVersionError, NodeExistsError, NoNodeError, ZooKeeperClient
from replication.zk.znodes import (
    ACL_RESOURCE_TYPES,
    AclEntry,
    ExtendedAclChangeZNode,
    LiteralAclChangeZNode,
    ResourceZNode,
    ZNodeDecodeError,
)

log = logging.getLogger("pykbroker.zk.acls")

__all__ = ["ResourcePattern", "ZkAclStore"]

LITERAL, PREFIXED = "LITERAL", "PREFIXED"
_CHANGE_ROOTS = {LITERAL: "/kafka-acl-changes", PREFIXED: "/kafka-acl-extended-changes"}
_CHANGE_EXPIRATION_MS = 15 * 60 * 1000
# the enum names in change notifications -> the names in paths
_TYPE_BY_UPPER = {"TOPIC": "Topic", "GROUP": "Group", "CLUSTER": "Cluster", "TRANSACTIONAL_ID": "TransactionalId",
                  "DELEGATION_TOKEN": "DelegationToken", "USER": "User"}


@dataclass(frozen=True, order=True)
class ResourcePattern:
    """``resource_type`` as in paths (``Topic``), ``pattern_type`` ``LITERAL`` or ``PREFIXED``."""

    resource_type: str
    name: str
    pattern_type: str = LITERAL

    @property
    def path(self) -> str:
        return ResourceZNode.path(self.resource_type, self.name, self.pattern_type)


class ZkAclStore:
    """The cluster's ACLs, current through change notifications."""

    def __init__(self, zk: ZooKeeperClient, clock: Callable[[], float] = time.time) -> None:
        self.zk = zk
        self.clock = clock
        self._acls: dict[ResourcePattern, frozenset[AclEntry]] = {}
        self._listeners: list[Callable[[ResourcePattern], Any]] = []
        self._last_change = {LITERAL: -1, PREFIXED: -1}
        self._lock = asyncio.Lock()
        self._watches: dict[str, Callable[[Any], None]] = {}

    @property
    def acls(self) -> Mapping[ResourcePattern, frozenset[AclEntry]]:
        return self._acls

    def subscribe(self, listener: Callable[[ResourcePattern], Any]) -> None:
        self._listeners.append(listener)

    def _set(self, pattern: ResourcePattern, entries: frozenset[AclEntry]) -> None:
        if self._acls.get(pattern, frozenset()) == entries:
            return
        if entries:
            self._acls[pattern] = entries
        else:
            self._acls.pop(pattern, None)
        for listener in self._listeners:
            try:
                listener(pattern)
            except Exception:
                log.exception("ACL listener failed for %s", pattern)

    # -- loading --------------------------------------------------------------------------------------
    async def start(self) -> None:
        for root in ("/kafka-acl", "/kafka-acl-extended/prefixed"):
            for resource_type in ACL_RESOURCE_TYPES:
                await self.zk.ensure_path(f"{root}/{resource_type}")
        for root in _CHANGE_ROOTS.values():
            await self.zk.ensure_path(root)
        self.zk.on_new_session(self._reload)
        await self._reload()

    async def _reload(self) -> None:
        async with self._lock:
            found: dict[ResourcePattern, frozenset[AclEntry]] = {}
            for pattern_type, root in ((LITERAL, "/kafka-acl"), (PREFIXED, "/kafka-acl-extended/prefixed")):
                for resource_type in await self.zk.get_children(root) or []:
                    for name in await self.zk.get_children(f"{root}/{resource_type}") or []:
                        pattern = ResourcePattern(resource_type, name, pattern_type)
                        entries = await self._read(pattern)
                        if entries:
                            found[pattern] = entries
            for pattern in set(self._acls) - set(found):
                self._set(pattern, frozenset())
            for pattern, entries in found.items():
                self._set(pattern, entries)
            for pattern_type, root in _CHANGE_ROOTS.items():
                changes = await self.zk.get_children(root, watch=self._watch(pattern_type)) or []
                self._last_change[pattern_type] = max((_sequence(c) for c in changes), default=-1)

    async def _read(self, pattern: ResourcePattern) -> frozenset[AclEntry]:
        found = await self.zk.get(pattern.path)
        if found is None:
            return frozenset()
        try:
            return frozenset(ResourceZNode.decode(found[0]))
        except ZNodeDecodeError as exc:
            log.warning("ignoring unreadable ACLs at %s: %s", pattern.path, exc)
            return frozenset()

    def _watch(self, pattern_type: str) -> Callable[[Any], None]:
        """The one watch callable per notification path (a reread re-arms it rather than adding another)."""
        watch = self._watches.get(pattern_type)
        if watch is None:
            def watch(_event: Any, pattern_type: str = pattern_type) -> None:
                asyncio.ensure_future(self._apply_changes(pattern_type))

            self._watches[pattern_type] = watch
        return watch

    async def _apply_changes(self, pattern_type: str) -> None:
        """Reread the resource of every new notification, in order; purge old applied ones."""
        async with self._lock:
            root = _CHANGE_ROOTS[pattern_type]
            changes = await self.zk.get_children(root, watch=self._watch(pattern_type)) or []
            now_ms = int(self.clock() * 1000)
            for child in sorted(changes, key=_sequence):
                path = f"{root}/{child}"
                if _sequence(child) > self._last_change[pattern_type]:
                    self._last_change[pattern_type] = _sequence(child)
                    found = await self.zk.get(path)
                    if found is not None:
                        pattern = _pattern_of_change(pattern_type, found[0])
                        if pattern is not None:
                            self._set(pattern, await self._read(pattern))
                stat = await self.zk.exists(path)
                if stat is not None and stat.ctime < now_ms - _CHANGE_EXPIRATION_MS:
                    try:
                        await self.zk.delete(path)
                    except NoNodeError:
                        pass

    # -- writing --------------------------------------------------------------------------------------
    async def add(self, pattern: ResourcePattern, entries: Iterable[AclEntry]) -> frozenset[AclEntry]:
        """Add ``entries`` to ``pattern``'s ACLs; returns the resulting set."""
        added = frozenset(entries)
        return await self._update(pattern, lambda current: current | added)

    async def remove(self, pattern: ResourcePattern, entries: Iterable[AclEntry] | None = None) -> frozenset[AclEntry]:
        """Remove ``entries`` (None: all) from ``pattern``'s ACLs; returns the resulting set."""
        removed = None if entries is None else frozenset(entries)
        return await self._update(pattern, lambda current: frozenset() if removed is None else current - removed)

    async def _update(self, pattern: ResourcePattern,
                      change: Callable[[frozenset[AclEntry]], frozenset[AclEntry]]) -> frozenset[AclEntry]:
        """Kafka's updateResourceAcls: read, change, conditional write (or create / delete), again on a race."""
        while True:
            found = await self.zk.get(pattern.path)
            current = frozenset(ResourceZNode.decode(found[0])) if found is not None and found[0] else frozenset()
            new = change(current)
            if new == current:
                return new
            try:
                if not new:
                    await self.zk.delete(pattern.path, found[1].version)  # type: ignore[index]
                elif found is None:
                    await self.zk.create(pattern.path, ResourceZNode.encode(sorted(new, key=_entry_key)),
                                         make_parents=True)
                else:
                    await self.zk.set(pattern.path, ResourceZNode.encode(sorted(new, key=_entry_key)), found[1].version)
                break
            except (BadVersionError, NodeExistsError, NoNodeError):
                continue  # another broker changed these ACLs meanwhile: start over from theirs
        if pattern.pattern_type == LITERAL:
            await self.zk.create(LiteralAclChangeZNode.create_path,
                                 LiteralAclChangeZNode.encode(pattern.resource_type, pattern.name), sequential=True)
        else:
            await self.zk.create(ExtendedAclChangeZNode.create_path, ExtendedAclChangeZNode.encode(
                pattern.resource_type, pattern.name, pattern.pattern_type), sequential=True)
        async with self._lock:  # reread: another broker may have changed the resource after this write
            self._set(pattern, await self._read(pattern))
        return new


def _entry_key(e: AclEntry) -> tuple[str, str, str, str]:
    return e.principal, e.permission_type, e.host, e.operation


def _sequence(child: str) -> int:
    try:
        return int(child.rsplit("_", 1)[1])
    except (IndexError, ValueError):
        return -1


def _pattern_of_change(pattern_type: str, data: bytes | None) -> ResourcePattern | None:
    try:
        if pattern_type == LITERAL:
            resource_type, name = LiteralAclChangeZNode.decode(data)
            return ResourcePattern(_TYPE_BY_UPPER.get(resource_type.upper(), resource_type), name, LITERAL)
        resource_type, name, pattern = ExtendedAclChangeZNode.decode(data)
        return ResourcePattern(_TYPE_BY_UPPER.get(resource_type.upper(), resource_type), name, pattern.upper())
    except ZNodeDecodeError as exc:
        log.warning("ignoring ACL change notification: %s", exc)
        return None
