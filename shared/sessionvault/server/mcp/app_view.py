"""The handoff view as an MCP App (the MCP Apps extension, `io.modelcontextprotocol/ui`): one
HTML document, served as the `ui://` resource `URI`, that a host renders in a sandboxed iframe
next to a load_session or list_sessions result. It shows the session the way the web view does
(the same sections) and, for an open handoff, a "Claim this handoff" button.

What it may do: speak JSON-RPC with its host over postMessage (`ui/initialize`, the tool result
the host forwards, and `tools/call` of load_session, which the host sends to this server with
its own credential). What it may not: it holds no secret and learns none (the host's
credential never reaches the iframe), and it makes no network request of its own: its own CSP
(`connect-src 'none'`, no image, font or frame source; script and style admitted only by their
hashes) and the resource's `_meta.ui.csp` (no domain at all) say so. Saved text is only ever
set as text (`textContent`), never parsed as HTML."""

from __future__ import annotations

import base64
import hashlib
from typing import Any

from sessionvault.server.web.pages.style import STYLE

# The extension's id and MIME type, as mcp.server.apps names them (EXTENSION_ID, APP_MIME_TYPE;
# tests hold them equal), not imported from there: that module loads the SDK's high-level
# server and httpx2, ~70 ms of a cold Lambda's init, and only resources/list and read need it.
EXTENSION_ID = "io.modelcontextprotocol/ui"
URI = "ui://sessionvault/handoff.html"
MIME = "text/html;profile=mcp-app"
NAME = "SessionVault handoff"
DESCRIPTION = "A saved session or the session list, with a button that claims an open handoff"
PROTOCOL_VERSION = "2026-01-26"  # the MCP Apps revision this view speaks

_APP_STYLE = (
    STYLE
    + "body{background:#fff}main{padding:1rem;max-width:none}h1{font-size:1.3rem}"
    + ".status{margin:.5rem 0}.row{display:flex;gap:1rem;align-items:baseline;flex-wrap:wrap}"
)

