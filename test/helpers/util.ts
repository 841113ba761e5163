/**
 * Small tools every suite shares: waiting for a condition, free ports, reachability, required
 * binaries. The one place for each: a suite that needs another kind of wait adds it here.
 */
import { spawnSync } from 'node:child_process';
import { createServer, Socket, type AddressInfo } from 'node:net';

type Truthy<T> = Exclude<T, false | 0 | '' | null | undefined | void>;

/**
 * Polls `check` (every 50 ms) until it answers a truthy value, and answers that value. A check
 * that throws has not held yet: when the time is up, its last error is thrown (an assertion's
 * message says what was seen), otherwise an error naming `what`. A check that only asserts
 * answers `true` at its end.
 */
export async function eventually<T>(
  check: () => T | Promise<T>,
  ms = 10_000,
  what: string | (() => string) = 'condition',
): Promise<Truthy<T>> {
  const until = Date.now() + ms;
  for (;;) {
    let failure: unknown;
    try {
      const v = await check();
      if (v) return v as Truthy<T>;
    } catch (err) {
      failure = err;
    }
    if (Date.now() > until) {
      if (failure !== undefined) throw failure;
      throw new Error(`${typeof what === 'function' ? what() : what} not reached within ${ms} ms`);
    }
    await new Promise((r) => setTimeout(r, 50));
  }
}

/**
 * Waits `ms` where the passing of time is what a test is about (a timer must not fire early, a
 * message must not arrive, an expiry must pass): say which at the call. Anything else waits for
 * the event or the condition (`eventually`).
 */
export const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

/** A TCP port free on 127.0.0.1 now (for a peer that must be told its port before it starts). */
export async function freePort(): Promise<number> {
  const s = createServer();
  await new Promise<void>((r) => s.listen(0, '127.0.0.1', r));
  const port = (s.address() as AddressInfo).port;
  await new Promise((r) => s.close(r));
  return port;
}

/** Whether something accepts TCP connections on `port`. */
export function portOpen(port: number, host = '127.0.0.1'): Promise<boolean> {
  return new Promise((resolve) => {
    const s = new Socket();
    s.setTimeout(1000);
    s.once('error', () => resolve(false));
    s.once('timeout', () => {
      s.destroy();
      resolve(false);
    });
    s.connect(port, host, () => {
      s.destroy();
      resolve(true);
    });
  });
}

/** Whether a binary is on the PATH (or, given as an absolute path, is executable). */
export function have(binary: string): boolean {
  if (binary.startsWith('/')) return spawnSync('test', ['-x', binary]).status === 0;
  return spawnSync('sh', ['-c', `command -v ${binary}`]).status === 0;
}

/** A reason to skip when a binary is absent; on CI (`CI=true`) its absence fails the run. */
export function skipUnless(binary: string): string | false {
  if (have(binary)) return false;
  if (process.env.CI === 'true') throw new Error(`${binary} is required on CI`);
  return `${binary} is not installed`;
}
