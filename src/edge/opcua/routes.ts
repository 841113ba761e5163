/**
 * `GET /opcua/service_conf`: how the OPC UA server runs (endpoint, security, users) for
 * clients and people; `/opcua/version` is served with the other version probes (versions.ts).
 */
import type { FastifyInstance } from 'fastify';
import type { OpcuaModuleApi } from './module.js';

export async function opcuaRoutes(app: FastifyInstance, opts: { opcua: OpcuaModuleApi }): Promise<void> {
  const api = opts.opcua;
  app.get('/opcua/service_conf', async () => {
    const s = api.service.settings;
    return {
      enabled: api.enabled,
      running: api.server !== null,
      // starting | ready | failed | stopped | disabled (docs/opcua.md, "Start and ready state").
      state: api.enabled ? (api.server?.state ?? 'starting') : 'disabled',
      addressSpaceNodes: api.server?.nodes ?? 0,
      endpointUrl: api.server?.endpointUrl ?? null,
      port: api.server?.port ?? null,
      allowAnonymous: s.allowAnonymous,
      securityPolicies: s.securityPolicies,
      securityModes: s.securityModes,
      maxSessions: s.maxSessions,
      autoSync: s.autoSync,
      autoAcceptUntrusted: s.autoAcceptUntrusted,
      pendingRestart: api.server ? api.service.restartPending() : [],
      nodes: api.service.tree.size,
    };
  });
}
