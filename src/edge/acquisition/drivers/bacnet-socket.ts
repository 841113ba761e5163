/**
 * The BACnet/IP driver's UDP sockets: @bacnet-js/client loaded on first use, one client (socket) per
 * local port shared by every device of the process that uses that port, and a bound on the
 * confirmed requests in flight on a socket (the library matches answers by invoke id alone, 0-254,
 * not by the device's address, so no more than that may wait at once).
 *
 * The library's own request table (`RequestManager`) loses a request when its invoke id comes
 * round again within the APDU timeout (more than 255 requests in that time on one socket: 85 a
 * second at 3 s): the expiry sweep of the earlier, answered request deletes the later one's entry,
 * whose promise then never settles (its answer is dropped as unknown). A read waiting on it waits
 * for ever. `InvokeTable` replaces it on every client made here: one entry per invoke id, its own
 * timer, settled exactly once.
 */
import type { BACNetAppData } from '@bacnet-js/client';

export type Lib = typeof import('@bacnet-js/client');
export type Client = InstanceType<Lib['default']>;
let loaded: Promise<Lib> | undefined;
/** Set once loaded: error class and code names for messages. */
export let names: Pick<Lib, 'ErrorClass' | 'ErrorCode'> | undefined;
export const load = () =>
  (loaded ??= import('@bacnet-js/client').then((m) => {
    const lib = m as Lib & { default: Lib['default'] | Lib };
    // The package is CommonJS: its classes and enums sit on the default export.
    const out = ('ObjectType' in lib.default ? lib.default : lib) as Lib;
    names = out;
    return out;
  }));

/** Confirmed requests in flight on one socket at most (invoke ids are 0-254, matched without the address). */
export const SOCKET_INFLIGHT = 200;

/** One UDP socket per local port, shared by the devices of the process. */
export interface Shared {
  client: Client;
  refs: number;
  /** Requests in flight and the ones waiting for a slot (see SOCKET_INFLIGHT). */
  inflight: number;
  waiting: Array<() => void>;
  cov: Map<number, (values: Array<{ property: { id: number }; value: BACNetAppData[] }>) => void>;
}
const sockets = new Map<number, Promise<Shared>>();

type Settle = { resolve: (v: unknown) => void; reject: (e: Error) => void; timer: NodeJS.Timeout };

/** The library's request table (add, resolve, clear), without its invoke-id reuse bug (above). */
export class InvokeTable {
  readonly #byId = new Map<number, Settle>();
  constructor(readonly delay: number) {}

  add(invokeId: number): Promise<unknown> {
    return new Promise((resolve, reject) => {
      // An id still waiting when it comes round again: that request has waited 255 requests long.
      this.#settle(invokeId, new Error('ERR_TIMEOUT'));
      const timer = setTimeout(
        () => this.#settle(invokeId, new Error('ERR_TIMEOUT'), undefined, timer),
        this.delay,
      );
      this.#byId.set(invokeId, { resolve, reject, timer });
    });
  }

  resolve(invokeId: number, err: Error | null, result?: unknown): boolean {
    return this.#settle(invokeId, err, result);
  }

  clear(force?: boolean): void {
    if (!force) return;
    for (const id of [...this.#byId.keys()]) this.#settle(id, new Error('ERR_TIMEOUT'));
  }

  #settle(invokeId: number, err: Error | null, result?: unknown, only?: NodeJS.Timeout): boolean {
    const entry = this.#byId.get(invokeId);
    if (!entry || (only && entry.timer !== only)) return false;
    this.#byId.delete(invokeId);
    clearTimeout(entry.timer);
    if (err) entry.reject(err);
    else entry.resolve(result);
    return true;
  }
}

/** Puts an `InvokeTable` in place of a client's own request table. */
export function fixRequests(client: Client, timeout: number): Client {
  (client as unknown as { _requestManager: InvokeTable })._requestManager = new InvokeTable(timeout);
  return client;
}

export async function acquire(lib: Lib, localPort: number, timeout: number): Promise<Shared> {
  const key = localPort;
  let s = sockets.get(key);
  if (!s) {
    s = new Promise<Shared>((resolve, reject) => {
      const client = fixRequests(
        new lib.default({ port: localPort, apduTimeout: timeout }) as Client,
        timeout,
      );
      const shared: Shared = { client, refs: 0, inflight: 0, waiting: [], cov: new Map() };
      const fail = (err: Error) => {
        sockets.delete(key);
        client.close();
        reject(new Error(`cannot listen on UDP port ${localPort}: ${err.message}`));
      };
      client.once('error', fail);
      client.once('listening', () => {
        client.off('error', fail);
        client.on('error', () => undefined);
        resolve(shared);
      });
      client.on('covNotifyUnconfirmed', (c) =>
        shared.cov.get(c.payload.subscriberProcessId)?.(c.payload.values),
      );
    });
    sockets.set(key, s);
    s.catch(() => sockets.delete(key));
  }
  const shared = await s;
  shared.refs++;
  return Object.assign(shared, { key });
}

export function release(shared: Shared & { key?: number }): void {
  if (--shared.refs > 0) return;
  if (shared.key !== undefined) sockets.delete(shared.key);
  shared.client.close();
}

/** Runs one confirmed request when the socket has a slot for it. */
export async function inSlot<T>(shared: Shared, fn: () => Promise<T>): Promise<T> {
  if (shared.inflight >= SOCKET_INFLIGHT) await new Promise<void>((r) => shared.waiting.push(r));
  shared.inflight++;
  try {
    return await fn();
  } finally {
    shared.inflight--;
    shared.waiting.shift()?.();
  }
}
