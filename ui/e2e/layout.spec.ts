// The portals on a phone (390 x 844, issue 29 item 11) in a real browser against a real
// `turnpike up`: on every main page of the three portals, and on the public catalogue,
// nothing widens the document (scrollWidth <= clientWidth: the header fits, wide tables
// scroll inside their own box); the portals move into the menu. And the built assets as
// the control plane serves them: brotli or gzip by Accept-Encoding (precompressed at
// build), cached for a year by their hashed names, index.html never cached.
import { expect, test, type APIRequestContext, type Page } from '@playwright/test';

const base = () => process.env.TP_BASE!;
const basic = (user: string, secret: string) => `Basic ${Buffer.from(`${user}:${secret}`).toString('base64')}`;
const admin = () => ({ Authorization: basic('admin', process.env.TP_ADMIN_PASSWORD!) });
const PHONE = { width: 390, height: 844 };

async function rest(request: APIRequestContext, method: string, path: string, data?: unknown) {
  const r = await request.fetch(`${base()}${path}`, { method, headers: admin(), data });
  expect(r.ok(), `${method} ${path}: ${r.status()} ${await r.text()}`).toBeTruthy();
  return (await r.text()) ? r.json() : null;
}

/** Fails naming the widest elements when the page is wider than the viewport. */
async function fitsWidth(page: Page, what: string) {
  await page.waitForLoadState('networkidle');
  const m = await page.evaluate(() => {
    const d = document.documentElement;
    const wide = [...document.querySelectorAll('body *')]
      .filter((e) => e.getBoundingClientRect().right > d.clientWidth + 1)
      .slice(0, 5)
      .map((e) => `${e.tagName.toLowerCase()}.${[...e.classList].join('.')} "${(e.textContent ?? '').slice(0, 40)}"`);
    return { scroll: d.scrollWidth, client: d.clientWidth, wide };
  });
  expect(m.scroll, `${what}: ${m.scroll} > ${m.client}; wide: ${m.wide.join(' | ')}`).toBeLessThanOrEqual(m.client);
}

test('every main page fits a 390 px screen', async ({ browser, request }) => {
  const api = await rest(request, 'POST', '/api/am/publisher/v1/apis', {
    name: 'A rather long API name for a narrow screen',
    context: '/narrow-screen-context-that-is-long',
    version: 'v1',
    endpoints: [process.env.TP_ECHO],
    resources: [{ path: '/things/{thingIdentifier}/sub-resources/with-a-long-path', methods: ['GET', 'POST'] }],
  });
  await rest(request, 'POST', `/api/am/publisher/v1/apis/change-lifecycle?apiId=${api.id}&action=Publish`);
  const app = await rest(request, 'POST', '/api/am/devportal/v1/applications', { name: 'narrow-screen-application' });
  await rest(request, 'POST', `/api/am/devportal/v1/applications/${app.id}/generate-keys`, { keyType: 'PRODUCTION' });
  await rest(request, 'POST', '/api/am/devportal/v1/subscriptions', { applicationId: app.id, apiId: api.id, throttlingPolicy: 'Unlimited' });

  const context = await browser.newContext({ baseURL: base(), viewport: PHONE, isMobile: true, hasTouch: true });
  const page = await context.newPage();
  await page.goto('/');
  await page.getByLabel('Username').fill('admin');
  await page.getByLabel('Password').fill(process.env.TP_ADMIN_PASSWORD!);
  await fitsWidth(page, 'login page');
  await page.getByRole('button', { name: 'Sign in', exact: true }).click();
  await expect(page.getByRole('button', { name: 'Sign out', exact: true })).toBeVisible();

  // The portals are in the menu on a phone.
  await page.getByRole('button', { name: 'Sections' }).click();
  const menu = page.getByRole('navigation', { name: 'Portals menu' });
  await expect(menu.getByRole('link', { name: 'Developer Portal' })).toBeVisible();
  await menu.getByRole('link', { name: 'Developer Portal' }).click();
  await expect(page).toHaveURL(/\/devportal$/);

  const pages = [
    '/publisher',
    `/publisher/apis/${api.id}`,
    '/devportal',
    `/devportal/apis/${api.id}`,
    '/devportal/applications',
    `/devportal/applications/${app.id}`,
    '/admin',
    '/admin/users',
    '/admin/applications',
    '/admin/gateways',
    '/admin/keys',
    '/admin/audit',
    '/admin/settings',
  ];
  for (const path of pages) {
    await page.goto(path);
    await expect(page.getByRole('button', { name: 'Sign out', exact: true })).toBeVisible();
    await fitsWidth(page, path);
  }
  await context.close();

  // The public catalogue, for a visitor.
  await rest(request, 'PUT', '/api/am/admin/v1/settings/devportal', { anonymousBrowsing: true });
  const visitor = await browser.newContext({ baseURL: base(), viewport: PHONE, isMobile: true });
  const anon = await visitor.newPage();
  for (const path of ['/devportal', `/devportal/apis/${api.id}`]) {
    await anon.goto(path);
    await expect(anon.getByRole('button', { name: 'Sign in', exact: true })).toBeVisible();
    await fitsWidth(anon, `anonymous ${path}`);
  }
  await visitor.close();
});

test('assets are served precompressed and cached by hash', async ({ request }) => {
  const index = await request.get(`${base()}/devportal`);
  expect(index.headers()['cache-control']).toBe('no-cache');
  const script = /src="(\/assets\/[^"]+\.js)"/.exec(await index.text())?.[1];
  expect(script, 'index.html names its script').toBeTruthy();
  const plain = await request.get(`${base()}${script}`, { headers: { 'Accept-Encoding': 'identity' } });
  const size = (await plain.body()).length;
  for (const coding of ['br', 'gzip']) {
    // Playwright decodes the body; the header and the length on the wire tell what was sent.
    const r = await request.get(`${base()}${script}`, { headers: { 'Accept-Encoding': coding } });
    expect(r.status()).toBe(200);
    expect(r.headers()['content-encoding']).toBe(coding);
    expect(r.headers()['cache-control']).toBe('public, max-age=31536000, immutable');
    expect(r.headers()['vary']).toBe('Accept-Encoding');
    expect(Number(r.headers()['content-length'])).toBeLessThan(size / 2);
    expect((await r.body()).length).toBe(size);
  }
});
