"""Client ID Metadata Documents (CIMD) against a real https server on 127.0.0.1 with a CA made
here (`cryptography`): the fetcher trusts that CA through its `ssl_context` parameter (never by
turning verification off), and may reach 127.0.0.1 only through its `allow` parameter; the
default policy refuses it. Covered: a good document (fetched once, cached, and the official MCP
client's whole flow with a URL client_id), a private address, a redirect, an oversized
document, a slow one, a client_id that is not the URL, a certificate nobody trusts, and what
a document may say."""

from __future__ import annotations

import contextlib
import ipaddress
import json
import ssl
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import httpx2
import psycopg
import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID
from mcp import Client
from mcp.client.auth import OAuthClientProvider
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.auth import OAuthClientMetadata
from pydantic import AnyUrl

from sessionvault.core import oauth
from sessionvault.db import oauth as store
from sessionvault.errors import DocumentError
from sessionvault.runtime import Runtime
from sessionvault.server.oauth import cimd
from sessionvault.server.oauth.endpoints import OAuthServer
from sessionvault.server.oauth.fetch_budget import FetchBudget

from ..conftest import ServerThread, make_user
from ..support import oauth as flow
from ..support.logs import catch_logs
from .test_oauth_flow import Browser, MemoryStorage

pytestmark = pytest.mark.anyio

NAME = "cimd.test"  # resolvable only through the test's resolver: the fetcher must connect to it


# --- a CA, a certificate, an https server ------------------------------------------------------


@dataclass(frozen=True)
class Pki:
    ca: Path
    cert: Path
    key: Path


def make_pki(folder: Path) -> Pki:
    now = datetime.now(UTC)
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "SessionVault test CA")])
    ca = (
        x509.CertificateBuilder()
        .subject_name(ca_name)
        .issuer_name(ca_name)
        .public_key(ca_key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - timedelta(minutes=5))
        .not_valid_after(now + timedelta(days=1))
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        .add_extension(
            x509.KeyUsage(
                digital_signature=True,
                content_commitment=False,
                key_encipherment=False,
                data_encipherment=False,
                key_agreement=False,
                key_cert_sign=True,
                crl_sign=True,
                encipher_only=False,
                decipher_only=False,
            ),
            critical=True,
        )
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(ca_key.public_key()), critical=False)
        .sign(ca_key, hashes.SHA256())
    )
    key = ec.generate_private_key(ec.SECP256R1())
    cert = (
        x509.CertificateBuilder()
        .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, NAME)]))
        .issuer_name(ca_name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - timedelta(minutes=5))
        .not_valid_after(now + timedelta(days=1))
        .add_extension(
            x509.SubjectAlternativeName(
                [x509.DNSName(NAME), x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]
            ),
            critical=False,
        )
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
        .add_extension(
            x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_key.public_key()), critical=False
        )
        .sign(ca_key, hashes.SHA256())
    )
    pki = Pki(folder / "ca.pem", folder / "cert.pem", folder / "key.pem")
    pki.ca.write_bytes(ca.public_bytes(serialization.Encoding.PEM))
    pki.cert.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    pki.key.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
        )
    )
    return pki


Route = Callable[[BaseHTTPRequestHandler, "DocumentServer"], None]


@dataclass
class DocumentServer:
    """An https server of metadata documents on 127.0.0.1, recording every path asked for."""

    pki: Pki
    routes: dict[str, Route] = field(default_factory=dict)
    hits: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        owner = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_GET(self) -> None:
                owner.hits.append(self.path)
                route = owner.routes.get(self.path)
                if route is None:
                    send(self, 404, b"{}")
                else:
                    # the fetcher may give up first: what some of these routes are for
                    with contextlib.suppress(BrokenPipeError, ConnectionResetError, ssl.SSLError):
                        route(self, owner)

            def log_message(self, *args: Any) -> None:
                pass

        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(str(self.pki.cert), str(self.pki.key))
        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.httpd.block_on_close = False
        self.httpd.socket = context.wrap_socket(self.httpd.socket, server_side=True)
        self.port = self.httpd.server_address[1]
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()

    def url(self, path: str, host: str = NAME) -> str:
        return f"https://{host}:{self.port}{path}"

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


