// The portals' MCP pages in a real browser against a real `turnpike up` (issue 31 item 5):
// the publisher opens an imported API's "MCP server" tab, reviews the tools the gateway
// would serve (made from its OpenAPI document), leaves one out, renames and re-describes
// the other and saves the `mcp:` section; the Developer Portal lists the API among its MCP
// servers with its endpoint, the tool and client configurations, and its try-it opens a
// session and calls the tool through the gateway with an application's key, showing the
// JSON-RPC answer the back end's echo fills.
import { expect, test } from '@playwright/test';
import { rest, signIn } from './rest';

const ORDERS = {
  openapi: '3.0.3',
  info: { title: 'Orders MCP', version: '1.0.0' },
  paths: {
    '/orders': {
      get: { operationId: 'listOrders', summary: 'List orders', responses: { '200': { description: 'the orders' } } },
      post: {
        operationId: 'placeOrder',
        summary: 'Place an order',
        requestBody: {
          required: true,
          content: { 'application/json': { schema: { type: 'object', properties: { item: { type: 'string' }, qty: { type: 'integer' } } } } },
        },
        responses: { '201': { description: 'placed' } },
      },
    },
  },
};

test('publisher exposes an API as an MCP server; a developer copies its config and calls a tool', async ({ browser, request }) => {
  const api = await rest(request, 'POST', '/api/am/publisher/v1/apis/import-openapi', {
    definition: ORDERS,
    additionalProperties: { name: 'Orders MCP', context: '/mcp-e2e', version: 'v1', endpoints: [process.env.TP_ECHO] },
  });
  const page = await signIn(browser);

  // Publisher: review the proposed tools, keep one, rename it, save.
  await page.goto(`/publisher/apis/${api.id}`);
  await page.getByRole('tab', { name: 'MCP server' }).click();
  const tools = page.getByRole('table', { name: 'MCP tools' });
  await expect(tools.getByRole('textbox', { name: 'Tool name of listOrders' })).toHaveValue('listOrders');
  await expect(tools.getByRole('textbox', { name: 'Tool name of placeOrder' })).toHaveValue('placeOrder');
  await expect(page.getByText('Not exposed')).toBeVisible();
  await expect(page.getByText('/mcp/mcp-e2e/v1')).toBeVisible();
  await page.getByRole('switch', { name: 'Expose as MCP server' }).check();
  await tools.getByRole('checkbox', { name: 'Serve listOrders' }).uncheck();
  await tools.getByRole('textbox', { name: 'Tool name of placeOrder' }).fill('place_order');
  await tools.getByRole('textbox', { name: 'Tool description of placeOrder' }).fill('Places an order for an item');
  await tools.getByText('body', { exact: true }).click();
  const schema = JSON.parse((await tools.getByTestId('schema of placeOrder').textContent())!);
  expect(schema).toMatchObject({ type: 'object', required: ['body'], additionalProperties: false });
  await expect(tools.getByTestId('schema of placeOrder')).toBeVisible();
  await page.getByRole('button', { name: 'Save MCP server', exact: true }).click();
  await expect(page.getByText('Saved.')).toBeVisible();
  // The tab shows what the gateway now serves: exposed, one tool, renamed.
  await expect(page.getByText('MCP server', { exact: true }).last()).toBeVisible();
  await expect(page.getByText('1 of 2 served')).toBeVisible();
  await expect(tools.getByRole('textbox', { name: 'Tool name of placeOrder' })).toHaveValue('place_order');
  const stored = await rest(request, 'GET', `/api/am/publisher/v1/apis/${api.id}`);
  expect(stored.mcp.tools).toEqual([{ operation: 'placeOrder', name: 'place_order', description: 'Places an order for an item' }]);
  expect(JSON.parse(stored.mcp.openapi).paths['/orders'].post.operationId).toBe('placeOrder');

  // A subscribed application with keys (set up through REST: devportal.spec.ts clicks it).
  await rest(request, 'POST', `/api/am/publisher/v1/apis/change-lifecycle?apiId=${api.id}&action=Publish`);
  const app = await rest(request, 'POST', '/api/am/devportal/v1/applications', { name: 'agent-e2e' });
  await rest(request, 'POST', `/api/am/devportal/v1/applications/${app.id}/generate-keys`, { keyType: 'PRODUCTION' });
  await rest(request, 'POST', '/api/am/devportal/v1/subscriptions', { applicationId: app.id, apiId: api.id, throttlingPolicy: 'Unlimited' });

  // Developer Portal: the MCP server, its tool and the clients' configurations.
  await page.getByRole('navigation', { name: 'Portals' }).getByRole('link', { name: 'Developer Portal', exact: true }).click();
  await page.getByRole('link', { name: 'MCP servers', exact: true }).click();
  const server = page.getByRole('region', { name: 'MCP server Orders MCP' });
  const url = (await server.getByTestId('mcp-url').textContent())!.trim();
  expect(url).toMatch(/^http:\/\/[^/]+\/mcp\/mcp-e2e\/v1$/);
  const listed = server.getByRole('table', { name: 'Tools' });
  await expect(listed.getByText('place_order')).toBeVisible();
  await expect(listed.getByText('listOrders')).toHaveCount(0);
  await server.getByRole('tab', { name: 'VS Code' }).click();
  const vscode = JSON.parse((await server.getByTestId('config-VS Code').textContent())!);
  expect(vscode.servers['orders-mcp']).toMatchObject({ type: 'http', url });

  // Try-it: initialize, then tools/call through the gateway with the application's key.
  const tryIt = server.getByRole('region', { name: 'Try a tool of Orders MCP' });
  await tryIt.getByRole('combobox', { name: 'Application' }).click();
  await page.getByRole('option', { name: 'agent-e2e', exact: true }).click();
  expect(JSON.parse(await tryIt.getByLabel('Arguments').inputValue())).toEqual({ body: {} });
  await tryIt.getByLabel('Arguments').fill(JSON.stringify({ body: { item: 'book', qty: 2 } }));
  // A new subscription reaches the gateway's snapshot within a moment.
  await expect(async () => {
    await tryIt.getByRole('button', { name: 'Call tool', exact: true }).click();
    await expect(tryIt.getByText('tools/call: 200')).toBeVisible({ timeout: 2_000 });
    const answer = JSON.parse((await tryIt.getByTestId('mcp-answer').textContent())!);
    expect(answer.result.isError).toBeFalsy();
  }).toPass({ timeout: 30_000, intervals: [500, 1000] });
  await expect(tryIt.getByText('initialize: 200')).toBeVisible();
  const answer = JSON.parse((await tryIt.getByTestId('mcp-answer').textContent())!);
  expect(answer.jsonrpc).toBe('2.0');
  expect(answer.result.structuredContent).toEqual({ item: 'book', qty: 2 });
  await page.screenshot({ path: '../target/screenshots/mcp-devportal.png', fullPage: true });
});
