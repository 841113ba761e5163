/** Wire shapes of the fleet twins (`/api/v1/dt2/...`), PascalCase as the twins API is. */
import { Type, type Static } from '@sinclair/typebox';

const Strict = { additionalProperties: false } as const;
const Name = Type.String({ minLength: 1, maxLength: 100 });
const Id = Type.String({ minLength: 1, maxLength: 100 });
const NullableId = Type.Union([Id, Type.Null()]);
const NullableName = Type.Union([Name, Type.Null()]);
const KeyValues = Type.Array(Type.Object({ Key: Name, Value: Type.String({ maxLength: 2000 }) }, Strict), {
  maxItems: 1000,
});
const TransformationSchema = Type.Object(
  {
    Name,
    Expression: Type.String({ minLength: 1, maxLength: 10_000 }),
    Description: Type.Optional(Type.String({ maxLength: 2000 })),
  },
  Strict,
);

const AttributeFields = {
  Name,
  Description: Type.Optional(Type.String({ maxLength: 2000 })),
  Type: Type.Optional(Type.Union([Type.Literal('topic'), Type.Literal('nestedModel')])),
  AttributeType: Type.Optional(
    Type.Union([Type.Literal('Regular'), Type.Literal('UNS'), Type.Literal('AssetHierarchy')]),
  ),
  Topic: Type.Optional(Type.String({ maxLength: 1000 })),
  TopicExpressionConverted: Type.Optional(Type.String({ maxLength: 1000 })),
  Transformation: Type.Optional(Type.Union([Name, TransformationSchema, Type.Null()])),
  NestedModelID: Type.Optional(NullableId),
  NestedModelName: Type.Optional(NullableName),
  NestedInstanceID: Type.Optional(NullableId),
  NestedInstanceName: Type.Optional(NullableName),
};
const AttributeSchema = Type.Object(AttributeFields, Strict);

export const DynamicAttributeBody = Type.Object({ ModelID: Id, ...AttributeFields }, Strict);
export type DynamicAttributeBody = Static<typeof DynamicAttributeBody>;

const InstanceSchema = Type.Object(
  {
    Name,
    Description: Type.Optional(Type.String({ maxLength: 2000 })),
    Topic: Type.Optional(Type.String({ maxLength: 1000 })),
    Enabled: Type.Optional(Type.Boolean()),
    StaticAttributes: Type.Optional(KeyValues),
    Parameters: Type.Optional(KeyValues),
  },
  Strict,
);

export const CompleteModelBody = Type.Object(
  {
    Name,
    Assets: Type.String({ minLength: 1, maxLength: 200 }),
    Description: Type.Optional(Type.String({ maxLength: 2000 })),
    PublishOnChange: Type.Optional(Type.Boolean()),
    PublishIntervalMs: Type.Optional(Type.Integer({ minimum: 0, maximum: 86_400_000 })),
    StaleAfterMs: Type.Optional(Type.Integer({ minimum: 0, maximum: 86_400_000 })),
    StaticAttributes: Type.Optional(KeyValues),
    Parameters: Type.Optional(KeyValues),
    DynamicAttributes: Type.Optional(Type.Array(AttributeSchema, { maxItems: 1000 })),
    Instances: Type.Optional(Type.Array(InstanceSchema, { maxItems: 10_000 })),
    Hierarchy: Type.Optional(Type.Array(Type.Unknown(), { maxItems: 1000 })),
    Transformations: Type.Optional(Type.Array(TransformationSchema, { maxItems: 1000 })),
  },
  Strict,
);
export type CompleteModelBody = Static<typeof CompleteModelBody>;

export const CompanyParams = Type.Object({ companyName: Type.String({ minLength: 1, maxLength: 200 }) });
export type CompanyParams = Static<typeof CompanyParams>;
export const ModelParams = Type.Object({
  companyName: Type.String({ minLength: 1, maxLength: 200 }),
  modelId: Id,
});
export type ModelParams = Static<typeof ModelParams>;
export const ParseCsvQuery = Type.Object({ modelId: Type.Optional(Id), save: Type.Optional(Type.Boolean()) });
export type ParseCsvQuery = Static<typeof ParseCsvQuery>;
export const DeployBody = Type.Object({ nodeId: Id }, Strict);
export type DeployBody = Static<typeof DeployBody>;
