/** The identity module's settings: the first administrator and the console session's lifetime. */
import { Type } from '@sinclair/typebox';
import { Option } from '../../kernel/service/options.js';

export const managerAuthOptions = Type.Object({
  adminPassword: Option.optional.string({
    secret: true,
    description:
      'password of the first administrator ("admin", made at the first start; else generated and printed once)',
  }),
  sessionTtl: Option.int({
    minimum: 60,
    maximum: 7 * 86_400,
    default: 8 * 3600,
    description: 'lifetime of a console session signed in through the realm "standalone", seconds',
  }),
});
