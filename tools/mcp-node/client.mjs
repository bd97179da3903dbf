// The official TypeScript MCP SDK's Streamable HTTP client against a gateway's MCP
// endpoint (driven by crates/turnpike/tests/mcp_e2e.rs). Prints one JSON object.
//
// usage: node client.mjs URL APIKEY
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";

const [url, key] = process.argv.slice(2);
const transport = new StreamableHTTPClientTransport(new URL(url), {
  requestInit: { headers: { apikey: key } },
});
const client = new Client({ name: "turnpike-e2e", version: "1.0.0" });
await client.connect(transport);
const tools = await client.listTools();
const got = await client.callTool({ name: "getPet", arguments: { petId: "42" } });
const out = {
  session: typeof transport.sessionId === "string",
  tools: tools.tools.map((t) => t.name),
  get: { isError: got.isError ?? false, structured: got.structuredContent },
};
await transport.terminateSession();
await client.close();
console.log(JSON.stringify(out));
