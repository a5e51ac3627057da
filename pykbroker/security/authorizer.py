"""Kafka's StandardAuthorizer: ACLs kept in the metadata store, decided as Kafka decides them.

``authorizer.class.name`` names it (``org.apache.kafka.metadata.authorizer.StandardAuthorizer``, or the
ZooKeeper-era ``kafka.security.authorizer.AclAuthorizer``, which decides the same way); unset, there is no
authorizer and everything is allowed. A principal in ``super.users`` (``User:a;User:b``) may do anything.
Otherwise, for an action (operation on one literal resource) by a principal from a host, the ACLs whose
pattern covers the resource (literal name, literal ``*``, or a prefix of the name) are consulted: an
applicable DENY wins, else an applicable ALLOW allows, else the action is denied when the resource has
any ACL at all and decided by ``allow.everyone.if.no.acl.found`` when it has none. An ACL applies when its
principal is the request's or ``User:*``, its host the client's address or ``*``, and its operation the
action's, ALL, or (ALLOW only) one that implies it (``replication.metadata.acl.implies``).

Every denial of a requested action is logged on ``kafka.authorizer.logger`` at INFO, in Kafka's words
(principal, host, operation, resource, API, the rule); allowed actions at DEBUG.

Storage is behind ``AclStore`` (two methods), so the ACLs can live in the embedded store today and in
ZooKeeper's ``/kafka-acl`` later; changes made through this object take effect at once, and a store that
learns of changes made elsewhere calls ``reload``.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Protocol

from pykbroker.security.acl_hosts import host_matches
from replication.metadata.acl import (
    CLUSTER_NAME,
    WILDCARD_PRINCIPAL,
    WILDCARD_RESOURCE,
    AclBinding,
    AclBindingFilter,
    AclOperation,
    AclPermissionType,
    PatternType,
    ResourcePattern,
    ResourceType,
    implies,
)
from wire import ErrorCode

__all__ = ["AUTHORIZER_CLASS_NAMES", "AclCreateResult", "AclDeleteResult", "AclStore", "StandardAuthorizer",
           "build_authorizer"]

AUTHORIZER_CLASS_NAMES = frozenset({"org.apache.kafka.metadata.authorizer.StandardAuthorizer",
                                    "kafka.security.authorizer.AclAuthorizer"})

audit_log = logging.getLogger("kafka.authorizer.logger")
log = logging.getLogger("pykbroker.security.authorizer")


class AclStore(Protocol):
    """Where ACLs persist: every binding, and one durable change adding and removing some."""

    def load_acls(self) -> list[AclBinding]: ...

    async def alter_acls(self, added: Sequence[AclBinding], removed: Sequence[AclBinding]) -> None: ...


@dataclass(frozen=True, slots=True)
class AclCreateResult:
    error_code: int = ErrorCode.NONE
    error_message: str | None = ""  # Kafka answers a created ACL with an empty message


@dataclass(frozen=True, slots=True)
class AclDeleteResult:
    matching: tuple[AclBinding, ...] = ()
    error_code: int = ErrorCode.NONE
    error_message: str | None = None


def _principal_type_and_name(principal: str) -> tuple[str, str] | None:
    """Kafka's SecurityUtils.parseKafkaPrincipal: ``Type:name`` split at the first colon."""
    if ":" not in principal:
        return None
    kind, name = principal.split(":", 1)
    return kind, name