_SCRIPT = r"""
"use strict";
(() => {
  const SECTIONS = [["summary", "Summary"], ["plan", "Plan"], ["decisions", "Decisions"],
    ["todos", "Todos"], ["files", "Files"], ["errors", "Errors"], ["tried", "Tried"]];
  const root = document.getElementById("app");
  const pending = new Map();
  let nextId = 1;
  let hostName = "";

  const post = (message) => window.parent.postMessage(message, "*");
  const request = (method, params) => new Promise((resolve, reject) => {
    const id = nextId++;
    pending.set(id, { resolve, reject });
    post({ jsonrpc: "2.0", id, method, params });
  });
  const notify = (method, params) => post({ jsonrpc: "2.0", method, params });

  const el = (tag, text, cls) => {
    const node = document.createElement(tag);
    if (text !== undefined && text !== null) node.textContent = String(text);
    if (cls) node.className = cls;
    return node;
  };
  const status = (text, isError) => {
    const box = document.getElementById("status");
    if (!box) return;
    box.textContent = text || "";
    box.className = isError ? "status error" : "status";
  };
  const resize = () => notify("ui/notifications/size-changed", {
    width: Math.ceil(document.body.scrollWidth), height: Math.ceil(document.body.scrollHeight) + 16 });
  const when = (iso) => {
    const text = String(iso || "");
    return text ? text.slice(0, 16).replace("T", " ") + (/(\+00:00|Z)$/.test(text) ? " UTC" : "") : "never";
  };

  function handoffText(h) {
    if (!h) return "none";
    const to = h.to_client ? " to " + h.to_client : "";
    if (h.state === "accepted") {
      const key = h.accepted_with ? " (with " + h.accepted_with + ")" : "";
      const client = h.accepted_by || "";
      const by = h.accepted_person ? h.accepted_person + (client ? " (" + client + ")" : "")
                                   : client || "an unnamed client";
      return "accepted" + to + " by " + by + key + " at " + when(h.accepted_at);
    }
    if (h.state === "open") return "open" + to + ", until " + when(h.expires_at);
    if (h.state === "expired") return "expired" + to + " at " + when(h.expired_at);
    return String(h.state) + to;
  }

  function items(list, tag, code) {
    if (!Array.isArray(list) || list.length === 0) return el("p", "None recorded.", "none");
    const out = el(tag);
    for (const item of list) {
      const li = el("li");
      if (code) li.appendChild(el("code", item)); else li.textContent = String(item);
      out.appendChild(li);
    }
    return out;
  }

  function decisions(list) {
    if (!Array.isArray(list) || list.length === 0) return el("p", "None recorded.", "none");
    const dl = el("dl", null, "decisions");
    for (const d of list) {
      dl.appendChild(el("dt", d && d.decision));
      dl.appendChild(el("dd", "Because: " + (d && d.reason)));
    }
    return dl;
  }

  function showSession(s) {
    const main = el("main");
    main.appendChild(el("h1", s.name));
    const facts = [s.repo || "(no repository)",
      "version " + s.version + " of " + (s.latest_version || s.version), "saved " + when(s.saved_at)];
    if (s.client) facts.push("by " + s.client);
    main.appendChild(el("p", facts.join(" · "), "meta"));
    const row = el("div", null, "row");
    row.appendChild(el("p", "Handoff: " + handoffText(s.handoff), "handoff"));
    if (s.handoff && s.handoff.state === "open") {
      const button = el("button", "Claim this handoff");
      button.type = "button";
      button.id = "claim";
      button.addEventListener("click", () => claim(s, button));
      row.appendChild(button);
    }
    main.appendChild(row);
    main.appendChild(el("p", "", "status")).id = "status";
    for (const [field, title] of SECTIONS) {
      const section = el("section", null, "card");
      section.appendChild(el("h2", title));
      const value = s[field];
      if (field === "summary") {
        section.appendChild(value ? el("p", value, "text") : el("p", "None recorded.", "none"));
      }
      else if (field === "plan") section.appendChild(items(value, "ol"));
      else if (field === "decisions") section.appendChild(decisions(value));
      else section.appendChild(items(value, "ul", field === "files"));
      main.appendChild(section);
    }
    root.replaceChildren(main);
    resize();
  }

  function showList(result) {
    const main = el("main");
    main.appendChild(el("h1", "Saved sessions"));
    main.appendChild(el("p", "", "status")).id = "status";
    const sessions = Array.isArray(result.sessions) ? result.sessions : [];
    if (sessions.length === 0) main.appendChild(el("p", "No sessions saved yet.", "none"));
    const table = el("table");
    const head = el("tr");
    for (const title of ["Session", "Repository", "Version", "Handoff", ""]) {
      const th = el("th", title); th.scope = "col"; head.appendChild(th);
    }
    table.appendChild(el("thead")).appendChild(head);
    const body = table.appendChild(el("tbody"));
    for (const s of sessions) {
      const tr = el("tr");
      const name = el("td", s.name);
      if (s.preview) name.appendChild(el("span", s.preview, "preview"));
      tr.appendChild(name);
      tr.appendChild(el("td", s.repo || "(no repository)"));
      tr.appendChild(el("td", s.version));
      tr.appendChild(el("td", handoffText(s.handoff)));
      const open = el("button", "Open");
      open.type = "button";
      open.setAttribute("aria-label", "Open " + s.name);
      open.addEventListener("click", () => load({ name: s.name }));
      const cell = el("td"); cell.appendChild(open); tr.appendChild(cell);
      body.appendChild(tr);
    }
    if (sessions.length) main.appendChild(table);
    root.replaceChildren(main);
    resize();
  }

  function show(result) {
    if (!result) return;
    const data = result.structuredContent;
    if (result.isError || !data) {
      const text = (result.content || []).map((c) => c.text || "").join(" ") || "The tool reported an error.";
      root.replaceChildren(el("main"));
      root.firstChild.appendChild(el("p", text, "error"));
      resize();
      return;
    }
    if (Array.isArray(data.sessions)) return showList(data);
    if (data.found) return showSession(data);
    root.replaceChildren(el("main"));
    root.firstChild.appendChild(el("p", data.hint || "Nothing found.", "none"));
    resize();
  }

  async function load(args) {
    status("Loading…");
    try { show(await request("tools/call", { name: "load_session", arguments: args })); }
    catch (error) { status(String(error && error.message || error), true); }
  }

  async function claim(s, button) {
    button.disabled = true;
    status("Claiming…");
    try {
      const result = await request("tools/call", {
        name: "load_session", arguments: { repo: s.repo || "", accept: true, client: hostName } });
      const data = result && result.structuredContent;
      if (result && !result.isError && data && data.found) {
        show(result);
        const who = hostName || "this client";
        status("Claimed " + data.name + " version " + data.version + " for " + who + ".");
      } else {
        button.disabled = false;
        status((data && data.hint) || "The handoff could not be claimed.", true);
      }
    } catch (error) {
      button.disabled = false;
      status(String(error && error.message || error), true);
    }
  }

  window.addEventListener("message", (event) => {
    if (event.source !== window.parent) return;
    const message = event.data;
    if (!message || message.jsonrpc !== "2.0") return;
    if (message.method === undefined && message.id !== undefined) {
      const waiting = pending.get(message.id);
      if (!waiting) return;
      pending.delete(message.id);
      if (message.error) waiting.reject(new Error(message.error.message || "error"));
      else waiting.resolve(message.result);
      return;
    }
    if (message.method === "ui/notifications/tool-result") show(message.params);
    else if (message.id !== undefined) {
      const known = message.method === "ping" || message.method === "ui/resource-teardown";
      post(known ? { jsonrpc: "2.0", id: message.id, result: {} }
        : { jsonrpc: "2.0", id: message.id, error: { code: -32601, message: "Method not found" } });
    }
  });

  request("ui/initialize", {
    appInfo: { name: "sessionvault-handoff", version: "1" },
    appCapabilities: {},
    protocolVersion: "__PROTOCOL__",
  }).then((result) => {
    hostName = (result && result.hostInfo && result.hostInfo.name) || "";
    notify("ui/notifications/initialized", {});
    resize();
    if (window.ResizeObserver) new ResizeObserver(resize).observe(document.body);
  }, (error) => status("The host did not answer: " + error, true));
})();
""".replace("__PROTOCOL__", PROTOCOL_VERSION)


