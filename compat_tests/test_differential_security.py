"""SASL answers judged by Apache Kafka 4.4: the same raw SaslHandshake / SaslAuthenticate exchanges against a
Kafka and a pykbroker configured alike (PLAIN and SCRAM on a SASL_PLAINTEXT listener, and a second one
with connections.max.reauth.ms), compared observation by observation; differences fail unless listed in
``differential_allowlist.ALLOWED`` under the scenario "security". On one node, and with
PYKBROKER_SLOW_DIFFERENTIAL=1 (``make differential-cluster``) on 3 pykbroker brokers (ZooKeeper) against a 3-node
Kafka 4.4 KRaft cluster with the same listeners on every node: there the SCRAM credentials are stored through
broker 1 and the exchanges made with broker 2.
"""

from __future__ import annotations

import struct
import time
from collections.abc import Iterator

import pytest

from compat_tests.conftest import assert_same_observations, differential_params
from pykbroker.security.client import ScramClient, plain_token, salted_password
from pykbroker.testing import BrokerProcess, RawClient, free_port
from wire import ErrorCode
from wire.messages import (
    AlterUserScramCredentialsRequest,
    ApiVersionsRequest,
    DescribeClusterRequest,
    MetadataRequest,
    SaslAuthenticateRequest,
    SaslHandshakeRequest,
)
from wire.messages.alter_user_scram_credentials_request import ScramCredentialUpsertion

PLAIN_JAAS = ('org.apache.kafka.common.security.plain.PlainLoginModule required username="admin" '
              'password="admin-secret" user_admin="admin-secret" user_alice="alice-secret";')
SCRAM_JAAS = 'org.apache.kafka.common.security.scram.ScramLoginModule required username="admin" password="x";'
MECHANISMS = ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512")
REAUTH_MS = 60000
USERS = {"alice": "alice-scram", "bob": "bob-scram"}


def security_overrides() -> dict[str, str]:
    """The SASL part of both brokers' configuration (listeners are added per broker)."""
    out = {"sasl.enabled.mechanisms": ",".join(MECHANISMS),
           "listener.name.reauth.connections.max.reauth.ms": str(REAUTH_MS)}
    for listener in ("sasl_plaintext", "reauth"):
        out[f"listener.name.{listener}.plain.sasl.jaas.config"] = PLAIN_JAAS
        for m in MECHANISMS[1:]:
            out[f"listener.name.{listener}.{m.lower()}.sasl.jaas.config"] = SCRAM_JAAS
    return out


def add_scram_users(bootstrap: str) -> None:
    with RawClient(bootstrap, timeout=30) as c:
        for user, password in USERS.items():
            for mechanism, mtype in (("SCRAM-SHA-256", 1), ("SCRAM-SHA-512", 2)):
                salt = f"salt-of-{user}".encode()
                upsert = ScramCredentialUpsertion(name=user, mechanism=mtype, iterations=4096, salt=salt,
                                                  salted_password=salted_password(mechanism, password, salt, 4096))
                result = c.request(AlterUserScramCredentialsRequest(deletions=[], upsertions=[upsert]), 0).results[0]
                assert result.error_code == ErrorCode.NONE, result.error_message


def wait_for_scram(address: str, timeout: float = 30.0) -> None:
    """Kafka's brokers learn credentials from the metadata log a moment after the controller stores them."""
    deadline = time.monotonic() + timeout
    while True:
        with RawClient(address, timeout=10) as c:
            if scram(c, "SCRAM-SHA-512", "bob", USERS["bob"])[0] == ErrorCode.NONE:
                return
        if time.monotonic() > deadline:
            raise TimeoutError("SCRAM credentials never became usable")
        time.sleep(0.2)


def _kafka_jars():
    import shutil

    from compat_tests.jvm.kafka_broker import jars_dir

    if shutil.which("java") is None:
        pytest.skip("java is not installed: the differential tests need Apache Kafka from the Maven jars")
    jars = jars_dir()
    assert jars is not None, "compat_tests/jvm/fetch_jars.sh could not fetch Kafka's jars"
    return jars


