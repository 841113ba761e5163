/**
 * The OPC UA server on the edge's seam. `start` opens the node tree (GraphQL works with the
 * server off) and, unless `--opcua-enabled=false`, reserves `--opcua-port` under the port policy
 * (`opcua-port`) with the other ports, so that a taken port stops the start before anything
 * irreversible (the first-run password) happens; `listening` starts the node-opcua server on the
 * reserved port in a worker thread without waiting for it (see server.ts); `close` shuts it down.
 */
import { readFileSync } from 'node:fs';
import { createServer, type AddressInfo, type Server } from 'node:net';
import { join } from 'node:path';
import type { FastifyInstance } from 'fastify';
import { mountGraphql, type GraphqlEndpoint } from '../../kernel/graphql.js';
import { MILLWRIGHT_VERSION } from '../../kernel/version.js';
import type { EdgeModule } from '../modules.js';
import { opcuaOptions } from './options.js';
import { opcuaConfigSection } from './config-section.js';
import { opcuaMigrations } from './migrations/index.js';
import { OpcuaRepository } from './repository.js';
import { nodeView, resolvers, syncView, TOPICS, type OpcuaContext } from './resolvers.js';
import { opcuaRoutes } from './routes.js';
import { UaServer } from './server.js';
import { OpcuaService } from './service.js';

export const OPCUA_PATH = '/opcua/v2';
/** Static cost ceiling of an `/opcua/v2` query (a page of 1,000 nodes is about 20,000). */
export const OPCUA_MAX_COST = 100_000;

/** The module's API: the domain service, and the node-opcua server while it runs. */
export interface OpcuaModuleApi {
  service: OpcuaService;
  /**
   * The OPC UA server (in its worker thread); null when disabled (or before `listening`). Its
   * `state` is `starting` until it listens and its address space holds the node tree.
   */
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

declare module '../modules.js' {
  interface EdgeModules {
    opcua: OpcuaModuleApi;
  }
}

interface Reservation {
  server: Server;
  port: number;
}

/** The port held between `start` and `listening`. */
const reservations = new WeakMap<OpcuaModuleApi, Reservation>();

function reserve(host: string, port: number): Promise<Reservation> {
  return new Promise((resolve, reject) => {
    // A client that connects before the worker binds is closed at once: a connection left open
    // would keep `close()` (the release) waiting, and the worker from binding, for as long as
    // that client waits for an answer.
    const server = createServer((socket) => socket.destroy());
    server.once('error', reject);
    server.listen({ host, port, exclusive: true }, () =>
      resolve({ server, port: (server.address() as AddressInfo).port }),
    );
  });
}

const release = (r: Reservation) => new Promise<void>((resolve) => r.server.close(() => resolve()));

export const opcuaModule: EdgeModule<'opcua', typeof opcuaOptions> = {
  name: 'opcua',
  options: opcuaOptions,
  migrations: opcuaMigrations,
  requires: ['datahub', 'devicehub'],
  async start(ctx) {
    const service = await OpcuaService.open(
      new OpcuaRepository(ctx.database),
      ctx.module('devicehub').readModel,
      ctx.logger,
    );
    const api: OpcuaModuleApi = { service, server: null, enabled: ctx.config.opcuaEnabled };
    if (api.enabled) {
      const r = await ctx.ports.bind(
        'opcua-port',
        ctx.config.opcuaPort,
        (port) => reserve(ctx.config.opcuaHost, port),
        (x) => x.port,
      );
      reservations.set(api, r);
      ctx.defer('opcua port reservation', () => release(r));
    }
    return api;
  },
  async mount(ctx, api) {
    await mountOpcua(ctx.app, api);
    await ctx.app.register(opcuaRoutes, { opcua: api });
  },
  configSection: (api) => opcuaConfigSection(api.service),
  listening(ctx, api) {
    const reserved = reservations.get(api);
    if (!api.enabled || !reserved) return;
    reservations.delete(api);
    // The server starts in its worker thread: the edge is ready without waiting for it (its
    // state says `starting` until its address space holds the tree, then `ready`).
    const server = UaServer.start({
      port: reserved.port,
      host: ctx.config.opcuaHost,
      pkiDir: join(ctx.dataDir, 'opcua-server-pki'),
      service: api.service,
      hub: ctx.module('datahub').hub,
      logger: ctx.logger,
      buildVersion: MILLWRIGHT_VERSION,
      beforeBind: () => release(reserved),
    });
    api.server = server;
    server.listening().then(
      () => ctx.logger.info({ endpoint: server.endpointUrl }, 'opcua server listening'),
      (err: unknown) => {
        void release(reserved);
        // A stop during the start is not a failure.
        if (server.state !== 'stopped') ctx.logger.error({ err }, 'opcua server did not start');
      },
    );
  },
  async close(api) {
    const server = api.server;
    api.server = null;
    await server?.shutdown();
    api.service.close();
  },
};
