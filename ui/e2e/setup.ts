// Starts `turnpike up` (binary $TURNPIKE_BIN, default the debug build) on free ports
// with a fresh data directory and the built portals (dist/), waits for "Turnpike is up.",
// and hands the URLs to the tests through the environment. Returns the teardown.
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));

function freePort(): Promise<number> {
  return new Promise((ok, fail) => {
    const s = createServer();
    s.on('error', fail);
    s.listen(0, '127.0.0.1', () => {
      const port = (s.address() as { port: number }).port;
      s.close(() => ok(port));
    });
  });
}

export default async function setup(): Promise<() => Promise<void>> {
  const root = resolve(here, '..', '..');
  const bin = process.env.TURNPIKE_BIN ?? join(root, 'target', 'debug', 'turnpike');
  const data = mkdtempSync(join(tmpdir(), 'turnpike-e2e-'));
  const [cpPort, gwPort] = [await freePort(), await freePort()];
  const password = 'admin-e2e-password';
  const child = spawn(
    bin,
    ['up', '--data-dir', data, '--cp-port', String(cpPort), '--http-port', String(gwPort), '--https-port', 'off'],
    {
      env: {
        ...process.env,
        TURNPIKE_ADMIN_PASSWORD: password,
        TURNPIKE_UI_DIR: join(root, 'ui', 'dist'),
        TURNPIKE_LOG: process.env.TURNPIKE_LOG ?? 'warn',
      },
      stdio: ['ignore', 'pipe', 'inherit'],
    },
  );
  let out = '';
  await new Promise<void>((ok, fail) => {
    const timer = setTimeout(() => fail(new Error(`turnpike up did not start in 60 s:\n${out}`)), 60_000);
    child.stdout!.on('data', (d: Buffer) => {
      out += d.toString();
      if (out.includes('Turnpike is up.') && out.includes('Open http')) {
        clearTimeout(timer);
        ok();
      }
    });
    child.on('exit', (code) => {
      clearTimeout(timer);
      fail(new Error(`turnpike up exited (${code}):\n${out}`));
    });
  });
  const echo = /demo back end:\s+(http:\/\/\S+)/.exec(out)?.[1];
  if (!echo) throw new Error(`no echo URL in:\n${out}`);
  process.env.TP_BASE = `http://127.0.0.1:${cpPort}`;
  process.env.TP_GATEWAY = `http://127.0.0.1:${gwPort}`;
  process.env.TP_ECHO = echo;
  process.env.TP_ADMIN_PASSWORD = password;
  process.env.TP_GATEWAY_TOKEN = /gateway token:\s+(\S+)/.exec(out)?.[1] ?? '';
  return async () => {
    child.kill('SIGTERM');
    await new Promise((r) => setTimeout(r, 500));
    rmSync(data, { recursive: true, force: true });
  };
}
