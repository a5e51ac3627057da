"""Throwaway certificates for tests and local trials: a CA, and server or client certificates it signs."""

from __future__ import annotations

import datetime
import ipaddress
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.hazmat.primitives.serialization import pkcs12
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID


@dataclass
class Issued:
    """A key and its certificate chain (leaf first), in PEM."""

    key_pem: str
    chain_pem: str
    key: ec.EllipticCurvePrivateKey
    cert: x509.Certificate

    def write_pem(self, path: Path, password: str | None = None) -> Path:
        """Key and chain in one file, as ``ssl.keystore.type=PEM`` reads it (key encrypted with ``password``)."""
        key = self.key_pem
        if password:
            key = self.key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                         serialization.BestAvailableEncryption(password.encode())).decode()
        path.write_text(key + self.chain_pem)
        return path

    def write_pkcs12(self, path: Path, password: str) -> Path:
        path.write_bytes(pkcs12.serialize_key_and_certificates(
            b"broker", self.key, self.cert, None, serialization.BestAvailableEncryption(password.encode())))
        return path


def _name(**attrs: str) -> x509.Name:
    oids = {"CN": NameOID.COMMON_NAME, "O": NameOID.ORGANIZATION_NAME, "OU": NameOID.ORGANIZATIONAL_UNIT_NAME,
            "C": NameOID.COUNTRY_NAME}
    return x509.Name([x509.NameAttribute(oids[k], v) for k, v in attrs.items()])


class CertificateAuthority:
    """A self-signed CA; ``issue`` signs server (with 127.0.0.1 and localhost) or client certificates."""

    def __init__(self, name: str = "pykbroker test CA") -> None:
        self.key = ec.generate_private_key(ec.SECP256R1())
        self.name = _name(CN=name)
        now = datetime.datetime.now(datetime.UTC)
        self.cert = (x509.CertificateBuilder().subject_name(self.name).issuer_name(self.name)
                     .public_key(self.key.public_key()).serial_number(x509.random_serial_number())
                     .not_valid_before(now - datetime.timedelta(days=1)).not_valid_after(now + datetime.timedelta(days=30))
                     .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
                     .sign(self.key, hashes.SHA256()))
        self.pem = self.cert.public_bytes(serialization.Encoding.PEM).decode()

    def issue(self, server: bool = True, **subject: str) -> Issued:
        key = ec.generate_private_key(ec.SECP256R1())
        now = datetime.datetime.now(datetime.UTC)
        builder = (x509.CertificateBuilder().subject_name(_name(**subject)).issuer_name(self.name)
                   .public_key(key.public_key()).serial_number(x509.random_serial_number())
                   .not_valid_before(now - datetime.timedelta(days=1)).not_valid_after(now + datetime.timedelta(days=30))
                   .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH if server
                                                         else ExtendedKeyUsageOID.CLIENT_AUTH]), critical=False))
        if server:
            builder = builder.add_extension(x509.SubjectAlternativeName([
                x509.DNSName("localhost"), x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]), critical=False)
        cert = builder.sign(self.key, hashes.SHA256())
        key_pem = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                    serialization.NoEncryption()).decode()
        chain = cert.public_bytes(serialization.Encoding.PEM).decode() + self.pem
        return Issued(key_pem, chain, key, cert)
