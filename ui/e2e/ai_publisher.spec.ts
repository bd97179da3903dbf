// An AI API made in the Publisher portal, end to end in a real browser against a real
// `turnpike up` and a real LLM provider (`turnpike echo --llm`, OpenAI-compatible;
// docs/ai-gateway.md): "Create AI API" with the provider's URL and one model, then the AI
// tab adds a model alias `fast` whose targets share its calls (the provider's
// `gpt-4o-mini` by weight, a second model as a standby); the stored API carries the
// section in the file's shape, and once published a chat call to the alias through the
// gateway is answered by the provider under the target's model name. A second test: the
// admin lists the models a subscription tier may call in the tier editor, and a
// subscriber on that tier is refused 403 model_not_allowed for another model at the
// gateway (and served for a listed one); emptying the list allows every model again.
import { expect, test } from '@playwright/test';
import { spawn, type ChildProcess } from 'node:child_process';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { gateway, rest, signIn } from './rest';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..');

/** `turnpike echo --llm` on a free port: the process and its URL. */
async function llmProvider(): Promise<{ child: ChildProcess; url: string }> {
  const bin = process.env.TURNPIKE_BIN ?? join(root, 'target', 'debug', 'turnpike');
  const child = spawn(bin, ['echo', '--llm', '--port', '0'], { stdio: ['ignore', 'pipe', 'inherit'] });
  const url = await new Promise<string>((ok, fail) => {
    let out = '';
    const timer = setTimeout(() => fail(new Error(`echo --llm did not start:\n${out}`)), 30_000);
    child.stdout!.on('data', (d: Buffer) => {
      out += d.toString();
      const m = /echo listening on (http:\/\/\S+)/.exec(out);
      if (m) {
        clearTimeout(timer);
        ok(m[1]);
      }
    });
  });
  return { child, url };
}

