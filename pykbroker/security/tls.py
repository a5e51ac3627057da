"""TLS for SSL and SASL_SSL listeners: Kafka's ``ssl.*`` properties to an ``ssl.SSLContext``, and the
principal of a client certificate.

Key stores: PEM (``ssl.keystore.location`` to a file with the key and its chain, or inline
``ssl.keystore.key`` / ``ssl.keystore.certificate.chain``) and PKCS12 (read with ``cryptography``). Trust
stores: PEM (file or inline ``ssl.truststore.certificates``) and PKCS12. JKS, Kafka's default type, is a
Java format that cannot be read here: a listener configured with one fails at start with a clear error.
"""

from __future__ import annotations

import os
import re
import ssl
import tempfile
from pathlib import Path

from pykbroker.config import Config, ConfigError

_CLIENT_AUTH = {"required": ssl.CERT_REQUIRED, "requested": ssl.CERT_OPTIONAL, "none": ssl.CERT_NONE}
_TLS_VERSIONS = {"TLSv1": ssl.TLSVersion.TLSv1, "TLSv1.1": ssl.TLSVersion.TLSv1_1,
                 "TLSv1.2": ssl.TLSVersion.TLSv1_2, "TLSv1.3": ssl.TLSVersion.TLSv1_3}


def _prop(listener: str, name: str) -> str:
    """The property name to quote in errors (the listener's override when one is set)."""
    return f"listener.name.{listener.lower()}.{name}"


_PEM_BLOCK = re.compile(r"-----BEGIN ([A-Z0-9 ]+)-----(.*?)-----END \1-----", re.S)


def normalize_pem(text: str) -> str:
    """PEM blocks re-wrapped at 64 columns: Kafka accepts inline PEM on one line (a properties value), with the
    base64 broken by spaces or by nothing at all."""
    blocks = []
    for kind, body in _PEM_BLOCK.findall(text):
        b64 = "".join(body.split())
        lines = "\n".join(b64[i:i + 64] for i in range(0, len(b64), 64))
        blocks.append(f"-----BEGIN {kind}-----\n{lines}\n-----END {kind}-----\n")
    return "".join(blocks)


def _read(listener: str, name: str, path: str) -> bytes:
    try:
        return Path(path).read_bytes()
    except OSError as exc:
        raise ConfigError(f"{_prop(listener, name)}: cannot read {path}: {exc.strerror}") from None


def _pkcs12(listener: str, name: str, data: bytes, password: str | None):
    """(key, certificate, additional certificates) of a PKCS12 store."""
    from cryptography.hazmat.primitives.serialization import pkcs12

    try:
        return pkcs12.load_key_and_certificates(data, password.encode() if password else None)
    except ValueError as exc:
        raise ConfigError(f"{_prop(listener, name)}: cannot read the PKCS12 store: {exc}") from None


def _pem_of(certificates) -> str:
    from cryptography.hazmat.primitives.serialization import Encoding

    return "".join(c.public_bytes(Encoding.PEM).decode() for c in certificates if c is not None)


def _load_key_store(ctx: ssl.SSLContext, config: Config, listener: str) -> None:
    v = lambda name: config.listener_value(listener, name)  # noqa: E731
    kind, location = v("ssl.keystore.type"), v("ssl.keystore.location")
    key_password = v("ssl.key.password")
    inline_key, inline_chain = v("ssl.keystore.key"), v("ssl.keystore.certificate.chain")
    if inline_key or inline_chain:
        if kind != "PEM":
            raise ConfigError(f"{_prop(listener, 'ssl.keystore.key')}: inline keys need ssl.keystore.type=PEM")
        if not (inline_key and inline_chain):
            raise ConfigError(f"{_prop(listener, 'ssl.keystore.key')}: set both ssl.keystore.key and "
                              "ssl.keystore.certificate.chain")
        pem = (normalize_pem(inline_key) + normalize_pem(inline_chain)).encode()
    elif location is None:
        raise ConfigError(f"{_prop(listener, 'ssl.keystore.location')}: an SSL listener needs a key store")
    elif kind == "JKS":
        raise ConfigError(f"{_prop(listener, 'ssl.keystore.type')}: JKS key stores cannot be read by pykbroker; "
                          "use PEM or PKCS12")
    elif kind == "PKCS12":
        from cryptography.hazmat.primitives.serialization import (
            BestAvailableEncryption,
            Encoding,
            NoEncryption,
            PrivateFormat,
        )

        key, cert, extra = _pkcs12(listener, "ssl.keystore.location", _read(listener, "ssl.keystore.location",
                                                                             location), v("ssl.keystore.password"))
        if key is None or cert is None:
            raise ConfigError(f"{_prop(listener, 'ssl.keystore.location')}: the PKCS12 store holds no key entry")
        key_password = key_password or v("ssl.keystore.password")
        protect = BestAvailableEncryption(key_password.encode()) if key_password else NoEncryption()
        pem = key.private_bytes(Encoding.PEM, PrivateFormat.PKCS8, protect) + _pem_of([cert, *extra]).encode()
    else:
        pem = _read(listener, "ssl.keystore.location", location)
    # ssl.SSLContext loads certificates only from files: a private temporary file, removed at once.
    with tempfile.TemporaryDirectory(prefix="pykbroker-tls-") as tmp:
        path = os.path.join(tmp, "keystore.pem")
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "wb") as f:
            f.write(pem)
        try:
            ctx.load_cert_chain(path, password=key_password or None)
        except (ssl.SSLError, ValueError) as exc:
            raise ConfigError(f"{_prop(listener, 'ssl.keystore.location')}: cannot load the key and certificate "
                              f"chain (wrong ssl.key.password?): {exc}") from None


