"""The OAuth server's pieces that need no database: the issuer from settings or Host, what
open registration accepts, exact redirect URI matching, metadata documents, and the consent
page's markup."""

from __future__ import annotations

import base64
import json

import pytest
from mcp.server.auth.provider import RegistrationError
from mcp.shared.auth import InvalidRedirectUriError, OAuthClientInformationFull
from pydantic import AnyUrl

from sessionvault.db import oauth as store
from sessionvault.server.oauth import client_auth, consent
from sessionvault.server.oauth import endpoints as server
from sessionvault.server.oauth import provider as oauth_provider
from sessionvault.settings import Settings


def settings(**values: object) -> Settings:
    return Settings.from_env({}, check=False, database_url="x", **values)


def test_public_url_comes_from_the_environment_and_is_checked():
    env = {"SESSIONVAULT_PUBLIC_URL": "https://vault.example.com/"}
    assert Settings.from_env(env, check=False).public_url == "https://vault.example.com"
    bad = Settings.from_env({"SESSIONVAULT_PUBLIC_URL": "http://vault.example.com"}, check=False)
    assert "public_url" in bad.problems()


def client(**values: object) -> OAuthClientInformationFull:
    fields = {"client_id": "c", "redirect_uris": ["https://claude.ai/api/mcp/auth_callback"]}
    fields.update(values)  # type: ignore[arg-type]
    return oauth_provider.RegisteredClient.model_validate(fields)


def test_a_redirect_uri_matches_only_exactly_and_must_be_sent():
    registered = client()
    assert registered.validate_redirect_uri(AnyUrl("https://claude.ai/api/mcp/auth_callback"))
    for near in ("https://claude.ai/api/mcp/auth_callback/", "https://claude.ai/api/mcp/auth_callbacks"):
        with pytest.raises(InvalidRedirectUriError):
            registered.validate_redirect_uri(AnyUrl(near))
    with pytest.raises(InvalidRedirectUriError):
        registered.validate_redirect_uri(None)


@pytest.mark.parametrize(
    "values",
    [
        {"redirect_uris": ["http://example.com/cb"]},
        {"redirect_uris": [f"https://e.example/{i}" for i in range(6)]},
        {"client_name": "n" * 101},
        {"token_endpoint_auth_method": "private_key_jwt"},
    ],
)
def test_open_registration_refuses_what_it_should_not_store(values):
    with pytest.raises(RegistrationError):
        oauth_provider._check_registration(client(**{"token_endpoint_auth_method": "none", **values}))


def test_the_metadata_documents_name_this_server_without_a_trailing_slash():
    issuer_doc, resource_doc = (json.loads(d) for d in server._documents("https://vault.example.com", True))
    assert issuer_doc["issuer"] == "https://vault.example.com"
    assert issuer_doc["token_endpoint_auth_methods_supported"] == [
        "none",
        "client_secret_post",
        "client_secret_basic",
    ]
    assert issuer_doc["revocation_endpoint_auth_methods_supported"] == [
        "none",
        "client_secret_post",
        "client_secret_basic",
    ]
    assert issuer_doc["client_id_metadata_document_supported"] is True  # CIMD (server/oauth/cimd.py)
    assert resource_doc == {
        "resource": "https://vault.example.com/mcp",
        "authorization_servers": ["https://vault.example.com"],
        "scopes_supported": ["read", "write", "delete"],
        "bearer_methods_supported": ["header"],
        "resource_name": "SessionVault",
    }
    assert set(server.well_known_paths("https://x.example/prod")) == {
        "/.well-known/oauth-authorization-server",
        "/.well-known/oauth-authorization-server/prod",
        "/.well-known/oauth-protected-resource",
        "/.well-known/oauth-protected-resource/prod/mcp",
    }


def test_the_consent_page_shows_client_host_and_scopes_and_holds_the_agreed_form():
    request = store.Pending("rid", "c", "https://claude.ai/api/mcp/auth_callback", "s", "ch", ("read",), "r")
    page = consent.render(
        request, store.Client("c", None, {"client_name": "Claude"}), "tok", "/prod/consent"
    ).decode()
    assert (
        "Claude" in page
        and "claude.ai" in page
        and "<code>read</code>" in page
        and "<code>write</code>" not in page
    )
    assert '<form method="post" action="/prod/consent">' in page
    assert '<input type="hidden" name="request" value="rid">' in page
    assert '<input type="hidden" name="csrf" value="tok">' in page
    assert 'name="decision" value="approve"' in page and 'name="decision" value="deny"' in page
    assert "<script" not in page
    again = consent.render(request, store.Client("c", None, {}), "tok", "/consent", consent.BAD_KEY).decode()
    assert again.count("That key was not accepted.") == 1


def test_the_consent_page_names_where_a_metadata_document_client_describes_itself():
    url = "https://app.example/oauth/client.json"
    request = store.Pending("rid", url, "https://app.example/cb", "s", "ch", ("read",), "r")
    page = consent.render(
        request, store.Client(url, None, {"client_name": "App"}), "tok", "/consent"
    ).decode()
    assert "It describes itself at <strong>app.example</strong>." in page
    registered = consent.render(request, store.Client("uuid", None, {}), "tok", "/consent").decode()
    assert "describes itself" not in registered


@pytest.mark.parametrize(
    ("header", "expected"),
    [
        ("Basic " + base64.b64encode(b"id%3A1:s%2Bx+y").decode(), ("id:1", "s+x y")),
        ("basic " + base64.b64encode(b"id:secret").decode(), ("id", "secret")),
        ("Basic " + base64.b64encode(b"no-colon").decode(), None),
        ("Basic not-base64!", None),
        ("Bearer x", None),
        ("", None),
    ],
)
def test_basic_credentials_are_read_as_rfc_6749_encodes_them(header, expected):
    assert client_auth.basic_credentials(header) == expected


def test_metadata_documents_are_advertised_only_when_taken() -> None:
    """Claude Code and Codex switch to a metadata document once it is advertised: a server
    that cannot fetch them (SESSIONVAULT_OAUTH_CLIENT_DOCUMENTS=off) must not say it takes them."""
    import json

    from sessionvault.server.oauth.endpoints import _documents

    on, _ = _documents("https://vault.example.com", True)
    off, _ = _documents("https://vault.example.com", False)
    assert json.loads(on)["client_id_metadata_document_supported"] is True
    assert json.loads(off)["client_id_metadata_document_supported"] is False
