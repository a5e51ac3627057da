"""Who may use the schema registry: HTTP basic authentication against the broker's SCRAM users, and the broker's
ACLs, as Confluent's (``authentication.method=BASIC``, its topic-ACL authorizer) and Redpanda's registries do.

Authentication (``schema.registry.authentication.method``): ``NONE`` (every request is ``User:ANONYMOUS``) or
``BASIC``: ``Authorization: Basic`` with a user and password that match the user's SCRAM-SHA-256 or -512
credential (AlterUserScramCredentials, ``kafka-configs.sh --alter --entity-type users``); the principal is
``User:<name>``. Without valid credentials the answer is Confluent's 401, ``{"error_code": 401, "message":
"Unauthorized"}`` with a ``WWW-Authenticate`` challenge.

Authorization (``schema.registry.authorization.enable``, Redpanda's ``schema_registry_enable_authorization``,
with the broker's ``authorizer.class.name``): Kafka 4.4's ACLs have no subject resource, so a subject is
authorized as its topic, as Confluent's topic-ACL authorizer does: ``<topic>-value`` and ``<topic>-key``
(TopicNameStrategy) are the topic ``<topic>``, any other subject the topic of its own name. Reading a subject
(its versions, a lookup, a compatibility test) needs DESCRIBE on the topic (which READ and WRITE imply, so
producers and consumers both may); registering needs WRITE, deleting DELETE, its config and mode
DESCRIBE_CONFIGS to read and ALTER_CONFIGS to change; ``GET /subjects`` lists only the subjects the principal
may read. The global config and mode need ALTER_CONFIGS on the cluster to change. Schemas by id, the root,
``/schemas/types`` and ``/contexts`` need only authentication: a consumer deserializing a record knows only the
id. A refusal is Confluent's 403, error code 40301, naming the operation and the subject.
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import hashlib
import hmac
from collections import OrderedDict
from typing import Any

from replication.metadata.acl import AclOperation, ResourceType
from replication.metadata.credentials import SCRAM_MECHANISMS, credential_from_salted_password

__all__ = ["ANONYMOUS", "Access", "RegistrySecurity", "subject_topic"]

ANONYMOUS = "User:ANONYMOUS"
CLUSTER = "kafka-cluster"
# Successful logins remembered (user, password digest, credential) so a request costs no PBKDF2.
_CACHE_SIZE = 1024


class Access:
    """What a route needs: none (authentication only), on its subject, or on the cluster."""

    ANY = "any"
    SUBJECT_READ = "subject_read"
    SUBJECT_WRITE = "subject_write"
    SUBJECT_DELETE = "subject_delete"
    SUBJECT_CONFIG_READ = "subject_config_read"
    SUBJECT_CONFIG_WRITE = "subject_config_write"
    GLOBAL_CONFIG_WRITE = "global_config_write"


_OPERATIONS = {Access.SUBJECT_READ: AclOperation.DESCRIBE, Access.SUBJECT_WRITE: AclOperation.WRITE,
               Access.SUBJECT_DELETE: AclOperation.DELETE, Access.SUBJECT_CONFIG_READ: AclOperation.DESCRIBE_CONFIGS,
               Access.SUBJECT_CONFIG_WRITE: AclOperation.ALTER_CONFIGS,
               Access.GLOBAL_CONFIG_WRITE: AclOperation.ALTER_CONFIGS}
# Confluent's names of the operations in its 40301 message.
_NAMES = {Access.SUBJECT_READ: "Read", Access.SUBJECT_WRITE: "Write", Access.SUBJECT_DELETE: "Delete",
          Access.SUBJECT_CONFIG_READ: "DescribeConfigs", Access.SUBJECT_CONFIG_WRITE: "AlterConfigs",
          Access.GLOBAL_CONFIG_WRITE: "AlterConfigs"}


def subject_topic(subject: str) -> str:
    """The topic whose ACLs decide about ``subject`` (TopicNameStrategy's ``<topic>-value``/``-key``)."""
    for suffix in ("-value", "-key"):
        if subject.endswith(suffix) and len(subject) > len(suffix):
            return subject[: -len(suffix)]
    return subject


class RegistrySecurity:
    """The broker's users and ACLs as the registry applies them (``broker``: its metadata and authorizer)."""

    def __init__(self, broker: Any, basic: bool, authorization: bool) -> None:
        self.broker = broker
        self.basic = basic
        self.authorization = authorization
        self._logins: OrderedDict[tuple[str, bytes], Any] = OrderedDict()

    async def principal(self, authorization_header: str | None) -> str | None:
        """The request's principal, or None when BASIC is required and the credentials do not match."""
        if not self.basic:
            return ANONYMOUS
        scheme, _, token = (authorization_header or "").strip().partition(" ")
        if scheme.lower() != "basic":
            return None
        try:
            user, sep, password = base64.b64decode(token.strip(), validate=True).decode().partition(":")
        except (binascii.Error, UnicodeDecodeError):
            return None
        if not sep or not user:
            return None
        return f"User:{user}" if await self._password_matches(user, password) else None

    async def _password_matches(self, user: str, password: str) -> bool:
        from pykbroker.security.scram import stored_credentials

        for mechanism, (_type, hash_name) in SCRAM_MECHANISMS.items():
            credential = stored_credentials(self.broker.metadata, user, mechanism)
            if credential is None:
                continue
            cache_key = (user, hashlib.sha256(f"{mechanism}\0{password}".encode()).digest())
            if self._logins.get(cache_key) == credential:
                self._logins.move_to_end(cache_key)
                return True
            # PBKDF2 (thousands of HMACs) on a thread: wrong passwords are never cached and must not stall the loop.
            salted = await asyncio.to_thread(hashlib.pbkdf2_hmac, hash_name, password.encode(), credential.salt,
                                             credential.iterations)
            computed = credential_from_salted_password(mechanism, credential.iterations, credential.salt, salted)
            if hmac.compare_digest(computed.stored_key, credential.stored_key):
                self._logins[cache_key] = credential
                while len(self._logins) > _CACHE_SIZE:
                    self._logins.popitem(last=False)
                return True
        return False

    def allowed(self, principal: str, host: str, access: str, subject: str | None) -> bool:
        """May ``principal`` (connected from ``host``) do what ``access`` names (on ``subject``)?"""
        if not self.authorization or access == Access.ANY:
            return True
        authorizer = self.broker.authorizer
        if authorizer is None:
            return True
        if access == Access.GLOBAL_CONFIG_WRITE or subject is None:
            return bool(authorizer.authorize(principal, host, _OPERATIONS.get(access, AclOperation.ALTER_CONFIGS),
                                             ResourceType.CLUSTER, CLUSTER, "SchemaRegistry"))
        return bool(authorizer.authorize(principal, host, _OPERATIONS[access], ResourceType.TOPIC,
                                         subject_topic(subject), "SchemaRegistry"))

    @staticmethod
    def denied_message(principal: str, access: str, subject: str | None) -> str:
        """Confluent's 40301 message."""
        target = f"Subject: {subject}" if subject is not None and access != Access.GLOBAL_CONFIG_WRITE \
            else "Cluster: kafka-cluster"
        return f"User {principal} is denied operation {_NAMES.get(access, access)} on {target}"
