"""The MCP App's identifiers are the SDK's: `app_view` spells them itself so that a cold Lambda's
init does not import `mcp.server.apps` (the SDK's high-level server and httpx2 come with it)."""

from mcp.server.apps import APP_MIME_TYPE, EXTENSION_ID

from sessionvault.server.mcp import app_view


def test_the_extension_id_and_the_mime_type_are_the_sdks() -> None:
    assert app_view.EXTENSION_ID == EXTENSION_ID
    assert app_view.MIME == APP_MIME_TYPE


def test_the_resource_meta_still_says_no_domain_for_anything() -> None:
    csp = app_view.resource_meta()["ui"]["csp"]
    assert csp and all(domains == [] for domains in csp.values())
