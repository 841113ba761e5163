/** The configuration module's tables (saved templates, snapshots). No other module reads them. */
import { promisify } from 'node:util';
import { gunzip as gunzipCb, gzip as gzipCb } from 'node:zlib';
import { typed, type Database, type Kysely, type Tx } from '../../kernel/db/index.js';

const gzip = promisify(gzipCb);
const gunzip = promisify(gunzipCb);

export interface ConfigTables {
  config_template: {
    id: string;
    name: string;
    description: string;
    /** JSON array of the section names. */
    sections: string;
    encrypted: number;
    /** Bytes of the JSON document. */
    size: number;
    document: string;
    created_at: number;
    updated_at: number;
  };
  config_snapshot: {
    id: string;
    reason: string;
    sections: string;
    size: number;
    document: string;
    created_at: number;
  };
  config_idempotency: {
    key: string;
    /** JSON of the apply's answer. */
    answer: string;
    created_at: number;
  };
}

export type TemplateRow = ConfigTables['config_template'];
export type SnapshotRow = ConfigTables['config_snapshot'];
export type TemplateMeta = Omit<TemplateRow, 'document'>;
export type SnapshotMeta = Omit<SnapshotRow, 'document'>;

const TEMPLATE_META = [
  'id',
  'name',
  'description',
  'sections',
  'encrypted',
  'size',
  'created_at',
  'updated_at',
] as const;
const SNAPSHOT_META = ['id', 'reason', 'sections', 'size', 'created_at'] as const;

/**
 * zlib's output chunks: at its default of 16 KiB, 27 MB of text are 1,700 round trips between the
 * thread pool and the main thread, and a concatenation of the chunks at the end.
 */
const PACK_CHUNK = 1024 * 1024;
/** The largest output chunk of a gunzip sized by the stored size. */
const UNPACK_CHUNK_MAX = 256 * 1024 * 1024;

/** A document's text (or its UTF-8 bytes) as stored: gzip (level 1), base64. */
export async function pack(text: string | Buffer): Promise<string> {
  const bytes = typeof text === 'string' ? Buffer.from(text, 'utf8') : text;
  return (await gzip(bytes, { level: 1, chunkSize: PACK_CHUNK })).toString('base64');
}

/** Input bytes of one gzip member of a `Packer`. */
const PACK_GROUP = 1024 * 1024;

/**
 * A document packed while it is written (same stored form as `pack`): its pieces are gathered into
 * groups of about 1 MiB, and each group is gzipped (level 1) on the thread pool as soon as it is
 * full, while the main thread writes the rest; the stored document is the gzip members one after
 * the other (a gzip file of several members, which gunzip reads whole), base64. For 27 MB of
 * export, the gzip no longer comes after the text: it runs beside it on the other core.
 */
export class Packer {
  #group: Buffer[] = [];
  #groupBytes = 0;
  readonly #members: Array<Promise<Buffer>> = [];

