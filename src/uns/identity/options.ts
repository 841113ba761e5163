/** The identity module's settings: the administrator, the OAuth client, token lifetime, sign-in rate limit. */
import { Type } from '@sinclair/typebox';
import { Option } from '../../kernel/service/options.js';

export const identityOptions = Type.Object({
  adminPassword: Option.optional.string({
    secret: true,
    description: 'first-run password of the administrator "admin" (else generated and printed once)',
  }),
  clientId: Option.string({
    default: 'ide-ui',
    description: 'OAuth client id accepted by the token endpoints (its secret is empty)',
  }),
  tokenLifetime: Option.int({
    minimum: 15,
    maximum: 60,
    default: 30,
    description:
      'first-run realm policy: access token lifetime, minutes (15 to 60; later changed through GraphQL)',
  }),
  authRateLimit: Option.int({
    minimum: 1,
    maximum: 1_000_000,
    default: 30,
    description:
      'activation attempts per minute per client address; also the distinct user names whose sign-in (token, MQTT CONNECT) may fail from one address within 15 minutes before the address is refused',
  }),
});
