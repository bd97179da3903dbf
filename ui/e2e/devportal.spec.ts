// The Developer Portal's day-to-day actions in a real browser against a real `turnpike
// up` (issue 29 item 9): a developer creates, renames and finally deletes an application
// (confirmed); generates keys and regenerates the consumer secret (confirmed, shown once:
// the old secret stops working, the new one works); registers a redirect URI; downloads
// the API's OpenAPI document as JSON and YAML and a generated SDK; subscribes, finds the
// try-it body pre-filled from the document's example (and a skeleton from the schema
// where there is none), calls the API, then unsubscribes (confirmed); a deprecated API
// offers no Subscribe. Sandbox keys: sandbox.spec.ts.
import { expect, test, type APIRequestContext, type Browser, type Download, type Page } from '@playwright/test';
import { readFileSync } from 'node:fs';

const base = () => process.env.TP_BASE!;
const basic = (user: string, secret: string) => `Basic ${Buffer.from(`${user}:${secret}`).toString('base64')}`;
const admin = () => ({ Authorization: basic('admin', process.env.TP_ADMIN_PASSWORD!) });

async function rest(request: APIRequestContext, method: string, path: string, data?: unknown) {
  const r = await request.fetch(`${base()}${path}`, { method, headers: admin(), data });
  expect(r.ok(), `${method} ${path}: ${r.status()} ${await r.text()}`).toBeTruthy();
  return (await r.text()) ? r.json() : null;
}

async function signIn(browser: Browser): Promise<Page> {
  const page = await (await browser.newContext({ baseURL: base(), acceptDownloads: true })).newPage();
  await page.goto('/');
  await page.getByLabel('Username').fill('admin');
  await page.getByLabel('Password').fill(process.env.TP_ADMIN_PASSWORD!);
  await page.getByRole('button', { name: 'Sign in', exact: true }).click();
  await expect(page.getByRole('button', { name: 'Sign out', exact: true })).toBeVisible();
  return page;
}

const ORDERS = {
  openapi: '3.0.3',
  info: { title: 'Orders', version: '1.0.0' },
  components: {
    schemas: {
      Order: {
        type: 'object',
        properties: { item: { type: 'string' }, qty: { type: 'integer', minimum: 1 }, gift: { type: 'boolean' } },
      },
    },
  },
  paths: {
    '/orders': {
      get: { summary: 'List orders', responses: { '200': { description: 'the orders' } } },
      post: {
        summary: 'Place an order',
        requestBody: {
          content: { 'application/json': { schema: { $ref: '#/components/schemas/Order' }, example: { item: 'book', qty: 2 } } },
        },
        responses: { '201': { description: 'placed' } },
      },
    },
    '/orders/{id}': {
      put: {
        summary: 'Change an order',
        parameters: [{ name: 'id', in: 'path', required: true, schema: { type: 'string' } }],
        requestBody: { content: { 'application/json': { schema: { $ref: '#/components/schemas/Order' } } } },
        responses: { '200': { description: 'changed' } },
      },
    },
  },
};

async function publishedApi(request: APIRequestContext, name: string, context: string) {
  const api = await rest(request, 'POST', '/api/am/publisher/v1/apis/import-openapi', {
    definition: { ...ORDERS, info: { ...ORDERS.info, title: name } },
    additionalProperties: { name, context, version: 'v1', endpoints: [process.env.TP_ECHO] },
  });
  await rest(request, 'POST', `/api/am/publisher/v1/apis/change-lifecycle?apiId=${api.id}&action=Publish`);
  return api as { id: string };
}

const saved = async (d: Download) => readFileSync((await d.path())!, 'utf8');

async function tokenStatus(request: APIRequestContext, key: string, secret: string) {
  const r = await request.post(`${base()}/oauth2/token`, {
    headers: { Authorization: basic(key, secret) },
    form: { grant_type: 'client_credentials' },
  });
  return r.status();
}

/** Generates production keys, then regenerates the secret through the confirmation:
 * returns the key and both secrets. */
