/**
 * The cloud storage module's tables: targets (`cs_target`, the secret key sealed), sources
 * (`cs_source`, what to sync where), files (`cs_file`, the sync state of each) and the confirmed
 * parts of multipart uploads (`cs_part`, what a resumed upload skips).
 */
import { typed, type Database, type Kysely } from '../../kernel/db/index.js';

export interface TargetRow {
  id: string;
  name: string;
  endpoint: string;
  region: string;
  bucket: string;
  prefix: string;
  access_key_id: string;
  secret_sealed: string;
  force_path_style: number;
  created_at: number;
  updated_at: number;
}

export interface SourceRow {
  id: string;
  target_id: string;
  path: string;
  created_at: number;
}

export type FileState = 'pending' | 'uploading' | 'done' | 'failed';

export interface FileRow {
  id: string;
  source_id: string;
  target_id: string;
  path: string;
  object_key: string;
  size: number;
  mtime_ms: number;
  sha256: string | null;
  state: FileState;
  bytes_done: number;
  parts_total: number;
  parts_done: number;
  upload_id: string | null;
  resumed_from_part: number | null;
  resumes: number;
  attempts: number;
  etag: string | null;
  error: string | null;
  updated_at: number;
  done_at: number | null;
}

export interface PartRow {
  file_id: string;
  part_number: number;
  etag: string;
  size: number;
}

export interface CloudstorageTables {
  cs_target: TargetRow;
  cs_source: SourceRow;
  cs_file: FileRow;
  cs_part: PartRow;
}

// PostgreSQL answers bigint columns as text.
const nums = <T extends object>(row: T, keys: (keyof T)[]): T => {
  const out = { ...row };
  for (const k of keys) if (out[k] !== null && out[k] !== undefined) out[k] = Number(out[k]) as T[keyof T];
  return out;
};
const fixTarget = (r: TargetRow) => nums(r, ['created_at', 'updated_at', 'force_path_style']);
const fixFile = (r: FileRow) =>
  nums(r, [
    'size',
    'mtime_ms',
    'bytes_done',
    'parts_total',
    'parts_done',
    'resumes',
    'attempts',
    'updated_at',
    'done_at',
    'resumed_from_part',
  ]);

export class CloudstorageRepository {
  readonly #db: Kysely<CloudstorageTables>;

  constructor(private readonly database: Database) {
    this.#db = database.typed<CloudstorageTables>();
  }