def send(handler: BaseHTTPRequestHandler, status: int, body: bytes, **headers: str) -> None:
    handler.send_response(status)
    handler.send_header("Content-Type", "application/json")
    handler.send_header("Content-Length", str(len(body)))
    handler.send_header("Connection", "close")
    for name, value in headers.items():
        handler.send_header(name.replace("_", "-"), value)
    handler.end_headers()
    handler.wfile.write(body)


def document(url: str, **fields: Any) -> dict[str, Any]:
    return {
        "client_id": url,
        "client_name": "Metadata Document Client",
        "redirect_uris": [flow.CALLBACK],
        "grant_types": ["authorization_code", "refresh_token"],
        "response_types": ["code"],
        "token_endpoint_auth_method": "none",
        **fields,
    }


def serve_document(path: str, **fields: Any) -> Route:
    """A route answering the document whose client_id is its own URL (as the client asked it)."""

    def route(handler: BaseHTTPRequestHandler, server: DocumentServer) -> None:
        host = handler.headers["Host"].rsplit(":", 1)[0]
        body = json.dumps(document(server.url(path, host), **fields)).encode()
        send(handler, 200, body, Cache_Control="public, max-age=600")

    return route


def redirect(handler: BaseHTTPRequestHandler, server: DocumentServer) -> None:
    handler.send_response(302)
    handler.send_header("Location", "/good.json")
    handler.send_header("Content-Length", "0")
    handler.send_header("Connection", "close")
    handler.end_headers()


def oversized(handler: BaseHTTPRequestHandler, server: DocumentServer) -> None:
    padding = "x" * (100 * 1024)
    send(handler, 200, json.dumps({**document(server.url("/big.json")), "padding": padding}).encode())


def oversized_chunked(handler: BaseHTTPRequestHandler, server: DocumentServer) -> None:
    """No Content-Length to refuse up front: the cap holds while reading."""
    handler.send_response(200)
    handler.send_header("Transfer-Encoding", "chunked")
    handler.send_header("Connection", "close")
    handler.end_headers()
    chunk = b"x" * 8192
    for _ in range(20):  # 160 KB
        handler.wfile.write(b"%x\r\n%s\r\n" % (len(chunk), chunk))
    handler.wfile.write(b"0\r\n\r\n")


def trickle(handler: BaseHTTPRequestHandler, server: DocumentServer) -> None:
    """A byte every 200 ms: each read is quick, the whole never arrives within the cap."""
    body = json.dumps(document(server.url("/slow.json"))).encode()
    handler.send_response(200)
    handler.send_header("Content-Length", str(len(body)))
    handler.send_header("Connection", "close")
    handler.end_headers()
    for byte in body:
        handler.wfile.write(bytes([byte]))
        handler.wfile.flush()
        time.sleep(0.2)


def silent(handler: BaseHTTPRequestHandler, server: DocumentServer) -> None:
    time.sleep(5)


def mismatch(handler: BaseHTTPRequestHandler, server: DocumentServer) -> None:
    send(handler, 200, json.dumps(document(server.url("/someone-else.json"))).encode())


@pytest.fixture(scope="module")
def pki(tmp_path_factory: pytest.TempPathFactory) -> Pki:
    return make_pki(tmp_path_factory.mktemp("pki"))


@pytest.fixture(scope="module")
def documents(pki: Pki) -> Iterator[DocumentServer]:
    server = DocumentServer(pki)
    server.routes.update(
        {
            "/good.json": serve_document("/good.json"),
            "/flow.json": serve_document("/flow.json", client_name="CIMD Flow Client", scope="read write"),
            "/authorize.json": serve_document("/authorize.json"),
            "/redirect.json": redirect,
            "/big.json": oversized,
            "/big-chunked.json": oversized_chunked,
            "/slow.json": trickle,
            "/silent.json": silent,
            "/mismatch.json": mismatch,
        }
    )
    yield server
    server.close()


