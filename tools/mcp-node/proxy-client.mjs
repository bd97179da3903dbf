// The official TypeScript MCP SDK's Streamable HTTP client against a gateway proxying a
// remote MCP server (driven by crates/turnpike/tests/mcp_proxy_e2e.rs). Prints one JSON
// object.
//
// usage: node proxy-client.mjs URL APIKEY
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";

const [url, key] = process.argv.slice(2);
const transport = new StreamableHTTPClientTransport(new URL(url), {
  requestInit: { headers: { apikey: key } },
});
const client = new Client({ name: "turnpike-proxy-e2e", version: "1.0.0" });
await client.connect(transport);
const tools = await client.listTools();
const sum = await client.callTool({ name: "sum", arguments: { a: 20, b: 22 } });
let denied;
try {
  await client.callTool({ name: "secret", arguments: {} });
  denied = "accepted";
} catch (e) {
  denied = e.code ?? String(e);
}
const out = {
  session: transport.sessionId,
  tools: tools.tools.map((t) => t.name).sort(),
  sum: { isError: sum.isError ?? false, text: sum.content?.[0]?.text },
  denied,
};
await transport.terminateSession();
await client.close();
console.log(JSON.stringify(out));