class StandardAuthorizer:
    """Decides actions against the ACLs of ``store`` (see the module docstring)."""

    def __init__(self, store: AclStore, node_id: int, super_users: Iterable[str] = (),
                 allow_everyone_if_no_acl_found: bool = False) -> None:
        self.store = store
        self.node_id = node_id
        self.super_users = frozenset(super_users)
        self.allow_if_no_acl = allow_everyone_if_no_acl_found
        self._by_type: dict[ResourceType, list[AclBinding]] = {}
        self._all: list[AclBinding] = []
        self.reload()
        log.info("[StandardAuthorizer %d] set super.users=%s, default result=%s", node_id,
                 ",".join(sorted(self.super_users)), "ALLOWED" if self.allow_if_no_acl else "DENIED")

    # -- ACLs ----------------------------------------------------------------------------------------------------
    def reload(self) -> None:
        """Read every ACL from the store again (after a change made elsewhere)."""
        self._set(self.store.load_acls())
        log.info("[StandardAuthorizer %d] Initialized with %d acl(s).", self.node_id, len(self._all))

    def _set(self, acls: Iterable[AclBinding]) -> None:
        """Index the ACLs: by type (authorize_by_resource_type), and by type and literal name or prefix, so a
        decision looks at the ACLs of the name, of ``*`` and of each of the name's prefixes only."""
        self._all = list(dict.fromkeys(acls))
        by_type: dict[ResourceType, list[AclBinding]] = {}
        literal: dict[tuple[ResourceType, str], list[AclBinding]] = {}
        prefixed: dict[tuple[ResourceType, str], list[AclBinding]] = {}
        for acl in self._all:
            p = acl.pattern
            by_type.setdefault(p.resource_type, []).append(acl)
            index = literal if p.pattern_type == PatternType.LITERAL else prefixed
            index.setdefault((p.resource_type, p.name), []).append(acl)
        self._by_type, self._literal, self._prefixed = by_type, literal, prefixed
        self._prefix_lengths = {t: sorted({len(n) for (rt, n) in prefixed if rt == t}) for t in by_type}

    def acls(self, acl_filter: AclBindingFilter) -> list[AclBinding]:
        return [acl for acl in self._all if acl_filter.matches(acl)]

    async def create_acls(self, bindings: Sequence[AclBinding]) -> list[AclCreateResult]:
        """Validate and store bindings (one durable change); an ACL that exists already is a success."""
        results: list[AclCreateResult] = []
        added: list[AclBinding] = []
        existing = set(self._all)
        for binding in bindings:
            refusal = _validate_new_acl(binding)
            if refusal is not None:
                results.append(refusal)
                continue
            if binding not in existing:
                existing.add(binding)
                added.append(binding)
            results.append(AclCreateResult())
        if added:
            await self.store.alter_acls(added, [])
            self._set([*self._all, *added])
            for binding in added:
                log.info("[StandardAuthorizer %d] added ACL %s", self.node_id, binding)
        return results

    async def delete_acls(self, filters: Sequence[AclBindingFilter]) -> list[AclDeleteResult]:
        """Remove every ACL each filter matches (one durable change); each result lists what its filter matched."""
        results = [AclDeleteResult(tuple(self.acls(f))) for f in filters]
        removed = list(dict.fromkeys(acl for r in results for acl in r.matching))
        if removed:
            await self.store.alter_acls([], removed)
            gone = set(removed)
            self._set(acl for acl in self._all if acl not in gone)
            for binding in removed:
                log.info("[StandardAuthorizer %d] removed ACL %s", self.node_id, binding)
        return results

    # -- decisions -----------------------------------------------------------------------------------------------
    def authorize(self, principal: str, host: str, operation: AclOperation, resource_type: ResourceType, name: str,
                  api_name: str, *, log_if_allowed: bool = True, log_if_denied: bool = True,
                  ref_count: int = 1) -> bool:
        """Whether ``principal`` connected from ``host`` may do ``operation`` on the literal resource."""
        rule: AclBinding | str
        if principal in self.super_users:
            allowed, rule = True, "SuperUser"
        else:
            allowed, rule = self._find_rule(principal, host, operation, resource_type, name)
        if allowed and log_if_allowed and audit_log.isEnabledFor(logging.DEBUG):
            audit_log.debug(_audit(principal, allowed, operation, host, resource_type, name, api_name, ref_count, rule))
        elif not allowed and log_if_denied:
            audit_log.info(_audit(principal, allowed, operation, host, resource_type, name, api_name, ref_count, rule))
        return allowed

    def _find_rule(self, principal: str, host: str, operation: AclOperation, resource_type: ResourceType,
                   name: str) -> tuple[bool, AclBinding | str]:
        """(allowed, the deciding ACL or Kafka's name of the default rule)."""
        candidates = [self._literal.get((resource_type, name)), self._literal.get((resource_type, WILDCARD_RESOURCE))]
        candidates += [self._prefixed.get((resource_type, name[:n]))
                       for n in self._prefix_lengths.get(resource_type, ()) if n <= len(name)]
        allow: AclBinding | None = None
        has_resource_acls = False
        for acls in candidates:
            if not acls:
                continue
            has_resource_acls = True
            for acl in acls:
                if acl.principal not in (principal, WILDCARD_PRINCIPAL) or not host_matches(acl.host, host):
                    continue
                if not implies(acl.operation, acl.permission_type, operation):
                    continue
                if acl.permission_type == AclPermissionType.DENY:
                    return False, acl
                allow = acl
        if allow is not None:
            return True, allow
        if has_resource_acls:
            return False, "DefaultDeny"
        return self.allow_if_no_acl, "DefaultAllow" if self.allow_if_no_acl else "DefaultDeny"

    def authorize_by_resource_type(self, principal: str, host: str, operation: AclOperation,
                                   resource_type: ResourceType, api_name: str) -> bool:
        """Kafka's Authorizer.authorizeByResourceType: may the principal do ``operation`` on some resource of
        the type (an allowing literal or prefix not covered by a deny; a literal ``*`` deny denies all)?"""
        if self.authorize(principal, host, operation, resource_type, "hardcode", api_name, log_if_denied=False,
                          ref_count=0):
            return True
        deny: dict[PatternType, set[str]] = {PatternType.LITERAL: set(), PatternType.PREFIXED: set()}
        allow: dict[PatternType, set[str]] = {PatternType.LITERAL: set(), PatternType.PREFIXED: set()}
        wildcard_allow = False
        for acl in self._by_type.get(resource_type, ()):
            if not host_matches(acl.host, host) or acl.principal not in (principal, WILDCARD_PRINCIPAL):
                continue
            if acl.operation not in (operation, AclOperation.ALL):
                continue
            kind, name = acl.pattern.pattern_type, acl.pattern.name
            if acl.permission_type == AclPermissionType.DENY:
                if kind == PatternType.LITERAL and name == WILDCARD_RESOURCE:
                    return False
                deny[kind].add(name)
            elif kind == PatternType.LITERAL and name == WILDCARD_RESOURCE:
                wildcard_allow = True
            else:
                allow[kind].add(name)
        if wildcard_allow:
            return True
        for kind, names in allow.items():
            for name in names:
                if kind == PatternType.LITERAL and name in deny[PatternType.LITERAL]:
                    continue
                if not any(name[:i] in deny[PatternType.PREFIXED] for i in range(1, len(name) + 1)):
                    return True
        return False


