/** The identity module's settings: the first-run admin, token lifetime and the sign-in rate limit. */
import { Type } from '@sinclair/typebox';
import { Option } from '../../kernel/service/options.js';

export const authOptions = Type.Object({
  adminPassword: Option.optional.string({
    secret: true,
    description: 'first-run password of the local admin (else generated and printed once)',
  }),
  tokenTtl: Option.int({
    minimum: 60,
    maximum: 86_400,
    default: 3600,
    description: 'lifetime of access and session tokens, seconds',
  }),
  authRateLimit: Option.int({
    minimum: 1,
    maximum: 1_000_000,
    default: 30,
    description:
      'distinct user names (client ids) whose login or token request may fail from one client address within 15 minutes before the address is refused; one user name failing only delays that name',
  }),
});
