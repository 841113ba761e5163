/** The asset hierarchy's settings: the bounds of a company's hierarchy and of a CSV import. */
import { Type } from '@sinclair/typebox';
import { Option } from '../../kernel/service/options.js';

export const hierarchyOptions = Type.Object({
  hierarchyMaxNodes: Option.int({
    minimum: 1,
    maximum: 10_000_000,
    default: 1_000_000,
    description: 'asset hierarchy nodes per company',
  }),
  hierarchyMaxDepth: Option.int({
    minimum: 1,
    maximum: 64,
    default: 20,
    description: 'levels of an asset hierarchy (a root is level 1)',
  }),
  hierarchyMaxTemplates: Option.int({
    minimum: 1,
    maximum: 10_000,
    default: 200,
    description: 'hierarchy templates per company',
  }),
  hierarchyMaxGrants: Option.int({
    minimum: 1,
    maximum: 1_000_000,
    default: 10_000,
    description: 'branch permission grants per company',
  }),
  hierarchyCsvMaxBytes: Option.int({
    minimum: 1024,
    maximum: 1_073_741_824,
    default: 67_108_864,
    description: 'size of an asset hierarchy CSV import, bytes',
  }),
});
