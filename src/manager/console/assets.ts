/**
 * The manager console's built files (Vite's output in dist/console/manager; a copy of the edge
 * console's loader), read once at start into memory
 * with a gzip copy of the compressible ones: a few hundred kilobytes, bounded by the build, never
 * by a client. A file name with a content hash (`index-3fA9c2_b.js`) is cached for a year;
 * anything else (index.html) is revalidated on every load.
 */
import { createHash } from 'node:crypto';
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { extname, join, relative, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import { gzipSync } from 'node:zlib';

/** Where `npm run build` writes the console, from src/manager/console/ and dist/manager/console/ alike. */
export const CONSOLE_DIST = fileURLToPath(new URL('../../../dist/console/manager/', import.meta.url));

const TYPES: Record<string, string> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.mjs': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.json': 'application/json; charset=utf-8',
  '.map': 'application/json; charset=utf-8',
  '.svg': 'image/svg+xml',
  '.png': 'image/png',
  '.ico': 'image/x-icon',
  '.webp': 'image/webp',
  '.woff2': 'font/woff2',
  '.woff': 'font/woff',
  '.txt': 'text/plain; charset=utf-8',
};
const COMPRESSIBLE = new Set(['.html', '.js', '.mjs', '.css', '.json', '.map', '.svg', '.txt']);
/** Vite's `[name]-[hash].[ext]`: a hash of 8 or more URL-safe characters before the extension. */
const HASHED = /-[A-Za-z0-9_-]{8,}\.[a-z0-9]+$/;
/** The most bytes read from the build (a console is well under 5 MB; this only stops a mistake). */
const MAX_BYTES = 50 * 1024 * 1024;

export interface ConsoleAsset {
  body: Buffer;
  gzip: Buffer | null;
  type: string;
  etag: string;
  immutable: boolean;
}

export interface ConsoleAssets {
  dir: string;
  /** By URL path below the console's root: `index.html`, `assets/index-3fA9c2_b.js`. */
  files: Map<string, ConsoleAsset>;
}

/** The console's files under `dir`, or null when the console is not built there (no index.html). */
export function loadConsoleAssets(dir: string = CONSOLE_DIST): ConsoleAssets | null {
  if (!existsSync(join(dir, 'index.html'))) return null;
  const files = new Map<string, ConsoleAsset>();
  let total = 0;
  for (const path of walk(dir)) {
    const body = readFileSync(path);
    total += body.length;
    if (total > MAX_BYTES) throw new Error(`the console build in ${dir} is over ${MAX_BYTES} bytes`);
    const name = relative(dir, path).split(sep).join('/');
    const ext = extname(name).toLowerCase();
    const gzip = COMPRESSIBLE.has(ext) && body.length > 1024 ? gzipSync(body, { level: 9 }) : null;
    files.set(name, {
      body,
      gzip: gzip && gzip.length < body.length ? gzip : null,
      type: TYPES[ext] ?? 'application/octet-stream',
      etag: `"${createHash('sha256').update(body).digest('base64url').slice(0, 27)}"`,
      immutable: name !== 'index.html' && HASHED.test(name),
    });
  }
  return { dir, files };
}

function walk(dir: string, out: string[] = []): string[] {
  for (const name of readdirSync(dir)) {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) walk(path, out);
    else out.push(path);
  }
  return out;
}
