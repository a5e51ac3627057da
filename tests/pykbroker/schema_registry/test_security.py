"""The registry's security through Confluent's own client: HTTP basic authentication against the broker's SCRAM
users, the broker's ACLs deciding per subject (as its topic), all over https with the broker's key store."""

from __future__ import annotations

import asyncio
import time

import pytest
from confluent_kafka.admin import (
    AclBinding,
    AclOperation,
    AclPermissionType,
    AdminClient,
    ResourcePatternType,
    ResourceType,
    ScramCredentialInfo,
    ScramMechanism,
    UserScramCredentialUpsertion,
)
from confluent_kafka.schema_registry import Schema, SchemaRegistryClient
from confluent_kafka.schema_registry.error import SchemaRegistryError

from pykbroker.schema_registry.security import subject_topic
from pykbroker.security.certs import CertificateAuthority
from pykbroker.testing import BrokerProcess
from tests.pykbroker.schema_registry.test_serializers import USER_V1, USER_V2


def _error(call) -> SchemaRegistryError:
    with pytest.raises(SchemaRegistryError) as err:
        call()
    return err.value


def test_subject_topic_is_topic_name_strategys():
    assert [subject_topic(s) for s in ("orders-value", "orders-key", "-value", "com.x.User")] == [
        "orders", "orders", "-value", "com.x.User"]


def test_basic_authentication_acls_and_https(tmp_path, monkeypatch):
    ca = CertificateAuthority()
    ca_path = tmp_path / "ca.pem"
    ca_path.write_text(ca.pem)
    overrides = {"schema.registry.listeners": "https://127.0.0.1:0", "ssl.keystore.type": "PEM",  # any free port
                 "ssl.keystore.location": str(ca.issue(CN="localhost").write_pem(tmp_path / "server.pem")),
                 "schema.registry.authentication.method": "BASIC", "schema.registry.authorization.enable": "true",
                 "authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
                 "super.users": "User:ANONYMOUS;User:admin"}
    with BrokerProcess(tmp_path / "data", overrides=overrides) as broker:
        port = int(broker.schema_registry_url.rsplit(":", 1)[1])
        admin = AdminClient({"bootstrap.servers": broker.bootstrap})
        admin.alter_user_scram_credentials([
            UserScramCredentialUpsertion(user, ScramCredentialInfo(mechanism, 4096), f"{user}-pw".encode())
            for user, mechanism in [("admin", ScramMechanism.SCRAM_SHA_512), ("alice", ScramMechanism.SCRAM_SHA_256),
                                    ("bob", ScramMechanism.SCRAM_SHA_512)]])["alice"].result(timeout=10)
        acls = [AclBinding(ResourceType.TOPIC, "orders", ResourcePatternType.LITERAL, f"User:{user}", "*", op,
                           AclPermissionType.ALLOW)
                for user, op in [("alice", AclOperation.WRITE), ("bob", AclOperation.READ)]]
        for future in admin.create_acls(acls).values():
            future.result(timeout=10)

        def client(user_info: str | None) -> SchemaRegistryClient:
            conf = {"url": f"https://127.0.0.1:{port}", "ssl.ca.location": str(ca_path)}
            return SchemaRegistryClient({**conf, "basic.auth.user.info": user_info} if user_info else conf)

        admin_client, alice, bob = client("admin:admin-pw"), client("alice:alice-pw"), client("bob:bob-pw")
        deadline = time.monotonic() + 30
        while True:  # the registry listens once the broker has started; credentials replicate to it
            try:
                secret_id = admin_client.register_schema("secret-value", Schema(USER_V1, "AVRO"))
                break
            except Exception:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.2)
        for anyone in (client(None), client("alice:wrong"), client("nobody:x")):
            err = _error(anyone.get_subjects)
            assert (err.http_status_code, err.error_code, err.error_message) == (401, 401, "Unauthorized")
        # alice may WRITE the topic orders: she registers orders-value (and so may read it).
        orders_id = alice.register_schema("orders-value", Schema(USER_V1, "AVRO"))
        assert alice.get_latest_version("orders-value").schema_id == orders_id
        # bob only READs orders: he reads its subject and any schema by id, but registers nothing.
        assert bob.get_latest_version("orders-value").schema_id == orders_id
        assert bob.get_schema(secret_id).schema_str  # a consumer knows only the id
        err = _error(lambda: bob.register_schema("orders-value", Schema(USER_V2, "AVRO")))
        assert (err.http_status_code, err.error_code) == (403, 40301)
        assert err.error_message == "User User:bob is denied operation Write on Subject: orders-value"
        assert bob.get_subjects() == ["orders-value"]  # secret-value is not listed to him
        assert _error(lambda: bob.get_latest_version("secret-value")).error_code == 40301
        assert _error(lambda: alice.delete_subject("orders-value")).error_code == 40301
        assert _error(lambda: alice.set_compatibility(level="NONE")).error_code == 40301
        assert admin_client.get_subjects() == ["orders-value", "secret-value"]
        assert admin_client.set_compatibility(level="FULL") == {"compatibility": "FULL"}
        # The console's client of console.schema.registry.url logs in with the URL's user info.
        from pykbroker.console.schemas import RegistryUnavailable, RestRegistry

        monkeypatch.setenv("SSL_CERT_FILE", str(ca_path))
        console = RestRegistry(f"https://bob:bob-pw@127.0.0.1:{port}")
        assert console.url == f"https://127.0.0.1:{port}"
        assert asyncio.run(console.schema(orders_id)) is not None
        with pytest.raises(RegistryUnavailable, match=f"at https://127.0.0.1:{port} answered 401"):
            asyncio.run(RestRegistry(f"https://bob:nope@127.0.0.1:{port}").schema(orders_id))
        assert broker.alive
    assert f"schema registry: serving Confluent's Schema Registry API at https://127.0.0.1:{port}/" in broker.log()
