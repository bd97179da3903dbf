// An AI API made in the Publisher portal, end to end in a real browser against a real
// `turnpike up` and a real LLM provider (`turnpike echo --llm`, OpenAI-compatible;
// docs/ai-gateway.md): "Create AI API" with the provider's URL and one model, then the AI
// tab adds a model alias `fast` whose targets share its calls (the provider's
// `gpt-4o-mini` by weight, a second model as a standby); the stored API carries the
// section in the file's shape, and once published a chat call to the alias through the
// gateway is answered by the provider under the target's model name.
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
