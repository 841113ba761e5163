/**
 * The UNS console's build: `vite build --config console/vite.uns.config.ts` (scripts/build.mjs
 * runs it) builds console/uns into dist/console/uns with hashed file names, on the same design
 * system (console/shared) as the edge console. `MILLWRIGHT_UNS_URL=https://localhost:9443 npx vite
 * --config console/vite.uns.config.ts` serves it with the API proxied to a running UNS.
 */
import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vite';

const here = fileURLToPath(new URL('.', import.meta.url));
const unsUrl = process.env.MILLWRIGHT_UNS_URL ?? 'https://localhost:9443';
const proxy = Object.fromEntries(
  ['/auth', '/mqtt', '/health', '/version'].map((p) => [
    p,
    { target: unsUrl, secure: false, changeOrigin: true, ws: true },
  ]),
);

export default defineConfig({
  root: `${here}uns`,
  base: '/',
  logLevel: 'warn',
  oxc: { jsx: { runtime: 'automatic', importSource: 'preact' } },
  build: {
    outDir: `${here}../dist/console/uns`,
    emptyOutDir: true,
    target: 'es2022',
    assetsInlineLimit: 0,
    chunkSizeWarningLimit: 600,
    reportCompressedSize: false,
  },
  server: { proxy },
  preview: { proxy },
});
