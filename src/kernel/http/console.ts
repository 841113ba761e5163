/**
 * The web consoles' serving, one for the three services (edge, UNS, manager): a console's built
 * files (Vite's output in dist/console/<name>), read once at start into memory with a gzip copy
 * of the compressible ones (a few hundred kilobytes, bounded by the build, never by a client),
 * and the routes `GET /` (index.html) and `GET /assets/*` (Vite's hashed files), open to anyone
 * (the sign-in must load; every call the page makes goes to the authenticated API). A file name
 * with a content hash (`index-3fA9c2_b.js`) is cached for a year; anything else (index.html) is
 * revalidated on every load. No fallback: a path the console does not have is a 404 here and the
 * API's answer elsewhere, so an API mistake never turns into index.html (the consoles route
 * themselves by the fragment, `/#/devices`).
 */
import { createHash } from 'node:crypto';
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { extname, join, relative, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import { gzipSync } from 'node:zlib';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';

/** Where `npm run build` writes the console `name` (edge, uns, manager), from src/ and dist/ alike. */
export function consoleDist(name: 'edge' | 'uns' | 'manager'): string {
  return fileURLToPath(new URL(`../../../dist/console/${name}/`, import.meta.url));
}

/**
 * The headers of every console response: no script but the console's own files (no inline
 * script, no eval, no CDN), styles and images from the service, calls and subscriptions to it
 * only, never framed, no referrer, no MIME sniffing. `formAction`: where a form may post (the
 * manager's realm page posts to the redirect of its client).
 */
export function consoleSecurityHeaders(formAction = "'self'"): Readonly<Record<string, string>> {
  return {
    'content-security-policy': [
      "default-src 'self'",
      "script-src 'self'",
      "style-src 'self'",
      "img-src 'self' data:",
      "font-src 'self'",
      "connect-src 'self'",
      "object-src 'none'",
      "frame-ancestors 'none'",
      "base-uri 'none'",
      `form-action ${formAction}`,
    ].join('; '),
    'x-frame-options': 'DENY',
    'x-content-type-options': 'nosniff',
    'referrer-policy': 'no-referrer',
    'cross-origin-opener-policy': 'same-origin',
  };
}

export const CONSOLE_SECURITY_HEADERS = consoleSecurityHeaders();

export const IMMUTABLE = 'public, max-age=31536000, immutable';

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
export function loadConsoleAssets(dir: string): ConsoleAssets | null {
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

/** One file of a console: its type, caching, ETag (304 on a match) and gzip when accepted. */
export function sendConsoleAsset(request: FastifyRequest, reply: FastifyReply, asset: ConsoleAsset) {
  void reply
    .header('content-type', asset.type)
    .header('cache-control', asset.immutable ? IMMUTABLE : 'no-cache')
    .header('etag', asset.etag)
    .header('vary', 'accept-encoding');
  if (request.headers['if-none-match'] === asset.etag) return reply.code(304).send();
  const accepts = String(request.headers['accept-encoding'] ?? '');
  if (asset.gzip && /\bgzip\b/.test(accepts)) {
    return reply.header('content-encoding', 'gzip').send(asset.gzip);
  }
  return reply.send(asset.body);
}

export interface ConsoleRoutesOptions {
  assets: ConsoleAssets | null;
  /** What `/` answers (503) when the console is not built: how to build it. */
  notBuilt: string;
  headers?: Readonly<Record<string, string>>;
}

/** `GET /` and `GET /assets/*` of a console (see the top). */
export async function consoleRoutes(app: FastifyInstance, options: ConsoleRoutesOptions): Promise<void> {
  const { assets, notBuilt } = options;
  const headers = options.headers ?? CONSOLE_SECURITY_HEADERS;
  const config = { permission: 'public' as const };
  app.get('/', { config }, async (request, reply) => {
    void reply.headers(headers);
    const index = assets?.files.get('index.html');
    if (!index) {
      return reply
        .code(503)
        .header('cache-control', 'no-store')
        .type('text/plain; charset=utf-8')
        .send(notBuilt);
    }
    return sendConsoleAsset(request, reply, index);
  });
  app.get<{ Params: { '*': string } }>('/assets/*', { config }, async (request, reply) => {
    void reply.headers(headers);
    const asset = assets?.files.get(`assets/${request.params['*']}`);
    if (!asset) {
      return reply
        .code(404)
        .header('cache-control', 'no-store')
        .type('text/plain; charset=utf-8')
        .send('not found\n');
    }
    return sendConsoleAsset(request, reply, asset);
  });
}
