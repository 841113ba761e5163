/** The fleet's settings: activation codes. */
import { Type } from '@sinclair/typebox';
import { Option } from '../../kernel/service/options.js';

export const fleetOptions = Type.Object({
  activationTtl: Option.int({
    minimum: 60,
    maximum: 2_592_000,
    default: 86_400,
    description: 'default lifetime of an activation code, seconds',
  }),
  activationRateLimit: Option.int({
    minimum: 1,
    maximum: 1_000_000,
    default: 600,
    description: 'activation attempts (POST /dm/activate) per minute per client address',
  }),
});
