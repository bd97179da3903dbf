// The response cache set in the Publisher portal, end to end in a real browser against a
// real `turnpike up` (docs/caching.md): the publisher turns the cache on in the API's
// Cache tab (TTL, tag header) and leaves one resource uncached; through the gateway the
// first GET is a MISS, the second a HIT with an Age and no second upstream call, the
// uncached resource goes upstream every time; Purge (after a confirmation) reaches the
// gateway and the next GET is a MISS again.
import { expect, test, type APIRequestContext, type Browser, type Page } from '@playwright/test';
import { mkdirSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { gateway, rest, signIn } from './rest';

const shots = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..', 'target', 'screenshots');

/** A back end that counts the requests it answers and says which one each answer is. */
async function countingBackend(): Promise<{ server: Server; url: string; calls: () => number }> {
  let calls = 0;
  const server = createServer((req, res) => {
    calls += 1;
    res.setHeader('content-type', 'text/plain');
    res.end(`${req.url} call ${calls}`);
  });
  await new Promise<void>((ok) => server.listen(0, '127.0.0.1', ok));
  return { server, url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, calls: () => calls };
}

interface Got {
  xCache: string | null;
  age: string | null;
  body: string;
}

async function get(request: APIRequestContext, path: string, context = '/cacheui'): Promise<Got> {
  const r = await request.get(`${gateway()}${context}/v1${path}`);
  expect(r.status()).toBe(200);
  return { xCache: r.headers()['x-cache'] ?? null, age: r.headers()['age'] ?? null, body: await r.text() };
}

/** An open API (no OAuth2, no subscription) published through the Publisher API, and a
 * publisher's page on its Cache tab with the cache switched on at a 60 s TTL (unsaved). */
async function openCacheTab(
  browser: Browser,
  request: APIRequestContext,
  api: { name: string; context: string; endpoint: string; resources: string[] },
): Promise<{ id: string; page: Page }> {
  const { id } = await rest(request, 'POST', '/api/am/publisher/v1/apis', {
    name: api.name,
    context: api.context,
    version: 'v1',
    endpoints: [api.endpoint],
    resources: api.resources.map((path) => ({ path, methods: ['GET'] })),
  });
  await rest(request, 'PUT', `/api/am/publisher/v1/apis/${id}/security`, { oauth2: false, subscription: false });
  await rest(request, 'POST', `/api/am/publisher/v1/apis/change-lifecycle?apiId=${id}&action=Publish`);
  const page = await signIn(browser);
  await page.goto(`/publisher/apis/${id}`);
  await page.getByRole('tab', { name: 'Cache', exact: true }).click();
  await page.getByRole('switch', { name: 'Cache responses' }).check();
  await page.getByLabel('TTL', { exact: true }).fill('60s');
  return { id, page };
}

test('a cache set in the Publisher portal answers HIT, and Purge makes the next GET a MISS', async ({ browser, request }) => {
  const backend = await countingBackend();
  try {
    // Publisher portal: the Cache tab.
    const { id, page } = await openCacheTab(browser, request, {
      name: 'CacheUi',
      context: '/cacheui',
      endpoint: backend.url,
      resources: ['/items/*', '/live/*'],
    });
    await page.getByLabel('Tag header').fill('Cache-Tag');
    await page.getByRole('combobox', { name: 'Cache of GET /live/*' }).click();
    await page.getByRole('option', { name: 'Not cached', exact: true }).click();
    await page.getByRole('button', { name: 'Save cache', exact: true }).click();
    await expect(page.getByText('Saved.')).toBeVisible();
    const stored = await rest(request, 'GET', `/api/am/publisher/v1/apis/${id}`);
    expect(stored.cacheConfiguration.ttl).toBe('60s');
    expect(stored.cacheConfiguration.tag_header).toBe('Cache-Tag');
    expect(stored.resources[1].cacheConfiguration).toBe(false);

    // Through the gateway, once the snapshot carries the cache: MISS, then HIT.
    let first: Got = { xCache: null, age: null, body: '' };
    await expect(async () => {
      first = await get(request, '/items/a');
      expect(first.xCache).not.toBeNull();
    }).toPass({ timeout: 30_000, intervals: [300, 1000] });
    expect(first.xCache).toBe('MISS');
    const calls = backend.calls();
    const hit = await get(request, '/items/a');
    expect(hit.xCache).toBe('HIT');
    expect(hit.age).not.toBeNull();
    expect(hit.body).toBe(first.body);
    expect(backend.calls(), 'a HIT makes no upstream call').toBe(calls);

    // The resource left uncached: no X-Cache, upstream every time.
    const live = [await get(request, '/live/a'), await get(request, '/live/a')];
    expect(live.map((g) => g.xCache)).toEqual([null, null]);
    expect(backend.calls()).toBe(calls + 2);

    // Purge all, confirmed, in the portal.
    await page.getByRole('button', { name: 'Purge', exact: true }).click();
    const dialog = page.getByRole('dialog', { name: 'Purge cached answers?' });
    await expect(dialog.getByText('every cached answer of this API')).toBeVisible();
    await dialog.getByRole('button', { name: 'Purge now', exact: true }).click();
    await expect(page.getByRole('status').filter({ hasText: /Purge \d+ sent \(all\)/ })).toBeVisible();
    mkdirSync(shots, { recursive: true });
    await page.screenshot({ path: join(shots, '07e-publisher-cache.png'), fullPage: true });

    // The purge reaches the gateway with the next snapshot: the next GET is a MISS.
    await expect(async () => {
      const again = await get(request, '/items/a');
      expect(again.xCache).toBe('MISS');
    }).toPass({ timeout: 30_000, intervals: [300, 1000] });
    expect(backend.calls()).toBeGreaterThan(calls + 2);
    expect((await get(request, '/items/a')).xCache).toBe('HIT');
  } finally {
    backend.server.close();
  }
});

test('"Store from request" set in the Publisher portal: a key is stored from its second request', async ({ browser, request }) => {
  const backend = await countingBackend();
  try {
    const { id, page } = await openCacheTab(browser, request, {
      name: 'CacheUses',
      context: '/cacheuses',
      endpoint: backend.url,
      resources: ['/items/*'],
    });
    await page.getByLabel('Store from request').fill('2');
    // "Store every miss" (`admission: always`) is off by default: adaptive admission.
    const everyMiss = page.getByLabel('Store every miss');
    await expect(everyMiss).not.toBeChecked();
    await everyMiss.check();
    await page.getByRole('button', { name: 'Save cache', exact: true }).click();
    await expect(page.getByText('Saved.')).toBeVisible();
    const saved = (await rest(request, 'GET', `/api/am/publisher/v1/apis/${id}`)).cacheConfiguration;
    expect(saved.min_uses).toBe(2);
    expect(saved.admission).toBe('always');
    // Reopened, the form shows the stored values.
    await page.reload();
    await page.getByRole('tab', { name: 'Cache', exact: true }).click();
    await expect(page.getByLabel('Store from request')).toHaveValue('2');
    await expect(page.getByLabel('Store every miss')).toBeChecked();

    // Through the gateway once the snapshot carries it: a key's first answer is not
    // stored, its second is, its third is a HIT with no upstream call.
    await expect(async () => {
      const probe = await get(request, '/items/probe', '/cacheuses');
      expect(probe.xCache).toBe('MISS');
    }).toPass({ timeout: 30_000, intervals: [300, 1000] });
    const seen = [await get(request, '/items/a', '/cacheuses'), await get(request, '/items/a', '/cacheuses')];
    expect(seen.map((g) => g.xCache)).toEqual(['MISS', 'MISS']);
    const calls = backend.calls();
    const hit = await get(request, '/items/a', '/cacheuses');
    expect(hit.xCache).toBe('HIT');
    expect(hit.body).toBe(seen[1].body);
    expect(backend.calls(), 'the third request is served from the cache').toBe(calls);
  } finally {
    backend.server.close();
  }
});
