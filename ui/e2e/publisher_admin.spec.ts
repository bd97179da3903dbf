// What a publisher and an admin do every day, clicked through in a real browser against a
// real `turnpike up` (issue 29, items 8 and 10): the admin defines tiers with a burst and a
// bandwidth limit and edits one; the publisher imports an OpenAPI document from a YAML file
// and from a URL, offers the new tier with the picker, writes documents (inline and from a
// file; edited, deleted after a confirmation) that the Developer Portal shows rendered,
// deletes an API (its subscriptions shown first: refused while one exists) and confirms
// Block, Deprecate and Retire; the admin lists every user's applications, changes a user's
// roles and reads an audit log that names objects instead of ids.
import { expect, test, type Browser, type Page } from '@playwright/test';
import { readFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));
const yamlFile = join(here, 'fixtures', 'inventory.yaml');
const base = () => process.env.TP_BASE!;
const adminPassword = () => process.env.TP_ADMIN_PASSWORD!;
const basic = (user: string, password: string) => `Basic ${Buffer.from(`${user}:${password}`).toString('base64')}`;

async function signIn(browser: Browser, user: string, password: string): Promise<Page> {
  const page = await (await browser.newContext({ baseURL: base() })).newPage();
  await page.goto('/');
  await page.getByLabel('Username').fill(user);
  await page.getByLabel('Password').fill(password);
  await page.getByRole('button', { name: 'Sign in', exact: true }).click();
  await expect(page.getByRole('button', { name: 'Sign out', exact: true })).toBeVisible();
  return page;
}

/** A REST call as `user` (HTTP Basic), for the set-up a test does not click through. */
async function rest(page: Page, user: string, password: string, method: string, path: string, data?: unknown) {
  const r = await page.request.fetch(`${base()}${path}`, {
    method,
    headers: { authorization: basic(user, password), 'content-type': 'application/json' },
    data: data === undefined ? undefined : JSON.stringify(data),
  });
  expect(r.status(), `${method} ${path}: ${await r.text()}`).toBeLessThan(300);
  return r.status() === 204 ? null : r.json();
}

/** Serves the YAML document on 127.0.0.1 (port 0), as a URL import would find it. */
async function serveYaml(): Promise<{ url: string; server: Server }> {
  const body = readFileSync(yamlFile);
  const server = createServer((_, res) => res.writeHead(200, { 'content-type': 'application/yaml' }).end(body));
  await new Promise<void>((ok) => server.listen(0, '127.0.0.1', ok));
  const port = (server.address() as { port: number }).port;
  return { url: `http://127.0.0.1:${port}/inventory.yaml`, server };
}

async function importOpenApi(page: Page, from: 'file' | 'url', source: string, context: string): Promise<string> {
  await page.getByRole('navigation', { name: 'Portals' }).getByRole('link', { name: 'Publisher', exact: true }).click();
  await page.getByRole('button', { name: 'Import OpenAPI', exact: true }).click();
  const dialog = page.getByRole('dialog');
  if (from === 'url') {
    await dialog.getByText('A URL', { exact: true }).click();
    await dialog.getByLabel(/^Document URL/).fill(source);
  } else {
    const [chooser] = await Promise.all([page.waitForEvent('filechooser'), dialog.getByRole('button', { name: 'OpenAPI document', exact: true }).click()]);
    await chooser.setFiles(source);
  }
  await dialog.getByLabel(/^Name/).fill(`Inventory ${context}`);
  await dialog.getByLabel(/^Context/).fill(context);
  await dialog.getByLabel('Back-end endpoint').fill(process.env.TP_ECHO!);
  await dialog.getByRole('button', { name: 'Import', exact: true }).click();
  await expect(page.getByRole('heading', { name: new RegExp(`Inventory ${context}`) })).toBeVisible();
  // The YAML's three operations became the API's resources.
  await page.getByRole('tab', { name: 'Resources' }).click();
  await expect(page.getByRole('textbox', { name: /^Path of resource/ })).toHaveCount(2);
  return /\/publisher\/apis\/([0-9a-f]+)/.exec(page.url())![1];
}

