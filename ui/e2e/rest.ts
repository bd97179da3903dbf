// What the browser tests that set things up through the REST APIs share: the URLs
// e2e/setup.ts hands over, admin calls, and signing in as the admin.
import { expect, type APIRequestContext, type Browser, type Page } from '@playwright/test';

export const base = () => process.env.TP_BASE!;
export const gateway = () => process.env.TP_GATEWAY!;
export const basic = (user: string, secret: string) => `Basic ${Buffer.from(`${user}:${secret}`).toString('base64')}`;
export const admin = () => ({ Authorization: basic('admin', process.env.TP_ADMIN_PASSWORD!) });

/** A control-plane call as the admin; its JSON body (null when empty). */
export async function rest(request: APIRequestContext, method: string, path: string, data?: unknown) {
  const r = await request.fetch(`${base()}${path}`, { method, headers: admin(), data });
  expect(r.ok(), `${method} ${path}: ${r.status()} ${await r.text()}`).toBeTruthy();
  return (await r.text()) ? r.json() : null;
}

/** A new browser context signed in to the portals as the admin. */
export async function signIn(browser: Browser): Promise<Page> {
  const page = await (await browser.newContext({ baseURL: base() })).newPage();
  await page.goto('/');
  await page.getByLabel('Username').fill('admin');
  await page.getByLabel('Password').fill(process.env.TP_ADMIN_PASSWORD!);
  await page.getByRole('button', { name: 'Sign in', exact: true }).click();
  await expect(page.getByRole('button', { name: 'Sign out', exact: true })).toBeVisible();
  return page;
}
