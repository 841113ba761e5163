/**
 * Where an imported item goes besides this module's own copy: the handover to the module that
 * owns the kind. Configuration templates go to the templates module (built in: the import is a
 * company template, updated to each new version). Hierarchy templates and twin models are kept
 * here as opaque versioned documents until the asset hierarchy and DT2 module (issue 30, items
 * 1-3, built beside this one) registers a target for its kinds in its `start`:
 *
 *     ctx.module('assethub').registerTarget({ kind: 'HIERARCHY_TEMPLATE', imported, updated, deleted });
 *
 * A target answers a reference (its own id of what it made), kept with the import and handed back
 * on update and delete. Without a target, `targetRef` stays null and the document is still read
 * through `GET /api/v1/asset-hub/company/{companyName}/imports/{importId}`.
 */
import type { Principal } from '../auth/index.js';

export interface ImportedItem {
  companyId: string;
  companyName: string;
  itemId: string;
  name: string;
  kind: string;
  version: string;
  content: unknown;
}

export interface AssetHubImportTarget {
  kind: string;
  /** The item was imported: make it; answers a reference to what was made. */
  imported(principal: Principal, item: ImportedItem): Promise<string | null>;
  /** A newer version was imported over `ref`; answers the (possibly new) reference. */
  updated(principal: Principal, item: ImportedItem, ref: string | null): Promise<string | null>;
  /** The import was deleted. */
  deleted(principal: Principal, item: ImportedItem, ref: string | null): Promise<void>;
}