async function lifecycle(page: Page, action: string, confirm: boolean, state: string) {
  await page.getByRole('tab', { name: 'Lifecycle' }).click();
  await page.getByRole('button', { name: action, exact: true }).click();
  if (confirm) {
    const dialog = page.getByRole('dialog', { name: `${action} this API?` });
    await dialog.getByRole('button', { name: action, exact: true }).click();
    await expect(dialog).toHaveCount(0);
  }
  await expect(page.getByRole('tabpanel').getByText(state, { exact: true })).toBeVisible();
}

test('the publisher: tiers picked, documents, YAML and URL imports, delete, confirmed lifecycle', async ({ browser }) => {
  const admin = await signIn(browser, 'admin', adminPassword());

  // Admin: a subscription tier with a burst, one limited by bandwidth; then the burst edited.
  await admin.goto('/admin');
  await admin.getByLabel('Tier name').fill('Burst10');
  await admin.getByLabel('Requests').fill('600');
  await admin.getByLabel('Burst limit').fill('10');
  await admin.getByRole('button', { name: 'Add tier', exact: true }).click();
  await expect(admin.getByRole('row', { name: /Burst10\s+600 \/ 60 s · burst 10 \/ second/ })).toBeVisible();
  await admin.getByLabel('Tier name').fill('Bytes5M');
  await admin.getByText('Bandwidth', { exact: true }).click();
  await admin.getByLabel('Data', { exact: true }).fill('5');
  await admin.getByRole('button', { name: 'Add tier', exact: true }).click();
  await expect(admin.getByRole('row', { name: /Bytes5M\s+5 MiB \/ 60 s/ })).toBeVisible();
  await admin.getByRole('button', { name: 'Edit tier Burst10', exact: true }).click();
  const edit = admin.getByRole('region', { name: 'Edit tier Burst10' });
  await edit.getByLabel('Burst limit').fill('20');
  await edit.getByRole('combobox', { name: 'Burst per' }).click();
  await admin.getByRole('option', { name: 'per minute', exact: true }).click();
  await edit.getByRole('button', { name: 'Save tier', exact: true }).click();
  await expect(admin.getByRole('row', { name: /Burst10\s+600 \/ 60 s · burst 20 \/ minute/ })).toBeVisible();
  const tier = await rest(admin, 'admin', adminPassword(), 'GET', '/api/am/admin/v1/throttling/policies/subscription/Burst10');
  expect(tier.burst).toEqual({ requests: 20, per: 'minute' });
  const bytesTier = await rest(admin, 'admin', adminPassword(), 'GET', '/api/am/admin/v1/throttling/policies/subscription/Bytes5M');
  expect(bytesTier.dataAmount).toBe(5 * 1024 * 1024);

  // Publisher: import from a YAML file; offer Burst10 with the picker.
  const fromFile = await importOpenApi(admin, 'file', yamlFile, '/inventory');
  await admin.getByRole('tab', { name: 'Overview' }).click();
  await admin.getByRole('combobox', { name: 'Subscription tiers' }).click();
  await admin.getByRole('option', { name: 'Burst10', exact: true }).click();
  await admin.keyboard.press('Escape');
  await admin.getByRole('button', { name: 'Save', exact: true }).click();
  await expect(admin.getByText('Saved.')).toBeVisible();
  const saved = await rest(admin, 'admin', adminPassword(), 'GET', `/api/am/publisher/v1/apis/${fromFile}`);
  expect(saved.policies).toContain('Burst10');

  // Documents: one written inline, one from a file; edited; one deleted after a confirmation.
  await admin.getByRole('tab', { name: 'Documents' }).click();
  await admin.getByRole('button', { name: 'Add document', exact: true }).click();
  let dialog = admin.getByRole('dialog', { name: 'Add a document' });
  await dialog.getByLabel('Document name').fill('Getting started');
  await dialog.getByLabel('Summary').fill('Your first call');
  await dialog.getByLabel('Content').fill('# Welcome\n\nCall **GET /items** with your key.\n\n- one\n- two');
  await dialog.getByRole('button', { name: 'Preview', exact: true }).click();
  await expect(dialog.getByRole('article', { name: 'Preview' }).getByRole('heading', { name: 'Welcome' })).toBeVisible();
  await dialog.getByRole('button', { name: 'Save document', exact: true }).click();
  await expect(admin.getByRole('row', { name: /Getting started\s+Your first call/ })).toBeVisible();
  await admin.getByRole('button', { name: 'Add document', exact: true }).click();
  dialog = admin.getByRole('dialog', { name: 'Add a document' });
  const [chooser] = await Promise.all([admin.waitForEvent('filechooser'), dialog.getByRole('button', { name: /^Markdown file/ }).click()]);
  await chooser.setFiles({ name: 'errors.md', mimeType: 'text/markdown', buffer: Buffer.from('## Errors\n\nA `429` means slow down.') });
  await expect(dialog.getByLabel('Document name')).toHaveValue('errors');
  await expect(dialog.getByLabel('Content')).toHaveValue(/A `429` means slow down/);
  await dialog.getByRole('button', { name: 'Save document', exact: true }).click();
  await expect(admin.getByRole('row', { name: /^errors/ })).toBeVisible();
  await admin.getByRole('button', { name: 'Edit document Getting started', exact: true }).click();
  dialog = admin.getByRole('dialog', { name: 'Edit Getting started' });
  await dialog.getByLabel('Content').fill('# Welcome\n\nCall **GET /items** with your API key.');
  await dialog.getByRole('button', { name: 'Save document', exact: true }).click();
  await expect(dialog).toHaveCount(0);
  await admin.getByRole('button', { name: 'Delete document errors', exact: true }).click();
  dialog = admin.getByRole('dialog', { name: 'Delete the document "errors"?' });
  await dialog.getByRole('button', { name: 'Cancel', exact: true }).click();
  await expect(admin.getByRole('row', { name: /^errors/ })).toBeVisible();
  await admin.getByRole('button', { name: 'Delete document errors', exact: true }).click();
  await dialog.getByRole('button', { name: 'Delete', exact: true }).click();
  await expect(admin.getByRole('row', { name: /^errors/ })).toHaveCount(0);

  // Published (no confirmation), the Developer Portal shows the document rendered.
  await lifecycle(admin, 'Publish', false, 'PUBLISHED');
  await admin.goto(`/devportal/apis/${fromFile}`);
  const docs = admin.getByRole('region', { name: 'Documents' });
  const article = docs.getByRole('article', { name: 'Document Getting started' });
  await expect(article.getByRole('heading', { name: 'Welcome' })).toBeVisible();
  await expect(article.locator('strong')).toHaveText('GET /items');
  await expect(article).toContainText('with your API key.');
  await expect(docs).not.toContainText('errors');

  // Import from a URL: a second API, nobody subscribed; deleted after the dialog says so.
  const { url, server } = await serveYaml();
  try {
    await importOpenApi(admin, 'url', url, '/inventory-url');
  } finally {
    server.close();
  }
  await admin.getByRole('button', { name: 'Delete API', exact: true }).click();
  dialog = admin.getByRole('dialog', { name: /Delete Inventory \/inventory-url/ });
  await expect(dialog.getByText(/No application subscribes to it/)).toBeVisible();
  await dialog.getByRole('button', { name: 'Delete API', exact: true }).click();
  await expect(admin).toHaveURL(/\/publisher$/);
  await expect(admin.getByRole('link', { name: 'Inventory /inventory-url' })).toHaveCount(0);
  await expect(admin.getByRole('link', { name: 'Inventory /inventory', exact: true })).toBeVisible();

  // An application subscribes to the first: deleting shows it and is refused.
  const app = await rest(admin, 'admin', adminPassword(), 'POST', '/api/am/devportal/v1/applications', { name: 'e2e-inventory-app', throttlingPolicy: 'Unlimited' });
  await rest(admin, 'admin', adminPassword(), 'POST', '/api/am/devportal/v1/subscriptions', { applicationId: app.id, apiId: fromFile, throttlingPolicy: 'Burst10' });
  await admin.getByRole('link', { name: 'Inventory /inventory', exact: true }).click();
  await admin.getByRole('button', { name: 'Delete API', exact: true }).click();
  dialog = admin.getByRole('dialog', { name: /Delete Inventory \/inventory v1/ });
  await expect(dialog.getByRole('list', { name: 'Subscriptions of the API' })).toContainText('e2e-inventory-app · Burst10 · ACTIVE');
  await expect(dialog.getByRole('button', { name: 'Delete API', exact: true })).toBeDisabled();
  await dialog.getByRole('button', { name: 'Cancel', exact: true }).click();

  // Block, Deprecate and Retire each ask first; Cancel changes nothing.
  await admin.getByRole('tab', { name: 'Lifecycle' }).click();
  await admin.getByRole('button', { name: 'Block', exact: true }).click();
  dialog = admin.getByRole('dialog', { name: 'Block this API?' });
  await expect(dialog).toContainText('403 api_blocked');
  await dialog.getByRole('button', { name: 'Cancel', exact: true }).click();
  await expect(admin.getByRole('tabpanel').getByText('PUBLISHED', { exact: true })).toBeVisible();
  await lifecycle(admin, 'Block', true, 'BLOCKED');
  await lifecycle(admin, 'Deprecate', true, 'DEPRECATED');
  await lifecycle(admin, 'Retire', true, 'RETIRED');
  const retired = await rest(admin, 'admin', adminPassword(), 'GET', `/api/am/publisher/v1/apis/${fromFile}`);
  expect(retired.lifecycleStatus).toBe('RETIRED');
});

