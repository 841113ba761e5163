/** The wire shape of a remote image pull (`POST /admin/v1/registry/image/upload-remote`). */
import { Type, type Static } from '@sinclair/typebox';

const Name = Type.String({ minLength: 1, maxLength: 255, pattern: '^[a-z0-9]+(?:[._/-][a-z0-9]+)*$' });
const Tag = Type.String({ minLength: 1, maxLength: 128, pattern: '^[A-Za-z0-9_][A-Za-z0-9_.-]*$' });
export const RemotePullBody = Type.Object(
  {
    externalUrl: Type.String({ minLength: 1, maxLength: 2000 }),
    externalName: Name,
    externalTag: Type.Optional(Tag),
    internalName: Type.Optional(Name),
    internalTag: Type.Optional(Tag),
    user: Type.Optional(Type.String({ maxLength: 500 })),
    password: Type.Optional(Type.String({ maxLength: 5000 })),
  },
  { additionalProperties: false },
);
export type RemotePullBody = Static<typeof RemotePullBody>;
