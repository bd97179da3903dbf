// The portals end to end in a real browser against a real `turnpike up`: the admin
// adds a publisher and turns self sign-up on; the publisher imports an OpenAPI file and
// publishes it; a visitor browses the public catalogue, signs up and signs in, creates an
// application, generates keys (shown once), subscribes and calls the API from the try-it
// console (200); the publisher blocks the subscription and the console gets 403; the
// admin creates a tier and closes the catalogue to anonymous visitors. Each portal's main
// pages are saved as screenshots under target/screenshots (listed in docs/portals.md).
import { expect, test, type Browser, type Page } from '@playwright/test';
import { mkdirSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));

const shots = resolve(here, '..', '..', 'target', 'screenshots');
mkdirSync(shots, { recursive: true });
const base = () => process.env.TP_BASE!;
const shot = async (page: Page, name: string) => {
  await page.evaluate(() => window.scrollTo(0, 0));
  await page.screenshot({ path: join(shots, `${name}.png`), fullPage: true });
};

// Every page a test opened, for screenshots when it fails.
const opened: Page[] = [];
test.afterEach(async ({}, info) => {
  if (info.status !== info.expectedStatus) {
    for (const [i, page] of opened.entries()) {
      await page.screenshot({ path: join(shots, `failed-${i}.png`), fullPage: true }).catch(() => {});
    }
  }
  opened.length = 0;
});

async function signIn(browser: Browser, user: string, password: string, screenshot?: string): Promise<Page> {
  const context = await browser.newContext({ baseURL: base() });
  const page = await context.newPage();
  opened.push(page);
  await page.goto('/');
  await expect(page.getByRole('heading', { name: 'Sign in' })).toBeVisible();
  await page.getByLabel('Username').fill(user);
  await page.getByLabel('Password').fill(password);
  if (screenshot) await shot(page, screenshot);
  await page.getByRole('button', { name: 'Sign in', exact: true }).click();
  await expect(page.getByRole('button', { name: 'Sign out', exact: true })).toBeVisible();
  return page;
}

async function choose(page: Page, scope: ReturnType<Page['getByRole']>, label: string, option: string) {
  await scope.getByRole('combobox', { name: label }).click();
  await page.getByRole('option', { name: option, exact: true }).click();
}

/** Sends from the try-it console until the status is `want` (the gateway applies a
 * subscription change within a snapshot publish). */
async function tryUntil(page: Page, want: number) {
  const console_ = page.getByRole('region', { name: 'Try it' });
  await expect(async () => {
    await console_.getByRole('button', { name: 'Send', exact: true }).click();
    await expect(console_.getByTestId('try-status')).toHaveText(String(want), { timeout: 2_000 });
  }).toPass({ timeout: 30_000, intervals: [500, 1000] });
}

