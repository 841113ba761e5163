/** Wire shapes of the asset hub routes (`/api/v1/asset-hub/...`, `/admin/v1/asset-hub/...`). */
import { Type, type Static } from '@sinclair/typebox';

const Strict = { additionalProperties: false } as const;
const Id = Type.String({ minLength: 1, maxLength: 100 });
const Version = Type.String({ minLength: 1, maxLength: 20 });

export const SettingsBody = Type.Object(
  {
    url: Type.Optional(Type.String({ minLength: 1, maxLength: 2000 })),
    token: Type.Optional(Type.String({ minLength: 1, maxLength: 1000 })),
    caCertificate: Type.Optional(Type.Union([Type.String({ maxLength: 65_536 }), Type.Null()])),
    telemetry: Type.Optional(Type.Boolean()),
  },
  Strict,
);
export type SettingsBody = Static<typeof SettingsBody>;

export const ImportBody = Type.Object({ itemId: Id, version: Type.Optional(Version) }, Strict);
export type ImportBody = Static<typeof ImportBody>;

export const UpdateBody = Type.Object({ version: Type.Optional(Version) }, Strict);
export type UpdateBody = Static<typeof UpdateBody>;

export const SyncBody = Type.Object({ update: Type.Optional(Type.Boolean()) }, Strict);
export type SyncBody = Static<typeof SyncBody>;

export const CompanyParams = Type.Object({ companyName: Type.String({ minLength: 1, maxLength: 200 }) });
export type CompanyParams = Static<typeof CompanyParams>;
export const ImportParams = Type.Object({
  companyName: Type.String({ minLength: 1, maxLength: 200 }),
  importId: Id,
});
export type ImportParams = Static<typeof ImportParams>;
export const ItemParams = Type.Object({ itemId: Id });
export type ItemParams = Static<typeof ItemParams>;
export const VersionParams = Type.Object({ itemId: Id, version: Version });
export type VersionParams = Static<typeof VersionParams>;