@pytest.fixture(scope="module")
def kafka(tmp_path_factory) -> Iterator[tuple[str, str, str]]:
    from compat_tests.jvm.kafka_broker import KafkaBroker

    kb = KafkaBroker(_kafka_jars(), root=tmp_path_factory.mktemp("kafka-sasl"))
    controller, sasl_port, reauth_port = free_port(), free_port(), free_port()
    kb.overrides.update({
        "listeners": f"PLAINTEXT://127.0.0.1:{kb.port},CONTROLLER://127.0.0.1:{controller},"
                     f"SASL_PLAINTEXT://127.0.0.1:{sasl_port},REAUTH://127.0.0.1:{reauth_port}",
        "advertised.listeners": f"PLAINTEXT://127.0.0.1:{kb.port},SASL_PLAINTEXT://127.0.0.1:{sasl_port},"
                                f"REAUTH://127.0.0.1:{reauth_port}",
        "controller.quorum.voters": f"1@127.0.0.1:{controller}",
        "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT,"
                                          "SASL_PLAINTEXT:SASL_PLAINTEXT,REAUTH:SASL_PLAINTEXT",
        **security_overrides()})
    try:
        kb.start()
        add_scram_users(kb.bootstrap)
        wait_for_scram(f"127.0.0.1:{sasl_port}")
        yield kb.bootstrap, f"127.0.0.1:{sasl_port}", f"127.0.0.1:{reauth_port}"
    finally:
        kb.close()


@pytest.fixture(scope="module")
def pykbroker(tmp_path_factory) -> Iterator[tuple[str, str, str]]:
    port, sasl_port, reauth_port = free_port(), free_port(), free_port()
    overrides = {"listeners": f"PLAINTEXT://127.0.0.1:{port},SASL_PLAINTEXT://127.0.0.1:{sasl_port},"
                              f"REAUTH://127.0.0.1:{reauth_port}",
                 "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,SASL_PLAINTEXT:SASL_PLAINTEXT,"
                                                   "REAUTH:SASL_PLAINTEXT",
                 **security_overrides()}
    with BrokerProcess(tmp_path_factory.mktemp("pyk-sasl"), port=port, overrides=overrides) as b:
        add_scram_users(b.bootstrap)
        yield b.bootstrap, f"127.0.0.1:{sasl_port}", f"127.0.0.1:{reauth_port}"


LISTENERS = [("SASL_PLAINTEXT", "SASL_PLAINTEXT"), ("REAUTH", "SASL_PLAINTEXT")]


def _cluster_addresses(ports: list[dict[str, int]]) -> tuple[str, str, str]:
    """The credentials are stored through broker 1; the exchanges are made with broker 2, which learns them from
    the cluster (its controller's metadata log on Kafka, ZooKeeper on pykbroker)."""
    second = ports[1]
    wait_for_scram(f"127.0.0.1:{second['SASL_PLAINTEXT']}")
    return (f"127.0.0.1:{second['PLAINTEXT']}", f"127.0.0.1:{second['SASL_PLAINTEXT']}",
            f"127.0.0.1:{second['REAUTH']}")


@pytest.fixture(scope="module")
def kafka_cluster(tmp_path_factory) -> Iterator[tuple[str, str, str]]:
    """A 3-node Kafka 4.4 KRaft cluster with the same SASL listeners on every node."""
    from compat_tests import secured_clusters
    for _, ports in secured_clusters.kafka_cluster(_kafka_jars(), tmp_path_factory.mktemp("kafka-sasl-cluster"),
                                                   LISTENERS, security_overrides()):
        add_scram_users(f"127.0.0.1:{ports[0]['PLAINTEXT']}")
        yield _cluster_addresses(ports)


