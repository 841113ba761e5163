/**
 * What the fuzz suites share: the number of runs, a raw HTTP/1.1 exchange over TLS (so that any
 * bytes can be sent, not only what an HTTP client library lets through), raw TCP exchanges for the
 * NATS and MQTT ports, and the checks after each run: no 5xx, an answer within the time bound, the
 * process alive and answering `/health`, its resident memory under the bound.
 *
 * `npm test` runs a few dozen cases per target (`MILLWRIGHT_FUZZ_RUNS`, default 25);
 * `npm run fuzz` runs test/fuzz/ with 2,000. A failure prints fast-check's seed and path:
 * `MILLWRIGHT_FUZZ_SEED=<seed>` replays it.
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import net from 'node:net';
import tls from 'node:tls';
import fc from 'fast-check';

export const FUZZ_RUNS = Number(process.env.MILLWRIGHT_FUZZ_RUNS ?? 25);
const SEED = process.env.MILLWRIGHT_FUZZ_SEED ? Number(process.env.MILLWRIGHT_FUZZ_SEED) : undefined;

/** fast-check parameters of every property here. */
export const params = (): fc.Parameters<unknown> => ({
  numRuns: FUZZ_RUNS,
  ...(SEED !== undefined ? { seed: SEED } : {}),
  // Real processes: shrinking a failure is worth a few seconds, not minutes.
  endOnFailure: false,
  interruptAfterTimeLimit: Math.max(60_000, FUZZ_RUNS * 200),
});

/** Longest wait for an answer to one fuzzed request or packet. */
export const ANSWER_MS = 5000;
/** Resident memory bound of a fuzzed process (the built CLI, `dist/`). */
export const RSS_BOUND = 600 * 1024 * 1024;

export function rss(pid: number): number {
  const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  if (!m) throw new Error(`no VmRSS for ${pid}`);
  return Number(m[1]) * 1024;
}

export function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

export interface Exchange {
  /** Every byte the server sent before it closed or the exchange ended. */
  received: Buffer;
  /** The status of the first HTTP response, 0 when there was none. */
  status: number;
  /** Whether the server answered or closed within the bound. */
  inTime: boolean;
}

/**
 * Sends `bytes` on a new connection and waits for the first answer (an HTTP response ends the
 * exchange when `untilHttpResponse`), the close, or `ms`.
 */
export function exchange(
  connectTo: { port: number; tls: boolean },
  bytes: Buffer,
  options: { ms?: number; untilHttpResponse?: boolean; until?: (received: Buffer) => boolean } = {},
): Promise<Exchange> {
  const ms = options.ms ?? ANSWER_MS;
  return new Promise((resolve) => {
    let received = Buffer.alloc(0);
    let done = false;
    const socket: net.Socket = connectTo.tls
      ? tls.connect({ port: connectTo.port, host: '127.0.0.1', rejectUnauthorized: false }, () =>
          socket.write(bytes),
        )
      : net.connect(connectTo.port, '127.0.0.1', () => socket.write(bytes));
    const finish = (inTime: boolean) => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      socket.destroy();
      const m = /^HTTP\/1\.[01] (\d{3})/.exec(received.subarray(0, 16).toString('latin1'));
      resolve({ received, status: m ? Number(m[1]) : 0, inTime });
    };
    const timer = setTimeout(() => finish(false), ms);
    socket.on('data', (d) => {
      received = Buffer.concat([received, d]);
      if (options.untilHttpResponse && httpResponseComplete(received)) finish(true);
      if (options.until?.(received)) finish(true);
    });
    socket.on('error', () => finish(true));
    socket.on('close', () => finish(true));
  });
}

/** Whether `buf` holds a whole HTTP response (headers, then Content-Length bytes or a last chunk). */
function httpResponseComplete(buf: Buffer): boolean {
  const text = buf.toString('latin1');
  const end = text.indexOf('\r\n\r\n');
  if (end < 0) return false;
  const head = text.slice(0, end).toLowerCase();
  const length = /\r\ncontent-length:\s*(\d+)/.exec(head);
  if (length) return buf.length >= end + 4 + Number(length[1]);
  if (/\r\ntransfer-encoding:\s*chunked/.test(head)) return text.endsWith('0\r\n\r\n');
  return /^http\/1\.[01] (1\d\d|204|304)/.test(head);
}

/** One HTTP/1.1 request as bytes (Connection: close). */
export function httpRequest(
  method: string,
  target: string,
  headers: Record<string, string>,
  body?: Buffer | string,
): Buffer {
  const b = body === undefined ? Buffer.alloc(0) : Buffer.from(body);
  const lines = [`${method} ${target} HTTP/1.1`, 'Host: 127.0.0.1', 'Connection: close'];
  for (const [k, v] of Object.entries(headers)) lines.push(`${k}: ${v}`);
  if (body !== undefined) lines.push(`Content-Length: ${b.length}`);
  return Buffer.concat([Buffer.from(`${lines.join('\r\n')}\r\n\r\n`, 'latin1'), b]);
}

/** Sends one HTTP request and checks: an answer in time, and not a 5xx. */
export async function checkHttp(port: number, request: Buffer, what: () => string): Promise<Exchange> {
  const r = await exchange({ port, tls: true }, request, { untilHttpResponse: true });
  assert.ok(r.inTime, `no answer within ${ANSWER_MS} ms: ${what()}`);
  assert.ok(r.status < 500, `HTTP ${r.status} for ${what()}:\n${r.received.toString('utf8', 0, 600)}`);
  return r;
}

/** The process lives, answers `/health` in time, and stays under the memory bound. */
export async function checkProcess(pid: number, port: number, output: () => string): Promise<void> {
  assert.ok(alive(pid), `the process died:\n${output().slice(-3000)}`);
  const r = await exchange({ port, tls: true }, httpRequest('GET', '/health', {}), {
    untilHttpResponse: true,
  });
  assert.equal(r.status, 200, `/health: ${r.received.toString('utf8', 0, 300)}`);
  const bytes = rss(pid);
  assert.ok(bytes < RSS_BOUND, `resident memory ${Math.round(bytes / 2 ** 20)} MiB`);
}

/** Error-level log lines (pino level 50+) other than the ones a test expects. */
export function errorLines(output: string): string[] {
  return output.split('\n').filter((l) => /"level":(5|6)\d/.test(l));
}

/** Strings that look like the inside of a JSON document, a GraphQL document or a query string. */
export const tokenSoup = (tokens: string[], maxLength = 40): fc.Arbitrary<string> =>
  fc
    .array(fc.oneof(fc.constantFrom(...tokens), fc.string({ maxLength: 6 }), fc.integer().map(String)), {
      maxLength,
    })
    .map((parts) => parts.join(''));
