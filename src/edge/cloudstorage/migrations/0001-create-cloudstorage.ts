import type { Db, Migration } from '../../../kernel/db/index.js';

export const createCloudstorage: Migration = {
  name: '0001-create-cloudstorage',
  async up(db: Db) {
    await db.schema
      .createTable('cs_target')
      .addColumn('id', 'text', (c) => c.primaryKey())
      .addColumn('name', 'text', (c) => c.notNull().unique())
      .addColumn('endpoint', 'text', (c) => c.notNull())
      .addColumn('region', 'text', (c) => c.notNull())
      .addColumn('bucket', 'text', (c) => c.notNull())
      .addColumn('prefix', 'text', (c) => c.notNull())
      .addColumn('access_key_id', 'text', (c) => c.notNull())
      // The secret access key sealed with the data directory's key (kernel/secret-box.ts).
      .addColumn('secret_sealed', 'text', (c) => c.notNull())
      .addColumn('force_path_style', 'integer', (c) => c.notNull())
      .addColumn('created_at', 'bigint', (c) => c.notNull())
      .addColumn('updated_at', 'bigint', (c) => c.notNull())
      .execute();
    await db.schema
      .createTable('cs_source')
      .addColumn('id', 'text', (c) => c.primaryKey())
      .addColumn('target_id', 'text', (c) => c.notNull().references('cs_target.id').onDelete('cascade'))
      .addColumn('path', 'text', (c) => c.notNull())
      .addColumn('created_at', 'bigint', (c) => c.notNull())
      .addUniqueConstraint('cs_source_target_path', ['target_id', 'path'])
      .execute();
    await db.schema
      .createTable('cs_file')
      .addColumn('id', 'text', (c) => c.primaryKey())
      .addColumn('source_id', 'text', (c) => c.notNull().references('cs_source.id').onDelete('cascade'))
      .addColumn('target_id', 'text', (c) => c.notNull())
      .addColumn('path', 'text', (c) => c.notNull())
      .addColumn('object_key', 'text', (c) => c.notNull())
      .addColumn('size', 'bigint', (c) => c.notNull())
      .addColumn('mtime_ms', 'bigint', (c) => c.notNull())
      .addColumn('sha256', 'text')
      .addColumn('state', 'text', (c) => c.notNull())
      .addColumn('bytes_done', 'bigint', (c) => c.notNull())
      .addColumn('parts_total', 'integer', (c) => c.notNull())
      .addColumn('parts_done', 'integer', (c) => c.notNull())
      .addColumn('upload_id', 'text')
      .addColumn('resumed_from_part', 'integer')
      .addColumn('resumes', 'integer', (c) => c.notNull())
      .addColumn('attempts', 'integer', (c) => c.notNull())
      .addColumn('etag', 'text')
      .addColumn('error', 'text')
      .addColumn('updated_at', 'bigint', (c) => c.notNull())
      .addColumn('done_at', 'bigint')
      .addUniqueConstraint('cs_file_target_path', ['target_id', 'path'])
      .execute();
    // The parts of a multipart upload the storage confirmed: what a resumed upload skips.
    await db.schema
      .createTable('cs_part')
      .addColumn('file_id', 'text', (c) => c.notNull().references('cs_file.id').onDelete('cascade'))
      .addColumn('part_number', 'integer', (c) => c.notNull())
      .addColumn('etag', 'text', (c) => c.notNull())
      .addColumn('size', 'bigint', (c) => c.notNull())
      .addPrimaryKeyConstraint('cs_part_pk', ['file_id', 'part_number'])
      .execute();
  },
};
