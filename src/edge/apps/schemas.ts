/** The wire shapes of `/apps`: bodies (strict), query strings (lenient) and answers. */
import { Type, type Static } from '@sinclair/typebox';

const Nullable = <T extends ReturnType<typeof Type.String>>(t: T) => Type.Union([t, Type.Null()]);
const Labels = Type.Record(Type.String(), Type.String());
const NullableString = Type.Union([Type.String(), Type.Null()]);
const NullableNumber = Type.Union([Type.Number(), Type.Null()]);

export const IdParams = Type.Object({ id: Type.String({ minLength: 1, maxLength: 256 }) });
export type IdParamsT = Static<typeof IdParams>;

export const ForceQuery = Type.Object(
  { force: Type.Optional(Type.Boolean({ description: 'remove even if running or in use' })) },
  { additionalProperties: true },
);

const PortSchema = Type.Object({
  privatePort: Type.Number(),
  publicPort: NullableNumber,
  type: Type.String(),
  ip: NullableString,
});

export const ContainerSummarySchema = Type.Object({
  id: Type.String(),
  name: Type.String(),
  image: Type.String(),
  imageId: Type.String(),
  command: Type.String(),
  state: Type.String(),
  status: Type.String(),
  created: Type.String(),
  application: NullableString,
  labels: Labels,
  ports: Type.Array(PortSchema),
  networks: Type.Array(Type.String()),
});

export const ContainerDetailSchema = Type.Composite([
  ContainerSummarySchema,
  Type.Object({
    running: Type.Boolean(),
    startedAt: NullableString,
    finishedAt: NullableString,
    exitCode: NullableNumber,
    error: NullableString,
    restartCount: Type.Number(),
    restartPolicy: Type.String(),
    envNames: Type.Array(Type.String()),
    mounts: Type.Array(
      Type.Object({
        source: Type.String(),
        destination: Type.String(),
        mode: Type.String(),
        readOnly: Type.Boolean(),
      }),
    ),
  }),
]);

const Name = Type.String({ minLength: 1, maxLength: 128, pattern: '^[a-zA-Z0-9][a-zA-Z0-9_.-]*$' });

export const CreateContainerBody = Type.Object(
  {
    name: Type.Optional(Name),
    image: Type.String({ minLength: 1, maxLength: 512 }),
    command: Type.Optional(Type.Array(Type.String({ maxLength: 8192 }), { maxItems: 256 })),
    env: Type.Optional(Type.Record(Type.String({ pattern: '^[^=]+$' }), Type.String({ maxLength: 65536 }))),
    labels: Type.Optional(Labels),
    application: Type.Optional(Name),
    ports: Type.Optional(
      Type.Array(
        Type.Object(
          {
            containerPort: Type.Integer({ minimum: 1, maximum: 65535 }),
            hostPort: Type.Optional(Type.Integer({ minimum: 0, maximum: 65535 })),
            protocol: Type.Optional(Type.Union([Type.Literal('tcp'), Type.Literal('udp')])),
            hostIp: Type.Optional(Type.String({ maxLength: 64 })),
          },
          { additionalProperties: false },
        ),
        { maxItems: 256 },
      ),
    ),
    network: Type.Optional(Type.String({ minLength: 1, maxLength: 256 })),
    restartPolicy: Type.Optional(
      Type.Union([
        Type.Literal('no'),
        Type.Literal('always'),
        Type.Literal('unless-stopped'),
        Type.Literal('on-failure'),
      ]),
    ),
    start: Type.Optional(Type.Boolean({ description: 'start the container once created' })),
  },
  { additionalProperties: false },
);
export type CreateContainerBodyT = Static<typeof CreateContainerBody>;

export const StopQuery = Type.Object(
  { t: Type.Optional(Type.Integer({ minimum: 0, maximum: 3600, description: 'seconds before a kill' })) },
  { additionalProperties: true },
);

