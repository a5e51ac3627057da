"""The sentinel of authorized-operation fields that were not asked for (the bit sets themselves come from
``pykbroker.security.auth_helper.authorized_operations``)."""

from __future__ import annotations

from replication.metadata.acl import AclOperation

__all__ = ["AUTHORIZED_OPERATIONS_OMITTED", "AclOperation"]

# Kafka's sentinel for "authorized operations were not requested".
AUTHORIZED_OPERATIONS_OMITTED = -2147483648