@pytest.fixture(scope="module")
def pykbroker_cluster(tmp_path_factory) -> Iterator[tuple[str, str, str]]:
    """3 pykbroker brokers (one ZooKeeper) with the same SASL listeners on every broker."""
    from compat_tests import secured_clusters
    for _, ports in secured_clusters.pykbroker_cluster(tmp_path_factory.mktemp("pyk-sasl-cluster"), LISTENERS,
                                                       security_overrides()):
        add_scram_users(f"127.0.0.1:{ports[0]['PLAINTEXT']}")
        yield _cluster_addresses(ports)


# -- one exchange per observation --------------------------------------------------------------------------
def closed(c: RawClient) -> bool:
    return c.is_closed_by_peer(3.0)


def plain(c: RawClient, token: bytes, version: int = 2, handshake_version: int = 1) -> tuple:
    h = c.request(SaslHandshakeRequest(mechanism="PLAIN"), handshake_version)
    a = c.request(SaslAuthenticateRequest(auth_bytes=token), version)
    return (h.error_code, list(h.mechanisms), a.error_code, a.error_message, bytes(a.auth_bytes),
            a.session_lifetime_ms if version >= 1 else None)


def scram(c: RawClient, mechanism: str, user: str, password: str, version: int = 2, extensions: str = "") -> tuple:
    h = c.request(SaslHandshakeRequest(mechanism=mechanism), 1)
    client = ScramClient(mechanism, user, password, extensions)
    first = c.request(SaslAuthenticateRequest(auth_bytes=client.first()), version)
    if first.error_code != ErrorCode.NONE:
        return first.error_code, first.error_message, h.error_code
    final = c.request(SaslAuthenticateRequest(auth_bytes=client.final(bytes(first.auth_bytes))), version)
    return (final.error_code, final.error_message, client.verify(bytes(final.auth_bytes)),
            first.session_lifetime_ms if version >= 1 else None, final.session_lifetime_ms if version >= 1 else None)


