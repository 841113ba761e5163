/**
 * GraphQL documents for `/digital-twins`, as a client of the product family sends them: every
 * operation declares its input variable with the schema's `<Operation>Request` type name (wire
 * notes, "GraphQL type names are part of the wire"). Use them with `EdgeClient.graphql`:
 *
 *     const { CreateModel } = await edge.graphql(TWINS_PATH, TWINS.CreateModel, {
 *       input: { Name: 'Pump', Assets: 'pump' },
 *     });
 */
export const TWINS_PATH = '/digital-twins';

export const MODEL_FIELDS =
  'ID Name Assets Description PublishOnChange PublishIntervalMs StaleAfterMs InstanceCount StaticAttributeCount DynamicAttributeCount ParameterCount CreatedAt UpdatedAt';
export const INSTANCE_FIELDS =
  'ID ModelID ModelName Name Description Source Topic Enabled StaticAttributeCount DynamicAttributeCount ParameterCount CreatedAt UpdatedAt';
export const STATIC_FIELDS = 'ID ModelID InstanceID Key Value CreatedAt UpdatedAt';
export const DYNAMIC_FIELDS =
  'ID ModelID InstanceID Name Description Type AttributeType Topic TransformationID NestedModelID NestedInstanceID Transformation { ID Name Expression }';
export const TRANSFORMATION_FIELDS = 'ID Name Description Expression CreatedAt UpdatedAt';
const NODE = 'Node { ID Position Name IsFolder AttributeID AttributeType NodeType }';
/** Three levels of a hierarchy as it reads back: `{ Name Node Attr Childs }`. */
export const HIERARCHY_FIELDS = `Name ${NODE} Attr Childs { Name ${NODE} Attr Childs { Name ${NODE} Attr Childs { Name ${NODE} Attr } } }`;