  async targets(): Promise<TargetRow[]> {
    return (await this.#db.selectFrom('cs_target').selectAll().orderBy('name').execute()).map(fixTarget);
  }

  async target(id: string): Promise<TargetRow | undefined> {
    const r = await this.#db.selectFrom('cs_target').selectAll().where('id', '=', id).executeTakeFirst();
    return r && fixTarget(r);
  }

  async targetByName(name: string): Promise<TargetRow | undefined> {
    const r = await this.#db.selectFrom('cs_target').selectAll().where('name', '=', name).executeTakeFirst();
    return r && fixTarget(r);
  }

  async insertTarget(row: TargetRow): Promise<void> {
    await this.#db.insertInto('cs_target').values(row).execute();
  }

  async updateTarget(row: TargetRow): Promise<void> {
    const { id, ...rest } = row;
    await this.#db.updateTable('cs_target').set(rest).where('id', '=', id).execute();
  }

  /** Deletes a target with its sources, files and parts, in one transaction. */
  async removeTarget(id: string): Promise<boolean> {
    return this.database.transaction(async (tx) => {
      const trx = typed<CloudstorageTables>(tx);
      const files = trx.selectFrom('cs_file').select('id').where('target_id', '=', id);
      await trx.deleteFrom('cs_part').where('file_id', 'in', files).execute();
      await trx.deleteFrom('cs_file').where('target_id', '=', id).execute();
      await trx.deleteFrom('cs_source').where('target_id', '=', id).execute();
      const r = await trx.deleteFrom('cs_target').where('id', '=', id).executeTakeFirst();
      return Number(r.numDeletedRows) > 0;
    });
  }

  async sources(): Promise<SourceRow[]> {
    return (await this.#db.selectFrom('cs_source').selectAll().orderBy('created_at').execute()).map((r) =>
      nums(r, ['created_at']),
    );
  }

  async source(id: string): Promise<SourceRow | undefined> {
    const r = await this.#db.selectFrom('cs_source').selectAll().where('id', '=', id).executeTakeFirst();
    return r && nums(r, ['created_at']);
  }

  async sourceCount(): Promise<number> {
    const r = await this.#db
      .selectFrom('cs_source')
      .select((eb) => eb.fn.countAll<number>().as('n'))
      .executeTakeFirstOrThrow();
    return Number(r.n);
  }

  async insertSource(row: SourceRow): Promise<void> {
    await this.#db.insertInto('cs_source').values(row).execute();
  }

  /** Deletes a source with its files and their parts, in one transaction. */
  async removeSource(id: string): Promise<boolean> {
    return this.database.transaction(async (tx) => {
      const trx = typed<CloudstorageTables>(tx);
      const files = trx.selectFrom('cs_file').select('id').where('source_id', '=', id);
      await trx.deleteFrom('cs_part').where('file_id', 'in', files).execute();
      await trx.deleteFrom('cs_file').where('source_id', '=', id).execute();
      const r = await trx.deleteFrom('cs_source').where('id', '=', id).executeTakeFirst();
      return Number(r.numDeletedRows) > 0;
    });
  }

  async files(): Promise<FileRow[]> {
    return (await this.#db.selectFrom('cs_file').selectAll().orderBy('path').execute()).map(fixFile);
  }

  async file(id: string): Promise<FileRow | undefined> {
    const r = await this.#db.selectFrom('cs_file').selectAll().where('id', '=', id).executeTakeFirst();
    return r && fixFile(r);
  }

  async fileCount(): Promise<number> {
    const r = await this.#db
      .selectFrom('cs_file')
      .select((eb) => eb.fn.countAll<number>().as('n'))
      .executeTakeFirstOrThrow();
    return Number(r.n);
  }

  async fileByPath(targetId: string, path: string): Promise<FileRow | undefined> {
    const r = await this.#db
      .selectFrom('cs_file')
      .selectAll()
      .where('target_id', '=', targetId)
      .where('path', '=', path)
      .executeTakeFirst();
    return r && fixFile(r);
  }

  /** Files with work left (pending, uploading, failed), oldest change first. */
  async unfinished(): Promise<FileRow[]> {
    return (
      await this.#db
        .selectFrom('cs_file')
        .selectAll()
        .where('state', '!=', 'done')
        .orderBy('updated_at')
        .orderBy('id')
        .execute()
    ).map(fixFile);
  }

  async insertFile(row: FileRow): Promise<void> {
    await this.#db.insertInto('cs_file').values(row).execute();
  }

  async updateFile(id: string, changes: Partial<Omit<FileRow, 'id'>>): Promise<void> {
    await this.#db
      .updateTable('cs_file')
      .set({ ...changes, updated_at: Date.now() })
      .where('id', '=', id)
      .execute();
  }

  /** Starts a file over: no upload, no parts, pending (one transaction). */
  async resetFile(id: string, changes: Partial<Omit<FileRow, 'id'>>): Promise<void> {
    await this.database.transaction(async (tx) => {
      const trx = typed<CloudstorageTables>(tx);
      await trx.deleteFrom('cs_part').where('file_id', '=', id).execute();
      await trx
        .updateTable('cs_file')
        .set({
          state: 'pending',
          bytes_done: 0,
          parts_done: 0,
          upload_id: null,
          resumed_from_part: null,
          etag: null,
          error: null,
          ...changes,
          updated_at: Date.now(),
        })
        .where('id', '=', id)
        .execute();
    });
  }

  async parts(fileId: string): Promise<PartRow[]> {
    return (
      await this.#db
        .selectFrom('cs_part')
        .selectAll()
        .where('file_id', '=', fileId)
        .orderBy('part_number')
        .execute()
    ).map((r) => nums(r, ['part_number', 'size']));
  }

  /** A part the storage confirmed, and the file's progress, in one transaction. */
  async addPart(part: PartRow, progress: { bytes_done: number; parts_done: number }): Promise<void> {
    await this.database.transaction(async (tx) => {
      const trx = typed<CloudstorageTables>(tx);
      await trx
        .insertInto('cs_part')
        .values(part)
        .onConflict((oc) =>
          oc.columns(['file_id', 'part_number']).doUpdateSet({ etag: part.etag, size: part.size }),
        )
        .execute();
      await trx
        .updateTable('cs_file')
        .set({ ...progress, updated_at: Date.now() })
        .where('id', '=', part.file_id)
        .execute();
    });
  }

  /** A file done: its state, and its parts forgotten (one transaction). */
  async finishFile(id: string, changes: Partial<Omit<FileRow, 'id'>>): Promise<void> {
    await this.database.transaction(async (tx) => {
      const trx = typed<CloudstorageTables>(tx);
      await trx.deleteFrom('cs_part').where('file_id', '=', id).execute();
      await trx
        .updateTable('cs_file')
        .set({ ...changes, updated_at: Date.now() })
        .where('id', '=', id)
        .execute();
    });
  }
}
