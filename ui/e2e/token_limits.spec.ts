// Token budgets of LLM APIs in the portals, in a real browser against a real `turnpike
// up` (issue 30, item 3): the admin gives a subscription tier a total-token and a
// prompt-token budget in the tier form (stored as the tier's `tokenLimits`), edits one
// away; a developer choosing that tier on an API's page sees its token budgets.
import { expect, test, type APIRequestContext, type Browser, type Page } from '@playwright/test';

const base = () => process.env.TP_BASE!;
const basic = (user: string, secret: string) => `Basic ${Buffer.from(`${user}:${secret}`).toString('base64')}`;
const admin = () => ({ Authorization: basic('admin', process.env.TP_ADMIN_PASSWORD!) });

async function rest(request: APIRequestContext, method: string, path: string, data?: unknown) {
  const r = await request.fetch(`${base()}${path}`, { method, headers: admin(), data });
  expect(r.ok(), `${method} ${path}: ${r.status()} ${await r.text()}`).toBeTruthy();
  return (await r.text()) ? r.json() : null;
}

async function signIn(browser: Browser): Promise<Page> {
  const page = await (await browser.newContext({ baseURL: base() })).newPage();
  await page.goto('/');
  await page.getByLabel('Username').fill('admin');
  await page.getByLabel('Password').fill(process.env.TP_ADMIN_PASSWORD!);
  await page.getByRole('button', { name: 'Sign in', exact: true }).click();
  await expect(page.getByRole('button', { name: 'Sign out', exact: true })).toBeVisible();
  return page;
}

test('token limits: set on a tier by the admin, shown to a developer choosing it', async ({ browser, request }) => {
  const page = await signIn(browser);
  await page.goto('/admin');
  await page.getByLabel('Tier name').fill('LlmGold');
  await page.getByLabel('Requests').fill('100');
  const limits = page.getByRole('group', { name: 'Token limits' });
  await limits.getByRole('button', { name: 'Add token limit', exact: true }).click();
  await limits.getByLabel('Token limit 1 tokens').fill('5000');
  await limits.getByRole('button', { name: 'Add token limit', exact: true }).click();
  await limits.getByRole('combobox', { name: 'Token limit 2 counts' }).click();
  await page.getByRole('option', { name: 'Prompt tokens', exact: true }).click();
  await limits.getByLabel('Token limit 2 tokens').fill('200000');
  await limits.getByRole('combobox', { name: 'Token limit 2 window' }).click();
  await page.getByRole('option', { name: 'per day', exact: true }).click();
  await page.getByRole('button', { name: 'Add tier', exact: true }).click();
  await expect(
    page.getByRole('row', { name: /LlmGold\s+100 \/ 60 s · 5000 tokens \/ minute, 200000 prompt tokens \/ day/ }),
  ).toBeVisible();
  const stored = await rest(request, 'GET', '/api/am/admin/v1/throttling/policies/subscription/LlmGold');
  expect(stored.tokenLimits).toEqual([
    { total: 5000, per: 'minute' },
    { prompt: 200000, per: 'day' },
  ]);

  // A developer choosing LlmGold on an API that offers it sees what it allows.
  const api = await rest(request, 'POST', '/api/am/publisher/v1/apis', {
    name: 'Chat',
    context: '/chat',
    version: 'v1',
    endpoints: [process.env.TP_ECHO],
    resources: [{ path: '/*', methods: ['POST'] }],
    policies: ['LlmGold', 'Unlimited'],
  });
  await rest(request, 'POST', `/api/am/publisher/v1/apis/change-lifecycle?apiId=${api.id}&action=Publish`);
  await page.goto(`/devportal/apis/${api.id}`);
  const subscribe = page.getByRole('region', { name: 'Subscribe' });
  await expect(subscribe.getByLabel('Tier limits')).toHaveText(
    'LlmGold: 100 requests / 60 s; 5000 tokens / minute, 200000 prompt tokens / day',
  );

  // Edited: the prompt budget removed, the other kept.
  await page.goto('/admin');
  await page.getByRole('button', { name: 'Edit tier LlmGold', exact: true }).click();
  const edit = page.getByRole('region', { name: 'Edit tier LlmGold' });
  await edit.getByRole('button', { name: 'Remove token limit 2', exact: true }).click();
  await edit.getByRole('button', { name: 'Save tier', exact: true }).click();
  await expect(page.getByRole('row', { name: /LlmGold\s+100 \/ 60 s · 5000 tokens \/ minute(?!,)/ })).toBeVisible();
  const edited = await rest(request, 'GET', '/api/am/admin/v1/throttling/policies/subscription/LlmGold');
  expect(edited.tokenLimits).toEqual([{ total: 5000, per: 'minute' }]);
});
