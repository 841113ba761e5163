/** Wire shapes of the edge's trust store (`/dm/v2/ca-certificates`). */
import { Type, type Static } from '@sinclair/typebox';

export const TrustPutBody = Type.Object(
  {
    certificates: Type.Array(
      Type.Object(
        {
          id: Type.String({ minLength: 1, maxLength: 100 }),
          name: Type.Optional(Type.String({ maxLength: 300 })),
          pem: Type.String({ minLength: 1, maxLength: 1024 * 1024 }),
        },
        { additionalProperties: false },
      ),
      { maxItems: 500 },
    ),
  },
  { additionalProperties: false },
);
export type TrustPutBody = Static<typeof TrustPutBody>;

export const TrustReply = Type.Object({
  certificates: Type.Array(
    Type.Object({
      id: Type.String(),
      name: Type.String(),
      fingerprint: Type.String(),
      subject: Type.String(),
      validTo: Type.String(),
    }),
  ),
  total: Type.Integer(),
  syncedAt: Type.Union([Type.String(), Type.Null()]),
});
