/** Small tools the device peers and the suites share: free ports, polling, required binaries. */
import { spawnSync } from 'node:child_process';
import { createServer, type AddressInfo } from 'node:net';

/** Polls `fn` until it answers true. */
export async function eventually(
  fn: () => Promise<boolean> | boolean,
  ms = 5000,
  what = 'condition',
): Promise<void> {
  const until = Date.now() + ms;
  for (;;) {
    if (await fn()) return;
    if (Date.now() > until) throw new Error(`${what} not reached within ${ms} ms`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

export async function freePort(): Promise<number> {
  const s = createServer();
  await new Promise<void>((r) => s.listen(0, '127.0.0.1', r));
  const port = (s.address() as AddressInfo).port;
  await new Promise((r) => s.close(r));
  return port;
}

/** Whether a binary is on the PATH; a test that needs it skips (and fails on CI) when it is not. */
export function have(binary: string): boolean {
  return spawnSync('sh', ['-c', `command -v ${binary}`]).status === 0;
}

export function skipReason(binary: string): string | false {
  if (have(binary)) return false;
  if (process.env.CI === 'true') throw new Error(`${binary} is required on CI`);
  return `${binary} is not installed`;
}
