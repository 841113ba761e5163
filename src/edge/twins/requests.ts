/**
 * What the twins service is asked and within which bounds: its limits, its requests (wire shapes,
 * as the resolvers pass them) and the checks of the subjects and topics they name.
 */
import { badRequest } from '../../kernel/errors.js';
import { isValidSubject } from '../datahub/index.js';
import type { AttributeType, DynamicAttributeType, HierarchyNodeRecord, InstanceSource } from './types.js';

/** Bounds of the twins' configuration (docs/security.md, "Digital twins"). */
export interface TwinsLimits {
  maxModels: number;
  maxInstances: number;
  /** Static + dynamic attributes + parameters of one model or one instance (its own). */
  maxAttributesPerOwner: number;
  /** Dynamic attributes in all. */
  maxDynamicAttributes: number;
  maxTransformations: number;
  /** Longest name, key or topic (characters). */
  maxNameLength: number;
  /** Longest static attribute or parameter value, and placement metadata as JSON (bytes). */
  maxValueBytes: number;
  maxHierarchyNodes: number;
  maxHierarchyDepth: number;
  maxPlacementsPerInstance: number;
  /** Largest page of a list. */
  maxLimit: number;
}

export const DEFAULT_TWINS_LIMITS: TwinsLimits = {
  maxModels: 1000,
  maxInstances: 10_000,
  maxAttributesPerOwner: 500,
  maxDynamicAttributes: 200_000,
  maxTransformations: 10_000,
  maxNameLength: 256,
  maxValueBytes: 64 * 1024,
  maxHierarchyNodes: 1000,
  maxHierarchyDepth: 16,
  maxPlacementsPerInstance: 100,
  maxLimit: 1000,
};

export const DEFAULT_STALE_AFTER_MS = 10_000;

// ---------------------------------------------------------------------------------------------
// Requests (wire shapes, as the resolvers pass them)

export type Opt<T> = T | null | undefined;

export interface CreateModelRequest {
  Name: string;
  Assets: string;
  Description?: Opt<string>;
  PublishOnChange?: Opt<boolean>;
  PublishIntervalMs?: Opt<number>;
  StaleAfterMs?: Opt<number>;
}
export interface UpdateModelRequest extends Partial<CreateModelRequest> {
  ID: string;
}
export interface CreateInstanceRequest {
  ModelID: string;
  Name: string;
  Description?: Opt<string>;
  Source?: Opt<InstanceSource>;
  Topic?: Opt<string>;
  Enabled?: Opt<boolean>;
}
export interface UpdateInstanceRequest {
  ID: string;
  Name?: Opt<string>;
  Description?: Opt<string>;
  Source?: Opt<InstanceSource>;
  Topic?: Opt<string>;
  Enabled?: Opt<boolean>;
}
export interface CreateKeyValueRequest {
  ModelID: string;
  InstanceID?: Opt<string>;
  Key: string;
  Value: string;
}
export interface UpdateKeyValueRequest {
  ID: string;
  Key?: Opt<string>;
  Value?: Opt<string>;
}
export interface CreateDynamicAttributeRequest {
  ModelID: string;
  InstanceID?: Opt<string>;
  Name: string;
  Description?: Opt<string>;
  Type?: Opt<DynamicAttributeType>;
  AttributeType?: Opt<AttributeType>;
  Topic?: Opt<string>;
  TransformationID?: Opt<string>;
  NestedModelID?: Opt<string>;
  NestedInstanceID?: Opt<string>;
}
export interface UpdateDynamicAttributeRequest extends Partial<
  Omit<CreateDynamicAttributeRequest, 'ModelID'>
> {
  ID: string;
}
export interface CreateTransformationRequest {
  Name: string;
  Description?: Opt<string>;
  Expression: string;
}
export interface UpdateTransformationRequest {
  ID: string;
  Name?: Opt<string>;
  Description?: Opt<string>;
  Expression?: Opt<string>;
}
export interface OwnerListRequest {
  ModelID?: Opt<string>;
  InstanceID?: Opt<string>;
  Limit?: Opt<number>;
  Offset?: Opt<number>;
}
export interface NamedListRequest {
  ModelID?: Opt<string>;
  Limit?: Opt<number>;
  Offset?: Opt<number>;
  Filter?: Opt<Record<string, Opt<Record<string, unknown>>>>;
  Sort?: Opt<ReadonlyArray<{ Field: string; Order?: Opt<string> }> | { Field: string; Order?: Opt<string> }>;
}
export interface HierarchyInput {
  Node: {
    Position?: Opt<number>;
    Name: string;
    IsFolder?: Opt<boolean>;
    AttributeID?: Opt<string>;
    AttributeType?: Opt<string>;
    NodeType?: Opt<string>;
  };
  Childs?: Opt<HierarchyInput[]>;
}
export interface PlacementInput {
  InstanceID: string;
  Path: string;
  Metadata?: unknown;
}

export interface Page<T> {
  Items: T[];
  Total: number;
}

/** One node of a hierarchy as it reads back. */
export interface HierarchyTree {
  node: HierarchyNodeRecord;
  children: HierarchyTree[];
}

// ---------------------------------------------------------------------------------------------

/** A subject to publish on: valid, without wildcards. */
export function checkSingleSubject(topic: string, what: string): void {
  if (!isValidSubject(topic))
    throw badRequest(
      `${what} ${JSON.stringify(topic)} must be a single DataHub subject: dot-separated tokens, no wildcards (* or >), no spaces`,
    );
}

/** An MQTT topic to subscribe to: one topic, no wildcards. */
export function checkSingleMqttTopic(topic: string, what: string): void {
  if (topic === '' || /[+#]/.test(topic) || topic.includes('\0') || topic.startsWith('$'))
    throw badRequest(
      `${what} ${JSON.stringify(topic)} must be a single MQTT topic: no wildcards (+ or #), not empty, not a $ topic`,
    );
}

/** `{{Param}}` placeholders of a topic. */
export const PLACEHOLDER = /\{\{\s*([A-Za-z0-9_.-]+)\s*\}\}/g;

/** Default subject of an instance: `twins.<model>.<instance>`, each name made one token. */
export function defaultTopic(model: string, instance: string): string {
  const token = (s: string) => s.replace(/[^A-Za-z0-9_:-]/g, '_') || '_';
  return `twins.${token(model)}.${token(instance)}`;
}
