"""TLS listeners over real sockets: PEM and PKCS12 key stores, client certificates and their principal,
SASL_SSL, records fetched intact over TLS (the copy path, never sendfile), and start-up errors."""

from __future__ import annotations

import ssl
import time

import pytest

from pykbroker.config import Config, ConfigError
from pykbroker.security.certs import CertificateAuthority
from pykbroker.security.client import plain_token
from pykbroker.security.listeners import listener_security
from pykbroker.testing import BrokerProcess, RawClient
from wire import ErrorCode, build_simple_batch
from wire.messages import (
    AlterClientQuotasRequest,
    FetchRequest,
    MetadataRequest,
    ProduceRequest,
    SaslAuthenticateRequest,
    SaslHandshakeRequest,
)
from wire.messages.alter_client_quotas_request import EntityData, EntryData, OpData
from wire.messages.fetch_request import FetchPartition, FetchTopic
from wire.messages.produce_request import PartitionProduceData, TopicProduceData

CLIENT_DN = "CN=client-one,O=pykbroker,C=NL"
PLAIN_JAAS = ('org.apache.kafka.common.security.plain.PlainLoginModule required user_alice="alice-secret" '
              'user_quota="quota-secret";')


@pytest.fixture(scope="module")
def ca() -> CertificateAuthority:
    return CertificateAuthority()


@pytest.fixture(scope="module")
def tls_broker(tmp_path_factory, ca):
    """A broker with PLAINTEXT, SSL (PEM file), CERTS (PKCS12, client auth required) and SASL_SSL (inline PEM)."""
    d = tmp_path_factory.mktemp("tls")
    server = ca.issue(CN="localhost")
    names = ("PLAINTEXT", "SSL", "CERTS", "SASL_SSL")
    (d / "ca.pem").write_text(ca.pem)
    overrides = {
        "listeners": ",".join(f"{n}://127.0.0.1:0" for n in names),  # bound by the broker, read back
        "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,SSL:SSL,CERTS:SSL,SASL_SSL:SASL_SSL",
        "ssl.keystore.type": "PEM",
        "ssl.keystore.location": str(server.write_pem(d / "server.pem", password="key-pass")),
        "ssl.key.password": "key-pass",
        "listener.name.certs.ssl.keystore.type": "PKCS12",
        "listener.name.certs.ssl.keystore.location": str(server.write_pkcs12(d / "server.p12", "store-pass")),
        "listener.name.certs.ssl.keystore.password": "store-pass",
        "listener.name.certs.ssl.key.password": "",
        "listener.name.certs.ssl.client.auth": "required",
        "listener.name.certs.ssl.truststore.type": "PEM",
        "listener.name.certs.ssl.truststore.location": str(d / "ca.pem"),
        "listener.name.sasl_ssl.ssl.keystore.key": server.key_pem.replace("\n", " "),
        "listener.name.sasl_ssl.ssl.keystore.certificate.chain": server.chain_pem.replace("\n", " "),
        "listener.name.sasl_ssl.ssl.key.password": "",
        "ssl.client.auth": "requested",  # broker-wide: not for SASL_SSL listeners (KIP-684)
        "ssl.truststore.type": "PEM", "ssl.truststore.location": str(d / "ca.pem"),
        "sasl.enabled.mechanisms": "PLAIN",
        "listener.name.sasl_ssl.plain.sasl.jaas.config": PLAIN_JAAS,
    }
    with BrokerProcess(d / "data", port=0, overrides=overrides) as b:
        yield b, {n: b.address(n) for n in names}
        assert b.alive, b.log()


def client_context(ca: CertificateAuthority, cert=None, tmp_path=None) -> ssl.SSLContext:
    ctx = ssl.create_default_context(cadata=ca.pem)
    if cert is not None:
        ctx.load_cert_chain(cert.write_pem(tmp_path / "client.pem"))
    return ctx


