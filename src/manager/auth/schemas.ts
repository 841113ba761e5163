/** Wire shapes of the manager's identity routes (admin console API). */
import { Type, type Static } from '@sinclair/typebox';

const Strict = { additionalProperties: false } as const;
const Role = Type.Union([Type.Literal('admin'), Type.Literal('operator'), Type.Literal('viewer')]);
const Nullable = <T extends ReturnType<typeof Type.String>>(t: T) => Type.Union([t, Type.Null()]);

export const CreateTokenBody = Type.Object(
  {
    name: Type.String({ minLength: 1, maxLength: 200 }),
    role: Type.Optional(Role),
    username: Type.Optional(Type.String({ minLength: 1, maxLength: 100 })),
  },
  Strict,
);
export type CreateTokenBody = Static<typeof CreateTokenBody>;

export const TokenSchema = Type.Object({
  id: Type.String(),
  name: Type.String(),
  role: Role,
  username: Nullable(Type.String()),
  createdAt: Type.String(),
  rotatedAt: Type.String(),
});
export const TokenWithSecret = Type.Object({ ...TokenSchema.properties, token: Type.String() });

export const CreateUserBody = Type.Object(
  {
    username: Type.String({ minLength: 1, maxLength: 100 }),
    password: Type.String({ minLength: 1, maxLength: 1024 }),
  },
  Strict,
);
export type CreateUserBody = Static<typeof CreateUserBody>;
export const UserSchema = Type.Object({ username: Type.String(), createdAt: Type.String() });

export const GrantBody = Type.Object(
  {
    username: Type.String({ minLength: 1, maxLength: 100 }),
    role: Role,
    companyId: Type.Optional(Type.String({ minLength: 1, maxLength: 100 })),
    projectId: Type.Optional(Type.String({ minLength: 1, maxLength: 100 })),
  },
  Strict,
);
export type GrantBody = Static<typeof GrantBody>;
export const BindingSchema = Type.Object({
  id: Type.String(),
  username: Type.String(),
  role: Role,
  companyId: Nullable(Type.String()),
  projectId: Nullable(Type.String()),
  createdAt: Type.String(),
});

export const IdParams = Type.Object({ id: Type.String({ minLength: 1, maxLength: 200 }) });
export type IdParams = Static<typeof IdParams>;
export const UsernameParams = Type.Object({ username: Type.String({ minLength: 1, maxLength: 100 }) });
export type UsernameParams = Static<typeof UsernameParams>;

export const WhoAmI = Type.Object({
  subject: Type.String(),
  tokenName: Type.String(),
  username: Nullable(Type.String()),
  grants: Type.Array(
    Type.Object({ role: Role, companyId: Nullable(Type.String()), projectId: Nullable(Type.String()) }),
  ),
});