def _hash(text: str) -> str:
    return "'sha256-" + base64.b64encode(hashlib.sha256(text.encode()).digest()).decode() + "'"


# The document's own policy (a host's sandbox adds its own): nothing but this script and style.
CSP = (
    f"default-src 'none'; script-src {_hash(_SCRIPT)}; style-src {_hash(_APP_STYLE)};"
    " connect-src 'none'; img-src 'none'; font-src 'none'; frame-src 'none'; form-action 'none';"
    " base-uri 'none'"
)

HTML = (
    '<!doctype html><html lang="en"><head><meta charset="utf-8">'
    f'<meta http-equiv="Content-Security-Policy" content="{CSP}">'
    '<meta name="viewport" content="width=device-width, initial-scale=1">'
    f"<title>{NAME}</title><style>{_APP_STYLE}</style></head>"
    '<body><div id="app" aria-live="polite"><main><p class="none">Waiting for the session…</p></main></div>'
    f"<script>{_SCRIPT}</script></body></html>"
)


def resource_meta() -> dict[str, Any]:
    """The resource's `_meta.ui`: no domain for anything (the host's strictest CSP), a border."""
    from mcp.server.apps import ResourceCsp  # on first use: see EXTENSION_ID

    csp = ResourceCsp(connect_domains=[], resource_domains=[], frame_domains=[], base_uri_domains=[])
    return {"ui": {"csp": csp.model_dump(by_alias=True, exclude_none=True), "prefersBorder": True}}