export const ApplicationSchema = Type.Object({
  name: Type.String(),
  label: NullableString,
  state: Type.String(),
  running: Type.Integer(),
  total: Type.Integer(),
  containers: Type.Array(Type.Object({ id: Type.String(), name: Type.String(), state: Type.String() })),
});

export const NetworkSchema = Type.Object({
  id: Type.String(),
  name: Type.String(),
  driver: Type.String(),
  scope: Type.String(),
  internal: Type.Boolean(),
  subnets: Type.Array(Type.String()),
  gateways: Type.Array(Type.String()),
  containers: Type.Integer(),
  created: NullableString,
  labels: Labels,
});

export const CreateNetworkBody = Type.Object(
  {
    name: Name,
    driver: Type.Optional(Type.String({ minLength: 1, maxLength: 64 })),
    internal: Type.Optional(Type.Boolean()),
    subnet: Type.Optional(Type.String({ minLength: 1, maxLength: 64 })),
    gateway: Type.Optional(Type.String({ minLength: 1, maxLength: 64 })),
    labels: Type.Optional(Labels),
  },
  { additionalProperties: false },
);
export type CreateNetworkBodyT = Static<typeof CreateNetworkBody>;

export const ImageSchema = Type.Object({
  id: Type.String(),
  tags: Type.Array(Type.String()),
  digests: Type.Array(Type.String()),
  size: Type.Number(),
  created: NullableString,
  containers: NullableNumber,
  labels: Labels,
});

export const PullBody = Type.Object(
  {
    image: Type.String({ minLength: 1, maxLength: 512, description: 'name[:tag] or name@digest' }),
    registryId: Type.Optional(Type.String({ minLength: 1, maxLength: 64 })),
  },
  { additionalProperties: false },
);
export type PullBodyT = Static<typeof PullBody>;

export const RegistrySchema = Type.Object({
  id: Type.String(),
  name: Type.String(),
  type: Type.String(),
  url: Type.String(),
  username: Type.String(),
  region: Type.String(),
  hasPassword: Type.Boolean(),
  createdAt: Type.String(),
  updatedAt: Type.String(),
});

export const RegistryBody = Type.Object(
  {
    name: Type.String({ minLength: 1, maxLength: 100 }),
    type: Type.String({ minLength: 1, maxLength: 32 }),
    url: Type.String({ maxLength: 500 }),
    username: Type.Optional(Type.String({ maxLength: 200 })),
    password: Type.Optional(Type.String({ maxLength: 8192 })),
    region: Type.Optional(Type.String({ maxLength: 64 })),
  },
  { additionalProperties: false },
);
export type RegistryBodyT = Static<typeof RegistryBody>;

const Sample = Type.Object({ time: Type.String(), cpuPercent: NullableNumber, memoryBytes: NullableNumber });

export const DashboardQuery = Type.Object(
  { cpuHistorySeconds: Type.Optional(Type.String()) },
  { additionalProperties: true },
);

export const DashboardSchema = Type.Object({
  cpuHistorySeconds: Type.Integer(),
  sampleIntervalSeconds: Type.Integer(),
  sampledAt: Nullable(Type.String()),
  socket: Type.String(),
  totals: Type.Object({
    applications: Type.Integer(),
    containers: Type.Integer(),
    running: Type.Integer(),
    cpuPercent: Type.Number(),
    memoryBytes: Type.Number(),
  }),
  applications: Type.Array(
    Type.Object({
      name: Type.String(),
      state: Type.String(),
      running: Type.Integer(),
      total: Type.Integer(),
      cpuPercent: Type.Number(),
      memoryBytes: Type.Number(),
    }),
  ),
  containers: Type.Array(
    Type.Object({
      id: Type.String(),
      name: Type.String(),
      application: NullableString,
      state: Type.String(),
      cpuPercent: NullableNumber,
      memoryBytes: NullableNumber,
      memoryLimitBytes: NullableNumber,
      memoryPercent: NullableNumber,
      history: Type.Array(Sample),
    }),
  ),
});