@pytest.fixture(autouse=True)
def _fresh_hits(documents: DocumentServer) -> None:
    documents.hits.clear()


def trusting(pki: Pki) -> ssl.SSLContext:
    return ssl.create_default_context(cafile=str(pki.ca))  # that CA only; hostnames checked


async def resolve_test_name(host: str, port: int) -> list[str]:
    return ["127.0.0.1"] if host == NAME else await cimd.system_resolver(host, port)


def loopback_too(ip: cimd.IPAddress) -> bool:
    """The tests' policy: the default's, and 127.0.0.1 (where the document server is)."""
    return ip == ipaddress.ip_address("127.0.0.1") or cimd.public_address(ip)


# The document server's port is its own (production's fetcher takes 443 only).
ANY_PORT = frozenset(range(1, 65536))


def fetcher(pki: Pki, **overrides: Any) -> cimd.Fetcher:
    values: dict[str, Any] = {
        "ssl_context": trusting(pki),
        "allow": loopback_too,
        "resolve": resolve_test_name,
        "ports": ANY_PORT,
    }
    values.update(overrides)
    return cimd.Fetcher(**values)


async def refused(f: cimd.Fetcher, url: str) -> str:
    with pytest.raises(DocumentError) as caught:
        await f.fetch(url)
    return caught.value.code


# --- the fetcher -------------------------------------------------------------------------------


async def test_a_good_document_is_fetched_over_the_checked_address_and_kept_to_what_we_use(
    pki: Pki, documents: DocumentServer
) -> None:
    url = documents.url("/good.json")  # https://cimd.test:<port>/...: only our resolver knows it
    got = await fetcher(pki).fetch(url)
    assert got.ttl_s == 600  # Cache-Control: max-age=600
    assert got.info == {
        "client_id": url,
        "client_name": "Metadata Document Client",
        "redirect_uris": [flow.CALLBACK],
        "token_endpoint_auth_method": "none",
        "response_types": ["code"],
        "grant_types": ["authorization_code", "refresh_token"],
    }
    assert documents.hits == ["/good.json"]
    by_ip = documents.url("/good.json", host="127.0.0.1")  # an IP literal: no DNS at all
    assert (await fetcher(pki).fetch(by_ip)).info["client_id"] == by_ip


@pytest.mark.parametrize("host", ["127.0.0.1", NAME])
async def test_the_default_policy_refuses_a_private_address_before_connecting(
    pki: Pki, documents: DocumentServer, host: str
) -> None:
    default = cimd.Fetcher(ssl_context=trusting(pki), resolve=resolve_test_name, ports=ANY_PORT)  # `allow`'s
    assert await refused(default, documents.url("/good.json", host=host)) == "address"
    assert documents.hits == []  # nothing was sent


async def test_one_private_answer_among_public_ones_refuses_the_fetch(
    pki: Pki, documents: DocumentServer
) -> None:
    async def rebinding(host: str, port: int) -> list[str]:
        return ["93.184.215.14", "127.0.0.1"]

    f = fetcher(pki, allow=cimd.public_address, resolve=rebinding)
    assert await refused(f, documents.url("/good.json")) == "address"
    assert documents.hits == []


async def test_a_redirect_is_not_followed(pki: Pki, documents: DocumentServer) -> None:
    assert await refused(fetcher(pki), documents.url("/redirect.json")) == "redirect"
    assert documents.hits == ["/redirect.json"]  # /good.json never asked for


@pytest.mark.parametrize("path", ["/big.json", "/big-chunked.json"])
async def test_an_oversized_document_is_refused(pki: Pki, documents: DocumentServer, path: str) -> None:
    assert await refused(fetcher(pki), documents.url(path)) == "size"