test('publish, subscribe, try it, block, add a tier', async ({ browser }) => {
  const admin = await signIn(browser, 'admin', process.env.TP_ADMIN_PASSWORD!, '01-login');

  // Admin: a publisher, and self sign-up on for subscribers.
  await admin.goto('/admin/users');
  await expect(admin.getByRole('heading', { name: 'Users' })).toBeVisible();
  for (const [name, role] of [['pat', 'publisher']]) {
    await admin.getByLabel('Username').fill(name);
    await admin.getByLabel('Password', { exact: false }).first().fill(`${name}-password-1`);
    // The form starts with "subscriber" checked; a publisher gets publisher instead.
    if (role === 'publisher') {
      await admin.getByRole('checkbox', { name: 'subscriber' }).uncheck();
      await admin.getByRole('checkbox', { name: 'publisher' }).check();
    }
    await admin.getByRole('button', { name: 'Add user', exact: true }).click();
    await expect(admin.getByRole('table', { name: 'Users' }).getByRole('cell', { name, exact: true })).toBeVisible();
  }
  await shot(admin, '02-admin-users');
  await admin.goto('/admin/settings');
  const selfSignup = admin.getByRole('switch', { name: /Self sign-up/ });
  await expect(selfSignup).not.toBeChecked();
  await selfSignup.click();
  await expect(selfSignup).toBeChecked();
  await expect(admin.getByRole('switch', { name: /Anonymous browsing/ })).toBeChecked();
  await shot(admin, '02b-admin-settings');

  // Publisher: import the OpenAPI file, publish.
  const pub = await signIn(browser, 'pat', 'pat-password-1');
  await expect(pub).toHaveURL(/\/publisher$/);
  await pub.getByRole('button', { name: 'Import OpenAPI', exact: true }).click();
  const [chooser] = await Promise.all([
    pub.waitForEvent('filechooser'),
    pub.getByRole('button', { name: 'OpenAPI document', exact: true }).click(),
  ]);
  await chooser.setFiles(join(here, 'fixtures', 'petstore.json'));
  await pub.getByLabel('Context').fill('/pets');
  await pub.getByLabel('Back-end endpoint').fill(process.env.TP_ECHO!);
  await pub.getByRole('button', { name: 'Import', exact: true }).click();
  await expect(pub.getByRole('heading', { name: /Pet Store/ })).toBeVisible();
  await shot(pub, '03-publisher-api');
  // Publisher: resources as imported, a transformation tried on a sample then saved (a
  // response header the try-it console shows later), CORS on.
  await pub.getByRole('tab', { name: 'Resources' }).click();
  await expect(pub.getByRole('textbox', { name: 'Path of resource 1' })).toHaveValue(/\/pets/);
  await pub.getByRole('tab', { name: 'Transformations' }).click();
  await pub
    .getByLabel('Transformation', { exact: true })
    .fill('{"request": {"body": {"jq": "{wrapped: .}"}}, "response": {"headers": {"set": {"x-edited": "by-publisher"}}}}');
  await pub.getByLabel('Sample request body').fill('{"name": "rex"}');
  await pub.getByRole('button', { name: 'Try on the sample', exact: true }).click();
  await expect(pub.getByTestId('mediation-result')).toContainText('"wrapped"');
  await expect(pub.getByTestId('mediation-result')).toContainText('"rex"');
  await pub.getByRole('button', { name: 'Save transformation', exact: true }).click();
  await expect(pub.getByText('Saved.')).toBeVisible();
  await shot(pub, '03b-publisher-transformation');
  await pub.getByRole('tab', { name: 'Security' }).click();
  await pub.getByRole('switch', { name: /^API keys/ }).click();
  await pub.getByRole('button', { name: 'Save security', exact: true }).click();
  await expect(pub.getByText('Saved.')).toBeVisible();
  await pub.getByRole('tab', { name: 'CORS' }).click();
  await pub.getByRole('switch', { name: /^CORS/ }).click();
  await pub.getByLabel('Allowed origins').fill('https://shop.example');
  await pub.getByRole('button', { name: 'Save CORS', exact: true }).click();
  await expect(pub.getByText('Saved.')).toBeVisible();
  await pub.getByRole('tab', { name: 'Lifecycle' }).click();
  await pub.getByRole('button', { name: 'Publish', exact: true }).click();
  await expect(pub.getByText('PUBLISHED').first()).toBeVisible();
  await pub.goto('/publisher');
  await expect(pub.getByRole('link', { name: 'Pet Store' })).toBeVisible();
  await shot(pub, '04-publisher-apis');

  // A visitor: the public catalogue, sign up, sign in.
  const visitor = await browser.newContext({ baseURL: base() });
  const sub = await visitor.newPage();
  opened.push(sub);
  await sub.goto('/devportal');
  await sub.getByRole('link', { name: /Pet Store/ }).click();
  await expect(sub.getByText('List pets')).toBeVisible();
  await expect(sub.getByRole('button', { name: 'Sign in to subscribe', exact: true })).toBeVisible();
  await shot(sub, '05-devportal-anonymous-api');
  await sub.getByRole('link', { name: 'Sign up', exact: true }).first().click();
  await sub.getByLabel(/^Username/).fill('sam');
  await sub.getByLabel(/^Password/).fill('sam-password-1');
  await sub.getByLabel(/^Repeat the password/).fill('sam-password-1');
  await shot(sub, '05b-devportal-sign-up');
  await sub.getByRole('button', { name: 'Create account', exact: true }).click();
  await expect(sub.getByText('Welcome, sam.')).toBeVisible();
  await sub.getByRole('button', { name: 'Sign in', exact: true }).last().click();
  await expect(sub.getByRole('heading', { name: 'Sign in' })).toBeVisible();
  await sub.getByLabel('Username').fill('sam');
  await sub.getByLabel('Password').fill('sam-password-1');
  await sub.getByRole('button', { name: 'Sign in', exact: true }).click();
  await expect(sub.getByRole('button', { name: 'Sign out', exact: true })).toBeVisible();
  await expect(sub).toHaveURL(/\/devportal$/);

  // Subscriber: application, keys shown once, subscription, try-it → 200.
  await expect(sub.getByRole('link', { name: /Pet Store/ })).toBeVisible();
  await shot(sub, '05c-devportal-catalogue');
  await sub.getByRole('link', { name: 'Applications' }).click();
  await sub.getByLabel('New application').fill('sam-app');
  await sub.getByRole('button', { name: 'Create', exact: true }).click();
  await expect(sub.getByRole('heading', { name: 'sam-app' })).toBeVisible();
  await sub.getByRole('button', { name: 'Generate production keys', exact: true }).click();
  const dialog = sub.getByRole('dialog', { name: 'Your new keys' });
  await expect(dialog.getByTestId('Consumer secret')).not.toBeEmpty();
  await shot(sub, '06-devportal-keys-shown-once');
  await dialog.getByRole('button', { name: 'I have copied it', exact: true }).click();
  await expect(sub.getByRole('button', { name: 'Generate production keys', exact: true })).toHaveCount(0);

  await sub.goto('/devportal');
  await sub.getByRole('link', { name: /Pet Store/ }).click();
  await expect(sub.getByText('List pets')).toBeVisible();
  const subscribe = sub.getByRole('region', { name: 'Subscribe' });
  await choose(sub, subscribe, 'Application', 'sam-app');
  await subscribe.getByRole('button', { name: 'Subscribe', exact: true }).click();
  await expect(subscribe.getByText('ACTIVE')).toBeVisible();
  const tryIt = sub.getByRole('region', { name: 'Try it' });
  await choose(sub, tryIt, 'Application', 'sam-app');
  await tryUntil(sub, 200);
  await expect(tryIt.getByText('/pets/v1/pets').first()).toBeVisible();
  // The publisher's response transformation ran at the gateway.
  await expect(tryIt.getByRole('cell', { name: 'by-publisher', exact: true })).toBeVisible();
  await shot(sub, '07-devportal-try-it-200');

  // An API key of the same application, shown once, works at the gateway.
  await sub.getByRole('link', { name: 'Applications' }).click();
  await sub.getByRole('link', { name: 'sam-app' }).click();
  const keysCard = sub.getByRole('region', { name: 'API keys' });
  await keysCard.getByLabel('Key name').fill('ci');
  await keysCard.getByRole('button', { name: 'Create API key', exact: true }).click();
  const keyDialog = sub.getByRole('dialog', { name: 'Your new API key' });
  const apikey = (await keyDialog.getByTestId('API key').textContent())!.trim();
  expect(apikey).toMatch(/^tpk_/);
  await shot(sub, '07b-devportal-api-key-shown-once');
  await keyDialog.getByRole('button', { name: 'I have copied it', exact: true }).click();
  await expect(keysCard.getByRole('cell', { name: 'ci', exact: true })).toBeVisible();
  await expect(async () => {
    const r = await sub.request.get(`${process.env.TP_GATEWAY}/pets/v1/pets`, { headers: { apikey } });
    expect(r.status()).toBe(200);
  }).toPass({ timeout: 30_000, intervals: [500, 1000] });
  const bad = await sub.request.get(`${process.env.TP_GATEWAY}/pets/v1/pets`, { headers: { apikey: 'tpk_wrong' } });
  expect(bad.status()).toBe(401);

  // Request handling: a ';' path parameter is refused until the publisher chooses to strip
  // it; then the gateway routes and forwards the stripped path.
  const matrixPath = `${process.env.TP_GATEWAY}/pets/v1/pets;jsessionid=x`;
  const refused = await sub.request.get(matrixPath, { headers: { apikey } });
  expect(refused.status()).toBe(400);
  expect((await refused.json()).code).toBe('invalid_path');
  await pub.getByRole('link', { name: 'Pet Store' }).click();
  await pub.getByRole('tab', { name: 'Request handling' }).click();
  await pub.getByText('Strip before routing', { exact: true }).click();
  await pub.getByRole('button', { name: 'Save request handling', exact: true }).click();
  await expect(pub.getByText('Saved.')).toBeVisible();
  await shot(pub, '07c-publisher-request-handling');
  await expect(async () => {
    const r = await sub.request.get(matrixPath, { headers: { apikey } });
    expect(r.status()).toBe(200);
  }).toPass({ timeout: 30_000, intervals: [500, 1000] });

  // Resilience: an endpoint's weight and read timeout, weighted balancing and a
  // suspension policy; a bad window is refused with its field named, a good one saved.
  await pub.getByRole('tab', { name: 'Resilience' }).click();
  await pub.getByLabel(/^Weight of /).first().fill('3');
  await pub.getByLabel(/^Read timeout of /).first().fill('10s');
  await choose(pub, pub.locator('body'), 'Load balancing', 'weighted_round_robin');
  const section = pub.getByLabel('Resilience settings');
  await section.fill('{"suspension": {"on": ["connect_failure", "5xx"], "initial_duration": "5s"}, "circuit_breaker": {"window": 5000}}');
  await pub.getByRole('button', { name: 'Save resilience', exact: true }).click();
  await expect(pub.getByText(/resilience\.circuit_breaker\.window/)).toBeVisible();
  await section.fill('{"suspension": {"on": ["connect_failure", "5xx"], "initial_duration": "5s"}, "circuit_breaker": {"window": 50}}');
  await pub.getByRole('button', { name: 'Save resilience', exact: true }).click();
  await expect(pub.getByText('Saved.')).toBeVisible();
  await shot(pub, '07d-publisher-resilience');
  await pub.reload();
  await pub.getByRole('tab', { name: 'Resilience' }).click();
  await expect(pub.getByLabel(/^Weight of /).first()).toHaveValue('3');
  await expect(pub.getByLabel(/^Read timeout of /).first()).toHaveValue('10s');
  await expect(pub.getByLabel('Resilience settings')).toHaveValue(/"initial_duration": "5s"/);
  await expect(pub.getByRole('combobox', { name: 'Load balancing' })).toHaveValue('weighted_round_robin');
  await expect(async () => {
    const r = await sub.request.get(`${process.env.TP_GATEWAY}/pets/v1/pets`, { headers: { apikey } });
    expect(r.status()).toBe(200);
  }).toPass({ timeout: 30_000, intervals: [500, 1000] });
  await pub.goto('/publisher');

  await sub.goto('/devportal');
  await sub.getByRole('link', { name: /Pet Store/ }).click();
  await choose(sub, tryIt, 'Application', 'sam-app');

  // Publisher blocks the subscription → the console gets 403.
  await pub.getByRole('link', { name: 'Pet Store' }).click();
  await pub.getByRole('tab', { name: 'Subscriptions' }).click();
  await pub.getByRole('button', { name: 'Block', exact: true }).click();
  await expect(pub.getByRole('button', { name: 'Unblock', exact: true })).toBeVisible();
  await shot(pub, '08-publisher-subscription-blocked');
  await tryUntil(sub, 403);
  await shot(sub, '09-devportal-try-it-403');

  // Admin: a new tier.
  await admin.goto('/admin');
  await expect(admin.getByRole('row', { name: /Platinum/ })).toHaveCount(0);
  await admin.getByLabel('Tier name').fill('Platinum');
  await admin.getByLabel('Requests').fill('7000');
  await admin.getByLabel('Description').fill('Seven thousand a minute');
  await admin.getByRole('button', { name: 'Add tier', exact: true }).click();
  await expect(admin.getByRole('row', { name: /Platinum\s+7000 \/ 60 s\s+Seven thousand a minute/ })).toBeVisible();
  await expect(admin.getByRole('alert')).toHaveCount(0);
  await shot(admin, '10-admin-tiers');

  // Admin closes the catalogue: a new visitor is sent to sign in.
  await admin.goto('/admin/settings');
  const anonymous = admin.getByRole('switch', { name: /Anonymous browsing/ });
  await anonymous.click();
  await expect(anonymous).not.toBeChecked();
  const late = await (await browser.newContext({ baseURL: base() })).newPage();
  opened.push(late);
  await late.goto('/devportal');
  await expect(late.getByRole('heading', { name: 'Sign in' })).toBeVisible();
  await anonymous.click(); // open again: the next test starts from the default
  await expect(anonymous).toBeChecked();
  for (const [path, heading, name] of [
    ['/admin/gateways', 'Gateways', '11-admin-gateways'],
    ['/admin/keys', 'Signing keys', '12-admin-signing-keys'],
  ]) {
    await admin.goto(path);
    await expect(admin.getByRole('heading', { name: heading })).toBeVisible();
    if (path === '/admin/gateways') {
      // `turnpike up`'s own gateway, with the version it serves, no lag, up to date.
      const row = admin.getByRole('table', { name: 'Gateways' }).getByRole('row', { name: /^gateway\s+\d+\s+up to date/ });
      await expect(row).toBeVisible();
      await expect(admin.getByTestId('lag-gateway')).toHaveText(/^0\.\d s$/);
    }
    await shot(admin, name);
  }
  // The dashboards show the traffic the try-it console and the API key sent (the gateway
  // ships its per-minute rollups every --analytics-interval, 10 s by default: the page
  // asks again until the rows holding the 200s and those holding the 403s and the 401
  // have both arrived, which may be two shipments).
  await expect(async () => {
    await admin.goto('/admin/dashboards');
    await expect(admin.getByTestId('stat-Requests')).toHaveText(/^[1-9][\d,]*$/, { timeout: 3_000 });
    await expect(admin.getByTestId('stat-Errors')).toHaveText(/^[1-9]/, { timeout: 1_000 });
  }).toPass({ timeout: 45_000, intervals: [1000, 2000] });
  const topApis = admin.getByRole('region', { name: 'Top apis' });
  await expect(topApis.getByRole('cell', { name: /Pet Store/ })).toBeVisible();
  await shot(admin, '13-admin-dashboards');
  // The audit log names who made each change.
  await admin.getByRole('link', { name: 'Audit log' }).click();
  const audit = admin.getByRole('table', { name: 'Audit log' });
  await expect(audit.getByRole('row', { name: /admin\s+create subscription tier Platinum/ })).toBeVisible();
  await expect(audit.getByRole('row', { name: /pat\s+.*\/pets v1/ }).first()).toBeVisible();
  await shot(admin, '15-admin-audit-log');
  // The subscriber sees the usage of their own application.
  await sub.getByRole('link', { name: 'Applications' }).click();
  await sub.getByRole('link', { name: 'sam-app' }).click();
  await expect(sub.getByTestId('stat-Requests')).toHaveText(/^[1-9]/);
  await shot(sub, '14-devportal-application-usage');
});

