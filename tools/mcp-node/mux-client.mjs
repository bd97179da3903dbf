// The official TypeScript MCP SDK's Streamable HTTP client against a gateway
// multiplexing several remote MCP servers behind one endpoint (driven by
// crates/turnpike/tests/mcp_proxy_e2e.rs): lists the prefixed tools, calls one tool of
// each server, and calls a tool that reports progress with an `onprogress` callback
// which creates the file GATE (the remote waits for it before answering). Prints one
// JSON object.
//
// usage: node mux-client.mjs URL APIKEY GATE
import { writeFileSync } from "node:fs";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";

const [url, key, gate] = process.argv.slice(2);
const transport = new StreamableHTTPClientTransport(new URL(url), {
  requestInit: { headers: { apikey: key } },
});
const client = new Client({ name: "turnpike-mux-e2e", version: "1.0.0" });
await client.connect(transport);
const tools = await client.listTools();
const text = (r) => ({ isError: r.isError ?? false, text: r.content?.[0]?.text });
const add = await client.callTool({ name: "weather__add", arguments: { a: 20, b: 22 } });
const echo = await client.callTool({ name: "git__echo", arguments: { text: "hi" } });
const order = [];
const progress = await client.callTool(
  { name: "weather__progress", arguments: { gate } },
  undefined,
  {
    onprogress: (p) => {
      order.push(`progress ${p.progress}`);
      writeFileSync(gate, "");
    },
  },
);
order.push("result");
let denied;
try {
  await client.callTool({ name: "git__secret", arguments: {} });
  denied = "accepted";
} catch (e) {
  denied = e.code ?? String(e);
}
const out = {
  server: client.getServerVersion()?.name,
  tools: tools.tools.map((t) => t.name).sort(),
  add: text(add),
  echo: text(echo),
  progress: { ...text(progress), order },
  denied,
};
await transport.terminateSession();
await client.close();
console.log(JSON.stringify(out));