async function keysAndNewSecret(page: Page) {
  await page.getByRole('button', { name: 'Generate production keys', exact: true }).click();
  let dialog = page.getByRole('dialog', { name: 'Your new keys' });
  const key = (await dialog.getByTestId('Consumer key').textContent())!.trim();
  const first = (await dialog.getByTestId('Consumer secret').textContent())!.trim();
  await dialog.getByRole('button', { name: 'I have copied it', exact: true }).click();
  await page.getByRole('button', { name: 'Regenerate production secret', exact: true }).click();
  const confirm = page.getByRole('dialog', { name: 'Regenerate production secret?' });
  await expect(confirm.getByText('stops working now')).toBeVisible();
  await confirm.getByRole('button', { name: 'Regenerate production secret', exact: true }).click();
  dialog = page.getByRole('dialog', { name: 'Your new keys' });
  await expect(dialog.getByText('Shown once')).toBeVisible();
  const second = (await dialog.getByTestId('Consumer secret').textContent())!.trim();
  await dialog.getByRole('button', { name: 'I have copied it', exact: true }).click();
  return { key, first, second };
}

test('applications, secrets, downloads, try-it examples, unsubscribe, deprecated APIs', async ({ browser, request }) => {
  const orders = await publishedApi(request, 'Orders', '/orders-e2e');
  const legacy = await publishedApi(request, 'Legacy', '/legacy-e2e');
  await rest(request, 'POST', `/api/am/publisher/v1/apis/change-lifecycle?apiId=${legacy.id}&action=Deprecate`);
  const page = await signIn(browser);

  // Create, then rename the application.
  await page.goto('/devportal/applications');
  await page.getByLabel('New application').fill('shop-e2e');
  await page.getByRole('button', { name: 'Create', exact: true }).click();
  await expect(page.getByRole('heading', { name: 'shop-e2e' })).toBeVisible();
  const appId = page.url().split('/').pop()!;
  // The page loads its usage charts (a large chunk) next: on a loaded machine the
  // browser is busy parsing it for a while.
  await page.waitForLoadState('networkidle');
  const settings = page.getByRole('region', { name: 'Application settings' });
  await settings.getByLabel('Application name').fill('shop-e2e-renamed', { timeout: 60_000 });
  await settings.getByLabel('Description').fill('The web shop');
  await settings.getByRole('button', { name: 'Save', exact: true }).click();
  await expect(page.getByRole('heading', { name: 'shop-e2e-renamed' })).toBeVisible();
  const stored = await rest(request, 'GET', `/api/am/devportal/v1/applications/${appId}`);
  expect([stored.name, stored.description]).toEqual(['shop-e2e-renamed', 'The web shop']);

  // Keys; a regenerated secret replaces the old one at once.
  const { key, first, second } = await keysAndNewSecret(page);
  expect(second).not.toBe(first);
  expect(await tokenStatus(request, key, first)).toBe(401);
  expect(await tokenStatus(request, key, second)).toBe(200);

  // A redirect URI for the authorization code grant.
  await page.getByLabel('Redirect URIs (production)').fill('https://shop.example/callback');
  await page.getByRole('button', { name: 'Save redirect URIs', exact: true }).click();
  await expect(page.getByText('Redirect URIs saved.')).toBeVisible();
  const keys = await rest(request, 'GET', `/api/am/devportal/v1/applications/${appId}/keys`);
  expect(keys.list[0].redirectUris).toEqual(['https://shop.example/callback']);

  // The API page: downloads.
  await page.goto(`/devportal/apis/${orders.id}`);
  const downloads = page.getByRole('region', { name: 'Downloads' });
  let wait = page.waitForEvent('download');
  await downloads.getByRole('button', { name: 'Download JSON', exact: true }).click();
  let file = await wait;
  expect(file.suggestedFilename()).toBe('Orders-v1.json');
  const json = JSON.parse(await saved(file));
  expect(Object.keys(json.paths)).toEqual(['/orders', '/orders/{id}']);
  expect(json.servers.length).toBeGreaterThan(0);
  wait = page.waitForEvent('download');
  await downloads.getByRole('button', { name: 'Download YAML', exact: true }).click();
  file = await wait;
  expect(file.suggestedFilename()).toBe('Orders-v1.yaml');
  const yaml = await saved(file);
  expect(yaml).toContain('openapi: "3.0.3"');
  expect(yaml).toMatch(/^ {2}\/orders:$/m);
  expect(yaml).toContain('"$ref": "#/components/schemas/Order"');

  // SDKs: generated on the server (`rest`'s route); a control plane without the
  // generator answers 503 naming what is missing, which the page shows.
  const sdk = await request.get(`${base()}/api/am/devportal/v1/apis/${orders.id}/sdks/typescript`, { headers: admin(), timeout: 180_000 });
  await downloads.getByRole('button', { name: 'Download SDK', exact: true }).click();
  if (sdk.status() === 200) {
    wait = page.waitForEvent('download', { timeout: 180_000 });
    await page.getByRole('menuitem', { name: 'TypeScript SDK' }).click();
    file = await wait;
    expect(file.suggestedFilename()).toBe('Orders-v1-typescript-sdk.zip');
    expect(readFileSync((await file.path())!).subarray(0, 2).toString()).toBe('PK');
  } else {
    await page.getByRole('menuitem', { name: 'TypeScript SDK' }).click();
    await expect(downloads.getByRole('alert')).toBeVisible({ timeout: 180_000 });
  }

  // Subscribe; try-it starts from the document's example, else the schema's skeleton.
  const subscribe = page.getByRole('region', { name: 'Subscribe' });
  await subscribe.getByRole('combobox', { name: 'Application' }).click();
  await page.getByRole('option', { name: 'shop-e2e-renamed', exact: true }).click();
  await subscribe.getByRole('button', { name: 'Subscribe', exact: true }).click();
  const line = subscribe.getByRole('listitem', { name: 'Subscription shop-e2e-renamed' });
  await expect(line).toBeVisible();
  const tryIt = page.getByRole('region', { name: 'Try it' });
  await tryIt.getByRole('combobox', { name: 'Operation' }).click();
  await page.getByRole('option', { name: 'POST /orders', exact: true }).click();
  expect(JSON.parse(await tryIt.getByLabel('Body').inputValue())).toEqual({ item: 'book', qty: 2 });
  await tryIt.getByRole('combobox', { name: 'Operation' }).click();
  await page.getByRole('option', { name: 'PUT /orders/{id}', exact: true }).click();
  expect(JSON.parse(await tryIt.getByLabel('Body').inputValue())).toEqual({ item: 'string', qty: 1, gift: false });
  await tryIt.getByRole('combobox', { name: 'Operation' }).click();
  await page.getByRole('option', { name: 'POST /orders', exact: true }).click();
  await tryIt.getByRole('combobox', { name: 'Application' }).click();
  await page.getByRole('option', { name: 'shop-e2e-renamed', exact: true }).click();
  await expect(async () => {
    await tryIt.getByRole('button', { name: 'Send', exact: true }).click();
    await expect(tryIt.getByTestId('try-status')).toHaveText('200', { timeout: 2_000 });
  }).toPass({ timeout: 30_000, intervals: [500, 1000] });
  await expect(tryIt.getByRole('region', { name: 'Response' })).toContainText('book');

  // Unsubscribe, confirmed.
  await line.getByRole('button', { name: 'Unsubscribe', exact: true }).click();
  const confirmUnsub = page.getByRole('dialog', { name: 'Unsubscribe?' });
  await confirmUnsub.getByRole('button', { name: 'Unsubscribe', exact: true }).click();
  await expect(line).toHaveCount(0);
  const left = await rest(request, 'GET', `/api/am/devportal/v1/subscriptions?applicationId=${appId}`);
  expect(left.list).toEqual([]);

  // A deprecated API: no Subscribe, a note instead.
  await page.goto(`/devportal/apis/${legacy.id}`);
  const legacySub = page.getByRole('region', { name: 'Subscribe' });
  await expect(legacySub.getByText('This API is deprecated')).toBeVisible();
  await expect(legacySub.getByRole('button', { name: 'Subscribe' })).toHaveCount(0);

  // Delete the application, confirmed (Cancel first keeps it).
  await page.goto(`/devportal/applications/${appId}`);
  await page.getByRole('button', { name: 'Delete application', exact: true }).click();
  let confirmDelete = page.getByRole('dialog', { name: 'Delete application?' });
  await confirmDelete.getByRole('button', { name: 'Cancel', exact: true }).click();
  await expect(confirmDelete).toBeHidden();
  await expect(page.getByRole('heading', { name: 'shop-e2e-renamed' })).toBeVisible();
  await page.getByRole('button', { name: 'Delete application', exact: true }).click();
  confirmDelete = page.getByRole('dialog', { name: 'Delete application?' });
  await expect(confirmDelete.getByText('This cannot be undone')).toBeVisible();
  await confirmDelete.getByRole('button', { name: 'Delete application', exact: true }).click();
  await expect(page.getByRole('heading', { name: 'Applications' })).toBeVisible();
  await expect(page.getByRole('table', { name: 'Applications' }).getByText('shop-e2e-renamed')).toHaveCount(0);
  const gone = await request.get(`${base()}/api/am/devportal/v1/applications/${appId}`, { headers: admin() });
  expect(gone.status()).toBe(404);
  expect(await tokenStatus(request, key, second)).toBe(401);
});
