/**
 * The PostgreSQL (pg) and MySQL / MariaDB (mysql2) transports: rows, batched. Each
 * local-to-remote subscription names a table (its remote name); the connector creates it when
 * `createTable` is on, with this shape (docs/integrations.md):
 *
 *     id       bigserial / BIGINT AUTO_INCREMENT primary key   -- arrival order
 *     msg_id   text / VARCHAR(100), unique                     -- <instance>:<queue seq>
 *     subject  text / VARCHAR(1024)                            -- the DataHub subject
 *     ts       timestamptz / DATETIME(3)                       -- when the edge queued it
 *     payload  jsonb / JSON                                    -- the value as published
 *
 * One multi-row INSERT per table per batch, in a transaction; the commit acknowledges the batch.
 * `msg_id` is unique and a replayed row is skipped (`ON CONFLICT DO NOTHING` / `INSERT IGNORE`),
 * so that a batch sent again after a lost commit answer is stored once: the peer deduplicates.
 */
import type pg from 'pg';
import { pgDriver } from '../../../kernel/db/index.js';
import mysql from 'mysql2/promise';
import type { Connector, ConnectorContext, OutMessage } from './types.js';
import { reasonOf } from './types.js';
import { payloadJson } from './http.js';

const TABLE = /^[A-Za-z_][A-Za-z0-9_]{0,62}$/;

function byTable(batch: OutMessage[]): Map<string, OutMessage[]> {
  const tables = new Map<string, OutMessage[]>();
  for (const m of batch) {
    if (!TABLE.test(m.topic)) throw new Error(`"${m.topic}" is not a table name`);
    let list = tables.get(m.topic);
    if (!list) tables.set(m.topic, (list = []));
    list.push(m);
  }
  return tables;
}

export class PostgresConnector implements Connector {
  readonly separator = '.' as const;
  readonly pipelined = false;
  readonly #ctx: ConnectorContext;
  #client: pg.Client | undefined;
  #closed = false;
  readonly #created = new Set<string>();

  constructor(ctx: ConnectorContext) {
    this.#ctx = ctx;
  }

  async connect(): Promise<void> {
    const client = new (pgDriver().Client)({
      connectionString: String(this.#ctx.config.url),
      connectionTimeoutMillis: 10_000,
    });
    let last: string | undefined;
    client.on('error', (err) => {
      last = reasonOf(err);
    });
    client.on('end', () => {
      if (!this.#closed) this.#ctx.hooks.down(last ?? 'connection closed by the server');
    });
    this.#client = client;
    await client.connect();
  }

  async send(batch: OutMessage[]): Promise<void> {
    const client = this.#client;
    if (!client) throw new Error('not connected');
    const tables = byTable(batch);
    await client.query('begin');
    try {
      for (const [table, rows] of tables) {
        if (this.#ctx.config.createTable !== false && !this.#created.has(table)) {
          await client.query(
            `create table if not exists "${table}" (id bigserial primary key, msg_id text not null unique,
              subject text not null, ts timestamptz not null, payload jsonb not null)`,
          );
          this.#created.add(table);
        }
        const values: unknown[] = [];
        const tuples: string[] = [];
        for (const m of rows) {
          const n = values.length;
          tuples.push(
            `($${n + 1}, $${n + 2}, to_timestamp($${n + 3}::double precision / 1000), $${n + 4}::jsonb)`,
          );
          values.push(`${this.#ctx.instanceId}:${m.seq}`, m.subject, m.ts, payloadJson(m.payload));
        }
        await client.query(
          `insert into "${table}" (msg_id, subject, ts, payload) values ${tuples.join(', ')} on conflict (msg_id) do nothing`,
          values,
        );
      }
      await client.query('commit');
    } catch (err) {
      await client.query('rollback').catch(() => undefined);
      throw err;
    }
  }

  async close(): Promise<void> {
    this.#closed = true;
    const c = this.#client;
    this.#client = undefined;
    await c?.end().catch(() => undefined);
  }
}

export class MysqlConnector implements Connector {
  readonly separator = '.' as const;
  readonly pipelined = false;
  readonly #ctx: ConnectorContext;
  #conn: mysql.Connection | undefined;
  #closed = false;
  readonly #created = new Set<string>();

  constructor(ctx: ConnectorContext) {
    this.#ctx = ctx;
  }

  async connect(): Promise<void> {
    const conn = await mysql.createConnection({ uri: String(this.#ctx.config.url), connectTimeout: 10_000 });
    let last: string | undefined;
    conn.on('error', (err: Error) => {
      last = reasonOf(err);
      if (!this.#closed) this.#ctx.hooks.down(last);
    });
    conn.on('end', () => {
      if (!this.#closed) this.#ctx.hooks.down(last ?? 'connection closed by the server');
    });
    this.#conn = conn;
  }

  async send(batch: OutMessage[]): Promise<void> {
    const conn = this.#conn;
    if (!conn) throw new Error('not connected');
    const tables = byTable(batch);
    await conn.beginTransaction();
    try {
      for (const [table, rows] of tables) {
        if (this.#ctx.config.createTable !== false && !this.#created.has(table)) {
          await conn.query(
            `create table if not exists \`${table}\` (id bigint auto_increment primary key, msg_id varchar(100) not null unique,
              subject varchar(1024) not null, ts datetime(3) not null, payload json not null)`,
          );
          this.#created.add(table);
        }
        const values: unknown[] = [];
        for (const m of rows) {
          values.push(`${this.#ctx.instanceId}:${m.seq}`, m.subject, new Date(m.ts), payloadJson(m.payload));
        }
        await conn.query(
          `insert ignore into \`${table}\` (msg_id, subject, ts, payload) values ${rows.map(() => '(?, ?, ?, ?)').join(', ')}`,
          values,
        );
      }
      await conn.commit();
    } catch (err) {
      await conn.rollback().catch(() => undefined);
      throw err;
    }
  }

  async close(): Promise<void> {
    this.#closed = true;
    const c = this.#conn;
    this.#conn = undefined;
    await c?.end().catch(() => c.destroy());
  }
}
