import { defineConfig } from 'vitest/config';
import react from '@vitejs/plugin-react';

// The portals are served by the control plane at `/` (port 9400); `npm run dev` proxies
// the REST APIs and the key manager to a running `turnpike up`.
const cp = process.env.TURNPIKE_CONTROL_PLANE ?? 'http://127.0.0.1:9400';

export default defineConfig({
  plugins: [react()],
  build: { outDir: 'dist', sourcemap: false, chunkSizeWarningLimit: 800 },
  server: { proxy: { '/api': cp, '/oauth2': cp, '/.well-known': cp } },
  test: { environment: 'node', include: ['src/**/*.test.ts'] },
});
