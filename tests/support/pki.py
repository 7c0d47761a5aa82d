"""A private certificate authority for tests that need real TLS: a CA in no system store (a
client trusts it only when told to, e.g. sslrootcert or SSL_CERT_FILE) and server certificates it
signs, all written as PEM files."""

from __future__ import annotations

import datetime
import ipaddress
from collections.abc import Sequence
from pathlib import Path
from typing import Any


class Authority:
    """The CA's certificate is `ca_file` (folder/ca.pem); `issue` writes a server certificate."""

    def __init__(self, folder: Path, common_name: str = "SessionVault test CA") -> None:
        from cryptography import x509
        from cryptography.hazmat.primitives import hashes
        from cryptography.hazmat.primitives.asymmetric import ec
        from cryptography.x509.oid import NameOID

        self.folder = folder
        self._now = datetime.datetime.now(datetime.UTC)
        self._key = ec.generate_private_key(ec.SECP256R1())
        self._name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name)])
        ca = (
            self._builder(self._name)
            .public_key(self._key.public_key())
            .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
            .add_extension(
                x509.KeyUsage(False, False, False, False, False, True, True, False, False), critical=True
            )
            .add_extension(x509.SubjectKeyIdentifier.from_public_key(self._key.public_key()), critical=False)
            .sign(self._key, hashes.SHA256())
        )
        self.ca_file = _write_cert(ca, folder / "ca.pem")

    def _builder(self, subject: Any) -> Any:
        from cryptography import x509

        return (
            x509.CertificateBuilder()
            .subject_name(subject)
            .issuer_name(self._name)
            .serial_number(x509.random_serial_number())
            .not_valid_before(self._now - datetime.timedelta(days=1))
            .not_valid_after(self._now + datetime.timedelta(days=2))
        )

    def issue(self, stem: str, names: Sequence[str]) -> tuple[Path, Path]:
        """A server certificate for `names` (host names or IP addresses; the first is also its
        common name): folder/<stem>.crt and its key, folder/<stem>.key."""
        from cryptography import x509
        from cryptography.hazmat.primitives import hashes, serialization
        from cryptography.hazmat.primitives.asymmetric import ec
        from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

        key = ec.generate_private_key(ec.SECP256R1())
        cert = (
            self._builder(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, names[0])]))
            .public_key(key.public_key())
            .add_extension(x509.SubjectAlternativeName([_general_name(n) for n in names]), critical=False)
            .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
            .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
            .add_extension(
                x509.AuthorityKeyIdentifier.from_issuer_public_key(self._key.public_key()), critical=False
            )
            .sign(self._key, hashes.SHA256())
        )
        key_file = self.folder / f"{stem}.key"
        key_file.write_bytes(
            key.private_bytes(
                serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
            )
        )
        return _write_cert(cert, self.folder / f"{stem}.crt"), key_file


def _general_name(name: str) -> Any:
    from cryptography import x509

    try:
        return x509.IPAddress(ipaddress.ip_address(name))
    except ValueError:
        return x509.DNSName(name)


def _write_cert(cert: Any, path: Path) -> Path:
    from cryptography.hazmat.primitives import serialization

    path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    return path
