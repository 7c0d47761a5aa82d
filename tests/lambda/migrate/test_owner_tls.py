"""TLS and SCRAM to the owner: a server asking for a cleartext or md5 password is refused, a
certificate from no trusted CA or for another host ends the connection before any password, and
the defaults are verify-full with the system CAs."""

from __future__ import annotations

import secrets
import socket
import ssl
import struct
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import psycopg
import pytest

from ...support.lambda_events import SETTINGS
from ...support.pki import Authority
from ..conftest import ROOT
from .conftest import (
    SSLMODE,
    Stack,
    assert_untouched,
    event,
    run,
)

# ---------------------------------------------------------------- TLS and SCRAM to the owner


def test_a_server_asking_for_a_cleartext_or_md5_password_is_refused(cluster, cfn, stack, seen):
    """pg_hba.conf authenticates these two owners with `password` and `md5`; the function
    requires SCRAM (require_auth=scram-sha-256), so it never answers either challenge."""
    for user in ("owner_cleartext", "owner_md5"):
        dbname = cluster.fresh_database(owner=user)
        stack.set_owner(cluster.owner_url(dbname, user=user))
        run(event("Create", cfn, stack.props))
        answer = cfn.last()
        assert answer["Status"] == "FAILED", user
        assert answer["Reason"].startswith("could not connect to the database owner's host 127.0.0.1:")
        # libpq: "server requested a cleartext password" / "... a hashed password"
        assert "server requested a" in answer["Reason"]
        assert "require_auth" in answer["Reason"] or "scram" in answer["Reason"].lower()
        assert_untouched(stack, seen, read=True)


@dataclass
class Pki:
    ca: Path  # a private CA: in no system store
    cert: Path  # 127.0.0.1 and localhost, signed by ca
    key: Path
    other_cert: Path  # db.elsewhere.example only, signed by ca
    other_key: Path


@pytest.fixture(scope="module")
def pki(tmp_path_factory: pytest.TempPathFactory) -> Pki:
    authority = Authority(tmp_path_factory.mktemp("pki"))
    cert, key = authority.issue("server", ["localhost", "127.0.0.1"])
    other_cert, other_key = authority.issue("other", ["db.elsewhere.example"])
    return Pki(authority.ca_file, cert, key, other_cert, other_key)


SSL_REQUEST = 80877103
GSSENC_REQUEST = 80877104
AUTH_CLEARTEXT, AUTH_MD5 = 3, 5


@dataclass
class FakeServer:
    """A PostgreSQL server as far as the password: TLS on request (with the given certificate),
    then the startup message, then the challenge `method` names. Records what each client sent."""

    port: int
    tls_handshakes: int = 0
    startups: list[dict[str, str]] = field(default_factory=list)
    password_messages: int = 0
    connections: int = 0


def _recv_exact(conn: Any, n: int) -> bytes:
    data = b""
    while len(data) < n:
        chunk = conn.recv(n - len(data))
        if not chunk:
            raise ConnectionError("closed")
        data += chunk
    return data


@pytest.fixture
def fake_server(pki: Pki) -> Iterator[Any]:
    """fake_server(cert, key, method) -> a running FakeServer."""
    servers: list[tuple[socket.socket, threading.Event, threading.Thread]] = []

    def start(cert: Path, key: Path, method: int) -> FakeServer:
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(cert, key)
        sock = socket.socket()
        sock.bind(("127.0.0.1", 0))
        sock.listen(8)
        sock.settimeout(0.1)
        record = FakeServer(sock.getsockname()[1])
        stop = threading.Event()

        def one(raw: socket.socket) -> None:
            conn: Any = raw
            conn.settimeout(5)
            try:
                while True:
                    (length,) = struct.unpack("!i", _recv_exact(conn, 4))
                    payload = _recv_exact(conn, length - 4)
                    (code,) = struct.unpack("!i", payload[:4])
                    if code == SSL_REQUEST:
                        conn.sendall(b"S")
                        conn = context.wrap_socket(conn, server_side=True)
                        record.tls_handshakes += 1
                    elif code == GSSENC_REQUEST:
                        conn.sendall(b"N")
                    else:
                        words = [w.decode() for w in payload[4:].split(b"\0")]
                        record.startups.append(dict(zip(words[0:-1:2], words[1::2], strict=False)))
                        break
                if method == AUTH_MD5:
                    conn.sendall(b"R" + struct.pack("!ii", 12, AUTH_MD5) + b"salt")
                else:
                    conn.sendall(b"R" + struct.pack("!ii", 8, AUTH_CLEARTEXT))
                if _recv_exact(conn, 1) == b"p":
                    record.password_messages += 1
            except (OSError, ConnectionError, ssl.SSLError):
                pass
            finally:
                conn.close()

        def serve() -> None:
            while not stop.is_set():
                try:
                    raw, _ = sock.accept()
                except TimeoutError:
                    continue
                except OSError:
                    return
                record.connections += 1
                one(raw)

        thread = threading.Thread(target=serve, daemon=True)
        thread.start()
        servers.append((sock, stop, thread))
        return record

    yield start
    for sock, stop, thread in servers:
        stop.set()
        thread.join(timeout=5)
        sock.close()


def _verified_config(stack: Stack) -> None:
    """The function as deployed: no SESSIONVAULT_OWNER_SSLMODE, so the default applies."""
    stack.monkeypatch.delenv(SSLMODE, raising=False)


