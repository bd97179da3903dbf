// The analytics dashboards in a real browser against a real `turnpike up`: an open API
// gets a few calls through the gateway; once the gateway ships its rollups, the admin's
// dashboard draws the last hour as one point per minute (zero-filled: minutes without
// traffic are 0, not skipped) and shows latency in a unit that fits it (never "0.00 ms").
import { expect, test } from '@playwright/test';

const base = () => process.env.TP_BASE!;

test('dashboards draw zero-filled time axes and latency in units that fit', async ({ browser, request }) => {
  const auth = { authorization: `Basic ${Buffer.from(`admin:${process.env.TP_ADMIN_PASSWORD}`).toString('base64')}` };
  const created = await request.post(`${base()}/api/am/publisher/v1/apis`, {
    headers: auth,
    data: { name: 'Dash', context: '/dash', version: 'v1', endpoints: [process.env.TP_ECHO], resources: [{ path: '/*', methods: ['GET'] }] },
  });
  expect(created.status()).toBe(201);
  const id = ((await created.json()) as { id: string }).id;
  expect((await request.put(`${base()}/api/am/publisher/v1/apis/${id}/security`, { headers: auth, data: { oauth2: false, subscription: false } })).status()).toBe(200);
  const published = await request.post(`${base()}/api/am/publisher/v1/apis/change-lifecycle?apiId=${id}&action=Publish`, { headers: auth });
  expect(published.status()).toBe(200);
  const url = `${process.env.TP_GATEWAY}/dash/v1/hello`;
  await expect(async () => expect((await request.get(url)).status()).toBe(200)).toPass({ timeout: 20_000 });
  for (let i = 0; i < 5; i++) expect((await request.get(url)).status()).toBe(200);

  const context = await browser.newContext({ baseURL: base() });
  const page = await context.newPage();
  await page.goto('/');
  await page.getByLabel('Username').fill('admin');
  await page.getByLabel('Password').fill(process.env.TP_ADMIN_PASSWORD!);
  await page.getByRole('button', { name: 'Sign in', exact: true }).click();
  await expect(page.getByRole('button', { name: 'Sign out', exact: true })).toBeVisible();
  await page.getByRole('link', { name: 'Admin', exact: true }).click();
  await page.getByRole('link', { name: 'Dashboards', exact: true }).click();
  // The gateway ships every --analytics-interval (10 s by default): switching the window
  // back and forth asks again.
  await expect(async () => {
    await page.getByText('24 hours', { exact: true }).click();
    await page.getByText('Last hour', { exact: true }).click();
    await expect(page.getByTestId('stat-Requests')).toHaveText(/^[1-9][\d,]*$/, { timeout: 3_000 });
  }).toPass({ timeout: 45_000, intervals: [1000, 2000] });
  // Last hour, one point per minute: 60 (61 when the window starts inside a minute),
  // though only a minute or two had traffic.
  // (The window switch above reloads asynchronously: wait until the hour's chart is drawn,
  // not the day's 24-25 hourly points still on screen.)
  const drawn = async () => Number(await page.getByTestId('traffic-chart').getAttribute('data-points'));
  await expect.poll(drawn, { timeout: 15_000 }).toBeGreaterThanOrEqual(60);
  const points = await drawn();
  expect(points).toBeLessThanOrEqual(61);
  // Latency in a unit that fits: the gateway's own share (a few µs to a few ms) is never
  // rounded to zero milliseconds.
  const latency = page.getByTestId('stat-p95 latency');
  await expect(latency).toHaveText(/^\d+(\.\d+)? (µs|ms)$/);
  const hint = page.getByText(/^gateway .* · back end /);
  await expect(hint).not.toContainText('0.00 ms');
  await expect(page.getByRole('region', { name: 'Latency' }).getByRole('heading')).toHaveText(/Latency, p95 \((µs|ms)\)/);
});

// AI APIs' calls as a gateway ships them (minute rollups with provider, model, tokens and
// time to first token): the dashboard's AI section shows their tokens, their cost from
// the built-in price of gpt-4o-mini (a dated name takes the price of the listed name it
// starts with), and a table by model. The model name is this test's own: other specs'
// AI calls (ai_publisher.spec.ts) add to the totals, not to this row.
test('dashboards show AI tokens, cost and time to first token by model', async ({ browser, request }) => {
  const minute = Math.floor(Date.now() / 60_000) * 60;
  const row = {
    bucket: minute, period: 60, gateway: 'gw-e2e', api_name: 'Chat', api_context: '/ai', api_version: 'v1',
    resource: '/chat/completions', method: 'POST', application_id: '', application_name: '', status_class: 2,
    outcome: 'served', reason: '', provider: 'openai', model: 'gpt-4o-mini-dashboards-e2e',
    requests: 2, errors: 0, throttled: 0, cache_hits: 0, bytes_in: 10, bytes_out: 20,
    lat_total: '5:2', lat_gateway: '5:2', lat_upstream: '5:2', lat_before: '5:2', lat_after: '5:2',
    prompt_tokens: 1_000_000, completion_tokens: 1_000_000, cached_tokens: 0, lat_ttft: '105:2', // two calls at ~40 ms (histogram bucket 105: 36,864-40,959 µs)
  };
  const shipped = await request.post(`${base()}/api/am/gateway/v1/analytics`, {
    headers: { authorization: `Bearer ${process.env.TP_GATEWAY_TOKEN}` },
    data: { rollups: [row] },
  });
  expect(shipped.status(), await shipped.text()).toBe(202);

  const context = await browser.newContext({ baseURL: base() });
  const page = await context.newPage();
  await page.goto('/');
  await page.getByLabel('Username').fill('admin');
  await page.getByLabel('Password').fill(process.env.TP_ADMIN_PASSWORD!);
  await page.getByRole('button', { name: 'Sign in', exact: true }).click();
  await page.getByRole('link', { name: 'Admin', exact: true }).click();
  await page.getByRole('link', { name: 'Dashboards', exact: true }).click();
  const ai = page.getByRole('region', { name: 'AI usage' });
  await expect(page.getByTestId('ai-tokens')).toHaveText(/^[\d,]+ tokens$/);
  const total = Number((await page.getByTestId('ai-tokens').innerText()).replace(/[^\d]/g, ''));
  expect(total).toBeGreaterThanOrEqual(2_000_000);
  const byModel = ai.getByRole('table', { name: 'AI usage by model' });
  const mine = byModel.getByRole('row', { name: /gpt-4o-mini-dashboards-e2e \(openai\)/ });
  // 1M tokens in and 1M out; gpt-4o-mini: $0.15 per 1M input + $0.60 per 1M output.
  await expect(mine).toContainText('1,000,000');
  await expect(mine).toContainText('$0.7500');
  await expect(mine).toContainText('ms');
});
