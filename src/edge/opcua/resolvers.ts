/** Thin translation between `/opcua/v2` and the OPC UA module's services. */
import type { IResolvers } from 'mercurius';
import { AppError, ERRORS } from '../../kernel/errors.js';
import type { GraphqlContext } from '../../kernel/graphql.js';
import type { OpcuaModuleApi } from './module.js';
import { uaNodeId } from './tree.js';
import { uaDataType } from './data-types.js';
import type {
  AccessControl,
  CertificateGroup,
  CertificateInfo,
  HierarchyInput,
  HierarchyResult,
  NodeKind,
  OpcuaNode,
  ServerSettings,
  SyncRun,
} from './types.js';

export interface OpcuaContext {
  opcua: OpcuaModuleApi;
}

type Ctx = GraphqlContext & OpcuaContext;

export const TOPICS = {
  nodeState: 'OPCUA_NODE_STATE',
  tree: 'OPCUA_TREE',
  sync: 'OPCUA_SYNC',
} as const;

export function nodeView(api: OpcuaModuleApi, n: OpcuaNode) {
  const path = api.service.path(n.ref);
  return {
    Ref: n.ref,
    ID: n.id,
    ParentRef: n.parentRef,
    Kind: n.kind,
    Name: n.name,
    Description: n.description,
    Path: path,
    NodeID: uaNodeId(path),
    OriginID: n.originId,
    ValueType: n.kind === 'Tag' ? n.dataType : null,
    DataType: n.kind === 'Tag' ? uaDataType(n.dataType) : null,
    AccessControl: n.accessControl,
    Version: n.version,
    SyncState: n.syncState,
    SyncFailureReason: n.syncFailureReason,
    HasChildren: api.service.hasChildren(n.ref),
    UpdateTime: n.updatedAt,
  };
}

export function syncView(r: SyncRun) {
  return {
    ID: r.id,
    State: r.state,
    Trigger: r.trigger,
    StartTime: r.startedAt,
    EndTime: r.finishedAt,
    Added: r.added,
    Removed: r.removed,
    Modified: r.modified,
    Error: r.error,
  };
}

const resultView = (r: HierarchyResult) => ({
  Added: r.added,
  Removed: r.removed,
  Modified: r.modified,
  RestartRequired: r.restartRequired,
});

const certificateView = (c: CertificateInfo) => ({
  Thumbprint: c.thumbprint,
  Group: c.group,
  FileName: c.fileName,
  Subject: c.subject,
  ApplicationUri: c.applicationUri,
  NotBefore: c.notBefore,
  NotAfter: c.notAfter,
});

function settingsView(api: OpcuaModuleApi) {
  const s = api.service.settings;
  const server = api.server;
  return {
    Enabled: api.enabled,
    EndpointUrl: server?.endpointUrl ?? null,
    Port: server?.port ?? null,
    ServerState: serverState(api),
    ServerError: server?.error ?? null,
    AddressSpaceNodes: server?.nodes ?? 0,
    AllowAnonymous: s.allowAnonymous,
    SecurityPolicies: s.securityPolicies,
    SecurityModes: s.securityModes,
    MaxSessions: s.maxSessions,
    AutoSync: s.autoSync,
    AutoAcceptUntrusted: s.autoAcceptUntrusted,
    PendingRestart: server ? api.service.restartPending() : [],
    Certificate: server?.ownCertificatePem() ?? null,
  };
}

/** The server's start state as the API names it (docs/opcua.md, "Start and ready state"). */
export function serverState(api: OpcuaModuleApi): 'Disabled' | 'Starting' | 'Ready' | 'Failed' | 'Stopped' {
  const state = api.server?.state;
  if (!api.enabled) return 'Disabled';
  if (!state || state === 'starting') return 'Starting';
  return state === 'ready' ? 'Ready' : state === 'failed' ? 'Failed' : 'Stopped';
}

function running(api: OpcuaModuleApi) {
  if (!api.server) {
    throw new AppError(
      ERRORS.opcuaServerNotRunning,
      'the OPC UA server does not run in this edge (--opcua-enabled=false, or it is starting)',
    );
  }
  return api.server;
}

const pageView = (api: OpcuaModuleApi, p: { items: OpcuaNode[]; total: number }) => ({
  Items: p.items.map((n) => nodeView(api, n)),
  Total: p.total,
});

interface PageInput {
  ParentRef?: string | null;
  Limit?: number | null;
  Offset?: number | null;
}

