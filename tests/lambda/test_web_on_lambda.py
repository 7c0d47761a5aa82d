"""The web view and the MCP App on the Lambda path: the MCP function under Mangum, driven with
API Gateway HTTP API (payload 2.0) events for the routes template.yaml gives them: cookies
arrive in the event's `cookies` list and leave in the response's; the public URL is https, so
the cookies are Secure and `__Host-` named."""

from __future__ import annotations

import base64
import json
import re
import secrets
from typing import Any
from urllib.parse import urlencode

import pytest

from .conftest import LambdaContext, body_json, http_event, load_handler, rpc

HOST = "abc123.execute-api.us-east-1.amazonaws.com"
ORIGIN = f"https://{HOST}"
MCP_HEADERS = {"mcp-protocol-version": "2025-06-18"}
FORM = "application/x-www-form-urlencoded"


@pytest.fixture
def functions(aws):
    return load_handler("admin"), load_handler("mcp")


class Gateway:
    """A browser in front of API Gateway: its cookie jar, same-origin forms."""

    def __init__(self, mcp: Any) -> None:
        self.mcp, self.jar = mcp, {}

    def send(
        self, method: str, path: str, body: str = "", query: dict[str, str] | None = None, **headers: str
    ) -> dict[str, Any]:
        event = http_event(body, method=method, path=path, **headers)
        event["rawQueryString"] = urlencode(query or {})
        if self.jar:
            event["cookies"] = [f"{k}={v}" for k, v in self.jar.items()]
        reply = self.mcp.handler(event, LambdaContext())
        for line in reply.get("cookies") or []:
            name, _, rest = line.partition("=")
            if "Max-Age=0" in line:
                self.jar.pop(name, None)
            else:
                self.jar[name] = rest.split(";", 1)[0]
        reply["text"] = (
            base64.b64decode(reply["body"]).decode()
            if reply.get("isBase64Encoded")
            else reply.get("body", "")
        )
        return reply

    def get(self, path: str, **query: str) -> dict[str, Any]:
        return self.send("GET", path, query=query, accept="text/html")

    def post(self, path: str, fields: dict[str, str], **headers: str) -> dict[str, Any]:
        sent = {"content_type": FORM, "origin": ORIGIN, "sec_fetch_site": "same-origin", **headers}
        return self.send("POST", path, urlencode(fields), **sent)


def csrf(reply: dict[str, Any]) -> str:
    found = re.search(r'name="csrf" value="([^"]+)"', reply["text"])
    assert found, reply["text"]
    return found[1]


def new_user(admin: Any, scopes: str = "read,write,delete") -> tuple[str, str]:
    user = admin.handler({"action": "create_user", "name": f"w-{secrets.token_hex(4)}"}, LambdaContext())
    made = admin.handler(
        {"action": "create_key", "user_id": user["user_id"], "label": "web", "scopes": scopes},
        LambdaContext(),
    )
    return user["user_id"], made["key"]


def tool(mcp: Any, key: str, tool_name: str, **arguments: Any) -> dict[str, Any]:
    call = rpc("tools/call", {"name": tool_name, "arguments": arguments})
    reply = mcp.handler(http_event(call, key=key, **MCP_HEADERS), LambdaContext())
    assert reply["statusCode"] == 200, reply
    return body_json(reply)["result"]


