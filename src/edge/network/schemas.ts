/** The wire shapes of `/dm/ifconfig` and `/dm/v2/routes`. */
import { Type, type Static } from '@sinclair/typebox';

const Nullable = <T extends Parameters<typeof Type.Union>[0][number]>(t: T) => Type.Union([t, Type.Null()]);

export const IfconfigQuery = Type.Object(
  { show_bridges: Type.Optional(Type.Union([Type.Boolean(), Type.String()])) },
  { additionalProperties: true },
);
export type IfconfigQuery = Static<typeof IfconfigQuery>;

export const InterfaceAddressSchema = Type.Object({
  family: Type.Union([Type.Literal('inet'), Type.Literal('inet6')]),
  address: Type.String(),
  prefixLength: Type.Integer(),
  cidr: Type.String(),
  scope: Type.String(),
  broadcast: Nullable(Type.String()),
});

export const InterfaceSchema = Type.Object({
  name: Type.String(),
  index: Nullable(Type.Integer()),
  mac: Nullable(Type.String()),
  mtu: Nullable(Type.Integer()),
  state: Type.String(),
  flags: Type.Array(Type.String()),
  kind: Type.String(),
  bridge: Type.Boolean(),
  addresses: Type.Array(InterfaceAddressSchema),
});

export const IfconfigReply = Type.Object({
  interfaces: Type.Array(InterfaceSchema),
  count: Type.Integer(),
});

export const RoutesQuery = Type.Object(
  { all: Type.Optional(Type.Union([Type.Boolean(), Type.String()])) },
  { additionalProperties: true },
);
export type RoutesQuery = Static<typeof RoutesQuery>;

export const RouteSchema = Type.Object({
  id: Type.String(),
  family: Type.Union([Type.Literal('inet'), Type.Literal('inet6')]),
  destination: Type.String(),
  gateway: Nullable(Type.String()),
  device: Nullable(Type.String()),
  metric: Nullable(Type.Integer()),
  table: Type.String(),
  protocol: Type.String(),
  scope: Nullable(Type.String()),
  source: Nullable(Type.String()),
  type: Type.String(),
  static: Type.Boolean(),
});

export const RoutesReply = Type.Object({ routes: Type.Array(RouteSchema), count: Type.Integer() });

export const RouteParams = Type.Object({ id: Type.String({ minLength: 1, maxLength: 64 }) });
export type RouteParams = Static<typeof RouteParams>;