  /** The next piece of the document. */
  add(piece: Buffer): void {
    if (piece.length === 0) return;
    this.#group.push(piece);
    this.#groupBytes += piece.length;
    if (this.#groupBytes >= PACK_GROUP) this.#flush();
  }

  #flush(): void {
    if (this.#groupBytes === 0) return;
    const input = this.#group.length === 1 ? this.#group[0]! : Buffer.concat(this.#group, this.#groupBytes);
    const member = gzip(input, { level: 1, chunkSize: PACK_CHUNK });
    // Awaited by `done`; a failure before then is not an unhandled rejection.
    member.catch(() => undefined);
    this.#members.push(member);
    this.#group = [];
    this.#groupBytes = 0;
  }

  /** The stored form of every piece added, in order. */
  async done(): Promise<string> {
    this.#flush();
    const members = await Promise.all(this.#members);
    return (members.length === 1 ? members[0]! : Buffer.concat(members)).toString('base64');
  }
}

export async function unpack(stored: string, size?: number): Promise<string> {
  return (await unpackBytes(stored, size)).toString('utf8');
}

/**
 * A stored document as its UTF-8 bytes (not decoded to a string); `size`, its stored byte count:
 * then the output is one chunk of that size (no concatenation of chunks).
 */
export async function unpackBytes(stored: string, size?: number): Promise<Buffer> {
  const chunkSize =
    size !== undefined && Number.isSafeInteger(size) && size >= 0
      ? Math.min(Math.max(size + 1, PACK_CHUNK), UNPACK_CHUNK_MAX)
      : PACK_CHUNK;
  return gunzip(Buffer.from(stored, 'base64'), { chunkSize });
}

export class ConfigRepository {
  readonly database: Database;
  readonly db: Kysely<ConfigTables>;

  constructor(database: Database) {
    this.database = database;
    this.db = database.typed<ConfigTables>();
  }

  async insertTemplate(row: TemplateRow): Promise<void> {
    await this.db.insertInto('config_template').values(row).execute();
  }

  templateListQuery() {
    return this.db.selectFrom('config_template').select([...TEMPLATE_META]);
  }

  getTemplateMeta(id: string): Promise<TemplateMeta | undefined> {
    return this.db
      .selectFrom('config_template')
      .select([...TEMPLATE_META])
      .where('id', '=', id)
      .executeTakeFirst();
  }

  getTemplate(id: string): Promise<TemplateRow | undefined> {
    return this.db.selectFrom('config_template').selectAll().where('id', '=', id).executeTakeFirst();
  }

  async countTemplates(): Promise<number> {
    const r = await this.db
      .selectFrom('config_template')
      .select((eb) => eb.fn.countAll().as('n'))
      .executeTakeFirstOrThrow();
    return Number(r.n);
  }

  async updateTemplateMeta(
    id: string,
    set: { name?: string; description?: string; updated_at: number },
  ): Promise<boolean> {
    const r = await this.db.updateTable('config_template').set(set).where('id', '=', id).executeTakeFirst();
    return Number(r.numUpdatedRows) > 0;
  }

  async deleteTemplates(ids: string[]): Promise<string[]> {
    if (ids.length === 0) return [];
    return this.db.transaction().execute(async (t) => {
      const found = await t.selectFrom('config_template').select('id').where('id', 'in', ids).execute();
      if (found.length > 0) await t.deleteFrom('config_template').where('id', 'in', ids).execute();
      return found.map((r) => r.id);
    });
  }

  /** The answer recorded for an apply made with `key`, if any. */
  async idempotentAnswer(key: string): Promise<string | undefined> {
    const r = await this.db
      .selectFrom('config_idempotency')
      .select('answer')
      .where('key', '=', key)
      .executeTakeFirst();
    return r?.answer;
  }

  /**
   * Records `key` with its answer in the apply's transaction `trx`, and keeps the newest `keep`
   * keys (older ones are deleted in the same transaction).
   */
  async recordIdempotent(trx: Tx, key: string, answer: string, keep: number): Promise<void> {
    const t = typed<ConfigTables>(trx);
    await t.insertInto('config_idempotency').values({ key, answer, created_at: Date.now() }).execute();
    const old = await t
      .selectFrom('config_idempotency')
      .select('key')
      .orderBy('created_at', 'desc')
      .orderBy('key', 'desc')
      .offset(keep)
      .limit(100)
      .execute();
    if (old.length > 0)
      await t
        .deleteFrom('config_idempotency')
        .where(
          'key',
          'in',
          old.map((r) => r.key),
        )
        .execute();
  }

  async insertSnapshot(row: SnapshotRow): Promise<void> {
    await this.db.insertInto('config_snapshot').values(row).execute();
  }

  /** Snapshots, most recent first. */
  listSnapshots(): Promise<SnapshotMeta[]> {
    return this.db
      .selectFrom('config_snapshot')
      .select([...SNAPSHOT_META])
      .orderBy('created_at', 'desc')
      .orderBy('id', 'desc')
      .execute();
  }

  getSnapshot(id: string): Promise<SnapshotRow | undefined> {
    return this.db.selectFrom('config_snapshot').selectAll().where('id', '=', id).executeTakeFirst();
  }

  async deleteSnapshots(ids: string[]): Promise<void> {
    if (ids.length > 0) await this.db.deleteFrom('config_snapshot').where('id', 'in', ids).execute();
  }
}