@pytest.mark.parametrize("path", ["/slow.json", "/silent.json"])
async def test_a_slow_document_runs_into_the_total_time_cap(
    pki: Pki, documents: DocumentServer, path: str
) -> None:
    started = time.monotonic()
    assert await refused(fetcher(pki, timeout_s=1.0), documents.url(path)) == "timeout"
    assert time.monotonic() - started < 2.5
    assert cimd.Fetcher().timeout_s == 5.0 and cimd.Fetcher().max_bytes == 64 * 1024  # production's


async def test_a_document_whose_client_id_is_not_its_url_is_refused(
    pki: Pki, documents: DocumentServer
) -> None:
    assert await refused(fetcher(pki), documents.url("/mismatch.json")) == "client_id"


async def test_a_certificate_from_a_ca_nobody_configured_is_refused(
    documents: DocumentServer, pki: Pki
) -> None:
    system_trust = fetcher(pki, ssl_context=None)  # the default: the system's trust store
    assert await refused(system_trust, documents.url("/good.json")) == "connect"


@pytest.mark.parametrize(
    "url",
    [
        "http://cimd.test/client.json",  # https only
        "https://cimd.test",  # a path is required
        "https://cimd.test/",
        "https://cimd.test/a/../client.json",
        "https://user@cimd.test/client.json",
        "https://cimd.test/client.json#x",
        "https://cimd.test/" + "a" * 600,
    ],
)
async def test_a_url_that_cannot_name_a_document_is_refused_without_a_fetch(url: str) -> None:
    assert await refused(cimd.Fetcher(), url) == "url"


def test_the_default_policy_refuses_every_internal_address_and_keeps_public_ones() -> None:
    internal = [
        "127.0.0.1", "10.1.2.3", "172.16.0.1", "192.168.1.1", "169.254.169.254", "169.254.170.2",
        "100.64.0.1", "0.0.0.0", "224.0.0.1", "255.255.255.255", "240.0.0.1",
        "::1", "::", "fd00:ec2::254", "fe80::1", "ff02::1", "fc00::1",
        "::ffff:127.0.0.1", "::ffff:169.254.169.254", "64:ff9b::a9fe:a9fe", "2002:7f00:1::1",
    ]  # fmt: skip
    for address in internal:
        assert not cimd.public_address(ipaddress.ip_address(address)), address
    for address in ("93.184.215.14", "8.8.8.8", "2606:4700:4700::1111"):
        assert cimd.public_address(ipaddress.ip_address(address)), address


URL = "https://app.example/client.json"


@pytest.mark.parametrize(
    ("change", "code"),
    [
        ({"client_id": URL + "?"}, "client_id"),
        ({"client_secret": "s"}, "secret"),
        ({"token_endpoint_auth_method": "client_secret_basic"}, "auth_method"),
        ({"redirect_uris": []}, "redirect_uris"),
        ({"redirect_uris": ["http://app.example/cb"]}, "redirect_uris"),  # http off loopback
        ({"redirect_uris": ["https://app.example"]}, "redirect_uris"),  # would be used as .../
        ({"redirect_uris": ["https://APP.example/cb"]}, "redirect_uris"),
        ({"grant_types": ["client_credentials"]}, "grant_types"),
        ({"scope": "admin"}, "scope"),
        ({"client_name": "n" * 101}, "client_name"),
    ],
)
def test_what_a_document_may_not_say(change: dict[str, Any], code: str) -> None:
    with pytest.raises(DocumentError) as caught:
        cimd.document_client(URL, {**document(URL), **change})
    assert caught.value.code == code


def test_a_document_keeps_only_the_fields_we_use() -> None:
    extra = {"logo_uri": "https://app.example/logo.png", "jwks": {"keys": []}, "contacts": ["x"]}
    info = cimd.document_client(URL, {**document(URL, scope="read"), **extra})
    assert set(info) == {
        "client_id",
        "client_name",
        "redirect_uris",
        "token_endpoint_auth_method",
        "response_types",
        "grant_types",
        "scope",
    }


