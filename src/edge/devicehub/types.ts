/**
 * The DeviceHub's shapes: the wire shapes of `/devicehub/v2` (PascalCase, as the contract names
 * them), and the domain read model other modules use (camelCase device and tag configurations,
 * change events, and the tag runtime state the acquisition engine owns).
 */
import type { Tx } from '../../kernel/db/index.js';
import type { PatternOption } from './repository.js';
import type { Topic } from './topics.js';

export type { PatternOption };

// ---------------------------------------------------------------------------------------------
// Wire shapes

export interface KeyValue {
  Key: string;
  Value: string;
}
export interface NameValue {
  Name: string;
  Value: string;
}
export interface Param {
  Name: string;
  Value: string;
  Description: string;
}

export interface Device {
  ID: string;
  Name: string;
  DriverID: string;
  DriverName: string;
  Description: string;
  Properties: KeyValue[];
  MetaData: Record<string, unknown>;
  DHParams: Param[];
  WorkerParams: Param[];
  AliasTopics: boolean;
  Debug: boolean;
  CreationTime: string;
  UpdateTime: string;
}

export interface Register {
  ID: string;
  DeviceID: string;
  DeviceName: string;
  Name: string;
  TagName: string;
  Description: string;
  ValueType: string;
  PublishCoV: boolean;
  TagFormula: string;
  IntervalMs: number;
  Properties: NameValue[];
  MetaData: Record<string, unknown>;
  Topics: Topic[];
  CreationTime: string;
}

export interface ParamInput {
  Name: string;
  Value?: string | null;
  Description?: string | null;
}

export interface CreateDeviceRequest {
  Name: string;
  DriverID: string;
  Description?: string | null;
  Properties?: Array<{ Key: string; Value?: string | null }> | null;
  MetaData?: unknown;
  DHParams?: ParamInput[] | null;
  WorkerParams?: ParamInput[] | null;
  AliasTopics?: boolean | null;
  Debug?: boolean | null;
}

export interface UpdateDeviceRequest extends Partial<CreateDeviceRequest> {
  ID: string;
}

export interface CreateRegisterRequest {
  DeviceID: string;
  Name: string;
  TagName: string;
  ValueType: string;
  Description?: string | null;
  PublishCoV?: boolean | null;
  TagFormula?: string | null;
  IntervalMs?: number | null;
  Properties?: Array<{ Name: string; Value?: string | null }> | null;
  MetaData?: unknown;
}

export interface UpdateRegisterRequest extends Partial<Omit<CreateRegisterRequest, 'DeviceID'>> {
  ID: string;
}

export interface ListRegistersRequest {
  DeviceID?: string | null;
  Limit?: number | null;
  SkipCount?: number | null;
  ContinueFrom?: string | null;
  TagPattern?: string | null;
  TagPatternSearchOption?: PatternOption | null;
}

export interface RegisterPage {
  TotalCount: number;
  Registers: Register[];
  /** ID of the last register of the page: send it back as `ContinueFrom` for the next page. */
  Last: string | null;
}

export type TagState = 'OK' | 'Failed' | 'Unknown';
export interface TagStatus {
  ID: string;
  DeviceID: string;
  TagName: string;
  State: TagState;
  Reason: string;
  UpdateTime: string | null;
  /** The last value read (after TagFormula), null while there is none (not read yet, or failed). */
  Value: unknown;
  /** When that value was first read (it has not changed since), ISO 8601; null without a value. */
  Timestamp: string | null;
}

export const DEFAULT_REGISTER_LIMIT = 100;
export const MAX_REGISTER_LIMIT = 1000;
export const DEFAULT_INTERVAL_MS = 1000;
/** The property a register's view adds with its `ValueType` (clients look the data type up there). */
export const DATA_TYPE_PROPERTY = 'DataType';
export const MIN_INTERVAL_MS = 10;
export const MAX_INTERVAL_MS = 86_400_000;

// ---------------------------------------------------------------------------------------------
// Domain read model

/** A device's configuration, properties with the driver's defaults filled in (strings, as stored). */
export interface DeviceConfig {
  id: string;
  name: string;
  /** Catalogue ID of the driver (`findDriver(driverId)`). */
  driverId: string;
  description: string;
  properties: Record<string, string>;
  metadata: Record<string, unknown>;
  aliasTopics: boolean;
  debug: boolean;
  createdAt: number;
  updatedAt: number;
}

/** A tag's configuration, with what its topics need of its device. */
export interface TagConfig {
  id: string;
  deviceId: string;
  deviceName: string;
  /** Whether the device publishes alias topics too. */
  aliasTopics: boolean;
  /** The driver's register (`HR`, `S`, `Node`, `Topic`...). */
  register: string;
  tagName: string;
  description: string;
  valueType: string;
  publishCoV: boolean;
  /** The tag formula as written; empty for none. */
  formula: string;
  intervalMs: number;
  properties: Record<string, string>;
  metadata: Record<string, unknown>;
  createdAt: number;
  updatedAt: number;
}

/**
 * What one committed change touched. A device listed was created, updated or deleted (with its
 * tags: a reader reloads the device and all its tags). A tag listed was created, updated or
 * deleted; its device is named so that a deleted tag can be found where it ran.
 */
export interface DevicehubChange {
  devices: string[];
  tags: Array<{ id: string; deviceId: string }>;
}

/** A tag's runtime state as its reader (the acquisition engine) keeps it. */
export interface TagRuntimeState {
  /** `Unknown` with a reason: the tag's driver does not acquire in this build. */
  state: 'OK' | 'Failed' | 'Unknown';
  reason: string;
  /** When the state or the value last changed (epoch ms). */
  at: number;
  /** The last value read, when the state is OK and a value was read (`hasValue`). */
  value?: unknown;
  hasValue?: boolean;
}

/** Where `GetTagStatus` reads tag runtime state: set by the acquisition engine when it starts. */
export interface TagStatusSource {
  /** The state of a tag, or undefined while it has none (not read yet, or not running). */
  tagState(tagId: string, deviceId: string): TagRuntimeState | undefined;
  /**
   * Whether devices of a driver (catalogue key) are acquired by this build: the acquisition
   * engine's registry of drivers decides, so that a driver acquires once it is registered there.
   */
  acquires?(driverKey: string): boolean;
}

/**
 * The DeviceHub as other modules read it: configurations in the domain shape, change events,
 * and the slot where the tag runtime state is read from. Its tables stay private to it.
 */
export interface DevicehubReadModel {
  /** Every device (no `ids`), or those of `ids` that exist. */
  devices(ids?: readonly string[]): Promise<DeviceConfig[]>;
  /** The tags of the given devices. */
  tagsOfDevices(deviceIds: readonly string[]): Promise<TagConfig[]>;
  /** The tags of `ids` that exist. */
  tags(ids: readonly string[]): Promise<TagConfig[]>;
  /**
   * The same reads through `trx`, a transaction someone else owns (a configuration apply's, that
   * may hold the only connection): what the apply wrote so far is seen.
   */
  inTransaction?(trx: Tx): DevicehubReadModel;
  /** Calls `listener` after each committed change; answers a function that removes it. */
  onChange(listener: (change: DevicehubChange) => void): () => void;
  /** Sets (or, with null, clears) where `GetTagStatus` reads tag runtime state. */
  setTagStatusSource(source: TagStatusSource | null): void;
}
