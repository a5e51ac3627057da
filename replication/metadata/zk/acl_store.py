"""ACLs in ZooKeeper under Kafka's layout (the ZooKeeper-era AclAuthorizer's), an ``AclStore`` for cluster mode.

Literal patterns live in ``/kafka-acl/<ResourceType>/<name>``, prefixed ones in
``/kafka-acl-extended/prefixed/<ResourceType>/<name>``, each znode holding every ACL of its resource pattern
as Kafka's JSON (``replication.metadata.zk.znodes.ResourceZNode``, operations and permissions in Kafka's spelling:
``Read``, ``IdempotentWrite``, ``Allow``). A change rewrites each touched znode conditionally on its version
(retrying when another broker got there first), then announces the pattern with a sequential znode under
``/kafka-acl-changes`` (literal) or ``/kafka-acl-extended-changes`` (prefixed), which every broker watches:
on a new announcement it reloads the pattern announced (only that one, as Kafka's AclAuthorizer) and tells its
authorizer, so a change takes effect on every broker.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Sequence

from replication.metadata.acl import (
    AclBinding,
    AclOperation,
    AclPermissionType,
    PatternType,
    ResourcePattern,
    ResourceType,
)
from replication.metadata.zk.client import (
    BadVersionError,
    NodeExistsError,
    NoNodeError,
    WatchedEvent,
    ZooKeeperClient,
)
from replication.metadata.zk.znodes import (
    ACL_RESOURCE_TYPES,
    AclEntry,
    ExtendedAclChangeZNode,
    LiteralAclChangeZNode,
    ResourceZNode,
    ZNodeDecodeError,
)

__all__ = ["ZooKeeperAclStore"]

log = logging.getLogger("pykbroker.security.zk_acl_store")

LITERAL_CHANGES = "/kafka-acl-changes"
EXTENDED_CHANGES = "/kafka-acl-extended-changes"
ANNOUNCE_WAIT_S = 2.0  # how long a change waits to see its own notification applied before it is answered
_TYPES = {t.title: t for t in ResourceType if t not in (ResourceType.UNKNOWN, ResourceType.ANY)}


def _camel(name: str) -> str:
    """``DESCRIBE_CONFIGS`` -> ``DescribeConfigs`` (Kafka's SecurityUtils names)."""
    return "".join(word.capitalize() for word in name.split("_"))


_OPERATIONS = {_camel(op.name): op for op in AclOperation if op not in (AclOperation.UNKNOWN, AclOperation.ANY)}
_PERMISSIONS = {"Allow": AclPermissionType.ALLOW, "Deny": AclPermissionType.DENY}


def to_entry(binding: AclBinding) -> AclEntry:
    return AclEntry(binding.principal, _camel(binding.permission_type.name), binding.host,
                    _camel(binding.operation.name))


def to_binding(pattern: ResourcePattern, entry: AclEntry) -> AclBinding:
    return AclBinding(pattern, entry.principal, entry.host, _OPERATIONS[entry.operation],
                      _PERMISSIONS[entry.permission_type])


class ZooKeeperAclStore:
    """The cluster's ACLs in ZooKeeper, cached; ``start`` loads them and watches for other brokers' changes."""

    def __init__(self, zk: ZooKeeperClient) -> None:
        self.zk = zk
        self._acls: list[AclBinding] = []
        self.on_change: Callable[[], None] | None = None  # the authorizer's reload, once it exists
        self._seen: dict[str, set[str]] = {LITERAL_CHANGES: set(), EXTENDED_CHANGES: set()}
        self._watching = False
        self._applied: set[str] = set()  # change notifications (full paths) this store has applied
        self._waiting: dict[str, asyncio.Future[None]] = {}  # alter_acls waiting for its own notification

    async def start(self, on_change: Callable[[], None] | None = None) -> None:
        """Create Kafka's ACL znodes if missing, load every ACL, and watch the change notifications."""
        for store in ("/kafka-acl", "/kafka-acl-extended/prefixed"):
            for resource_type in ACL_RESOURCE_TYPES:
                await self.zk.ensure_path(f"{store}/{resource_type}")
        for changes in (LITERAL_CHANGES, EXTENDED_CHANGES):
            await self.zk.ensure_path(changes)
            self._seen[changes] = set(await self.zk.get_children(changes) or [])
        self._acls = await self._read_all()
        if on_change is not None:
            self.on_change = on_change
        for changes in (LITERAL_CHANGES, EXTENDED_CHANGES):
            await self.zk.get_children(changes, self._changed)
        self._watching = True

    async def _read_all(self) -> list[AclBinding]:
        out: list[AclBinding] = []
        for pattern_type, store in ((PatternType.LITERAL, "/kafka-acl"),
                                    (PatternType.PREFIXED, "/kafka-acl-extended/prefixed")):
            for type_name in await self.zk.get_children(store) or []:
                resource_type = _TYPES.get(type_name)
                if resource_type is None:
                    continue
                for name in await self.zk.get_children(f"{store}/{type_name}") or []:
                    found = await self.zk.get(f"{store}/{type_name}/{name}")
                    if found is None:
                        continue
                    pattern = ResourcePattern(resource_type, name, pattern_type)
                    out.extend(to_binding(pattern, e) for e in ResourceZNode.decode(found[0]))
        return out

    async def _changed(self, event: WatchedEvent) -> None:
        """Change notifications appeared: reload the resource patterns they name (as Kafka's AclAuthorizer did; a
        reload of every znode takes tens of round trips, long enough for a client that created ACLs through
        another broker to ask this one before it knows them), tell the authorizer, and watch again."""
        path = LITERAL_CHANGES if event.path.endswith(LITERAL_CHANGES) else EXTENDED_CHANGES
        children = set(await self.zk.get_children(path, self._changed) or [])
        new = sorted(children - self._seen[path])
        if not new:
            return
        self._seen[path] = children
        try:
            patterns = [p for child in new if (p := await self._announced(path, child)) is not None]
        except (ZNodeDecodeError, KeyError):
            log.warning("an ACL change notification under %s is not Kafka's: reloading every ACL", path)
            self._acls = await self._read_all()
        else:
            for pattern in dict.fromkeys(patterns):
                await self._reload(pattern)
        log.info("ACLs changed in ZooKeeper (%s): %d acl(s)", path, len(self._acls))
        if self.on_change is not None:
            self.on_change()
        for child in new:
            self._applied.add(f"{path}/{child}")
            waiter = self._waiting.pop(f"{path}/{child}", None)
            if waiter is not None and not waiter.done():
                waiter.set_result(None)

    async def _announced(self, path: str, child: str) -> ResourcePattern | None:
        """The resource pattern a change notification names (None once it was purged)."""
        found = await self.zk.get(f"{path}/{child}")
        if found is None:
            return None
        if path == LITERAL_CHANGES:
            resource_type, name = LiteralAclChangeZNode.decode(found[0])
            return ResourcePattern(ResourceType[resource_type], name, PatternType.LITERAL)
        resource_type, name, pattern_type = ExtendedAclChangeZNode.decode(found[0])
        return ResourcePattern(ResourceType[resource_type], name, PatternType[pattern_type])

    async def _reload(self, pattern: ResourcePattern) -> None:
        """Replace the cached ACLs of ``pattern`` with its znode's."""
        found = await self.zk.get(ResourceZNode.path(pattern.resource_type.title, pattern.name,
                                                     pattern.pattern_type.name))
        entries = ResourceZNode.decode(found[0]) if found else []
        self._acls = [a for a in self._acls if a.pattern != pattern] + [to_binding(pattern, e) for e in entries]

    # -- AclStore ---------------------------------------------------------------------------------------------
    def load_acls(self) -> list[AclBinding]:
        return list(self._acls)

    async def alter_acls(self, added: Sequence[AclBinding], removed: Sequence[AclBinding]) -> None:
        """Rewrite each touched resource pattern's znode (conditionally), then announce each pattern."""
        patterns = list(dict.fromkeys(b.pattern for b in [*added, *removed]))
        for pattern in patterns:
            plus = [b for b in added if b.pattern == pattern]
            minus = {b for b in removed if b.pattern == pattern}
            await self._update(pattern, plus, minus)
        announced = []
        for pattern in patterns:
            if pattern.pattern_type == PatternType.LITERAL:
                announced.append(await self.zk.create(
                    LiteralAclChangeZNode.create_path,
                    LiteralAclChangeZNode.encode(pattern.resource_type.title, pattern.name), sequential=True))
            else:
                announced.append(await self.zk.create(ExtendedAclChangeZNode.create_path, ExtendedAclChangeZNode.encode(
                    pattern.resource_type.title, pattern.name, pattern.pattern_type.name), sequential=True))
        gone = set(removed)
        self._acls = [a for a in self._acls if a not in gone] + [a for a in added if a not in self._acls]
        if self._watching:
            await self._applied_everywhere(announced)

    async def _applied_everywhere(self, announced: list[str]) -> None:
        """Wait (up to ANNOUNCE_WAIT_S) until this store has seen and applied its own notifications: every broker
        watches them and reloads the same way, so by then the others have too, as a Kafka broker answers
        CreateAcls once the controller committed the records its peers apply as they fetch them. A client that
        changes ACLs through one broker and then asks another (confluent-kafka-go's authorized-operations tests)
        finds the change there."""
        loop = asyncio.get_running_loop()
        waits = []
        for path in announced:
            if path not in self._applied:
                waits.append(self._waiting.setdefault(path, loop.create_future()))
        if waits:
            try:
                async with asyncio.timeout(ANNOUNCE_WAIT_S):
                    await asyncio.gather(*waits)
            except TimeoutError:
                log.warning("ACL change notifications %s not seen back within %.1f s", announced, ANNOUNCE_WAIT_S)
            finally:
                for path in announced:
                    self._waiting.pop(path, None)

    async def _update(self, pattern: ResourcePattern, plus: list[AclBinding], minus: set[AclBinding]) -> None:
        path = ResourceZNode.path(pattern.resource_type.title, pattern.name, pattern.pattern_type.name)
        while True:
            found = await self.zk.get(path)
            current = [to_binding(pattern, e) for e in ResourceZNode.decode(found[0])] if found else []
            wanted = [b for b in current if b not in minus] + [b for b in plus if b not in current]
            try:
                if found is None:
                    if wanted:
                        await self.zk.create(path, ResourceZNode.encode(to_entry(b) for b in wanted),
                                             make_parents=True)
                elif not wanted:
                    await self.zk.delete(path, found[1].version)
                else:
                    await self.zk.set(path, ResourceZNode.encode(to_entry(b) for b in wanted), found[1].version)
                return
            except (BadVersionError, NodeExistsError, NoNodeError):
                continue  # another broker changed it first: read again
