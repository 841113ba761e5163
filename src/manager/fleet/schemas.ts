/** Wire shapes of the fleet routes (camelCase, contract part 2.2 lists). */
import { Type, type Static } from '@sinclair/typebox';

const Strict = { additionalProperties: false } as const;
const Nullable = <T extends ReturnType<typeof Type.String>>(t: T) => Type.Union([t, Type.Null()]);
const AnyObject = Type.Union([Type.Record(Type.String(), Type.Unknown()), Type.Null()]);

export const CreateCompanyBody = Type.Object(
  { companyName: Type.String({ minLength: 1, maxLength: 200 }) },
  Strict,
);
export type CreateCompanyBody = Static<typeof CreateCompanyBody>;

export const CompanySchema = Type.Object({
  id: Type.String(),
  companyName: Type.String(),
  totalNumOfProjects: Type.Integer(),
  totalNumOfDevices: Type.Integer(),
  createdAt: Type.String(),
});

export const CreateProjectBody = Type.Object(
  {
    name: Type.String({ minLength: 1, maxLength: 200 }),
    companyId: Type.Optional(Type.String({ minLength: 1, maxLength: 100 })),
    companyName: Type.Optional(Type.String({ minLength: 1, maxLength: 200 })),
  },
  Strict,
);
export type CreateProjectBody = Static<typeof CreateProjectBody>;

export const ProjectSchema = Type.Object({
  id: Type.String(),
  name: Type.String(),
  companyId: Type.String(),
  companyName: Type.String(),
  totalNumOfDevices: Type.Integer(),
  createdAt: Type.String(),
});

export const DeviceSchema = Type.Object({
  id: Type.String(),
  name: Type.String(),
  prettyName: Nullable(Type.String()),
  projectId: Type.String(),
  companyId: Type.String(),
  online: Type.Boolean(),
  lastSeen: Nullable(Type.String()),
  edgeVersion: Nullable(Type.String()),
  host: AnyObject,
  metrics: AnyObject,
  activatedAt: Type.String(),
});

export const DeviceLiteSchema = Type.Object({
  id: Type.String(),
  name: Type.String(),
  prettyName: Nullable(Type.String()),
  projectId: Type.String(),
  online: Type.Boolean(),
  lastSeen: Nullable(Type.String()),
});

export const PrettyNames = Type.Object({
  items: Type.Array(Type.Object({ deviceId: Type.String(), name: Type.String(), prettyName: Type.String() })),
  total: Type.Integer(),
});

export const BatchPrettyNamesBody = Type.Object(
  {
    items: Type.Array(
      Type.Object(
        {
          deviceId: Type.String({ minLength: 1, maxLength: 100 }),
          prettyName: Type.Union([Type.String({ minLength: 1, maxLength: 200 }), Type.Null()]),
        },
        Strict,
      ),
      { maxItems: 1000 },
    ),
  },
  Strict,
);
export type BatchPrettyNamesBody = Static<typeof BatchPrettyNamesBody>;

export const CreateCodeBody = Type.Object(
  {
    projectId: Type.String({ minLength: 1, maxLength: 100 }),
    ttlSeconds: Type.Optional(Type.Integer({ minimum: 1, maximum: 30 * 24 * 3600 })),
    deviceName: Type.Optional(Type.String({ minLength: 1, maxLength: 200 })),
    count: Type.Optional(Type.Integer({ minimum: 1, maximum: 1000 })),
  },
  Strict,
);
export type CreateCodeBody = Static<typeof CreateCodeBody>;

export const CodeSchema = Type.Object({
  id: Type.String(),
  code: Type.String(),
  projectId: Type.String(),
  deviceName: Nullable(Type.String()),
  expiresAt: Type.String(),
});

export const CodeStatusSchema = Type.Object({
  id: Type.String(),
  projectId: Type.String(),
  deviceName: Nullable(Type.String()),
  status: Type.String(),
  deviceId: Nullable(Type.String()),
  expiresAt: Type.String(),
  activatedAt: Nullable(Type.String()),
  createdAt: Type.String(),
});

export const ConnectionSchema = Type.Object({
  id: Type.String(),
  connectedAt: Type.String(),
  disconnectedAt: Nullable(Type.String()),
  remoteAddress: Nullable(Type.String()),
  reason: Nullable(Type.String()),
});

export const ProjectParams = Type.Object({ projectId: Type.String({ minLength: 1, maxLength: 100 }) });
export type ProjectParams = Static<typeof ProjectParams>;

/** `GET /api/v1/device/metrics/{projectId}/top`: lenient for other parameters; `limit` checked by the kernel. */
export const TopMetricsQuery = Type.Object(
  {
    metric: Type.Optional(Type.String({ description: 'cpu (default) or memory' })),
    limit: Type.Optional(
      Type.Integer({ minimum: 1, maximum: 100, description: 'devices, 1 to 100; default 10' }),
    ),
  },
  { additionalProperties: true },
);
export type TopMetricsQuery = Static<typeof TopMetricsQuery>;
export const DeviceParams = Type.Object({ deviceId: Type.String({ minLength: 1, maxLength: 100 }) });
export type DeviceParams = Static<typeof DeviceParams>;

export const ActivateBody = Type.Object(
  {
    code: Type.String({ minLength: 1, maxLength: 100 }),
    edgeCredential: Type.String({ minLength: 1, maxLength: 1000 }),
    name: Type.Optional(Type.String({ minLength: 1, maxLength: 200 })),
    version: Type.Optional(Type.String({ maxLength: 100 })),
    host: Type.Optional(Type.Record(Type.String(), Type.Unknown())),
    /** An edge moving from a device record of this manager: that record, proven by its link secret, is retired. */
    replaces: Type.Optional(
      Type.Object(
        {
          deviceId: Type.String({ minLength: 1, maxLength: 100 }),
          linkSecret: Type.String({ minLength: 1, maxLength: 200 }),
        },
        Strict,
      ),
    ),
  },
  Strict,
);
export type ActivateBody = Static<typeof ActivateBody>;
