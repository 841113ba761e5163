/** Shared by the DataHub tests: the real nats-server check and a raw NATS protocol client. */
import { connect as tcp, type Socket } from 'node:net';
import type { TestContext } from 'node:test';

export const NATS_SERVER = { host: '127.0.0.1', port: 4222 };

/** Whether the real nats-server answers with INFO on 127.0.0.1:4222. */
export function natsServerReachable(timeoutMs = 1000): Promise<boolean> {
  return new Promise((resolve) => {
    const s = tcp(NATS_SERVER.port, NATS_SERVER.host);
    const done = (ok: boolean) => {
      clearTimeout(timer);
      s.destroy();
      resolve(ok);
    };
    const timer = setTimeout(() => done(false), timeoutMs);
    s.once('data', (d) => done(d.toString().startsWith('INFO ')));
    s.once('error', () => done(false));
  });
}

/**
 * Skips a test that needs the real nats-server when it is not running, saying why; in CI
 * (`CI=true`) its absence is a failure instead.
 */
export async function needNatsServer(t: TestContext): Promise<boolean> {
  if (await natsServerReachable()) return true;
  const reason = `nats-server is not reachable on ${NATS_SERVER.host}:${NATS_SERVER.port}`;
  if (process.env.CI === 'true') throw new Error(`${reason} (required when CI=true)`);
  console.log(`# skipped: ${reason}`);
  t.skip(reason);
  return false;
}

/** A NATS client speaking the protocol by hand, to see exactly what the server sends. */
export class RawClient {
  readonly socket: Socket;
  text = '';
  closed: Promise<void>;
  isClosed = false;
  #waiters: { re: RegExp; resolve: () => void }[] = [];

  constructor(port: number, host = '127.0.0.1') {
    this.socket = tcp(port, host);
    this.socket.on('data', (d) => {
      this.text += d.toString('latin1');
      this.#check();
    });
    this.socket.on('error', () => undefined);
    this.closed = new Promise((resolve) => {
      this.socket.on('close', () => {
        this.isClosed = true;
        resolve();
      });
    });
  }

  #check(): void {
    this.#waiters = this.#waiters.filter((w) => {
      if (w.re.test(this.text)) {
        w.resolve();
        return false;
      }
      return true;
    });
  }

  send(s: string | Buffer): void {
    this.socket.write(s);
  }

  /** Resolves once the received text matches `re` (fails after `ms`). */
  waitFor(re: RegExp, ms = 5000): Promise<void> {
    if (re.test(this.text)) return Promise.resolve();
    return new Promise((resolve, reject) => {
      const timer = setTimeout(
        () => reject(new Error(`timed out waiting for ${re}; got ${JSON.stringify(this.text.slice(-300))}`)),
        ms,
      );
      this.#waiters.push({
        re,
        resolve: () => {
          clearTimeout(timer);
          resolve();
        },
      });
    });
  }

  /** The text after the INFO line. */
  get afterInfo(): string {
    return this.text.replace(/^INFO [^\r\n]*\r\n/, '');
  }

  /** The INFO object the server sent first. */
  get info(): Record<string, unknown> {
    const m = /^INFO (\{.*\}) ?\r\n/.exec(this.text);
    return m ? (JSON.parse(m[1]!) as Record<string, unknown>) : {};
  }

  destroy(): void {
    this.socket.destroy();
  }
}

/** Runs `input` on a fresh raw connection; answers what came back after INFO and whether it closed. */
export async function exchange(port: number, input: string, settleMs = 400): Promise<string> {
  const c = new RawClient(port);
  await c.waitFor(/^INFO .*\r\n/);
  c.send(input);
  await Promise.race([c.closed, new Promise((r) => setTimeout(r, settleMs))]);
  const out = `${c.afterInfo}${c.isClosed ? '[closed]' : '[open]'}`;
  c.destroy();
  return out;
}
