/**
 * External mode: the DataHub joins an existing NATS cluster through the official `nats` client.
 * Every message published in this process also goes to the cluster; every pattern some local
 * subscriber (or gateway client) listens to is subscribed on the cluster, and what arrives is
 * delivered locally. `noEcho` keeps our own publishes from coming back, so local subscribers get
 * a local publisher's object once, directly.
 */
import {
  connect,
  headers as natsHeaders,
  type MsgHdrs,
  type NatsConnection,
  type Subscription as NatsSub,
} from 'nats';
import type { Logger } from 'pino';
import type { DataHub, Message, Uplink } from './bus.js';
import { decodeHeaders } from './payload.js';

export class ExternalLink implements Uplink {
  readonly url: string;
  readonly #nc: NatsConnection;
  readonly #hub: DataHub;
  readonly #subs = new Map<string, NatsSub>();
  readonly #log: Logger | undefined;
  /** Origin of messages from the cluster (so that they are not sent back). */
  readonly origin = {};

  private constructor(hub: DataHub, nc: NatsConnection, url: string, logger: Logger | undefined) {
    this.#hub = hub;
    this.#nc = nc;
    this.url = url;
    this.#log = logger;
  }

  static async connect(
    hub: DataHub,
    url: string,
    options: { logger?: Logger | undefined; name?: string } = {},
  ) {
    const u = new URL(url);
    const nc = await connect({
      servers: `${u.hostname.includes(':') ? `[${u.hostname}]` : u.hostname}:${u.port || 4222}`,
      ...(u.username ? { user: decodeURIComponent(u.username) } : {}),
      ...(u.password ? { pass: decodeURIComponent(u.password) } : {}),
      ...(u.protocol === 'tls:' ? { tls: {} } : {}),
      name: options.name ?? 'millwright-edge-datahub',
      noEcho: true,
      maxReconnectAttempts: -1,
      reconnectTimeWait: 1000,
    });
    const link = new ExternalLink(hub, nc, url, options.logger);
    void (async () => {
      for await (const s of nc.status()) {
        if (s.type === 'disconnect' || s.type === 'reconnect' || s.type === 'error') {
          link.#log?.warn({ status: s.type, data: String(s.data) }, 'datahub external cluster connection');
        }
      }
    })();
    hub.setUplink(link);
    return link;
  }

  get connected(): boolean {
    return !this.#nc.isClosed() && !this.#nc.isDraining();
  }

  publish(msg: Message): void {
    if (msg.origin === this.origin) return;
    const opts: { reply?: string; headers?: MsgHdrs } = {};
    if (msg.reply) opts.reply = msg.reply;
    if (msg.headers) opts.headers = toNatsHeaders(msg.headers);
    try {
      this.#nc.publish(msg.subject, msg.bytes(), opts);
    } catch (err) {
      this.#log?.warn({ err, subject: msg.subject }, 'datahub: publish to the external cluster failed');
    }
  }

  interest(pattern: string, queue: string | undefined, delta: 1 | -1): void {
    const key = queue === undefined ? pattern : `${pattern} ${queue}`;
    if (delta === -1) {
      this.#subs.get(key)?.unsubscribe();
      this.#subs.delete(key);
      return;
    }
    if (this.#subs.has(key)) return;
    const sub = this.#nc.subscribe(pattern, {
      ...(queue === undefined ? {} : { queue }),
      callback: (err, m) => {
        if (err) return;
        const data = Buffer.from(m.data.buffer, m.data.byteOffset, m.data.byteLength);
        const raw = m.headers
          ? Buffer.from((m.headers as unknown as { encode(): Uint8Array }).encode())
          : undefined;
        try {
          this.#hub.dispatch(m.subject, data, m.reply ?? '', raw, this.origin, false);
        } catch (e) {
          this.#log?.debug({ err: e, subject: m.subject }, 'datahub: message from the cluster not delivered');
        }
      },
    });
    this.#subs.set(key, sub);
  }

  /** Resolves once the cluster has seen everything sent so far (subscriptions included). */
  flush(): Promise<void> {
    return this.#nc.flush();
  }

  async close(): Promise<void> {
    this.#hub.setUplink(undefined);
    if (!this.#nc.isClosed()) {
      await this.#nc.flush().catch(() => undefined);
      await this.#nc.close();
    }
  }
}

function toNatsHeaders(raw: Buffer): MsgHdrs {
  const h = natsHeaders();
  for (const [name, value] of Object.entries(decodeHeaders(raw).headers)) {
    for (const v of Array.isArray(value) ? value : [value]) h.append(name, v);
  }
  return h;
}
