/** Analytics' settings. */
import { Type } from '@sinclair/typebox';
import { Option } from '../../kernel/service/index.js';

export const analyticsOptions = Type.Object({
  analyticsPersistInterval: Option.int({
    minimum: 1000,
    maximum: 3_600_000,
    default: 30_000,
    description: 'how often analytics windows longer than a minute save their state, milliseconds',
  }),
});
