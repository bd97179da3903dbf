// Endpoint states in the Admin portal's Gateways page, in a real browser against a real
// `turnpike up`: an API over two endpoints with suspension settings; one back end is
// stopped, calls through the gateway fail over (each answers 200) and suspend it; the
// gateway reports the state to the control plane and the portal shows the endpoint
// `suspended` (expand the gateway's row). The back end comes back on the same port, a
// probe succeeds when the suspension ends, and the portal shows it `active` again.
import { expect, test, type APIRequestContext } from '@playwright/test';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

const base = () => process.env.TP_BASE!;
const gateway = () => process.env.TP_GATEWAY!;
const basic = (user: string, secret: string) => `Basic ${Buffer.from(`${user}:${secret}`).toString('base64')}`;
const admin = () => ({ Authorization: basic('admin', process.env.TP_ADMIN_PASSWORD!) });

async function listen(port = 0): Promise<Server> {
  const server = createServer((req, res) => res.end(`flaky ${req.url}`));
  await new Promise<void>((ok) => server.listen(port, '127.0.0.1', ok));
  return server;
}

async function rest(request: APIRequestContext, method: string, path: string, data?: unknown) {
  const r = await request.fetch(`${base()}${path}`, { method, headers: admin(), data });
  expect(r.ok(), `${method} ${path}: ${r.status()} ${await r.text()}`).toBeTruthy();
  return (await r.text()) ? r.json() : null;
}

test('the Gateways page shows an endpoint suspended, then active again', async ({ browser, request }) => {
  let flaky = await listen();
  const port = (flaky.address() as AddressInfo).port;
  const flakyUrl = `http://127.0.0.1:${port}`;
  try {
    const api = await rest(request, 'POST', '/api/am/publisher/v1/apis', {
      name: 'Resilient',
      context: '/res',
      version: 'v1',
      endpoints: [process.env.TP_ECHO, flakyUrl],
      loadBalancing: 'round_robin',
      resilience: {
        suspension: { on: ['connect_failure', '5xx'], initial_duration: '2s', progression_factor: 1, max_duration: '2s' },
        circuit_breaker: { consecutive_failures: 1 },
        retries: { attempts: 1, methods: ['GET'] },
      },
      resources: [{ path: '/*', methods: ['GET'] }],
    });
    await rest(request, 'PUT', `/api/am/publisher/v1/apis/${api.id}/security`, { oauth2: false, subscription: false });
    await rest(request, 'POST', `/api/am/publisher/v1/apis/change-lifecycle?apiId=${api.id}&action=Publish`);
    // Both back ends answer once the gateway serves the API.
    const seen = new Set<string>();
    await expect(async () => {
      const r = await request.get(`${gateway()}/res/v1/x`);
      expect(r.status()).toBe(200);
      seen.add((await r.text()).startsWith('flaky') ? 'flaky' : 'echo');
      expect(seen.size).toBe(2);
    }).toPass({ timeout: 30_000, intervals: [200] });

    // The flaky back end stops: every call still succeeds (retried on the other one),
    // and the refused connection suspends it.
    await new Promise<void>((ok) => flaky.close(() => ok()));
    for (let i = 0; i < 4; i++) {
      const r = await request.get(`${gateway()}/res/v1/y`);
      expect(r.status()).toBe(200);
    }

    const page = await (await browser.newContext({ baseURL: base() })).newPage();
    await page.goto('/');
    await page.getByLabel('Username').fill('admin');
    await page.getByLabel('Password').fill(process.env.TP_ADMIN_PASSWORD!);
    await page.getByRole('button', { name: 'Sign in', exact: true }).click();
    await expect(page.getByRole('button', { name: 'Sign out', exact: true })).toBeVisible();
    await page.goto('/admin/gateways');
    const expand = page.getByRole('button', { name: 'Endpoints of gateway gateway' });
    const flakyState = page
      .getByRole('table', { name: 'Endpoints of gateway' })
      .getByRole('row', { name: new RegExp(flakyUrl.replace(/[.]/g, '\\.')) });
    // The gateway reports within a second of the change; the page asks again on Refresh.
    // While the back end stays down each probe fails and suspends it again.
    await expect(async () => {
      await page.getByRole('button', { name: 'Refresh' }).click();
      if ((await expand.getAttribute('aria-expanded')) !== 'true') await expand.click();
      await expect(flakyState.getByText('suspended', { exact: true })).toBeVisible({ timeout: 1_000 });
    }).toPass({ timeout: 20_000, intervals: [500] });
    await expect(flakyState).toContainText('production');
    // The other endpoint is listed too, active.
    await expect(page.getByRole('row', { name: /Resilient v1.*active/ }).first()).toBeVisible();

    // Back on the same port: when the suspension ends, a call probes it and it is active.
    flaky = await listen(port);
    await expect(async () => {
      await request.get(`${gateway()}/res/v1/z`);
      await page.getByRole('button', { name: 'Refresh' }).click();
      if ((await expand.getAttribute('aria-expanded')) !== 'true') await expand.click();
      await expect(flakyState.getByText('active', { exact: true })).toBeVisible({ timeout: 1_000 });
    }).toPass({ timeout: 30_000, intervals: [500] });
    await page.screenshot({ path: '../target/screenshots/14-admin-gateway-endpoints.png', fullPage: true });
  } finally {
    await new Promise<void>((ok) => flaky.close(() => ok()));
  }
});
