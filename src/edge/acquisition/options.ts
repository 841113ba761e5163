/** Acquisition's settings. */
import { Type } from '@sinclair/typebox';
import { Option } from '../../kernel/service/options.js';

export const acquisitionOptions = Type.Object({
  acquisitionBackoffMax: Option.int({
    minimum: 500,
    maximum: 3_600_000,
    default: 30_000,
    description: 'longest wait between reconnect attempts to a device, milliseconds',
  }),
});