test('a publisher imports a WSDL as a REST API and a GraphQL schema', async ({ browser }) => {
  const admin = await signIn(browser, 'admin', process.env.TP_ADMIN_PASSWORD!);
  const imports: [string, string, string, string][] = [
    ['Import WSDL', join(here, '..', '..', 'bench', 'soap', 'echo.wsdl'), '/soapecho', 'Generate a REST API (SOAP to REST)'],
    ['Import GraphQL schema', join(here, '..', '..', 'bench', 'graphql', 'starwars', 'starwars-schema.graphql'), '/starwars', ''],
  ];
  for (const [button, file, context, mode] of imports) {
    // In-app navigation: a full load would sign in again through a redirect.
    await admin.getByRole('navigation', { name: 'Portals' }).getByRole('link', { name: 'Publisher', exact: true }).click();
    await admin.getByRole('button', { name: button, exact: true }).click();
    const dialog = admin.getByRole('dialog');
    const [chooser] = await Promise.all([admin.waitForEvent('filechooser'), dialog.getByRole('button', { name: /WSDL file|GraphQL schema/ }).click()]);
    await chooser.setFiles(file);
    if (mode) await dialog.getByText(mode).click();
    await dialog.getByLabel(/^Name/).fill(`Imported ${context}`);
    await dialog.getByLabel(/^Context/).fill(context);
    await dialog.getByLabel('Back-end endpoint').fill(process.env.TP_ECHO!);
    await dialog.getByRole('button', { name: 'Import', exact: true }).click();
    await expect(admin.getByRole('heading', { name: new RegExp(`Imported ${context}`) })).toBeVisible();
    await admin.getByRole('tab', { name: 'Resources' }).click();
    await expect(admin.getByRole('textbox', { name: 'Path of resource 1' })).not.toHaveValue('');
  }
  await shot(admin, '03c-publisher-graphql-import');
  // A new version of it: the copy opens, same context, v2.
  await admin.getByRole('button', { name: 'New version', exact: true }).click();
  await admin.getByRole('dialog').getByLabel(/^Version/).fill('v2');
  await admin.getByRole('button', { name: 'Create version', exact: true }).click();
  await expect(admin.getByRole('heading', { name: /Imported \/starwars\s*v2/ })).toBeVisible();
  await admin.getByRole('tab', { name: 'Overview' }).click();
  await admin.goto('/publisher');
  await expect(admin.getByRole('row', { name: /Imported \/starwars\s+v2/ })).toBeVisible();
  await admin.getByRole('link', { name: 'Imported /starwars' }).first().click();
  // Published, the GraphQL API shows its schema in the Developer Portal.
  await admin.getByRole('tab', { name: 'Lifecycle' }).click();
  await admin.getByRole('button', { name: 'Publish', exact: true }).click();
  await expect(admin.getByText('PUBLISHED').first()).toBeVisible();
  await admin.goto('/devportal');
  await admin.getByRole('link', { name: /Imported \/starwars/ }).click();
  const schema = admin.getByRole('region', { name: 'GraphQL schema' });
  await expect(schema.getByText('query hero', { exact: true })).toBeVisible();
  await expect(schema.getByText(/type Query/)).toBeVisible();
  await shot(admin, '05d-devportal-graphql-schema');
});

