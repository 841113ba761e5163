import { typed, type Db, type Migration } from '../../../kernel/db/index.js';
import { nodeJson, type NodeJsonFields } from '../tree-json.js';

/** The node table of this migration's time, with the columns its JSON text is written from. */
interface NodeTable {
  mgr_asset_node: NodeJsonFields & { json_head: string; json_tail: string };
}

/** Rows written per step of the fill. */
const STEP = 1_000;

/**
 * Each node stores the JSON text of its fields that do not depend on its place (`json_head`,
 * `json_tail`: see `nodeJson` in `tree-json.ts`), so that a subtree read splices stored text
 * instead of escaping every field of every node again. The nodes there already get theirs here.
 */
export const nodeJsonText: Migration = {
  name: '0003-node-json',
  async up(db: Db) {
    await db.schema
      .alterTable('mgr_asset_node')
      .addColumn('json_head', 'text', (c) => c.notNull().defaultTo(''))
      .execute();
    await db.schema
      .alterTable('mgr_asset_node')
      .addColumn('json_tail', 'text', (c) => c.notNull().defaultTo(''))
      .execute();
    const t = typed<NodeTable>(db);
    let after = '';
    for (;;) {
      const rows = await t
        .selectFrom('mgr_asset_node')
        .select(['id', 'key', 'name', 'level', 'description', 'device_id', 'attributes', 'created_at'])
        .where('id', '>', after)
        .orderBy('id')
        .limit(STEP)
        .execute();
      for (const r of rows) {
        const [json_head, json_tail] = nodeJson(r);
        await t.updateTable('mgr_asset_node').set({ json_head, json_tail }).where('id', '=', r.id).execute();
      }
      if (rows.length < STEP) break;
      after = rows[rows.length - 1]!.id;
    }
  },
};
