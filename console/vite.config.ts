/**
 * The consoles' build: `vite build --config console/vite.config.ts` (scripts/build.mjs runs it)
 * builds console/edge into dist/console/edge with hashed file names; JSX for Preact through
 * Vite's own oxc transform. `MILLWRIGHT_EDGE_URL=https://localhost:8443 npx vite --config
 * console/vite.config.ts` serves it with the API proxied to a running edge.
 */
import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vite';

const here = fileURLToPath(new URL('.', import.meta.url));
const edgeUrl = process.env.MILLWRIGHT_EDGE_URL ?? 'https://localhost:8443';
const apiPrefixes = [
  '/auth',
  '/devicehub',
  '/cc',
  '/opcua',
  '/analytics',
  '/digital-twins',
  '/config',
  '/logs',
  '/datahub',
  '/dm',
  '/health',
  '/version',
  '/metrics',
];

export default defineConfig({
  root: `${here}edge`,
  // Relative: the edge serves the console at `/`, the manager at `/edge-console/<project>/<device>/`.
  base: './',
  logLevel: 'warn',
  oxc: { jsx: { runtime: 'automatic', importSource: 'preact' } },
  build: {
    outDir: `${here}../dist/console/edge`,
    emptyOutDir: true,
    target: 'es2022',
    assetsInlineLimit: 0,
    chunkSizeWarningLimit: 600,
    reportCompressedSize: false,
  },
  server: {
    proxy: Object.fromEntries(
      apiPrefixes.map((p) => [p, { target: edgeUrl, secure: false, changeOrigin: true, ws: true }]),
    ),
  },
  preview: {
    proxy: Object.fromEntries(
      apiPrefixes.map((p) => [p, { target: edgeUrl, secure: false, changeOrigin: true, ws: true }]),
    ),
  },
});
