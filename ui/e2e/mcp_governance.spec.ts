// MCP governance in a real browser against a real `turnpike up` (issue 31 item 4): an
// API's MCP server with an audit trail gets tool calls through the gateway (one with a
// password among its arguments); once the gateway ships its analytics, the Admin's
// "MCP audit" page lists each call with the password `[REDACTED]`, and the API's
// Analytics tab draws the "MCP tools" view with a row per tool called, by tool and by
// application.
import { expect, test, type APIRequestContext } from '@playwright/test';
import { gateway, rest, signIn } from './rest';

const NOTES = {
  openapi: '3.0.3',
  info: { title: 'Notes', version: 'v1' },
  paths: {
    '/notes': {
      get: { operationId: 'listNotes', responses: { '200': { description: 'the notes' } } },
      post: {
        operationId: 'saveNote',
        requestBody: {
          required: true,
          content: { 'application/json': { schema: { type: 'object', properties: { user: { type: 'string' }, password: { type: 'string' } } } } },
        },
        responses: { '200': { description: 'saved' } },
      },
    },
  },
};

/** One JSON-RPC message to the MCP endpoint; the answer's status, session and body. */
async function mcp(request: APIRequestContext, url: string, body: unknown, session?: string) {
  const headers: Record<string, string> = { 'content-type': 'application/json', accept: 'application/json, text/event-stream' };
  if (session) headers['mcp-session-id'] = session;
  const r = await request.post(url, { headers, data: body });
  return { status: r.status(), session: r.headers()['mcp-session-id'], body: await r.json().catch(() => null) };
}

test('tool calls are audited with secrets redacted and drawn in the MCP tools view', async ({ browser, request }) => {
  test.setTimeout(180_000);
  const api = await rest(request, 'POST', '/api/am/publisher/v1/apis', {
    name: 'Notes MCP',
    context: '/notes-mcp',
    version: 'v1',
    endpoints: [process.env.TP_ECHO],
    resources: [{ path: '/notes', methods: ['GET', 'POST'] }],
    mcp: { openapi: JSON.stringify(NOTES), audit: { redact: ['user'] } },
  });
  await rest(request, 'PUT', `/api/am/publisher/v1/apis/${api.id}/security`, { oauth2: false, subscription: false });
  await rest(request, 'POST', `/api/am/publisher/v1/apis/change-lifecycle?apiId=${api.id}&action=Publish`);

  // An agent's session through the gateway: two calls of one tool, one of another.
  const url = `${gateway()}/mcp/notes-mcp/v1`;
  const init = { jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'e2e', version: '1' } } };
  let session = '';
  await expect(async () => {
    const r = await mcp(request, url, init);
    expect(r.status).toBe(200);
    session = r.session!;
  }).toPass({ timeout: 20_000 });
  const save = { name: 'saveNote', arguments: { body: { user: 'ann', password: 'hunter2' } } };
  for (const [id, params] of [
    [2, save],
    [3, save],
    [4, { name: 'listNotes', arguments: {} }],
  ] as const) {
    const r = await mcp(request, url, { jsonrpc: '2.0', id, method: 'tools/call', params }, session);
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    expect(r.body.result.isError).toBeFalsy();
  }

  // Admin: the audit trail (the gateway ships every 10 s: ask again until it is there).
  const page = await signIn(browser);
  await page.goto('/admin/mcp-audit');
  const table = page.getByRole('table', { name: 'MCP audit' });
  await expect(async () => {
    await page.reload();
    await expect(table.getByRole('row').filter({ hasText: 'saveNote' })).toHaveCount(2, { timeout: 2_000 });
  }).toPass({ timeout: 90_000, intervals: [1000, 2000] });
  const saved = table.getByRole('row').filter({ hasText: 'saveNote' }).first();
  expect(JSON.parse((await saved.getByTestId('mcp-audit-arguments').textContent())!)).toEqual({ body: { user: '[REDACTED]', password: '[REDACTED]' } });
  await expect(saved).toContainText('Notes MCP v1');
  await expect(saved).toContainText('ok');
  await expect(table).not.toContainText('hunter2');
  await expect(table.getByRole('row').filter({ hasText: 'listNotes' })).toHaveCount(1);
  // The outcome filter.
  await page.getByRole('combobox', { name: 'Outcome' }).click();
  await page.getByRole('option', { name: 'refused', exact: true }).click();
  await expect(page.getByText('No tool call matches')).toBeVisible();

  // Publisher: the API's Analytics tab, the MCP tools view.
  await page.goto(`/publisher/apis/${api.id}`);
  await page.getByRole('tab', { name: 'Analytics' }).click();
  const byTool = page.getByRole('table', { name: 'MCP tools by tool' });
  await expect(async () => {
    await page.getByText('24 hours', { exact: true }).click();
    await page.getByText('Last hour', { exact: true }).click();
    await expect(byTool.getByRole('row').filter({ hasText: 'saveNote' })).toHaveCount(1, { timeout: 3_000 });
  }).toPass({ timeout: 45_000, intervals: [1000, 2000] });
  await expect(byTool.getByRole('row').filter({ hasText: 'saveNote' }).getByRole('cell').nth(1)).toHaveText('2');
  await expect(byTool.getByRole('row').filter({ hasText: 'listNotes' }).getByRole('cell').nth(1)).toHaveText('1');
  const byApp = page.getByRole('table', { name: 'MCP tools by application' });
  await expect(byApp.getByRole('row').filter({ hasText: 'saveNote' })).toContainText('(no application)');
});