async def test_only_port_443_is_fetched(pki: Pki, documents: DocumentServer) -> None:
    """A URL naming another port (22, 6379, an admin console's) was fetched like any other."""
    production_ports = cimd.Fetcher(ssl_context=trusting(pki), allow=loopback_too, resolve=resolve_test_name)
    assert production_ports.ports == frozenset({443})
    for url in (documents.url("/good.json"), f"https://{NAME}:22/x.json", f"https://{NAME}:8443/x.json"):
        assert await refused(production_ports, url) == "port"
    assert documents.hits == []  # nothing was sent
    explicit = f"https://{NAME}:443/x.json"  # 443 named is 443: past the port check (nothing listens)
    assert await refused(production_ports, explicit) == "connect"


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


async def test_every_fetch_is_charged_before_it_is_sent_and_a_failure_is_remembered(
    pki: Pki, documents: DocumentServer
) -> None:
    """Only documents that were fetched and stored counted against the registration caps, after
    the fetch: naming URLs that fail made fetches without end. Now each fetch is charged first,
    per address and server-wide, success or not, and a failed URL is answered from memory."""
    clock = Clock()
    budget = FetchBudget(per_hour=3, per_address=2, clock=clock)
    f = fetcher(pki, budget=budget)
    a, b, c = (oauth.digest(ip) for ip in ("203.0.113.1", "203.0.113.2", "203.0.113.3"))
    failing = documents.url("/mismatch.json")
    assert await refused_for(f, failing, a) == "client_id"  # charged (a: 1, all: 1), and it failed
    assert await refused_for(f, failing, a) == "failed_recently"  # from memory: not sent again
    assert documents.hits == ["/mismatch.json"]
    assert (await f.fetch(documents.url("/good.json"), a)).info  # a: 2, all: 2
    assert await refused_for(f, documents.url("/flow.json"), a) == "address_cap"
    assert (await f.fetch(documents.url("/flow.json"), b)).info  # b: 1, all: 3
    assert await refused_for(f, documents.url("/authorize.json"), c) == "server_cap"
    assert documents.hits == ["/mismatch.json", "/good.json", "/flow.json"]  # the refused: never sent
    clock.now += 3601  # an hour on: the caps are back, the failure long forgotten
    assert await refused_for(f, failing, c) == "client_id"
    assert documents.hits[-1] == "/mismatch.json"


async def refused_for(f: cimd.Fetcher, url: str, address: bytes) -> str:
    with pytest.raises(DocumentError) as caught:
        await f.fetch(url, address)
    return caught.value.code


# --- through the server ------------------------------------------------------------------------


async def test_a_caller_naming_failing_documents_runs_out_of_fetches(
    runtime: Runtime, pki: Pki, documents: DocumentServer
) -> None:
    """Through the app: the server gives its fetcher the registration caps, charged per fetch.
    One address naming more failing document URLs than its cap gets that many fetches, no more."""
    cap = runtime.settings.oauth_registrations_per_address
    thread = ServerThread(runtime)
    thread.server.config.app.surfaces.oauth = OAuthServer(runtime, fetcher(pki))  # a budget of its own
    _, challenge = flow.pkce()
    with thread as s, catch_logs() as logs:
        async with httpx2.AsyncClient(timeout=30) as http:
            for i in range(cap + 2):
                url = documents.url(f"/missing-{i}.json")  # each a 404: a failed fetch
                reply = await http.get(f"{flow.base_of(s.url)}/authorize", params=authorize(url, challenge))
                assert reply.status_code == 400
        logged = logs.requests_until(
            lambda lines: (
                sum(1 for x in lines if str(x.get("auth_reason", "")).startswith("cimd_")) >= cap + 2
            )
        )
    assert len(documents.hits) == cap
    reasons = [x["auth_reason"] for x in logged if str(x.get("auth_reason", "")).startswith("cimd_")]
    assert reasons == ["cimd_status"] * cap + ["cimd_address_cap"] * 2


