import type { ListSpec } from '../kernel/paging.js';

/** The first 1000 rows, default order: what the CLI's list commands print. */
export function defaultListSpec(): ListSpec {
  return { offset: 0, limit: 1000, sort: [], filter: [] };
}
