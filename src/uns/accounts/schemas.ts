/** The wire shape of activation (`POST /mqtt/activate`). */
import { Type, type Static } from '@sinclair/typebox';

export const ActivateBody = Type.Object(
  { token: Type.String({ minLength: 1, maxLength: 200 }) },
  { additionalProperties: false },
);
export type ActivateBody = Static<typeof ActivateBody>;