@pytest.fixture(scope="module")
def cimd_server(runtime: Runtime, pki: Pki) -> Iterator[ServerThread]:
    """The real app, its OAuth server given a fetcher that trusts the test CA and may reach
    127.0.0.1 (the one thing that differs from production's)."""
    thread = ServerThread(runtime)
    app = thread.server.config.app
    app.surfaces.oauth = OAuthServer(runtime, fetcher(pki))
    with thread as s:
        yield s


async def test_the_official_client_uses_a_url_client_id_end_to_end(
    cimd_server: ServerThread, documents: DocumentServer, runtime: Runtime, pg: Any
) -> None:
    user = make_user(runtime, scopes=("read", "write", "delete"))
    url = documents.url("/flow.json")
    browser, storage = Browser(user.key), MemoryStorage()
    provider = OAuthClientProvider(
        cimd_server.url,
        OAuthClientMetadata(
            client_name="CIMD Flow Client",
            redirect_uris=[AnyUrl(flow.CALLBACK)],
            grant_types=["authorization_code", "refresh_token"],
            response_types=["code"],
            token_endpoint_auth_method="none",
        ),
        storage,
        redirect_handler=browser.redirect_handler,
        callback_handler=browser.callback_handler,
        client_metadata_url=url,
    )
    async with (
        httpx2.AsyncClient(auth=provider, timeout=30) as http,
        Client(streamable_http_client(cimd_server.url, http_client=http)) as client,
    ):
        tools = {t.name for t in (await client.list_tools()).tools}
    assert storage.client_info is not None and storage.client_info.client_id == url  # no registration
    assert storage.tokens is not None and storage.tokens.scope == "read write"  # the document's scope
    assert "delete_session" not in tools and "save_session" in tools
    assert "CIMD Flow Client" in browser.visited[0] and "cimd.test" in browser.visited[0]
    # authorize fetched it; the consent page and the token request used the cached row
    assert documents.hits == ["/flow.json"]
    with psycopg.connect(pg.owner_url) as conn:
        row = conn.execute(
            "SELECT secret_hash, document_expires_at - now() > interval '9 minutes',"
            " last_used_at IS NOT NULL FROM oauth_clients WHERE client_id = %s",
            (url,),
        ).fetchone()
    assert row == (None, True, True)


async def test_an_expired_document_is_fetched_again(
    cimd_server: ServerThread, documents: DocumentServer, pg: Any
) -> None:
    url = documents.url("/authorize.json")
    async with httpx2.AsyncClient(timeout=30) as http:
        _, challenge = flow.pkce()
        params = {**authorize(url, challenge)}
        base = flow.base_of(cimd_server.url)
        assert (await http.get(f"{base}/authorize", params=params)).status_code == 302
        assert (await http.get(f"{base}/authorize", params=params)).status_code == 302
        assert documents.hits == ["/authorize.json"]  # cached
        with psycopg.connect(pg.owner_url, autocommit=True) as conn:
            conn.execute("UPDATE oauth_clients SET document_expires_at = now() WHERE client_id = %s", (url,))
        assert (await http.get(f"{base}/authorize", params=params)).status_code == 302
    assert documents.hits == ["/authorize.json", "/authorize.json"]


def authorize(client_id: str, challenge: str, **extra: str) -> dict[str, str]:
    return {
        "response_type": "code",
        "client_id": client_id,
        "redirect_uri": flow.CALLBACK,
        "state": "s",
        "code_challenge": challenge,
        "code_challenge_method": "S256",
        **extra,
    }