test('an AI API created in the Publisher portal answers a chat call through the gateway', async ({ browser, request }) => {
  const provider = await llmProvider();
  try {
    const page = await signIn(browser);
    await page.goto('/publisher');
    await page.getByRole('button', { name: 'Create AI API', exact: true }).click();
    const form = page.getByRole('dialog');
    await form.getByRole('textbox', { name: 'Name', exact: true }).fill('AiUi');
    await form.getByRole('textbox', { name: 'Context', exact: true }).fill('/aiui');
    await form.getByRole('textbox', { name: 'Provider URL', exact: true }).fill(`${provider.url}/v1`);
    await form.getByRole('textbox', { name: 'Models', exact: true }).fill('gpt-4o-mini');
    await form.getByRole('button', { name: 'Create', exact: true }).click();
    await expect(page.getByRole('tab', { name: 'AI', exact: true })).toBeVisible();
    const id = /\/publisher\/apis\/([^/?#]+)/.exec(page.url())?.[1];
    expect(id).toBeTruthy();

    // The AI tab: an alias with two targets, the second a standby.
    await page.getByRole('tab', { name: 'AI', exact: true }).click();
    await expect(page.getByLabel('Provider 1 URL')).toHaveValue(`${provider.url}/v1`);
    await page.getByRole('button', { name: 'Add model', exact: true }).click();
    await page.getByLabel('Model 2 name').fill('fast');
    await page.getByLabel('Model 2 target 1 model').fill('gpt-4o-mini');
    await page.getByLabel('Model 2 target 1 weight').fill('3');
    await page.getByRole('button', { name: 'Add target', exact: true }).nth(1).click();
    await page.getByRole('combobox', { name: 'Model 2 target 2 provider' }).click();
    await page.getByRole('option', { name: 'main', exact: true }).click();
    await page.getByLabel('Model 2 target 2 model').fill('gpt-4o');
    await page.getByLabel('Model 2 target 2 weight').fill('0');
    await page.getByRole('textbox', { name: 'Suspend after failures', exact: true }).fill('2');
    await page.getByRole('button', { name: 'Save AI settings', exact: true }).click();
    await expect(page.getByText('Saved.')).toBeVisible();

    const stored = await rest(request, 'GET', `/api/am/publisher/v1/apis/${id}`);
    expect(stored.ai.providers[0]).toEqual({ name: 'main', kind: 'openai', url: `${provider.url}/v1` });
    expect(stored.ai.models[1]).toEqual({
      name: 'fast',
      targets: [
        { provider: 'main', model: 'gpt-4o-mini', weight: 3 },
        { provider: 'main', model: 'gpt-4o', weight: 0 },
      ],
    });
    expect(stored.ai.fallback).toEqual({ suspend_after: 2 });

    // Open and published: the alias answers through the gateway.
    await rest(request, 'PUT', `/api/am/publisher/v1/apis/${id}/security`, { oauth2: false, subscription: false });
    await rest(request, 'POST', `/api/am/publisher/v1/apis/change-lifecycle?apiId=${id}&action=Publish`);
    let answer: { model?: string; choices?: { message: { content: string } }[] } = {};
    await expect(async () => {
      const r = await request.post(`${gateway()}/aiui/v1/chat/completions`, {
        data: { model: 'fast', max_tokens: 16, messages: [{ role: 'user', content: 'Say hello' }] },
      });
      expect(r.status()).toBe(200);
      answer = await r.json();
    }).toPass({ timeout: 30_000, intervals: [300, 1000] });
    expect(answer.model).toBe('gpt-4o-mini');
    expect(answer.choices?.[0].message.content.length).toBeGreaterThan(0);
  } finally {
    provider.child.kill();
  }
});

test('a tier\'s allowed models, set in the Admin portal, refuse other models at the gateway', async ({ browser, request }) => {
  const provider = await llmProvider();
  try {
    const page = await signIn(browser);
    await page.goto('/admin');
    await page.getByLabel('Tier name').fill('LlmMini');
    await page.getByLabel('Requests').fill('1000');
    const models = page.getByRole('combobox', { name: 'Allowed models', exact: true });
    await models.fill('gpt-4o-mini');
    await models.press('Enter');
    await page.getByRole('button', { name: 'Add tier', exact: true }).click();
    await expect(page.getByRole('row', { name: /LlmMini\s+1000 \/ 60 s · models gpt-4o-mini/ })).toBeVisible();
    const stored = await rest(request, 'GET', '/api/am/admin/v1/throttling/policies/subscription/LlmMini');
    expect(stored.models).toEqual(['gpt-4o-mini']);

    // An AI API offering the tier, and an application subscribed on it with a key.
    const api = await rest(request, 'POST', '/api/am/publisher/v1/apis', {
      name: 'AiTiered',
      context: '/aitier',
      version: 'v1',
      policies: ['LlmMini'],
      ai: {
        providers: [{ name: 'echo', kind: 'openai', url: `${provider.url}/v1` }],
        models: [{ name: 'gpt-4o-mini', provider: 'echo' }, { name: 'gpt-4o', provider: 'echo' }],
      },
    });
    await rest(request, 'PUT', `/api/am/publisher/v1/apis/${api.id}/security`, { oauth2: false, api_key: true, subscription: true });
    await rest(request, 'POST', `/api/am/publisher/v1/apis/change-lifecycle?apiId=${api.id}&action=Publish`);
    const app = await rest(request, 'POST', '/api/am/devportal/v1/applications', { name: 'ai-tier-app' });
    await rest(request, 'POST', '/api/am/devportal/v1/subscriptions', { applicationId: app.id, apiId: api.id, throttlingPolicy: 'LlmMini' });
    const key = await rest(request, 'POST', `/api/am/devportal/v1/applications/${app.id}/api-keys`, { name: 'k' });
    const chat = (model: string) =>
      request.post(`${gateway()}/aitier/v1/chat/completions`, {
        headers: { Authorization: `Bearer ${key.apikey}` },
        data: { model, max_tokens: 8, messages: [{ role: 'user', content: 'Say hello' }] },
      });
    // The subscription reaches the gateway's snapshot within a moment.
    await expect(async () => expect((await chat('gpt-4o-mini')).status()).toBe(200)).toPass({ timeout: 30_000, intervals: [300, 1000] });
    const refused = await chat('gpt-4o');
    expect(refused.status()).toBe(403);
    expect((await refused.json()).error.code).toBe('model_not_allowed');

    // Emptied in the editor: every model again.
    await page.getByRole('button', { name: 'Edit tier LlmMini', exact: true }).click();
    const edit = page.getByRole('region', { name: 'Edit tier LlmMini' });
    await expect(edit.getByText('gpt-4o-mini', { exact: true })).toBeVisible();
    await edit.getByRole('combobox', { name: 'Allowed models', exact: true }).press('Backspace');
    await edit.getByRole('button', { name: 'Save tier', exact: true }).click();
    await expect(page.getByRole('row', { name: /LlmMini\s+1000 \/ 60 s(?! ·)/ })).toBeVisible();
    expect((await rest(request, 'GET', '/api/am/admin/v1/throttling/policies/subscription/LlmMini')).models ?? []).toEqual([]);
    await expect(async () => expect((await chat('gpt-4o')).status()).toBe(200)).toPass({ timeout: 30_000, intervals: [300, 1000] });
  } finally {
    provider.child.kill();
  }
});