def throttle_of_big_produce(c: RawClient, topic: str) -> int:
    batch = build_simple_batch([b"x" * 50_000] * 4, timestamp=int(time.time() * 1000))
    r = c.request(ProduceRequest(acks=1, timeout_ms=5000, topic_data=[TopicProduceData(
        name=topic, partition_data=[PartitionProduceData(index=0, records=batch)])]), 9)
    assert r.responses[0].partition_responses[0].error_code == ErrorCode.NONE
    return r.throttle_time_ms


def user_quota(admin: RawClient, user: str, rate: float) -> None:
    r = admin.request(AlterClientQuotasRequest(validate_only=False, entries=[EntryData(
        entity=[EntityData(entity_type="user", entity_name=user)],
        ops=[OpData(key="producer_byte_rate", value=rate, remove=False)])]), 1)
    assert r.entries[0].error_code == ErrorCode.NONE


def test_ssl_listener_serves_and_advertises_itself(tls_broker, ca):
    _, addresses = tls_broker
    with RawClient(addresses["SSL"], ssl_context=client_context(ca)) as c:
        broker = c.request(MetadataRequest(topics=[]), 12).brokers[0]
        assert f"{broker.host}:{broker.port}" in (addresses["SSL"], f"localhost:{addresses['SSL'].split(':')[1]}")
        assert broker.port == int(addresses["SSL"].split(":")[1])


def test_records_come_back_intact_over_tls(tls_broker, ca):
    _, addresses = tls_broker
    with RawClient(addresses["PLAINTEXT"]) as admin:
        admin.wait_for_topics("tls-data", auto_create=True)
    values = [bytes([i]) * 300_000 for i in range(1, 4)]  # bigger than one TLS record and one socket write
    batch = build_simple_batch(values, timestamp=int(time.time() * 1000))
    with RawClient(addresses["SSL"], ssl_context=client_context(ca)) as c:
        r = c.request(ProduceRequest(acks=-1, timeout_ms=5000, topic_data=[TopicProduceData(
            name="tls-data", partition_data=[PartitionProduceData(index=0, records=batch)])]), 9)
        assert r.responses[0].partition_responses[0].error_code == ErrorCode.NONE
        fetched = c.request(FetchRequest(max_wait_ms=0, min_bytes=0, max_bytes=4 << 20, topics=[FetchTopic(
            topic="tls-data", partitions=[FetchPartition(partition=0, fetch_offset=0, partition_max_bytes=4 << 20)])]),
                            12)
        records = bytes(fetched.responses[0].partitions[0].records)
    assert len(records) == len(batch) and records[16:] == batch[16:]  # the batch, after offset and leader epoch


def test_client_certificate_is_the_principal_and_quotas_use_it(tls_broker, ca, tmp_path):
    _, addresses = tls_broker
    cert = ca.issue(server=False, C="NL", O="pykbroker", CN="client-one")
    with RawClient(addresses["PLAINTEXT"]) as admin:
        admin.wait_for_topics("tls-quota", auto_create=True)
        user_quota(admin, CLIENT_DN, 16_000.0)
    with RawClient(addresses["CERTS"], ssl_context=client_context(ca, cert, tmp_path)) as c:
        assert throttle_of_big_produce(c, "tls-quota") > 0
    with RawClient(addresses["SSL"], ssl_context=client_context(ca)) as anonymous:  # User:ANONYMOUS, no quota
        assert throttle_of_big_produce(anonymous, "tls-quota") == 0


def test_client_auth_required_refuses_clients_without_certificate(tls_broker, ca):
    b, addresses = tls_broker
    with pytest.raises((ssl.SSLError, ConnectionError)):
        with RawClient(addresses["CERTS"], ssl_context=client_context(ca)) as c:
            c.request(MetadataRequest(topics=[]), 12)  # TLS 1.3: the refusal arrives with the first read
    assert b.alive


def test_sasl_ssl_plain_and_user_quota(tls_broker, ca):
    _, addresses = tls_broker
    with RawClient(addresses["PLAINTEXT"]) as admin:
        admin.wait_for_topics("tls-sasl", auto_create=True)
        user_quota(admin, "quota", 16_000.0)
    for user, password, throttled in (("quota", "quota-secret", True), ("alice", "alice-secret", False)):
        with RawClient(addresses["SASL_SSL"], ssl_context=client_context(ca)) as c:
            assert c.request(SaslHandshakeRequest(mechanism="PLAIN"), 1).error_code == ErrorCode.NONE
            assert c.request(SaslAuthenticateRequest(auth_bytes=plain_token(user, password)), 2).error_code == 0
            assert (throttle_of_big_produce(c, "tls-sasl") > 0) == throttled


