// The Developer Portal's first-page budget (issue 18): starts nothing itself; given a
// running `turnpike up` (TP_BASE), opens `/devportal` in Debian's Chromium with an empty
// cache N times (a new browser context each) and measures the time until the catalogue
// shows its first API card, plus the bytes of JavaScript the page loaded (gzip, as served
// compressed or as it would compress). Prints each run and the median.
//
// Usage: TP_BASE=http://127.0.0.1:9400 node bench/ui-load.mjs [runs]
import { createRequire } from 'node:module';
import { gzipSync } from 'node:zlib';

const require = createRequire(new URL('../ui/package.json', import.meta.url));
const { chromium } = require('@playwright/test');

const base = process.env.TP_BASE ?? 'http://127.0.0.1:9400';
const runs = Number(process.argv[2] ?? 5);
const browser = await chromium.launch({ executablePath: '/usr/bin/chromium' });
const times = [];
let jsRaw = 0;
let jsGzip = 0;
for (let i = 0; i < runs; i++) {
  const context = await browser.newContext();
  const page = await context.newPage();
  const scripts = [];
  page.on('response', (r) => {
    if (r.request().resourceType() === 'script') scripts.push(r);
  });
  const started = performance.now();
  await page.goto(`${base}/devportal`);
  await page.getByRole('heading', { name: 'APIs' }).waitFor();
  await page.locator('a[href^="/devportal/apis/"]').first().waitFor();
  const ms = performance.now() - started;
  times.push(ms);
  if (i === 0) {
    for (const r of scripts) {
      const body = await r.body();
      jsRaw += body.length;
      jsGzip += gzipSync(body).length;
    }
  }
  console.log(`run ${i + 1}: catalogue with its first API in ${ms.toFixed(0)} ms`);
  await context.close();
}
await browser.close();
times.sort((a, b) => a - b);
const median = times[Math.floor(times.length / 2)];
console.log(`median of ${runs}: ${median.toFixed(0)} ms (budget 1000 ms)`);
console.log(`JavaScript: ${(jsRaw / 1024).toFixed(0)} KiB, ${(jsGzip / 1024).toFixed(0)} KiB gzipped (budget 500 KiB)`);