export const TWINS = {
  Version: 'query Version { Version { Git Version } }',
  CreateModel: `mutation CreateModel($input: CreateModelRequest!) { CreateModel(input: $input) { ${MODEL_FIELDS} } }`,
  UpdateModel: `mutation UpdateModel($input: UpdateModelRequest!) { UpdateModel(input: $input) { ${MODEL_FIELDS} } }`,
  DeleteModel: 'mutation DeleteModel($input: DeleteModelRequest!) { DeleteModel(input: $input) }',
  GetModel: `query GetModel($ID: UUID!) { GetModel(ID: $ID) { ${MODEL_FIELDS} Instances { ID Name Topic } } }`,
  ListModels: `query ListModels($input: ListModelsRequest) { ListModels(input: $input) { Total Items { ${MODEL_FIELDS} } } }`,
  CreateInstance: `mutation CreateInstance($input: CreateInstanceRequest!) { CreateInstance(input: $input) { ${INSTANCE_FIELDS} } }`,
  UpdateInstance: `mutation UpdateInstance($input: UpdateInstanceRequest!) { UpdateInstance(input: $input) { ${INSTANCE_FIELDS} } }`,
  DeleteInstance: 'mutation DeleteInstance($input: DeleteInstanceRequest!) { DeleteInstance(input: $input) }',
  ListInstances: `query ListInstances($input: ListInstancesRequest) { ListInstances(input: $input) { Total Items { ${INSTANCE_FIELDS} } } }`,
  GetInstanceStatus:
    'query GetInstanceStatus($ID: UUID!) { GetInstanceStatus(ID: $ID) { InstanceID State Error LastPublishedAt Published FailedAttributes } }',
  GetInstancePayload: 'query GetInstancePayload($ID: UUID!) { GetInstancePayload(ID: $ID) }',
  CreateStaticAttribute: `mutation CreateStaticAttribute($input: CreateStaticAttributeRequest!) { CreateStaticAttribute(input: $input) { ${STATIC_FIELDS} } }`,
  UpdateStaticAttribute: `mutation UpdateStaticAttribute($input: UpdateStaticAttributeRequest!) { UpdateStaticAttribute(input: $input) { ${STATIC_FIELDS} } }`,
  DeleteStaticAttribute:
    'mutation DeleteStaticAttribute($input: DeleteStaticAttributeRequest!) { DeleteStaticAttribute(input: $input) }',
  ListStaticAttributes: `query ListStaticAttributes($input: ListStaticAttributeRequest) { ListStaticAttributes(input: $input) { Total Items { ${STATIC_FIELDS} } } }`,
  CreateDynamicAttribute: `mutation CreateDynamicAttribute($input: CreateDynamicAttributeRequest!) { CreateDynamicAttribute(input: $input) { ${DYNAMIC_FIELDS} } }`,
  UpdateDynamicAttribute: `mutation UpdateDynamicAttribute($input: UpdateDynamicAttributeRequest!) { UpdateDynamicAttribute(input: $input) { ${DYNAMIC_FIELDS} } }`,
  DeleteDynamicAttribute:
    'mutation DeleteDynamicAttribute($input: DeleteDynamicAttributeRequest!) { DeleteDynamicAttribute(input: $input) }',
  ListDynamicAttributes: `query ListDynamicAttributes($input: ListDynamicAttributeRequest) { ListDynamicAttributes(input: $input) { Total Items { ${DYNAMIC_FIELDS} } } }`,
  CreateParameter: `mutation CreateParameter($input: CreateParameterRequest!) { CreateParameter(input: $input) { ${STATIC_FIELDS} } }`,
  UpdateParameter: `mutation UpdateParameter($input: UpdateParameterRequest!) { UpdateParameter(input: $input) { ${STATIC_FIELDS} } }`,
  DeleteParameter:
    'mutation DeleteParameter($input: DeleteParameterRequest!) { DeleteParameter(input: $input) }',
  ListParameters: `query ListParameters($input: ListParametersRequest) { ListParameters(input: $input) { Total Items { ${STATIC_FIELDS} } } }`,
  CreateTransformation: `mutation CreateTransformation($input: CreateTransformationRequest!) { CreateTransformation(input: $input) { ${TRANSFORMATION_FIELDS} } }`,
  UpdateTransformation: `mutation UpdateTransformation($input: UpdateTransformationRequest!) { UpdateTransformation(input: $input) { ${TRANSFORMATION_FIELDS} } }`,
  DeleteTransformation:
    'mutation DeleteTransformation($input: DeleteTransformationRequest!) { DeleteTransformation(input: $input) }',
  SaveAllHierarchy: `mutation SaveAllHierarchy($modelId: UUID!, $input: [SaveAllHierarchyRequest!]!) { SaveAllHierarchy(modelId: $modelId, input: $input) { ${HIERARCHY_FIELDS} } }`,
  GetHierarchy: `query GetHierarchy($modelId: UUID!) { GetHierarchy(modelId: $modelId) { ${HIERARCHY_FIELDS} } }`,
  UpdateHierarchyNode:
    'mutation UpdateHierarchyNode($input: UpdateHierarchyNodeRequest!) { UpdateHierarchyNode(input: $input) { ID Name Position } }',
  DeleteHierarchyNode:
    'mutation DeleteHierarchyNode($input: DeleteHierarchyNodeRequest!) { DeleteHierarchyNode(input: $input) }',
  SetInstanceAssetHierarchy:
    'mutation SetInstanceAssetHierarchy($input: SetInstanceAssetHierarchyRequest!) { SetInstanceAssetHierarchy(input: $input) { InstanceID Path Metadata } }',
  DataAccess:
    'subscription DataAccess($input: DataAccessRequest!) { DataAccess(input: $input) { InstanceID Topic Payload } }',
  PlaygroundMessages:
    'subscription PlaygroundMessages($input: PlaygroundMessagesRequest!) { PlaygroundMessages(input: $input) { Source Input Output Error } }',
} as const;
