/**
 * The edge's OPC UA server: the DeviceHub's tags as a live OPC UA address space (node-opcua),
 * managed over GraphQL at `/opcua/v2` (with subscriptions on the same path), plus
 * `/opcua/service_conf`. The module's public surface.
 */
import { readFileSync } from 'node:fs';
import type { FastifyInstance } from 'fastify';
import { mountGraphql, type GraphqlEndpoint } from '../../kernel/graphql.js';
import type { OpcuaService } from './service.js';
import type { UaServer } from './server.js';
import { nodeView, resolvers, syncView, TOPICS, type OpcuaContext } from './resolvers.js';

export { opcuaMigrations } from './migrations/index.js';
export { OpcuaService, DEVICEHUB_FOLDER } from './service.js';
export { OpcuaRepository } from './repository.js';
export { UaServer, loadOpcua, uaDataType } from './server.js';
export type * from './types.js';

export const OPCUA_PATH = '/opcua/v2';
/** Static cost ceiling of an `/opcua/v2` query (a page of 1,000 nodes is about 20,000). */
export const OPCUA_MAX_COST = 100_000;

/** The module's API: the domain service, and the node-opcua server while it runs. */
export interface OpcuaModuleApi {
  service: OpcuaService;
  /** The running OPC UA server; null when disabled (or before `listening`). */
  server: UaServer | null;
  /** `--opcua-enabled`. */
  enabled: boolean;
}

export function opcuaSchema(): string {
  return readFileSync(new URL('./schema.graphql', import.meta.url), 'utf8');
}

/** Mounts `/opcua/v2` and forwards the service's events to its subscriptions. */
export async function mountOpcua(app: FastifyInstance, api: OpcuaModuleApi): Promise<GraphqlEndpoint> {
  const endpoint = await mountGraphql<OpcuaContext>(app, {
    path: OPCUA_PATH,
    schema: opcuaSchema(),
    resolvers,
    subscriptions: true,
    context: () => ({ opcua: api }),
    maxCost: OPCUA_MAX_COST,
    // graphql-jit compiles the coercion of a recursive input type (HierarchyNodeInput.Children)
    // for minutes: the second UploadHierarchy took 90 s to start. Queries here are cheap to
    // interpret.
    jit: 0,
  });
  api.service.onEvent((e) => {
    let p: Promise<void>;
    if (e.type === 'node-state') {
      const v = nodeView(api, e.node);
      p = endpoint.publish(TOPICS.nodeState, {
        SubscribeNodeStateChanged: {
          Ref: v.Ref,
          ID: v.ID,
          Path: v.Path,
          SyncState: v.SyncState,
          SyncFailureReason: v.SyncFailureReason,
          Version: v.Version,
        },
      });
    } else if (e.type === 'tree') {
      p = endpoint.publish(TOPICS.tree, {
        SubscribeTreeChanged: {
          Reason: e.change.reason,
          Added: e.change.added,
          Removed: e.change.removed,
          Modified: e.change.modified,
        },
      });
    } else {
      p = endpoint.publish(TOPICS.sync, { SubscribeSyncStatus: syncView(e.run) });
    }
    p.catch(() => undefined);
  });
  return endpoint;
}
