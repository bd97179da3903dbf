// Copy-paste configurations of an MCP server for the common agent clients, in each
// client's own file format (checked against their documentation, 2026-11):
// - Claude Code: `.mcp.json` (project) or `claude mcp add --transport http`: `mcpServers`
//   with `type: "http"`, `url`, `headers` (`${VAR}` expands from the environment);
// - Claude Desktop: `claude_desktop_config.json` starts local (stdio) servers only, so a
//   remote one goes through the `mcp-remote` bridge (remote connectors are added in its
//   settings instead);
// - VS Code: `.vscode/mcp.json`: `servers` with `type: "http"`, the token asked once
//   through an `inputs` prompt (`${input:id}`);
// - Cursor: `.cursor/mcp.json`: `mcpServers` with `url` and `headers` (`${env:VAR}`).
// Every one carries the token in `Authorization: Bearer`; a client that speaks MCP
// authorization can drop the header and sign in through the gateway's OAuth discovery.

export interface McpClientConfig {
  /** Which client, as the tab shows it. */
  client: string;
  /** Where the text goes. */
  file: string;
  text: string;
}

/** The server's key in the clients' maps: the API's name in lower case, `-` between words. */
export function serverKey(name: string): string {
  const k = name
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, '-')
    .replace(/^-+|-+$/g, '');
  return k || 'turnpike-mcp';
}

const TOKEN_ENV = 'TURNPIKE_TOKEN';

const json = (v: unknown) => JSON.stringify(v, null, 2);

export function clientConfigs(name: string, url: string): McpClientConfig[] {
  const key = serverKey(name);
  const bearer = (ref: string) => ({ Authorization: `Bearer ${ref}` });
  return [
    {
      client: 'Claude Code',
      file: `.mcp.json (or: claude mcp add --transport http ${key} ${url} --header "Authorization: Bearer $${TOKEN_ENV}")`,
      text: json({ mcpServers: { [key]: { type: 'http', url, headers: bearer(`\${${TOKEN_ENV}}`) } } }),
    },
    {
      client: 'Claude Desktop',
      file: 'claude_desktop_config.json',
      text: json({
        mcpServers: {
          [key]: {
            command: 'npx',
            // mcp-remote's documented form: no space inside the argument.
            args: ['-y', 'mcp-remote', url, '--header', 'Authorization:${AUTH_HEADER}'],
            env: { AUTH_HEADER: 'Bearer <your access token>' },
          },
        },
      }),
    },
    {
      client: 'VS Code',
      file: '.vscode/mcp.json',
      text: json({
        inputs: [{ type: 'promptString', id: `${key}-token`, description: `Access token for ${name}`, password: true }],
        servers: { [key]: { type: 'http', url, headers: bearer(`\${input:${key}-token}`) } },
      }),
    },
    {
      client: 'Cursor',
      file: '.cursor/mcp.json',
      text: json({ mcpServers: { [key]: { url, headers: bearer(`\${env:${TOKEN_ENV}}`) } } }),
    },
  ];
}

/** A skeleton of a tool's arguments from its input schema: each required property with a
 * value of its type (its example, default or first enum value when the schema has one). */
export function argumentsSkeleton(schema: unknown): Record<string, unknown> {
  const s = (schema ?? {}) as { properties?: Record<string, Record<string, unknown>>; required?: string[] };
  const out: Record<string, unknown> = {};
  for (const name of s.required ?? []) {
    const p = s.properties?.[name] ?? {};
    out[name] = sample(p);
  }
  return out;
}

function sample(p: Record<string, unknown>): unknown {
  if (p.example !== undefined) return p.example;
  if (p.default !== undefined) return p.default;
  if (Array.isArray(p.enum) && p.enum.length) return p.enum[0];
  switch (p.type) {
    case 'integer':
    case 'number':
      return 1;
    case 'boolean':
      return true;
    case 'array':
      return [];
    case 'object':
      return {};
    default:
      return '';
  }
}
