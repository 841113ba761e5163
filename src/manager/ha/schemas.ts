/** Wire shapes of the high-availability routes (`/api/v1/device/{deviceId}/ha...`). */
import { Type, type Static } from '@sinclair/typebox';

const Strict = { additionalProperties: false } as const;
const NullableString = Type.Union([Type.String(), Type.Null()]);
const NullableNumber = Type.Union([Type.Number(), Type.Null()]);

export const HaDeviceParams = Type.Object({ deviceId: Type.String({ minLength: 1, maxLength: 100 }) });
export type HaDeviceParams = Static<typeof HaDeviceParams>;

export const ConfigureHaBody = Type.Object(
  {
    secondaryDeviceId: Type.String({ minLength: 1, maxLength: 100 }),
    timeoutSeconds: Type.Optional(Type.Number({ minimum: 2, maximum: 3600 })),
    leaseSeconds: Type.Optional(Type.Number({ minimum: 0.5, maximum: 3600 })),
    interface: Type.Optional(Type.String({ minLength: 1, maxLength: 64 })),
  },
  Strict,
);
export type ConfigureHaBody = Static<typeof ConfigureHaBody>;

export const HaSchema = Type.Object({
  deviceId: Type.String(),
  configured: Type.Boolean(),
  role: Type.Union([Type.Literal('active'), Type.Literal('standby'), Type.Literal('none')]),
  pairId: NullableString,
  enabled: Type.Boolean(),
  primaryDeviceId: NullableString,
  secondaryDeviceId: NullableString,
  activeDeviceId: NullableString,
  standbyDeviceId: NullableString,
  epoch: Type.Integer(),
  timeoutSeconds: NullableNumber,
  leaseSeconds: NullableNumber,
  renewedAt: NullableString,
  interface: NullableString,
  online: Type.Union([Type.Object({ primary: Type.Boolean(), secondary: Type.Boolean() }), Type.Null()]),
  createdAt: NullableString,
  updatedAt: NullableString,
});
