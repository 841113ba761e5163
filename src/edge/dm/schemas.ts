/** The wire shapes of enrolment (`/dm/cloud/...`) and of `/dm/v2/api-clients`. */
import { Type } from '@sinclair/typebox';

const Strict = { additionalProperties: false } as const;
export const LocaleQuery = Type.Object(
  { locale: Type.Optional(Type.String()) },
  { additionalProperties: true },
);
export const UrlBody = Type.Object({ url: Type.String({ minLength: 1, maxLength: 2000 }) }, Strict);
export const CodeBody = Type.Object(
  {
    code: Type.String({ minLength: 1, maxLength: 100 }),
    name: Type.Optional(Type.String({ minLength: 1, maxLength: 200 })),
    /** Enrol an edge that is already enrolled: its old device record on that manager is retired. */
    move: Type.Optional(Type.Boolean()),
  },
  Strict,
);
export const TxParams = Type.Object({ tx: Type.String({ minLength: 1, maxLength: 100 }) });
export const ClientParams = Type.Object({ id: Type.String({ minLength: 1, maxLength: 100 }) });
export const UpdateClientBody = Type.Object(
  {
    name: Type.Optional(Type.String({ minLength: 1, maxLength: 200 })),
    role: Type.Optional(Type.Union([Type.Literal('admin'), Type.Literal('viewer')])),
  },
  Strict,
);

/** `GET /dm/v2/ha/role`: the edge's high-availability role (dm/ha.ts). */
export const HaRoleReply = Type.Object({
  role: Type.Union([Type.Literal('standalone'), Type.Literal('active'), Type.Literal('standby')]),
  paired: Type.Boolean(),
  peer: Type.Null(),
  epoch: Type.Integer(),
  pairId: Type.Union([Type.String(), Type.Null()]),
  polling: Type.Boolean(),
  leaseRemainingMs: Type.Integer(),
  leaseMs: Type.Integer(),
  linked: Type.Boolean(),
});
export const PinBody = Type.Object(
  {
    fingerprint: Type.String({
      pattern: '^([0-9A-F]{2}:){31}[0-9A-F]{2}$',
      description: 'SHA-256, AB:CD:...',
    }),
  },
  Strict,
);
