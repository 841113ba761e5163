/** The fleet twins' settings. */
import { Type } from '@sinclair/typebox';
import { Option } from '../../kernel/service/options.js';

export const dt2Options = Type.Object({
  dt2MaxModels: Option.int({
    minimum: 1,
    maximum: 100_000,
    default: 1000,
    description: 'fleet twin models (/api/v1/dt2) per company',
  }),
});
