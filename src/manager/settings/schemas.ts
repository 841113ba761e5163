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

export const SecretParams = Type.Object({
  key: Type.String({ pattern: '^[A-Za-z0-9._-]{1,200}$', description: 'letters, digits, . _ -' }),
});
export type SecretParams = Static<typeof SecretParams>;

export const SecretBody = Type.Object(
  { value: Type.String({ maxLength: 64 * 1024 }) },
  { additionalProperties: false },
);
export type SecretBody = Static<typeof SecretBody>;

export const LicenseReply = Type.Object({
  licenseType: Type.String(),
  licenseCoreName: Type.String(),
  edition: Type.String(),
  maxDevices: Type.Union([Type.Integer(), Type.Null()]),
  expiresAt: Type.Union([Type.String(), Type.Null()]),
});
