/**
 * The OPC UA module's shapes: nodes of the tree (folders, devices and tags), sync runs, server
 * settings, and the uploaded hierarchy. Domain shapes are camelCase; the wire (PascalCase) is in
 * `resolvers.ts`.
 */

export type NodeKind = 'Folder' | 'Device' | 'Tag';
export type AccessControl = 'ReadOnly' | 'ReadWrite';

/**
 * A node's sync state (docs/opcua.md, "Sync states"):
 * - `Local`: made by an upload without a DeviceHub origin; sync leaves it alone;
 * - `Synced`: matches its DeviceHub origin;
 * - `Pending`: its origin changed since the last sync (auto-sync off);
 * - `Orphaned`: its origin was deleted; the next sync removes the node;
 * - `Failed`: its origin does not exist or cannot be served (`syncFailureReason` says why).
 */
export type NodeSyncState = 'Local' | 'Synced' | 'Pending' | 'Orphaned' | 'Failed';

export interface OpcuaNode {
  /** The node's reference: unique, stable across renames. */
  ref: string;
  parentRef: string | null;
  kind: NodeKind;
  /** The node's identifier among its siblings (may repeat elsewhere in the tree). */
  id: string;
  name: string;
  description: string;
  /** DeviceHub device (Device) or tag (Tag) ID this node follows. */
  originId: string | null;
  /** DeviceHub value type of a tag (`float64`, `int16`...). */
  dataType: string | null;
  accessControl: AccessControl;
  version: number;
  syncState: NodeSyncState;
  syncFailureReason: string | null;
  position: number;
  updatedAt: number;
}

/** A sync run's state: `Running`, then `Succeeded` or `Failed` (terminal). */
export type SyncRunState = 'Running' | 'Succeeded' | 'Failed';

export interface SyncRun {
  id: string;
  state: SyncRunState;
  /** `Manual` (SyncNodes) or `Auto` (a DeviceHub change with auto-sync on). */
  trigger: 'Manual' | 'Auto';
  startedAt: number;
  finishedAt: number | null;
  added: number;
  removed: number;
  modified: number;
  error: string | null;
}

/** One node of an uploaded hierarchy. */
export interface HierarchyInput {
  ID: string;
  Name?: string | null;
  Kind: NodeKind;
  Description?: string | null;
  OriginID?: string | null;
  AccessControl?: AccessControl | null;
  Children?: HierarchyInput[] | null;
}

export interface HierarchyResult {
  added: number;
  removed: number;
  modified: number;
  restartRequired: number;
}

export type SecurityPolicyName = 'None' | 'Basic256Sha256' | 'Aes128_Sha256_RsaOaep' | 'Aes256_Sha256_RsaPss';
export type SecurityModeName = 'None' | 'Sign' | 'SignAndEncrypt';

export const SECURITY_POLICIES: readonly SecurityPolicyName[] = [
  'None',
  'Basic256Sha256',
  'Aes128_Sha256_RsaOaep',
  'Aes256_Sha256_RsaPss',
];
export const SECURITY_MODES: readonly SecurityModeName[] = ['None', 'Sign', 'SignAndEncrypt'];

export interface ServerSettings {
  /** Anonymous sessions (off by default). Applied at the next start of the OPC UA server. */
  allowAnonymous: boolean;
  /** Offered security policies. Applied at the next start. */
  securityPolicies: SecurityPolicyName[];
  /** Offered message security modes. Applied at the next start. */
  securityModes: SecurityModeName[];
  /** Most concurrent sessions. Applied live. */
  maxSessions: number;
  /** Follow DeviceHub changes (an incremental sync after each change). Applied live. */
  autoSync: boolean;
  /** Trust every client certificate on first use (off: unknown ones go to Rejected). Applied live. */
  autoAcceptUntrusted: boolean;
}

export const DEFAULT_SETTINGS: ServerSettings = {
  allowAnonymous: false,
  securityPolicies: [...SECURITY_POLICIES],
  securityModes: [...SECURITY_MODES],
  maxSessions: 100,
  autoSync: false,
  autoAcceptUntrusted: false,
};

/** Settings whose change needs the OPC UA server to start again. */
export const RESTART_SETTINGS: ReadonlyArray<keyof ServerSettings> = [
  'allowAnonymous',
  'securityPolicies',
  'securityModes',
];

export type CertificateGroup = 'Trusted' | 'Rejected';

export interface CertificateInfo {
  thumbprint: string;
  group: CertificateGroup;
  fileName: string;
  subject: string;
  applicationUri: string | null;
  notBefore: string;
  notAfter: string;
}

/** What changed in the tree, for subscribers (SubscribeTreeChanged). */
export interface TreeChange {
  /** `Template`: a configuration template was applied (the tree was read again). */
  reason: 'Sync' | 'Upload' | 'Commit' | 'Update' | 'Delete' | 'AccessControl' | 'Template';
  added: string[];
  removed: string[];
  modified: string[];
}

export type OpcuaEvent =
  | { type: 'node-state'; node: OpcuaNode }
  | { type: 'tree'; change: TreeChange }
  | { type: 'sync'; run: SyncRun };
