/** Wire shapes of the instance settings (admin console API). */
import { Type, type Static } from '@sinclair/typebox';
import { PEM_MAX_BYTES } from '../../kernel/pem.js';
import { INSTANCE_MODES } from './service.js';

export const ModeBody = Type.Object(
  { mode: Type.Union(INSTANCE_MODES.map((m) => Type.Literal(m))) },
  { additionalProperties: false },
);
export type ModeBody = Static<typeof ModeBody>;

export const KeyPairBody = Type.Object(
  {
    certificate: Type.String({
      minLength: 1,
      maxLength: PEM_MAX_BYTES,
      description: 'PEM: the certificate, then its chain',
    }),
    privateKey: Type.String({ minLength: 1, maxLength: 64 * 1024, description: 'PEM private key' }),
    passphrase: Type.Optional(Type.String({ maxLength: 1024, description: 'of an encrypted private key' })),
  },
  { additionalProperties: false },
);
export type KeyPairBody = Static<typeof KeyPairBody>;

export const LicenseReply = Type.Object({
  licenseType: Type.String(),
  licenseCoreName: Type.String(),
  edition: Type.String(),
  maxDevices: Type.Union([Type.Integer(), Type.Null()]),
  expiresAt: Type.Union([Type.String(), Type.Null()]),
});
