/** The marketplace's settings: how much the catalogue keeps. */
import { Type } from '@sinclair/typebox';
import { Option } from '../../kernel/service/options.js';

export const marketplaceOptions = Type.Object({
  marketplaceMaxItems: Option.int({
    minimum: 1,
    maximum: 1_000_000,
    default: 10_000,
    description: 'items the marketplace catalogue (/mpcs/) keeps at most',
  }),
  marketplaceMaxVersions: Option.int({
    minimum: 1,
    maximum: 100_000,
    default: 200,
    description: 'versions one marketplace item keeps at most (publish a new item or delete the item beyond)',
  }),
  marketplaceMaxContentBytes: Option.int({
    minimum: 1024,
    maximum: 64 * 1024 * 1024,
    default: 4 * 1024 * 1024,
    description: 'bytes of the content of one marketplace item version at most',
  }),
});