def _load_trust_store(ctx: ssl.SSLContext, config: Config, listener: str) -> None:
    v = lambda name: config.listener_value(listener, name)  # noqa: E731
    kind, location, inline = v("ssl.truststore.type"), v("ssl.truststore.location"), v("ssl.truststore.certificates")
    try:
        if inline:
            ctx.load_verify_locations(cadata=normalize_pem(inline))
        elif location is None:
            ctx.load_default_certs(ssl.Purpose.CLIENT_AUTH)
        elif kind == "JKS":
            raise ConfigError(f"{_prop(listener, 'ssl.truststore.type')}: JKS trust stores cannot be read by "
                              "pykbroker; use PEM or PKCS12")
        elif kind == "PKCS12":
            from cryptography.hazmat.primitives.serialization import pkcs12

            data = _read(listener, "ssl.truststore.location", location)
            password = v("ssl.truststore.password")
            try:
                store = pkcs12.load_pkcs12(data, password.encode() if password else None)
            except ValueError as exc:
                raise ConfigError(f"{_prop(listener, 'ssl.truststore.location')}: cannot read the PKCS12 store: "
                                  f"{exc}") from None
            certs = [c.certificate for c in store.additional_certs] + ([store.cert.certificate] if store.cert else [])
            ctx.load_verify_locations(cadata=_pem_of(certs))
        else:
            ctx.load_verify_locations(cadata=_read(listener, "ssl.truststore.location", location).decode())
    except ssl.SSLError as exc:
        raise ConfigError(f"{_prop(listener, 'ssl.truststore.location')}: cannot load trusted certificates: "
                          f"{exc}") from None


def server_ssl_context(config: Config, listener: str, protocol: str) -> ssl.SSLContext:
    """The TLS server context of listener ``listener`` (upper-case name) from its ``ssl.*`` properties.

    As in Kafka (KIP-684), a SASL_SSL listener asks for client certificates only when its own
    ``listener.name.<name>.ssl.client.auth`` says so; the broker-wide ``ssl.client.auth`` is for SSL listeners.
    """
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    versions = sorted(_TLS_VERSIONS[p] for p in config.listener_value(listener, "ssl.enabled.protocols")
                      if p in _TLS_VERSIONS)
    if not versions:
        raise ConfigError(f"{_prop(listener, 'ssl.enabled.protocols')}: none of TLSv1.2, TLSv1.3 is enabled")
    ctx.minimum_version, ctx.maximum_version = versions[0], versions[-1]
    ciphers = config.listener_value(listener, "ssl.cipher.suites")
    if ciphers:
        try:
            ctx.set_ciphers(":".join(ciphers))
        except ssl.SSLError:
            raise ConfigError(f"{_prop(listener, 'ssl.cipher.suites')}: no cipher suite can be used: "
                              f"{','.join(ciphers)}") from None
    if config.listener_value(listener, "ssl.principal.mapping.rules").strip() != "DEFAULT":
        raise ConfigError(f"{_prop(listener, 'ssl.principal.mapping.rules')}: only DEFAULT is served")
    _load_key_store(ctx, config, listener)
    client_auth = config.listener_value(listener, "ssl.client.auth")
    if protocol == "SASL_SSL" and "ssl.client.auth" not in config.listener_properties.get(listener.lower(), {}):
        client_auth = "none"
    ctx.verify_mode = _CLIENT_AUTH[client_auth]
    if ctx.verify_mode != ssl.CERT_NONE:
        _load_trust_store(ctx, config, listener)
    return ctx


def client_ssl_context(config: Config, listener: str) -> ssl.SSLContext:
    """A TLS client context for this broker's own listener ``listener``: the server's certificate chain is
    verified against the listener's trust store (``ssl.truststore.*``); the name is not checked, as the
    client connects by address. For the console, which talks to its broker as a Kafka client."""
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_REQUIRED
    _load_trust_store(ctx, config, listener)
    return ctx


def reload_stores(ctx: ssl.SSLContext, config: Config, listener: str, protocol: str) -> None:
    """Load ``listener``'s key store (and trust store, when clients are verified) from ``config`` into the live
    context, as Kafka's SslFactory reconfigures: new handshakes use them, open connections keep theirs. The
    new stores are checked on a fresh context first (ConfigError), so a bad store changes nothing. Trusted
    certificates are added to those already trusted (an SSLContext cannot forget one)."""
    check = server_ssl_context(config, listener, protocol)
    _load_key_store(ctx, config, listener)
    if check.verify_mode != ssl.CERT_NONE:
        _load_trust_store(ctx, config, listener)


def peer_certificate_principal(ssl_object: ssl.SSLObject | ssl.SSLSocket | None) -> str | None:
    """``User:<distinguished name>`` of a verified client certificate (RFC 2253 order, as Kafka's DEFAULT
    mapping rule gives it), or None when the client presented none."""
    if ssl_object is None:
        return None
    der = ssl_object.getpeercert(binary_form=True)
    if not der:
        return None
    from cryptography import x509

    return "User:" + x509.load_der_x509_certificate(der).subject.rfc4514_string()