export const resolvers: IResolvers<never, Ctx> = {
  Query: {
    GetNodes: (_r, args: { IDs?: string[] | null }, ctx) =>
      ctx.opcua.service.nodesById(args.IDs).map((n) => nodeView(ctx.opcua, n)),
    GetNodesByRef: (_r, args: { Refs: string[] }, ctx) =>
      ctx.opcua.service.nodesByRef(args.Refs).map((n) => nodeView(ctx.opcua, n)),
    GetFolderItems: (_r, args: { input?: PageInput | null }, ctx) =>
      pageView(
        ctx.opcua,
        ctx.opcua.service.folderItems(args.input?.ParentRef, args.input?.Limit, args.input?.Offset),
      ),
    GetChildFolders: (_r, args: { input?: { ParentRef?: string | null } | null }, ctx) =>
      ctx.opcua.service.childFolders(args.input?.ParentRef).map((n) => nodeView(ctx.opcua, n)),
    GetChildFoldersPage: (_r, args: { input?: PageInput | null }, ctx) =>
      pageView(
        ctx.opcua,
        ctx.opcua.service.childFoldersPage(args.input?.ParentRef, args.input?.Limit, args.input?.Offset),
      ),
    GetFolderSkeleton: (
      _r,
      args: { input?: { RootRef?: string | null; MaxDepth?: number | null } | null },
      ctx,
    ) =>
      ctx.opcua.service.folderSkeleton(args.input?.RootRef, args.input?.MaxDepth).map((s) => ({
        Ref: s.node.ref,
        ID: s.node.id,
        ParentRef: s.node.parentRef,
        Kind: s.node.kind,
        Name: s.node.name,
        Depth: s.depth,
        TagCount: s.tagCount,
        HasChildren: ctx.opcua.service.hasChildren(s.node.ref),
      })),
    SearchNodes: (
      _r,
      args: {
        input?: {
          Text?: string | null;
          Kinds?: NodeKind[] | null;
          SyncStates?: string[] | null;
          Limit?: number | null;
          Offset?: number | null;
        } | null;
      },
      ctx,
    ) =>
      pageView(ctx.opcua, ctx.opcua.service.search(args.input ?? {}, args.input?.Limit, args.input?.Offset)),
    GetSyncStatus: (_r, _args, ctx) => {
      const s = ctx.opcua.service.syncStatus();
      return {
        AutoSync: s.autoSync,
        Running: s.running,
        LastSync: s.last ? syncView(s.last) : null,
        Nodes: s.counts,
      };
    },
    GetCurrentSync: (_r, _args, ctx) => {
      const r = ctx.opcua.service.currentSync;
      return r ? syncView(r) : null;
    },
    GetServerSettings: (_r, _args, ctx) => settingsView(ctx.opcua),
    GetCertificates: (_r, args: { input?: { Group?: CertificateGroup | null } | null }, ctx) =>
      running(ctx.opcua).listCertificates(args.input?.Group).map(certificateView),
    GetUsers: async (_r, _args, ctx) =>
      (await ctx.opcua.service.users()).map((u) => ({ Username: u.username, CreateTime: u.createdAt })),
  },
  Mutation: {
    UpdateNode: async (
      _r,
      args: {
        input: {
          ID: string;
          ExpectedVersion?: number | null;
          Name?: string | null;
          Description?: string | null;
          AccessControl?: AccessControl | null;
        };
        originId?: string | null;
      },
      ctx,
    ) => nodeView(ctx.opcua, await ctx.opcua.service.updateNode(args.input, args.originId)),
    UpdateNodeByRef: async (
      _r,
      args: {
        input: {
          Ref: string;
          ExpectedVersion?: number | null;
          ID?: string | null;
          Name?: string | null;
          Description?: string | null;
          AccessControl?: AccessControl | null;
        };
      },
      ctx,
    ) => nodeView(ctx.opcua, await ctx.opcua.service.updateNodeByRef(args.input)),
    DeleteNode: (_r, args: { ID: string; originId?: string | null; expectedVersion?: number | null }, ctx) =>
      ctx.opcua.service.deleteNode(args.ID, args.originId, args.expectedVersion),
    DeleteNodeByRef: (_r, args: { Ref: string; expectedVersion?: number | null }, ctx) =>
      ctx.opcua.service.deleteNodeByRef(args.Ref, args.expectedVersion),
    UploadHierarchy: async (_r, args: { input: { Nodes: HierarchyInput[] } }, ctx) => {
      await ctx.opcua.service.uploadHierarchy(args.input.Nodes);
      return true;
    },
    UploadHierarchyWithResult: async (_r, args: { input: { Nodes: HierarchyInput[] } }, ctx) =>
      resultView(await ctx.opcua.service.uploadHierarchy(args.input.Nodes)),
    StageHierarchy: async (_r, args: { input: { Nodes: HierarchyInput[] } }, ctx) => {
      const s = await ctx.opcua.service.stageHierarchy(args.input.Nodes);
      return { StageID: s.id, NodeCount: s.nodeCount, CreateTime: s.createdAt };
    },
    CommitStagedHierarchy: async (_r, args: { StageID: string }, ctx) =>
      resultView(await ctx.opcua.service.commitStagedHierarchy(args.StageID)),
    CancelStagedHierarchy: (_r, args: { StageID: string }, ctx) =>
      ctx.opcua.service.cancelStagedHierarchy(args.StageID),
    SyncNodes: async (_r, args: { input?: { AutoSync?: boolean | null } | null }, ctx) =>
      syncView((await ctx.opcua.service.sync({ autoSync: args.input?.AutoSync ?? null })).run),
    UpdateServerSettings: async (
      _r,
      args: {
        input: {
          AllowAnonymous?: boolean | null;
          SecurityPolicies?: ServerSettings['securityPolicies'] | null;
          SecurityModes?: ServerSettings['securityModes'] | null;
          MaxSessions?: number | null;
          AutoSync?: boolean | null;
          AutoAcceptUntrusted?: boolean | null;
        };
      },
      ctx,
    ) => {
      const i = args.input;
      const r = await ctx.opcua.service.updateSettings({
        ...(i.AllowAnonymous != null ? { allowAnonymous: i.AllowAnonymous } : {}),
        ...(i.SecurityPolicies != null ? { securityPolicies: i.SecurityPolicies } : {}),
        ...(i.SecurityModes != null ? { securityModes: i.SecurityModes } : {}),
        ...(i.MaxSessions != null ? { maxSessions: i.MaxSessions } : {}),
        ...(i.AutoSync != null ? { autoSync: i.AutoSync } : {}),
        ...(i.AutoAcceptUntrusted != null ? { autoAcceptUntrusted: i.AutoAcceptUntrusted } : {}),
      });
      return {
        Settings: settingsView(ctx.opcua),
        RestartRequired: ctx.opcua.server ? r.restartRequired : false,
      };
    },
    BulkUpdateTagAccessControl: async (
      _r,
      args: { input: { Refs: string[]; AccessControl: AccessControl } },
      ctx,
    ) => {
      const before = new Map(ctx.opcua.service.nodesByRef(args.input.Refs).map((n) => [n.ref, n.version]));
      const nodes = await ctx.opcua.service.bulkUpdateTagAccessControl(
        args.input.Refs,
        args.input.AccessControl,
      );
      return {
        Updated: nodes.filter((n) => before.get(n.ref) !== n.version).length,
        Items: nodes.map((n) => nodeView(ctx.opcua, n)),
      };
    },
    MoveCertificate: async (_r, args: { input: { Thumbprint: string; Group: CertificateGroup } }, ctx) =>
      certificateView(await running(ctx.opcua).moveCertificate(args.input.Thumbprint, args.input.Group)),
    DeleteCertificate: (_r, args: { Thumbprint: string }, ctx) =>
      running(ctx.opcua).deleteCertificate(args.Thumbprint),
    SetUser: async (_r, args: { input: { Username: string; Password: string } }, ctx) => {
      await ctx.opcua.service.setUser(args.input.Username, args.input.Password);
      const u = (await ctx.opcua.service.users()).find((x) => x.username === args.input.Username)!;
      return { Username: u.username, CreateTime: u.createdAt };
    },
    DeleteUser: (_r, args: { Username: string }, ctx) => ctx.opcua.service.deleteUser(args.Username),
  },
  Subscription: {
    SubscribeNodeStateChanged: { subscribe: (_r, _a, ctx) => ctx.pubsub.subscribe(TOPICS.nodeState) },
    SubscribeTreeChanged: { subscribe: (_r, _a, ctx) => ctx.pubsub.subscribe(TOPICS.tree) },
    SubscribeSyncStatus: { subscribe: (_r, _a, ctx) => ctx.pubsub.subscribe(TOPICS.sync) },
  },
};
