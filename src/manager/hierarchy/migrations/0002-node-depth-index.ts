import type { Db, Migration } from '../../../kernel/db/index.js';

/**
 * The nodes of a subtree down to a depth, as one index range per depth (`company_id = C and depth
 * in (...) and path >= P and path < P || 'g'`): a read answers from the rows it returns only,
 * whether it asks for the whole subtree or for the first level under a node of 100,000.
 */
export const nodeDepthIndex: Migration = {
  name: '0002-node-depth-index',
  async up(db: Db) {
    await db.schema
      .createIndex('mgr_asset_node_depth_path')
      .on('mgr_asset_node')
      .columns(['company_id', 'depth', 'path'])
      .execute();
  },
};