test('the admin: every application, a user\'s roles, an audit log that names objects', async ({ browser }) => {
  const admin = await signIn(browser, 'admin', adminPassword());
  const olga = 'olga-password-1';
  await rest(admin, 'admin', adminPassword(), 'POST', '/api/am/admin/v1/users', { name: 'olga', password: olga, roles: ['subscriber'] });
  const app = await rest(admin, 'olga', olga, 'POST', '/api/am/devportal/v1/applications', { name: 'olga-shop', throttlingPolicy: 'Unlimited' });
  await rest(admin, 'admin', adminPassword(), 'POST', '/api/am/devportal/v1/applications', { name: 'admin-own-app', throttlingPolicy: 'Unlimited' });

  // Every user's applications, with their owner; search by owner.
  await admin.goto('/admin/applications');
  const table = admin.getByRole('table', { name: 'Applications' });
  await expect(table.getByRole('row', { name: /olga-shop\s+olga\s+Unlimited\s+ACTIVE/ })).toBeVisible();
  await expect(table.getByRole('row', { name: /admin-own-app\s+admin/ })).toBeVisible();
  await admin.getByLabel('Search').fill('OLGA');
  await expect(table.getByRole('row', { name: /admin-own-app/ })).toHaveCount(0);
  await expect(table.getByRole('row', { name: /olga-shop/ })).toBeVisible();
  await expect(admin.getByTestId('applications-range')).toHaveText('1-1 of 1');

  // Roles: olga becomes a publisher too, and the Publisher API lets her in.
  const denied = await admin.request.get(`${base()}/api/am/publisher/v1/apis`, { headers: { authorization: basic('olga', olga) } });
  expect(denied.status()).toBe(403);
  await admin.getByRole('link', { name: 'Users' }).click();
  await admin.getByRole('button', { name: 'Change roles of olga', exact: true }).click();
  const dialog = admin.getByRole('dialog', { name: 'Roles of olga' });
  await dialog.getByRole('checkbox', { name: 'publisher' }).check();
  await dialog.getByRole('button', { name: 'Save roles', exact: true }).click();
  await expect(admin.getByRole('table', { name: 'Users' }).getByRole('row', { name: /^olga\s+publisher\s*subscriber/ })).toBeVisible();
  const allowed = await admin.request.get(`${base()}/api/am/publisher/v1/apis`, { headers: { authorization: basic('olga', olga) } });
  expect(allowed.status()).toBe(200);

  // The audit log names the application, not its id; a deleted one keeps its id.
  await admin.getByRole('link', { name: 'Audit log' }).click();
  const audit = admin.getByRole('table', { name: 'Audit log' });
  await expect(audit.getByRole('row', { name: /olga\s+create application olga-shop/ })).toBeVisible();
  await expect(audit.getByRole('row', { name: /admin\s+update user olga/ })).toBeVisible();
  await expect(audit.getByRole('row', { name: new RegExp(app.id) })).toHaveCount(0);
  await rest(admin, 'olga', olga, 'DELETE', `/api/am/devportal/v1/applications/${app.id}`);
  await admin.reload();
  await expect(audit.getByRole('row', { name: new RegExp(`olga\\s+create application ${app.id}`) })).toBeVisible();
});
