// A minimal MCP Apps host: an MCP client to the real server (through this page's origin, where
// the test's backend adds the credential), the AppBridge of @modelcontextprotocol/ext-apps, and
// the View in a sandboxed iframe (scripts only: an opaque origin, no access to this page).
import { AppBridge, PostMessageTransport, getToolUiResourceUri } from "@modelcontextprotocol/ext-apps/app-bridge";
import { Client, StreamableHTTPClientTransport } from "@modelcontextprotocol/client";

const HOST = { name: "SessionVault test host", version: "1.0.0" };
const UI = { "io.modelcontextprotocol/ui": { mimeTypes: ["text/html;profile=mcp-app"] } };
const state = (text) => { document.getElementById("state").textContent = text; };
const log = (text) => { document.getElementById("log").textContent += text + "\n"; };

async function main() {
  const query = new URLSearchParams(location.search);
  const tool = query.get("tool") || "load_session";
  const args = JSON.parse(query.get("args") || "{}");

  // ?protocol=2025-11-25: the plain 2025 connect sequence (what the hosts that render Apps speak
  // today), the extension declared in `initialize`; otherwise 2026-07-28, declared per request.
  const legacy = query.get("protocol") === "2025-11-25";
  const client = new Client(HOST, {
    capabilities: { extensions: UI },
    versionNegotiation: { mode: legacy ? "legacy" : { pin: "2026-07-28" } },
  });
  await client.connect(new StreamableHTTPClientTransport(new URL("/mcp", location.href)));
  document.getElementById("protocol").textContent = client.getNegotiatedProtocolVersion() || "";
  const { tools } = await client.listTools();
  const definition = tools.find((t) => t.name === tool);
  const uri = definition && getToolUiResourceUri(definition);
  if (!uri) throw new Error(`${tool} links no UI for this host`);
  const result = await client.callTool({ name: tool, arguments: args });
  log(`called ${tool}: ui ${JSON.stringify(result._meta && result._meta.ui)}`);
  const resource = await client.readResource({ uri });
  const html = resource.contents[0].text;

  const iframe = document.createElement("iframe");
  iframe.setAttribute("sandbox", "allow-scripts");
  iframe.title = "SessionVault handoff";
  document.getElementById("slot").append(iframe);

  const bridge = new AppBridge(client, HOST, { serverTools: {}, logging: {} }, {
    hostContext: { theme: "light", displayMode: "inline", platform: "web" },
  });
  bridge.onsizechange = ({ height }) => { if (height) iframe.style.height = `${Math.max(height, 200)}px`; };
  bridge.oninitialized = async () => {
    await bridge.sendToolInput({ arguments: args });
    await bridge.sendToolResult(result);
    state("rendered");
  };
  await bridge.connect(new PostMessageTransport(iframe.contentWindow, iframe.contentWindow));
  iframe.srcdoc = html;
  state("loading the view");
}

main().catch((error) => { state("failed"); log(String(error && error.stack || error)); });
