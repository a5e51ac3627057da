"""Kafka's ACL vocabulary: resource types, pattern types, operations, permission types, bindings and filters.

Codes and names are Kafka's (``org.apache.kafka.common.acl`` / ``.resource``); a code the client sends that
Kafka does not know becomes UNKNOWN, as ``fromCode`` does. ``SUPPORTED_OPERATIONS`` is Kafka's
``AclEntry.supportedOperations`` (the bits of ``include_*_authorized_operations``); ``implied_by`` holds
the StandardAuthorizer's implication rules (an ALLOW of READ, WRITE, DELETE or ALTER allows DESCRIBE; of
ALTER_CONFIGS, DESCRIBE_CONFIGS; ALL allows everything; none of this holds for DENY).
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import IntEnum

__all__ = ["AclBinding", "AclBindingFilter", "AclOperation", "AclPermissionType", "CLUSTER_NAME", "PatternType",
           "ResourcePattern", "ResourceType", "SUPPORTED_OPERATIONS", "WILDCARD_HOST", "WILDCARD_PRINCIPAL",
           "WILDCARD_RESOURCE", "authorized_operations_bits", "implies"]

CLUSTER_NAME = "kafka-cluster"  # the one name of the CLUSTER resource
WILDCARD_RESOURCE = "*"
WILDCARD_PRINCIPAL = "User:*"
WILDCARD_HOST = "*"


class _Coded(IntEnum):
    @classmethod
    def from_code(cls, code: int):
        """Kafka's ``fromCode``: codes it does not know are UNKNOWN."""
        return cls._value2member_map_.get(code, cls(0))


class ResourceType(_Coded):
    UNKNOWN = 0
    ANY = 1
    TOPIC = 2
    GROUP = 3
    CLUSTER = 4
    TRANSACTIONAL_ID = 5
    DELEGATION_TOKEN = 6
    USER = 7

    @property
    def title(self) -> str:
        """Kafka's ``SecurityUtils.resourceTypeName``: Topic, Group, Cluster, TransactionalId, DelegationToken, User."""
        return "".join(word.capitalize() for word in self.name.split("_"))


class PatternType(_Coded):
    UNKNOWN = 0
    ANY = 1
    MATCH = 2
    LITERAL = 3
    PREFIXED = 4


class AclOperation(_Coded):
    UNKNOWN = 0
    ANY = 1
    ALL = 2
    READ = 3
    WRITE = 4
    CREATE = 5
    DELETE = 6
    ALTER = 7
    DESCRIBE = 8
    CLUSTER_ACTION = 9
    DESCRIBE_CONFIGS = 10
    ALTER_CONFIGS = 11
    IDEMPOTENT_WRITE = 12
    CREATE_TOKENS = 13
    DESCRIBE_TOKENS = 14
    TWO_PHASE_COMMIT = 15


class AclPermissionType(_Coded):
    UNKNOWN = 0
    ANY = 1
    DENY = 2
    ALLOW = 3


_O = AclOperation
SUPPORTED_OPERATIONS: dict[ResourceType, tuple[AclOperation, ...]] = {
    ResourceType.TOPIC: (_O.READ, _O.WRITE, _O.CREATE, _O.DESCRIBE, _O.DELETE, _O.ALTER, _O.DESCRIBE_CONFIGS,
                         _O.ALTER_CONFIGS),
    ResourceType.GROUP: (_O.READ, _O.DESCRIBE, _O.DELETE, _O.DESCRIBE_CONFIGS, _O.ALTER_CONFIGS),
    ResourceType.CLUSTER: (_O.CREATE, _O.CLUSTER_ACTION, _O.DESCRIBE_CONFIGS, _O.ALTER_CONFIGS, _O.IDEMPOTENT_WRITE,
                           _O.ALTER, _O.DESCRIBE),
    ResourceType.TRANSACTIONAL_ID: (_O.DESCRIBE, _O.WRITE, _O.TWO_PHASE_COMMIT),
    ResourceType.DELEGATION_TOKEN: (_O.DESCRIBE,),
    ResourceType.USER: (_O.CREATE_TOKENS, _O.DESCRIBE_TOKENS),
}

