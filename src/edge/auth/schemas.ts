/** Wire shapes of the edge's identity routes (TypeBox: validation, serialisation and types). */
import { Type, type Static } from '@sinclair/typebox';

const Strict = { additionalProperties: false } as const;

export const LoginBody = Type.Object(
  {
    username: Type.String({ minLength: 1, maxLength: 200 }),
    password: Type.String({ minLength: 1, maxLength: 1024 }),
    providerId: Type.String({
      minLength: 1,
      description: 'UUID of the identity provider (GET /auth/v2/providers)',
    }),
  },
  Strict,
);
export type LoginBody = Static<typeof LoginBody>;

export const JwtReply = Type.Object({ jwtAccess: Type.String() });

export const EulaBody = Type.Object(
  { agree: Type.Boolean(), version: Type.String({ maxLength: 100 }) },
  Strict,
);
export type EulaBody = Static<typeof EulaBody>;

export const EulaStatus = Type.Object({ version: Type.String(), accepted: Type.Boolean() });

export const PasswordBody = Type.Object(
  { newPassword: Type.String({ maxLength: 1024 }), currentPassword: Type.String({ maxLength: 1024 }) },
  Strict,
);
export type PasswordBody = Static<typeof PasswordBody>;

export const LocaleQuery = Type.Object({ locale: Type.Optional(Type.String()) });

export const Provider = Type.Object({ id: Type.String(), name: Type.String(), type: Type.String() });
export const ProviderList = Type.Array(Provider);

export const RoleSchema = Type.Union([Type.Literal('admin'), Type.Literal('viewer')]);

export const CreateApiClientBody = Type.Object(
  { name: Type.String({ minLength: 1, maxLength: 200 }), role: Type.Optional(RoleSchema) },
  Strict,
);
export type CreateApiClientBody = Static<typeof CreateApiClientBody>;

export const ApiClientSchema = Type.Object({
  client_id: Type.String(),
  name: Type.String(),
  role: RoleSchema,
  createdAt: Type.String(),
  updatedAt: Type.String(),
});

export const ApiClientWithSecret = Type.Object({
  client_id: Type.String(),
  client_secret: Type.String(),
  name: Type.String(),
  role: RoleSchema,
  createdAt: Type.String(),
  updatedAt: Type.String(),
});

export const ClientSecretReply = Type.Object({ client_id: Type.String(), client_secret: Type.String() });

export const CreateApiTokenBody = CreateApiClientBody;
export type CreateApiTokenBody = CreateApiClientBody;

export const ApiTokenSchema = Type.Object({
  id: Type.String(),
  name: Type.String(),
  role: RoleSchema,
  createdAt: Type.String(),
});

export const ApiTokenWithSecret = Type.Object({
  id: Type.String(),
  name: Type.String(),
  role: RoleSchema,
  createdAt: Type.String(),
  token: Type.String(),
});

export const IdParams = Type.Object({ id: Type.String({ minLength: 1, maxLength: 200 }) });
export type IdParams = Static<typeof IdParams>;

export const TokenReply = Type.Object({
  access_token: Type.String(),
  token_type: Type.Literal('Bearer'),
  expires_in: Type.Integer(),
});

/** A caller's role: a credential's, or `operator` for a manager operator's bridged call. */
const CallerRoleSchema = Type.Union([
  Type.Literal('admin'),
  Type.Literal('operator'),
  Type.Literal('viewer'),
]);

export const WhoAmI = Type.Object({ subject: Type.String(), role: CallerRoleSchema, scheme: Type.String() });
