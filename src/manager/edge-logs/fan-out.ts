/**
 * One GET to many edges over their links, each with a deadline: an edge that is offline, slow
 * or failing is reported (`offline`, `timeout`, `error`) and not waited for. The calls run at
 * most `EDGE_LOGS_CONCURRENCY` at once.
 */
import { AppError } from '../../kernel/errors.js';
import type { BridgeActor } from '../../kernel/link/protocol.js';
import type { BridgeService } from '../bridge/index.js';

export const EDGE_LOGS_CONCURRENCY = 16;

export type EdgeOutcome =
  | { deviceId: string; status: 'ok'; body: unknown }
  | { deviceId: string; status: 'offline' | 'timeout' | 'error'; message: string };

export async function fanOut(
  bridge: BridgeService,
  calls: { deviceId: string; path: string }[],
  actor: (deviceId: string) => BridgeActor,
  deadlineMs: number,
): Promise<EdgeOutcome[]> {
  const out: EdgeOutcome[] = new Array<EdgeOutcome>(calls.length);
  let next = 0;
  const worker = async () => {
    while (next < calls.length) {
      const i = next++;
      out[i] = await one(bridge, calls[i]!, actor(calls[i]!.deviceId), deadlineMs);
    }
  };
  await Promise.all(Array.from({ length: Math.min(EDGE_LOGS_CONCURRENCY, calls.length) }, worker));
  return out;
}

async function one(
  bridge: BridgeService,
  call: { deviceId: string; path: string },
  actor: BridgeActor,
  deadlineMs: number,
): Promise<EdgeOutcome> {
  const { deviceId } = call;
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<'late'>((resolve) => {
    timer = setTimeout(() => resolve('late'), deadlineMs);
  });
  const asked = bridge.json(deviceId, 'GET', call.path, undefined, {}, actor);
  // The answer of an edge past its deadline is dropped, its failure too.
  asked.catch(() => undefined);
  try {
    const r = await Promise.race([asked, late]);
    if (r === 'late') return { deviceId, status: 'timeout', message: `no answer within ${deadlineMs} ms` };
    if (r.status === 200) return { deviceId, status: 'ok', body: r.body };
    const message = (r.body as { message?: string } | undefined)?.message ?? `status ${r.status}`;
    return { deviceId, status: 'error', message: `the edge answered ${r.status}: ${message}` };
  } catch (err) {
    const e = err as AppError;
    if (e instanceof AppError && e.status === 503) return { deviceId, status: 'offline', message: e.message };
    if (e instanceof AppError && e.status === 504) return { deviceId, status: 'timeout', message: e.message };
    return { deviceId, status: 'error', message: (err as Error).message };
  } finally {
    clearTimeout(timer);
  }
}