@pytest.mark.parametrize(("props", "message"), [
    ({"listeners": "SSL://127.0.0.1:0"}, "an SSL listener needs a key store"),
    ({"listeners": "SSL://127.0.0.1:0", "ssl.keystore.location": "/x.jks"}, "JKS key stores cannot be read"),
    ({"listeners": "OTHER://127.0.0.1:0"}, "not found in listener.security.protocol.map"),
    ({"listeners": "SASL_PLAINTEXT://127.0.0.1:0"}, "GSSAPI not served by pykbroker"),
    ({"listeners": "SASL_PLAINTEXT://127.0.0.1:0", "sasl.enabled.mechanisms": "PLAIN",
      "sasl.jaas.config": PLAIN_JAAS}, "listener.name.sasl_plaintext.plain.sasl.jaas.config: not set"),
    ({"listeners": "SASL_PLAINTEXT://127.0.0.1:0", "sasl.enabled.mechanisms": "PLAIN",
      "listener.name.sasl_plaintext.plain.sasl.jaas.config": "PlainLoginModule user_a=1;"}, "expected '<LoginModule>"),
])
def test_bad_security_configs_refuse_to_start(props, message):
    with pytest.raises(ConfigError, match=message):
        listener_security(Config(props))


def test_unknown_listener_property_is_refused():
    with pytest.raises(ConfigError, match="unknown property"):
        Config({"listener.name.sasl_plaintext.no.such.thing": "1"})


def test_a_per_broker_keystore_change_is_reloaded_for_new_connections(tmp_path, ca):
    """listener.name.<ssl listener>.ssl.keystore.location set per broker: new handshakes get the new
    certificate (Kafka's SslFactory reload); a store that cannot be read is refused and changes nothing."""
    from wire.messages import IncrementalAlterConfigsRequest
    from wire.messages.incremental_alter_configs_request import AlterableConfig, AlterConfigsResource

    first, second = ca.issue(CN="first"), ca.issue(CN="second")
    overrides = {"listeners": "PLAINTEXT://127.0.0.1:0,SSL://127.0.0.1:0",
                 "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,SSL:SSL", "ssl.keystore.type": "PEM",
                 "ssl.keystore.location": str(first.write_pem(tmp_path / "first.pem"))}

    def served_common_name() -> str:
        with RawClient(b.address("SSL"), ssl_context=client_context(ca)) as c:
            subject = dict(x[0] for x in c.sock.getpeercert()["subject"])
            return subject["commonName"]

    def alter(admin: RawClient, location: str) -> tuple[int, str | None]:
        r = admin.request(IncrementalAlterConfigsRequest(validate_only=False, resources=[AlterConfigsResource(
            resource_type=4, resource_name="1", configs=[
                AlterableConfig(name="listener.name.ssl.ssl.keystore.location", config_operation=0, value=location),
                AlterableConfig(name="listener.name.ssl.ssl.keystore.type", config_operation=0, value="PEM")])]), 1)
        return r.responses[0].error_code, r.responses[0].error_message

    with BrokerProcess(tmp_path / "data", port=0, overrides=overrides) as b, RawClient(b.bootstrap) as admin:
        assert served_common_name() == "first"
        with RawClient(b.address("SSL"), ssl_context=client_context(ca)) as open_before:
            assert alter(admin, str(second.write_pem(tmp_path / "second.pem"))) == (ErrorCode.NONE, None)
            assert served_common_name() == "second"
            assert open_before.request(MetadataRequest(topics=[]), 12).brokers  # open connections keep serving
        code, message = alter(admin, str(tmp_path / "missing.pem"))
        assert code == ErrorCode.INVALID_REQUEST and "SSLFactory" in message
        assert served_common_name() == "second"
        assert "reloaded the key and trust stores of listener SSL" in b.log()
