/**
 * The twins' domain records (camelCase, as stored and as the runtime reads them) and the wire
 * shapes of `/digital-twins` (PascalCase, as the contract names them).
 */

export type InstanceSource = 'local' | 'external';
export type AttributeType = 'Regular' | 'UNS' | 'AssetHierarchy';
export type DynamicAttributeType = 'topic' | 'nestedModel';
/** What an attribute node of a hierarchy shows. */
export type NodeAttributeKind = 'static' | 'dynamic' | 'parameter';

interface Stamped {
  id: string;
  createdAt: number;
  updatedAt: number;
}

export interface ModelRecord extends Stamped {
  name: string;
  assets: string;
  description: string;
  publishOnChange: boolean;
  publishIntervalMs: number;
  staleAfterMs: number;
}

export interface InstanceRecord extends Stamped {
  modelId: string;
  name: string;
  description: string;
  source: InstanceSource;
  topic: string;
  enabled: boolean;
}

/** A static attribute or a parameter: a key and a value, the model's or one instance's own. */
export interface KeyValueRecord extends Stamped {
  modelId: string;
  instanceId: string | null;
  key: string;
  value: string;
}

export interface DynamicAttributeRecord extends Stamped {
  modelId: string;
  instanceId: string | null;
  name: string;
  description: string;
  type: DynamicAttributeType;
  attributeType: AttributeType;
  topic: string;
  transformationId: string | null;
  nestedModelId: string | null;
  nestedInstanceId: string | null;
}

export interface TransformationRecord extends Stamped {
  name: string;
  description: string;
  expression: string;
}

export interface HierarchyNodeRecord {
  id: string;
  modelId: string;
  parentId: string | null;
  position: number;
  name: string;
  isFolder: boolean;
  attributeId: string | null;
  attributeType: string | null;
  nodeType: string | null;
}

export interface PlacementRecord {
  id: string;
  instanceId: string;
  path: string;
  metadata: unknown;
}

/**
 * What changed in the twins' configuration (the runtime re-resolves on it). `reload`: the whole
 * configuration was read again from the database (`TwinsService.reload`, id `*`).
 */
export interface TwinsChange {
  kind:
    | 'model'
    | 'instance'
    | 'static'
    | 'dynamic'
    | 'parameter'
    | 'transformation'
    | 'hierarchy'
    | 'placement'
    | 'reload';
  id: string;
}
