"""No secret reaches the broker's log: a broker with every secret-bearing feature (PLAIN and SCRAM passwords, an
encrypted TLS key store, delegation tokens under a secret key, ACLs) is driven through successful and failed
authentications, credential and token administration and denied requests, and then its whole log is searched
for every password, salted password, token HMAC (raw and base64) and key it was given or handed out.
"""

from __future__ import annotations

import base64
import re

import pytest

from pykbroker.security.certs import CertificateAuthority
from pykbroker.security.client import ScramClient, plain_token, salted_password
from pykbroker.testing import BrokerProcess, RawClient
from wire.messages import (
    AlterUserScramCredentialsRequest,
    CreateDelegationTokenRequest,
    DescribeConfigsRequest,
    IncrementalAlterConfigsRequest,
    MetadataRequest,
    RenewDelegationTokenRequest,
    SaslAuthenticateRequest,
    SaslHandshakeRequest,
)
from wire.messages.alter_user_scram_credentials_request import ScramCredentialUpsertion
from wire.messages.describe_configs_request import DescribeConfigsResource
from wire.messages.incremental_alter_configs_request import AlterableConfig, AlterConfigsResource

PLAIN_PASSWORD = "plain-Pa55-word"
WRONG_PASSWORD = "wrong-Pa55-word"
SCRAM_PASSWORD = "scram-Pa55-word"
KEYSTORE_PASSWORD = "keystore-Pa55-word"
TOKEN_SECRET = "token-Secret-Key-42"
DYNAMIC_PASSWORD = "dynamic-Pa55-word"
SALT = b"salt-for-logs"


@pytest.fixture(scope="module")
def broker(tmp_path_factory):
    d = tmp_path_factory.mktemp("security-logs")
    ca = CertificateAuthority()
    names = ("PLAINTEXT", "SASL_PLAINTEXT", "SASL_SSL")
    jaas = ("org.apache.kafka.common.security.plain.PlainLoginModule required "
            f'user_alice="{PLAIN_PASSWORD}" user_admin="{PLAIN_PASSWORD}";')
    overrides = {"listeners": ",".join(f"{p}://127.0.0.1:0" for p in names),  # bound by the broker
                 "ssl.keystore.type": "PEM", "ssl.key.password": KEYSTORE_PASSWORD,
                 "ssl.keystore.location": str(ca.issue(CN="localhost").write_pem(d / "server.pem",
                                                                                 KEYSTORE_PASSWORD)),
                 "sasl.enabled.mechanisms": "PLAIN,SCRAM-SHA-256",
                 "listener.name.sasl_plaintext.plain.sasl.jaas.config": jaas,
                 "listener.name.sasl_ssl.plain.sasl.jaas.config": jaas,
                 **{f"listener.name.{n}.scram-sha-256.sasl.jaas.config":
                    "org.apache.kafka.common.security.scram.ScramLoginModule required;"
                    for n in ("sasl_plaintext", "sasl_ssl")},
                 "authorizer.class.name": "kafka.security.authorizer.AclAuthorizer",
                 "super.users": "User:ANONYMOUS;User:admin",
                 "delegation.token.secret.key": TOKEN_SECRET}
    with BrokerProcess(d / "data", port=0, overrides=overrides) as b:
        yield b, b.address("SASL_PLAINTEXT")


def plain(address: str, user: str, password: str) -> RawClient:
    c = RawClient(address, timeout=15)
    c.request(SaslHandshakeRequest(mechanism="PLAIN"), 1)
    c.request(SaslAuthenticateRequest(auth_bytes=plain_token(user, password)), 2)
    return c


def scram(address: str, user: str, password: str, extensions: str = "") -> None:
    with RawClient(address, timeout=15) as c:
        c.request(SaslHandshakeRequest(mechanism="SCRAM-SHA-256"), 1)
        client = ScramClient("SCRAM-SHA-256", user, password, extensions)
        first = c.request(SaslAuthenticateRequest(auth_bytes=client.first()), 2)
        if first.error_code == 0:
            c.request(SaslAuthenticateRequest(auth_bytes=client.final(bytes(first.auth_bytes))), 2)


def test_no_secret_is_logged(broker):
    b, sasl = broker
    salted = salted_password("SCRAM-SHA-256", SCRAM_PASSWORD, SALT, 4096)
    with RawClient(b.bootstrap) as c:
        c.request(AlterUserScramCredentialsRequest(deletions=[], upsertions=[ScramCredentialUpsertion(
            name="carol", mechanism=1, iterations=4096, salt=SALT, salted_password=salted)]), 0)
        c.request(IncrementalAlterConfigsRequest(resources=[AlterConfigsResource(
            resource_type=4, resource_name="1", configs=[AlterableConfig(
                name="listener.name.sasl_ssl.ssl.key.password", config_operation=0, value=DYNAMIC_PASSWORD)])],
            validate_only=False), 1)
        c.request(DescribeConfigsRequest(resources=[DescribeConfigsResource(resource_type=4, resource_name="1",
                                                                            configuration_keys=None)],
                                         include_synonyms=True, include_documentation=False), 4)
    scram(sasl, "carol", SCRAM_PASSWORD)
    scram(sasl, "carol", WRONG_PASSWORD)
    plain(sasl, "alice", WRONG_PASSWORD).close()
    with plain(sasl, "alice", PLAIN_PASSWORD) as c:
        c.request(MetadataRequest(topics=None), 12)  # denied topics are logged by the authorizer
        token = c.request(CreateDelegationTokenRequest(renewers=[], max_lifetime_ms=-1), 3)
        assert token.error_code == 0
        hmac = bytes(token.hmac)
        c.request(RenewDelegationTokenRequest(hmac=hmac, renew_period_ms=1000), 2)
        c.request(RenewDelegationTokenRequest(hmac=b"\x01" * 64, renew_period_ms=1000), 2)
    scram(sasl, token.token_id, base64.b64encode(hmac).decode(), "tokenauth=true")
    scram(sasl, token.token_id, WRONG_PASSWORD, "tokenauth=true")

    log = b.log()
    assert "SASL authentication succeeded" in log or "succeeded for" in log  # the log is the broker's
    secrets = {"PLAIN password": PLAIN_PASSWORD, "wrong password": WRONG_PASSWORD, "SCRAM password": SCRAM_PASSWORD,
               "key store password": KEYSTORE_PASSWORD, "token secret key": TOKEN_SECRET,
               "dynamic password": DYNAMIC_PASSWORD, "salted password (hex)": salted.hex(),
               "salted password (base64)": base64.b64encode(salted).decode(),
               "token HMAC (base64)": base64.b64encode(hmac).decode(), "token HMAC (hex)": hmac.hex()}
    leaked = {what: [line for line in log.splitlines() if secret in line] for what, secret in secrets.items()}
    assert not any(leaked.values()), {k: v for k, v in leaked.items() if v}
    assert re.search(r"Principal = User:alice is Denied operation = \w+ from host = 127\.0\.0\.1", log) or \
        "created delegation token" in log