def test_by_default_a_certificate_from_no_trusted_ca_ends_the_connection_before_any_password(
    cfn, stack, seen, pki, fake_server
):
    server = fake_server(pki.cert, pki.key, AUTH_CLEARTEXT)
    _verified_config(stack)
    stack.set_owner(
        f"postgresql://owner:pw-{secrets.token_hex(8)}@127.0.0.1:{server.port}/db?sslmode=require"
    )
    run(event("Create", cfn, stack.props))
    answer = cfn.last()
    assert answer["Status"] == "FAILED"
    assert "certificate verify failed" in answer["Reason"]
    assert "DatabaseCaBundle" in answer["Reason"]  # the hint: which CA bundle to give it
    assert server.connections == 1 and server.startups == [] and server.password_messages == 0
    assert_untouched(stack, seen, read=True)


def test_with_the_servers_ca_given_tls_is_verified_and_a_cleartext_challenge_still_refused(
    cfn, stack, seen, pki, fake_server
):
    """DatabaseCaBundle (the RDS bundle's slot) names the CA: the certificate verifies, the
    server asks for the password in clear, the function never sends it."""
    for method in (AUTH_CLEARTEXT, AUTH_MD5):
        server = fake_server(pki.cert, pki.key, method)
        _verified_config(stack)
        stack.configure(DatabaseCaBundle=str(pki.ca))
        stack.set_owner(f"postgresql://owner:pw@127.0.0.1:{server.port}/db")
        run(event("Create", cfn, stack.props))
        answer = cfn.last()
        assert answer["Status"] == "FAILED"
        assert server.tls_handshakes == 1 and [s.get("user") for s in server.startups] == ["owner"]
        assert server.password_messages == 0, "the password went to a server that did not ask for SCRAM"
        assert "server requested a" in answer["Reason"]
    assert_untouched(stack, seen, read=True)


def test_a_certificate_for_another_host_is_refused_even_from_the_trusted_ca(
    cfn, stack, seen, pki, fake_server
):
    server = fake_server(pki.other_cert, pki.other_key, AUTH_CLEARTEXT)
    _verified_config(stack)
    stack.configure(DatabaseCaBundle=str(pki.ca))
    stack.set_owner(f"postgresql://owner:pw@127.0.0.1:{server.port}/db?sslmode=disable")
    run(event("Create", cfn, stack.props))
    answer = cfn.last()
    assert answer["Status"] == "FAILED"
    assert "does not match host name" in answer["Reason"] or "certificate" in answer["Reason"]
    assert server.startups == [] and server.password_messages == 0  # sslmode=disable in the secret: ignored
    assert_untouched(stack, seen, read=True)


def test_the_owner_connection_defaults_to_verify_full_with_the_system_cas_and_scram():
    """What the deployed function passes to libpq when its environment says nothing about TLS:
    and a secret asking for less (sslmode=disable, another root, cleartext) changes none of it."""
    from sessionvault.jobs.provision import config as provision_config
    from sessionvault.jobs.provision import owner_connection
    from sessionvault.jobs.provision import secrets as provision_secrets

    unset = ("Host", "Port", "DbName", "PooledHost", "DatabaseCaBundle")
    config = provision_config.Config.from_env(
        {var: f"arn-{var}" for var in SETTINGS.values()} | {SETTINGS[key]: "" for key in unset}
    )
    assert (config.sslmode, config.sslrootcert) == ("verify-full", "")
    security = owner_connection.connection_security(config, Path("/nonexistent"))
    params, _ = owner_connection.owner_params(
        "postgresql://owner:pw@db.example:5432/app?sslmode=disable&sslrootcert=/tmp/x&require_auth=password",
        config,
        provision_secrets.Scrubber(),
        security,
    )
    info = psycopg.conninfo.conninfo_to_dict(owner_connection.owner_conninfo(params, 300_000))
    assert info["sslmode"] == "verify-full"
    assert info["require_auth"] == "scram-sha-256"
    assert Path(str(info["sslrootcert"])).is_file()  # the system store, as a file libpq can read
    assert info["host"] == "db.example"
    assert psycopg.pq.version() >= 160000  # require_auth needs libpq 16


def test_a_tls_setting_outside_the_known_ones_is_refused_before_any_secret_is_read(cfn, stack, seen):
    stack.monkeypatch.setenv(SSLMODE, "prefer")
    run(event("Create", cfn, stack.props))
    assert cfn.last()["Status"] == "FAILED"
    assert cfn.last()["Reason"] == "SESSIONVAULT_OWNER_SSLMODE must be one of verify-full, require, disable"
    assert_untouched(stack, seen)


def test_a_ca_bundle_missing_from_the_package_is_refused_before_any_secret_is_read(cfn, stack, seen):
    stack.monkeypatch.delenv(SSLMODE)
    run(event("Create", cfn, stack.configure(DatabaseCaBundle="rds-ca-bundle.pem")))
    reason = cfn.last()["Reason"]
    assert reason.startswith(
        "the DatabaseCaBundle file rds-ca-bundle.pem is not in the migrate function's code"
    )
    assert str(ROOT / "functions" / "migrate" / "rds-ca-bundle.pem") in reason
    assert_untouched(stack, seen)
