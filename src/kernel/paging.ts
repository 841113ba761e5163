/** Paged, sorted and filtered lists: the parts are in `paging/` (see `paging/index.ts`). */
export * from './paging/index.js';
