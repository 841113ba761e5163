/**
 * The manager console's build: `vite build --config console/vite.manager.config.ts` (scripts/build.mjs
 * runs it) builds console/manager into dist/console/manager with hashed file names, on the design
 * system of console/shared. `MILLWRIGHT_MANAGER_URL=https://localhost:8444 npx vite --config
 * console/vite.manager.config.ts` serves it with the API proxied to a running manager.
 */
import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vite';

const here = fileURLToPath(new URL('.', import.meta.url));
const managerUrl = process.env.MILLWRIGHT_MANAGER_URL ?? 'https://localhost:8444';
const apiPrefixes = ['/api', '/admin', '/auth', '/console', '/mpcs', '/health', '/version'];
const proxy = Object.fromEntries(
  apiPrefixes.map((p) => [p, { target: managerUrl, secure: false, changeOrigin: true, ws: true }]),
);

export default defineConfig({
  root: `${here}manager`,
  base: '/',
  logLevel: 'warn',
  oxc: { jsx: { runtime: 'automatic', importSource: 'preact' } },
  build: {
    outDir: `${here}../dist/console/manager`,
    emptyOutDir: true,
    target: 'es2022',
    assetsInlineLimit: 0,
    chunkSizeWarningLimit: 600,
    reportCompressedSize: false,
  },
  server: { proxy },
  preview: { proxy },
});