test('the portals refuse a wrong password and make no request off the machine', async ({ browser }) => {
  const context = await browser.newContext({ baseURL: base() });
  const page = await context.newPage();
  const foreign: string[] = [];
  page.on('request', (r) => {
    const host = new URL(r.url()).hostname;
    if (host !== '127.0.0.1' && host !== 'localhost') foreign.push(r.url());
  });
  const started = Date.now();
  // The public catalogue first (anonymous browsing is on by default), then sign in.
  await page.goto('/devportal');
  await expect(page.getByRole('link', { name: /Demo/ })).toBeVisible();
  await page.getByRole('button', { name: 'Sign in', exact: true }).click();
  await expect(page.getByRole('heading', { name: 'Sign in' })).toBeVisible();
  await page.getByLabel('Username').fill('admin');
  await page.getByLabel('Password').fill('wrong-password');
  await page.getByRole('button', { name: 'Sign in', exact: true }).click();
  await expect(page.getByRole('alert')).toHaveText('Wrong username or password.');
  await page.getByLabel('Username').fill('admin');
  await page.getByLabel('Password').fill(process.env.TP_ADMIN_PASSWORD!);
  await page.getByRole('button', { name: 'Sign in', exact: true }).click();
  await expect(page).toHaveURL(/\/devportal$/);
  await expect(page.getByRole('heading', { name: 'APIs' })).toBeVisible();
  console.log(`devportal: login page to catalogue in ${Date.now() - started} ms`);
  // A reload goes back through /oauth2/authorize: the session cookie skips the form.
  const reloaded = Date.now();
  await page.reload();
  await expect(page.getByRole('heading', { name: 'APIs' })).toBeVisible();
  await expect(page.getByRole('link', { name: /Demo/ })).toBeVisible();
  // Printed, not asserted: timings on a shared machine are not test material.
  console.log(`devportal: reload to catalogue (session cookie, no form) in ${Date.now() - reloaded} ms`);
  const cookies = await context.cookies();
  const session = cookies.find((c) => c.name === 'tp_session');
  expect(session?.httpOnly).toBe(true);
  expect(session?.sameSite).toBe('Strict');
  expect(foreign).toEqual([]);
});