def observe(admin: str, sasl: str, reauth: str) -> dict[str, object]:
    out: dict[str, object] = {}

    def fresh(address: str = sasl) -> RawClient:
        return RawClient(address, timeout=10)

    with fresh() as c:
        v = c.request(ApiVersionsRequest(client_software_name="diff", client_software_version="1"), 3)
        h = c.request(SaslHandshakeRequest(mechanism="PLAIN"), 1)
        out["api versions then handshake"] = (v.error_code, h.error_code, list(h.mechanisms))
    for version in (0, 1):
        with fresh() as c:
            h = c.request(SaslHandshakeRequest(mechanism="GSSAPI"), version)
            out[f"unsupported mechanism v{version}"] = (h.error_code, list(h.mechanisms), closed(c))
    for version in (0, 1, 2):
        with fresh() as c:
            out[f"plain ok v{version}"] = plain(c, plain_token("alice", "alice-secret"), version)
            out[f"plain ok v{version} then metadata"] = len(c.request(MetadataRequest(topics=[]), 12).brokers)
    bad_plain = {"wrong password": plain_token("alice", "wrong"), "unknown user": plain_token("nobody", "x"),
                 "empty user": plain_token("", "x"), "empty password": plain_token("alice", ""),
                 "authzid": plain_token("alice", "alice-secret", authzid="admin"),
                 "two tokens": b"alice\x00alice-secret", "four tokens": b"a\x00alice\x00alice-secret\x00x"}
    for name, token in bad_plain.items():
        with fresh() as c:
            out[f"plain {name}"] = (*plain(c, token), closed(c))
    for mechanism in MECHANISMS[1:]:
        with fresh() as c:
            out[f"{mechanism} ok"] = scram(c, mechanism, "alice", USERS["alice"])
        with fresh() as c:
            out[f"{mechanism} wrong password"] = (*scram(c, mechanism, "alice", "nope"), closed(c))
        with fresh() as c:
            out[f"{mechanism} unknown user"] = (*scram(c, mechanism, "carol", "x"), closed(c))
    with fresh() as c:
        out["scram unknown extension"] = scram(c, "SCRAM-SHA-256", "bob", USERS["bob"], extensions="color=blue")
    with fresh() as c:
        out["scram tokenauth"] = (*scram(c, "SCRAM-SHA-256", "bob", USERS["bob"], extensions="tokenauth=true"),
                                  closed(c))
    with fresh() as c:
        c.request(SaslHandshakeRequest(mechanism="SCRAM-SHA-256"), 1)
        a = c.request(SaslAuthenticateRequest(auth_bytes=b"not scram"), 2)
        out["scram malformed first"] = (a.error_code, a.error_message, closed(c))
    with fresh() as c:
        c.send(MetadataRequest(topics=[]), 12)
        out["metadata before handshake"] = closed(c)
    with fresh() as c:
        c.send(SaslAuthenticateRequest(auth_bytes=plain_token("alice", "alice-secret")), 2)
        out["authenticate before handshake"] = closed(c)
    with fresh() as c:
        c.request(SaslHandshakeRequest(mechanism="PLAIN"), 1)
        d = c.request(DescribeClusterRequest(), 0)
        out["describe cluster after handshake"] = (d.error_code, closed(c))
    with fresh() as c:
        c.request(ApiVersionsRequest(), 0)
        c.send(ApiVersionsRequest(), 0)
        out["second api versions"] = closed(c)
    with fresh() as c:
        h = c.request(SaslHandshakeRequest(mechanism="PLAIN"), 0)
        token = plain_token("admin", "admin-secret")
        c.send_bytes(struct.pack(">i", len(token)) + token)
        out["v0 raw plain"] = (h.error_code, c.recv_frame(), len(c.request(MetadataRequest(topics=[]), 12).brokers))
    with fresh() as c:
        c.request(SaslHandshakeRequest(mechanism="PLAIN"), 0)
        token = plain_token("admin", "bad")
        c.send_bytes(struct.pack(">i", len(token)) + token)
        out["v0 raw plain bad"] = closed(c)
    with fresh() as c:
        plain(c, plain_token("alice", "alice-secret"))
        h = c.request(SaslHandshakeRequest(mechanism="PLAIN"), 1)
        out["handshake after authentication"] = (h.error_code, list(h.mechanisms))
        a = c.request(SaslAuthenticateRequest(auth_bytes=b""), 2)
        out["authenticate after authentication"] = (a.error_code, a.error_message)
    with fresh(reauth) as c:
        out["reauth listener plain v2"] = plain(c, plain_token("alice", "alice-secret"))
    with fresh(reauth) as c:
        out["reauth listener plain v0"] = plain(c, plain_token("alice", "alice-secret"), 0)
    with fresh(reauth) as c:
        out["reauth listener scram v1"] = scram(c, "SCRAM-SHA-512", "alice", USERS["alice"], 1)
    with fresh(reauth) as c:
        plain(c, plain_token("alice", "alice-secret"))
        time.sleep(1.1)
        out["reauthenticate same"] = plain(c, plain_token("alice", "alice-secret"))
        out["reauthenticate then metadata"] = len(c.request(MetadataRequest(topics=[]), 12).brokers)
    with fresh(reauth) as c:
        plain(c, plain_token("alice", "alice-secret"))
        time.sleep(1.1)
        out["reauthenticate other principal"] = (*plain(c, plain_token("admin", "admin-secret")), closed(c))
    with fresh(reauth) as c:
        plain(c, plain_token("alice", "alice-secret"))
        out["reauthenticate too soon"] = c.request(SaslHandshakeRequest(mechanism="PLAIN"), 1).error_code
    with fresh(admin) as c:
        h = c.request(SaslHandshakeRequest(mechanism="PLAIN"), 1)
        out["handshake on plaintext"] = (h.error_code, list(h.mechanisms))
    return out


@pytest.mark.parametrize(("mode", "scenario"), differential_params(["security"], (), ("security",)))
def test_sasl_answers_match_kafka(mode, scenario, request):
    prefix = "" if mode == "single" else "_cluster"
    expected = observe(*request.getfixturevalue(f"kafka{prefix}"))
    got = observe(*request.getfixturevalue(f"pykbroker{prefix}"))
    assert_same_observations(mode, scenario, expected, got)