def _audit(principal: str, allowed: bool, operation: AclOperation, host: str, resource_type: ResourceType,
           name: str, api_name: str, ref_count: int, rule: AclBinding | str) -> str:
    resource = ResourcePattern(resource_type, name, PatternType.LITERAL)
    if isinstance(rule, AclBinding):
        rule = f"MatchingAcl(acl={rule})"
    return (f"Principal = {principal} is {'Allowed' if allowed else 'Denied'} operation = {operation.name} "
            f"from host = {host} on resource = {resource} for request = {api_name} with resourceRefCount = "
            f"{ref_count} based on rule {rule}")


def _validate_new_acl(binding: AclBinding) -> AclCreateResult | None:
    """The refusal of a new ACL as Kafka 4.4 answers it, or None.

    A resource type, pattern type, operation or permission that cannot be stored (ANY, MATCH) fails inside
    Kafka's authorizer as UNKNOWN_SERVER_ERROR without a message; a principal without a type is
    INVALID_REQUEST (AclControlManager).
    """
    p = binding.pattern
    if p.resource_type in (ResourceType.UNKNOWN, ResourceType.ANY) \
            or p.pattern_type not in (PatternType.LITERAL, PatternType.PREFIXED) \
            or binding.operation in (AclOperation.UNKNOWN, AclOperation.ANY) \
            or binding.permission_type not in (AclPermissionType.ALLOW, AclPermissionType.DENY):
        return AclCreateResult(ErrorCode.UNKNOWN_SERVER_ERROR, None)
    if not p.name:
        return AclCreateResult(ErrorCode.INVALID_REQUEST, "Resource name should not be empty")
    if _principal_type_and_name(binding.principal) is None:
        return AclCreateResult(ErrorCode.INVALID_REQUEST, f"Could not parse principal from `{binding.principal}` "
                               "(no colon is present separating the principal type from the principal name)")
    return None


def cluster_name_error(binding: AclBinding) -> str | None:
    """AclApis' own checks before the authorizer's: the CLUSTER resource's one name, and no empty names."""
    if binding.pattern.resource_type == ResourceType.CLUSTER and binding.pattern.name != CLUSTER_NAME:
        return f"The only valid name for the CLUSTER resource is {CLUSTER_NAME}"
    if not binding.pattern.name:
        return "Invalid empty resource name"
    return None


def build_authorizer(config, store: AclStore) -> StandardAuthorizer | None:
    """The authorizer ``authorizer.class.name`` asks for, or None when it is unset."""
    class_name = config["authorizer.class.name"]
    if not class_name:
        return None
    super_users = [u.strip() for u in (config["super.users"] or "").split(";") if u.strip()]
    return StandardAuthorizer(store, config.node_id, super_users, config["allow.everyone.if.no.acl.found"])
