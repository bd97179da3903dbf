// The Developer Portal's MCP try-it: one tool call the way an agent makes it, over the
// Streamable HTTP transport, each message sent through the control plane's try-it relay
// (so the application's one-minute token is applied, as for a REST try): `initialize`
// (the answer's `Mcp-Session-Id` and protocol version are used after), the
// `notifications/initialized` notice, `tools/call`, then `DELETE` to end the session.
import type { TryRequest, TryResult } from '../api/types';

export type Relay = (req: TryRequest) => Promise<TryResult>;

/** One message of the exchange, as the page shows it. */
export interface McpStep {
  label: string;
  status: number;
  body: string;
}

export interface McpCallOutcome {
  steps: McpStep[];
  /** The JSON-RPC answer to `tools/call` (null when the call was not reached). */
  answer: unknown;
}

/** The version this client asks for; the server answers the one it speaks. */
export const PROTOCOL_VERSION = '2025-06-18';

const header = (r: TryResult, name: string) => r.headers.find(([k]) => k.toLowerCase() === name)?.[1];

function parse(body: string): unknown {
  try {
    return JSON.parse(body);
  } catch {
    return null;
  }
}

export async function callTool(relay: Relay, path: string, tool: string, args: Record<string, unknown>): Promise<McpCallOutcome> {
  const steps: McpStep[] = [];
  const json = { 'Content-Type': 'application/json', Accept: 'application/json, text/event-stream' };
  const post = async (label: string, headers: Record<string, string>, message: unknown) => {
    const r = await relay({ method: 'POST', path, headers, body: JSON.stringify(message) });
    steps.push({ label, status: r.status, body: r.body });
    return r;
  };
  const init = await post('initialize', json, {
    jsonrpc: '2.0',
    id: 1,
    method: 'initialize',
    params: { protocolVersion: PROTOCOL_VERSION, capabilities: {}, clientInfo: { name: 'turnpike-devportal', version: '1' } },
  });
  const session = header(init, 'mcp-session-id');
  if (init.status !== 200 || !session) return { steps, answer: parse(init.body) };
  const agreed = (parse(init.body) as { result?: { protocolVersion?: string } } | null)?.result?.protocolVersion ?? PROTOCOL_VERSION;
  const inSession = { ...json, 'Mcp-Session-Id': session, 'MCP-Protocol-Version': agreed };
  await post('notifications/initialized', inSession, { jsonrpc: '2.0', method: 'notifications/initialized' });
  const call = await post('tools/call', inSession, { jsonrpc: '2.0', id: 2, method: 'tools/call', params: { name: tool, arguments: args } });
  const end = await relay({ method: 'DELETE', path, headers: { 'Mcp-Session-Id': session, 'MCP-Protocol-Version': agreed } });
  steps.push({ label: 'DELETE (end the session)', status: end.status, body: end.body });
  return { steps, answer: parse(call.body) };
}