# Operations whose ALLOW also allows the key (StandardAuthorizerData's IMPLIES_DESCRIBE / IMPLIES_DESCRIBE_CONFIGS).
_IMPLIED_BY: dict[AclOperation, frozenset[AclOperation]] = {
    _O.DESCRIBE: frozenset({_O.DESCRIBE, _O.READ, _O.WRITE, _O.DELETE, _O.ALTER}),
    _O.DESCRIBE_CONFIGS: frozenset({_O.DESCRIBE_CONFIGS, _O.ALTER_CONFIGS}),
}


def implies(acl_operation: AclOperation, permission: AclPermissionType, wanted: AclOperation) -> bool:
    """Whether an ACL entry of ``acl_operation`` and ``permission`` speaks about an action ``wanted``."""
    if acl_operation == _O.ALL:
        return True
    if permission == AclPermissionType.ALLOW and wanted in _IMPLIED_BY:
        return acl_operation in _IMPLIED_BY[wanted]
    return acl_operation == wanted


def authorized_operations_bits(operations) -> int:
    """Kafka's ``Utils.to32BitField``: bit ``code`` set for each operation."""
    return sum(1 << int(op) for op in set(operations))


@dataclass(frozen=True, slots=True)
class ResourcePattern:
    resource_type: ResourceType
    name: str
    pattern_type: PatternType

    def __str__(self) -> str:
        return f"{self.resource_type.title}:{self.pattern_type.name}:{self.name}"


@dataclass(frozen=True, slots=True)
class AclBinding:
    """One ACL: a resource pattern and an access control entry (principal, host, operation, permission)."""

    pattern: ResourcePattern
    principal: str
    host: str
    operation: AclOperation
    permission_type: AclPermissionType

    def to_json(self) -> dict:
        return {"resource_type": int(self.pattern.resource_type), "name": self.pattern.name,
                "pattern_type": int(self.pattern.pattern_type), "principal": self.principal, "host": self.host,
                "operation": int(self.operation), "permission_type": int(self.permission_type)}

    @classmethod
    def from_json(cls, d: dict) -> AclBinding:
        return cls(ResourcePattern(ResourceType(d["resource_type"]), d["name"], PatternType(d["pattern_type"])),
                   d["principal"], d["host"], AclOperation(d["operation"]), AclPermissionType(d["permission_type"]))

    def __str__(self) -> str:  # Kafka 4.4's StandardAcl.toString (a Java record's)
        p = self.pattern
        return (f"StandardAcl[resourceType={p.resource_type.name}, resourceName={p.name}, "
                f"patternType={p.pattern_type.name}, principal={self.principal}, host={self.host}, "
                f"operation={self.operation.name}, permissionType={self.permission_type.name}]")


@dataclass(frozen=True, slots=True)
class AclBindingFilter:
    """Kafka's AclBindingFilter: None (name, principal, host) and ANY match anything; MATCH also matches the
    wildcard and prefixed patterns that cover the name."""

    resource_type: ResourceType
    name: str | None
    pattern_type: PatternType
    principal: str | None
    host: str | None
    operation: AclOperation
    permission_type: AclPermissionType

    @property
    def unknown(self) -> bool:
        return self.resource_type == ResourceType.UNKNOWN or self.pattern_type == PatternType.UNKNOWN \
            or self.operation == AclOperation.UNKNOWN or self.permission_type == AclPermissionType.UNKNOWN

    def matches_pattern(self, pattern: ResourcePattern) -> bool:
        if self.resource_type != ResourceType.ANY and self.resource_type != pattern.resource_type:
            return False
        if self.pattern_type not in (PatternType.ANY, PatternType.MATCH) and self.pattern_type != pattern.pattern_type:
            return False
        if self.name is None:
            return True
        if self.pattern_type in (PatternType.ANY, pattern.pattern_type):
            return self.name == pattern.name
        if pattern.pattern_type == PatternType.LITERAL:
            return self.name == pattern.name or pattern.name == WILDCARD_RESOURCE
        return self.name.startswith(pattern.name)  # PREFIXED

    def matches(self, binding: AclBinding) -> bool:
        if not self.matches_pattern(binding.pattern):
            return False
        if self.principal is not None and self.principal != binding.principal:
            return False
        if self.host is not None and self.host != binding.host:
            return False
        if self.operation != AclOperation.ANY and self.operation != binding.operation:
            return False
        return self.permission_type == AclPermissionType.ANY or self.permission_type == binding.permission_type