@pytest.mark.parametrize(
    "near",
    [
        flow.CALLBACK + "/",
        # the same URL once parsed, so a registration's check would let these two pass:
        flow.CALLBACK.replace("http://", "HTTP://"),
        flow.CALLBACK.replace("127.0.0.1", "127.000.0.1"),
    ],
)
async def test_a_document_clients_redirect_uri_must_match_byte_for_byte(
    cimd_server: ServerThread, documents: DocumentServer, near: str
) -> None:
    _, challenge = flow.pkce()
    async with httpx2.AsyncClient(timeout=30) as http:
        base = flow.base_of(cimd_server.url)
        url = documents.url("/good.json")
        reply = await http.get(f"{base}/authorize", params=authorize(url, challenge, redirect_uri=near))
        exact = await http.get(f"{base}/authorize", params=authorize(url, challenge))
    assert reply.status_code == 400 and "location" not in reply.headers
    assert exact.status_code == 302 and "/consent?request=" in exact.headers["location"]


@pytest.mark.parametrize(
    ("path", "reason"),
    [("/redirect.json", "cimd_redirect"), ("/mismatch.json", "cimd_client_id"), ("/big.json", "cimd_size")],
)
async def test_a_refused_document_is_an_unknown_client_on_our_error_page(
    cimd_server: ServerThread,
    documents: DocumentServer,
    path: str,
    reason: str,
) -> None:
    _, challenge = flow.pkce()
    with catch_logs() as logs:
        async with httpx2.AsyncClient(timeout=30) as http:
            reply = await http.get(
                f"{flow.base_of(cimd_server.url)}/authorize", params=authorize(documents.url(path), challenge)
            )
        assert reply.status_code == 400 and "location" not in reply.headers
        assert reply.headers["content-type"].startswith("text/html") and "unknown client" in reply.text
        assert reason not in reply.text  # the reason is for the log only
        logged = logs.requests_until(lambda lines: any(x.get("auth_reason") == reason for x in lines))
    assert any(x.get("auth_reason") == reason for x in logged)


async def test_the_production_server_refuses_a_document_on_a_private_address(
    server: ServerThread, documents: DocumentServer, pg: Any
) -> None:
    """The session's server has the default fetcher: 127.0.0.1 is refused before connecting."""
    url = documents.url("/good.json", host="127.0.0.1")
    _, challenge = flow.pkce()
    async with httpx2.AsyncClient(timeout=30) as http:
        base = flow.base_of(server.url)
        reply = await http.get(f"{base}/authorize", params=authorize(url, challenge))
        metadata = (await http.get(f"{base}/.well-known/oauth-authorization-server")).json()
    assert reply.status_code == 400 and "location" not in reply.headers
    assert documents.hits == []
    assert metadata["client_id_metadata_document_supported"] is True
    with psycopg.connect(pg.owner_url) as conn:
        assert conn.execute("SELECT count(*) FROM oauth_clients WHERE client_id = %s", (url,)).fetchone() == (
            0,
        )


def test_the_database_stores_documents_within_the_registration_caps_and_never_over_a_registration(
    runtime: Runtime,
) -> None:
    url = f"https://app.example/{oauth.new_request_id()[:16]}.json"
    info = document(url)
    address = oauth.digest("203.0.113.99")
    assert store.document(runtime.db, url, info, 600, (10_000, 0), address) == "address_cap"  # a new one
    assert store.document(runtime.db, url, info, 600, (10_000, 10_000), address) == "ok"
    assert store.document(runtime.db, url, info, 600, (0, 0), address) == "ok"  # a refresh: no cap
    cached = store.client(runtime.db, url)
    assert cached is not None and cached.document and cached.fresh and not cached.approved
    assert store.document(runtime.db, url, {**info, "client_id": url + "x"}, 600, (10_000, 10_000), None) == (
        "conflict"  # the document's client_id must be the row's
    )
    registered = store.Client("c-" + oauth.new_request_id()[:20], None, {"redirect_uris": [flow.CALLBACK]})
    assert store.register(runtime.db, registered, (10_000, 10_000), None) == "ok"
    over = {**info, "client_id": registered.client_id}
    assert store.document(runtime.db, registered.client_id, over, 600, (10_000, 10_000), None) == "conflict"
    found = store.client(runtime.db, registered.client_id)
    assert found is not None and not found.document
