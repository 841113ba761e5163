import type { CreateTableBuilder } from 'kysely';
import type { Db, Migration } from '../../../kernel/db/index.js';

/** Models, instances, their attributes and parameters, transformations, hierarchies, placements. */
export const createTwins: Migration = {
  name: '0001-create-twins',
  async up(db: Db) {
    const stamps = <TB extends string, C extends string>(t: CreateTableBuilder<TB, C>) =>
      t
        .addColumn('created_at', 'bigint', (c) => c.notNull())
        .addColumn('updated_at', 'bigint', (c) => c.notNull());
    await stamps(
      db.schema
        .createTable('twins_model')
        .addColumn('id', 'text', (c) => c.primaryKey())
        .addColumn('name', 'text', (c) => c.notNull().unique())
        .addColumn('assets', 'text', (c) => c.notNull())
        .addColumn('description', 'text', (c) => c.notNull())
        .addColumn('publish_on_change', 'integer', (c) => c.notNull())
        .addColumn('publish_interval_ms', 'integer', (c) => c.notNull())
        .addColumn('stale_after_ms', 'integer', (c) => c.notNull()),
    ).execute();
    await stamps(
      db.schema
        .createTable('twins_instance')
        .addColumn('id', 'text', (c) => c.primaryKey())
        .addColumn('model_id', 'text', (c) => c.notNull())
        .addColumn('name', 'text', (c) => c.notNull())
        .addColumn('description', 'text', (c) => c.notNull())
        .addColumn('source', 'text', (c) => c.notNull())
        .addColumn('topic', 'text', (c) => c.notNull().unique())
        .addColumn('enabled', 'integer', (c) => c.notNull()),
    ).execute();
    for (const table of ['twins_static_attribute', 'twins_parameter']) {
      await stamps(
        db.schema
          .createTable(table)
          .addColumn('id', 'text', (c) => c.primaryKey())
          .addColumn('model_id', 'text', (c) => c.notNull())
          .addColumn('instance_id', 'text')
          .addColumn('key', 'text', (c) => c.notNull())
          .addColumn('value', 'text', (c) => c.notNull()),
      ).execute();
    }
    await stamps(
      db.schema
        .createTable('twins_dynamic_attribute')
        .addColumn('id', 'text', (c) => c.primaryKey())
        .addColumn('model_id', 'text', (c) => c.notNull())
        .addColumn('instance_id', 'text')
        .addColumn('name', 'text', (c) => c.notNull())
        .addColumn('description', 'text', (c) => c.notNull())
        .addColumn('type', 'text', (c) => c.notNull())
        .addColumn('attribute_type', 'text', (c) => c.notNull())
        .addColumn('topic', 'text', (c) => c.notNull())
        .addColumn('transformation_id', 'text')
        .addColumn('nested_model_id', 'text')
        .addColumn('nested_instance_id', 'text'),
    ).execute();
    await stamps(
      db.schema
        .createTable('twins_transformation')
        .addColumn('id', 'text', (c) => c.primaryKey())
        .addColumn('name', 'text', (c) => c.notNull())
        .addColumn('description', 'text', (c) => c.notNull())
        .addColumn('expression', 'text', (c) => c.notNull()),
    ).execute();
    await db.schema
      .createTable('twins_hierarchy_node')
      .addColumn('id', 'text', (c) => c.primaryKey())
      .addColumn('model_id', 'text', (c) => c.notNull())
      .addColumn('parent_id', 'text')
      .addColumn('position', 'integer', (c) => c.notNull())
      .addColumn('name', 'text', (c) => c.notNull())
      .addColumn('is_folder', 'integer', (c) => c.notNull())
      .addColumn('attribute_id', 'text')
      .addColumn('attribute_type', 'text')
      .addColumn('node_type', 'text')
      .execute();
    await db.schema
      .createTable('twins_asset_placement')
      .addColumn('id', 'text', (c) => c.primaryKey())
      .addColumn('instance_id', 'text', (c) => c.notNull())
      .addColumn('path', 'text', (c) => c.notNull())
      .addColumn('metadata', 'text')
      .execute();
  },
};
