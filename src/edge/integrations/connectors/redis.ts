/**
 * The Redis Streams transport (ioredis). Local-to-remote: one `XADD <stream> [MAXLEN ~ n] * subject
 * <subject> payload <json>` per message, pipelined; the replies acknowledge the batch. Remote-to-
 * local: `XREAD BLOCK` on the streams named by the remote names, from the newest entry on (`$`);
 * the `payload` field (or the only field) of each entry is the message.
 */
import type { Redis } from 'ioredis';
import type { Connector, ConnectorContext, OutMessage, RemoteSubscription } from './types.js';
import { reasonOf } from './types.js';

export class RedisConnector implements Connector {
  readonly separator = '.' as const;
  readonly pipelined = true;
  readonly #ctx: ConnectorContext;
  #client: Redis | undefined;
  #reader: Redis | undefined;
  #closed = false;

  constructor(ctx: ConnectorContext) {
    this.#ctx = ctx;
  }

  async #open(): Promise<Redis> {
    // ioredis is loaded by the first Redis connector, not by every edge start.
    const { Redis } = await import('ioredis');
    const r = new Redis(String(this.#ctx.config.url), {
      lazyConnect: true,
      connectTimeout: 10_000,
      maxRetriesPerRequest: 0,
      retryStrategy: () => null,
      enableOfflineQueue: false,
    });
    let last: string | undefined;
    r.on('error', (err: Error) => {
      last = reasonOf(err);
    });
    r.on('end', () => {
      if (!this.#closed) this.#ctx.hooks.down(last ?? 'connection closed by the server');
    });
    return r;
  }

  async connect(subscriptions: RemoteSubscription[]): Promise<void> {
    const client = await this.#open();
    this.#client = client;
    await client.connect();
    await client.ping();
    if (subscriptions.length > 0) {
      const reader = await this.#open();
      this.#reader = reader;
      await reader.connect();
      void this.#read(reader, subscriptions);
    }
  }

  async #read(reader: Redis, subs: RemoteSubscription[]): Promise<void> {
    const ids = subs.map(() => '$');
    while (!this.#closed) {
      let res: [string, [string, string[]][]][] | null;
      try {
        res = (await reader.xread(
          'COUNT',
          1000,
          'BLOCK',
          1000,
          'STREAMS',
          ...subs.map((s) => s.remote),
          ...ids,
        )) as [string, [string, string[]][]][] | null;
      } catch {
        return; // the 'end' handler reports the reason
      }
      for (const [stream, entries] of res ?? []) {
        const i = subs.findIndex((s) => s.remote === stream);
        if (i < 0) continue;
        for (const [id, fields] of entries) {
          ids[i] = id;
          const at = fields.indexOf('payload');
          const value =
            at >= 0 && at % 2 === 0 ? fields[at + 1] : fields.length === 2 ? fields[1] : undefined;
          this.#ctx.hooks.message(
            subs[i]!.id,
            stream,
            Buffer.from(value ?? JSON.stringify(fieldsObject(fields))),
          );
        }
      }
    }
  }

  async send(batch: OutMessage[]): Promise<void> {
    const client = this.#client;
    if (!client) throw new Error('not connected');
    const maxLen = Number(this.#ctx.config.maxLen ?? 0);
    const p = client.pipeline();
    for (const m of batch) {
      if (maxLen > 0) p.xadd(m.topic, 'MAXLEN', '~', maxLen, '*', 'subject', m.subject, 'payload', m.payload);
      else p.xadd(m.topic, '*', 'subject', m.subject, 'payload', m.payload);
    }
    const results = (await p.exec()) ?? [];
    const failed = results.find(([err]) => err);
    if (failed) throw failed[0] as Error;
    if (results.length !== batch.length) throw new Error('XADD pipeline interrupted');
  }

  async close(): Promise<void> {
    this.#closed = true;
    for (const r of [this.#client, this.#reader]) r?.disconnect();
    this.#client = undefined;
    this.#reader = undefined;
  }
}

function fieldsObject(fields: string[]): Record<string, string> {
  const o: Record<string, string> = {};
  for (let i = 0; i + 1 < fields.length; i += 2) o[fields[i]!] = fields[i + 1]!;
  return o;
}