def test_sign_in_browse_revoke_and_sign_out_through_api_gateway(functions) -> None:
    admin, mcp = functions
    user_id, key = new_user(admin)
    spare = admin.handler({"action": "create_key", "user_id": user_id, "label": "spare"}, LambdaContext())
    tool(
        mcp,
        key,
        "save_session",
        name="lambda-plan",
        repo="github.com/acme/lambda",
        summary="first",
        handoff=True,
    )
    tool(
        mcp,
        key,
        "save_session",
        name="lambda-plan",
        repo="github.com/acme/lambda",
        summary="second <b>bold</b>",
    )
    browser = Gateway(mcp)

    page = browser.get("/")
    assert page["statusCode"] == 200 and 'name="api_key"' in page["text"]
    headers = page["headers"]
    assert (
        "frame-ancestors 'none'" in headers["content-security-policy"]
        and headers["cache-control"] == "no-store"
    )
    (pre,) = page["cookies"]
    assert pre.startswith("__Host-sv_web_signin=") and "; Secure" in pre and "Path=/;" in pre

    signed = browser.post("/web/signin", {"csrf": csrf(page), "api_key": key})
    assert signed["statusCode"] == 303 and signed["headers"]["location"] == "/"
    session = next(c for c in signed["cookies"] if c.startswith("__Host-sv_web="))
    assert "HttpOnly" in session and "SameSite=Strict" in session and "Secure" in session
    assert key not in json.dumps(signed)

    home = browser.get("/")
    assert home["statusCode"] == 200 and "lambda-plan" in home["text"]
    shown = browser.get("/web/session", name="lambda-plan")
    assert "second &lt;b&gt;bold&lt;/b&gt;" in shown["text"] and "<b>bold" not in shown["text"]
    diff = browser.get("/web/versions", name="lambda-plan", a="1", b="2")
    assert "<del>- first</del>" in diff["text"]
    assert "open" in browser.get("/web/handoffs")["text"]
    assert "save_session" in browser.get("/web/activity")["text"]

    keys = browser.get("/web/keys")
    row = keys["text"].split(f'<code class="nowrap">{spare["prefix"]}</code>', 1)[1].split("</tr>", 1)[0]
    key_id = re.search(r'name="key" value="([0-9a-f-]{36})"', row)[1]
    token = csrf(keys)
    foreign = browser.post(
        "/web/keys/revoke", {"csrf": token, "key": key_id, "step": "revoke"}, origin="https://evil.example"
    )
    assert foreign["statusCode"] == 403
    asked = browser.post("/web/keys/revoke", {"csrf": token, "key": key_id, "step": "confirm"})
    assert asked["statusCode"] == 200 and "Revoke this key?" in asked["text"]
    done = browser.post("/web/keys/revoke", {"csrf": token, "key": key_id, "step": "revoke"})
    assert done["statusCode"] == 303
    refused = mcp.handler(http_event(rpc("tools/list"), key=spare["key"], **MCP_HEADERS), LambdaContext())
    assert refused["statusCode"] == 401

    out = browser.post("/web/signout", {"csrf": token})
    assert out["statusCode"] == 303 and "__Host-sv_web" not in browser.jar
    assert browser.get("/web/keys")["statusCode"] == 303


def test_the_mcp_app_is_linked_on_lambda(functions) -> None:
    admin, mcp = functions
    _, key = new_user(admin, "read,write")
    tool(mcp, key, "save_session", name="app", summary="s", handoff=True)
    modern = "2026-07-28"
    meta = {
        "io.modelcontextprotocol/protocolVersion": modern,
        "io.modelcontextprotocol/clientInfo": {"name": "lambda-host", "version": "1"},
        "io.modelcontextprotocol/clientCapabilities": {
            "extensions": {"io.modelcontextprotocol/ui": {"mimeTypes": ["text/html;profile=mcp-app"]}}
        },
    }
    headers = {"mcp_protocol_version": modern, "mcp_method": "tools/call", "mcp_name": "load_session"}
    call = rpc("tools/call", {"name": "load_session", "arguments": {"name": "app"}, "_meta": meta})
    linked = body_json(mcp.handler(http_event(call, key=key, **headers), LambdaContext()))["result"]
    assert linked["_meta"]["ui"] == {"resourceUri": "ui://sessionvault/handoff.html"}
    plain = tool(mcp, key, "load_session", name="app")
    # A 2025-era stateless call declares nothing, and gets the link all the same: the hosts that
    # render Apps mostly speak 2025-11-25, and a host without Apps ignores `_meta` (SEP-1865).
    assert plain["_meta"] == {"ui": {"resourceUri": "ui://sessionvault/handoff.html"}}
    uri = "ui://sessionvault/handoff.html"
    read = rpc("resources/read", {"uri": uri, "_meta": meta})
    headers = {"mcp_protocol_version": modern, "mcp_method": "resources/read", "mcp_name": uri}
    (content,) = body_json(mcp.handler(http_event(read, key=key, **headers), LambdaContext()))["result"][
        "contents"
    ]
    assert content["mimeType"] == "text/html;profile=mcp-app" and "Claim this handoff" in content["text"]
