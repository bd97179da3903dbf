// Browser tests of the portals against a real `turnpike up` (started by e2e/setup.ts),
// in Debian's Chromium (`/usr/bin/chromium`, or $CHROMIUM): Playwright may not download
// a browser of its own here. Screenshots go to ../target/screenshots.
import { defineConfig } from '@playwright/test';

export default defineConfig({
  testDir: 'e2e',
  globalSetup: './e2e/setup.ts',
  outputDir: '../target/playwright',
  workers: 1,
  timeout: 180_000,
  expect: { timeout: 15_000 },
  reporter: [['list']],
  use: {
    headless: true,
    viewport: { width: 1280, height: 860 },
    launchOptions: { executablePath: process.env.CHROMIUM ?? '/usr/bin/chromium' },
    trace: 'retain-on-failure',
    actionTimeout: 15_000,
  },
});
