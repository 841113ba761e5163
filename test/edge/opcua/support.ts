/**
 * Test support for the OPC UA server: an edge with its OPC UA server on (a free port), a GraphQL
 * helper for `/opcua/v2`, and node-opcua clients as the real peer.
 */
import assert from 'node:assert/strict';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, join } from 'node:path';
import {
  MessageSecurityMode,
  OPCUACertificateManager,
  OPCUAClient,
  SecurityPolicy,
  UserTokenType,
  type ClientSession,
  type UserIdentityInfo,
} from 'node-opcua';
import { graphql, type HttpReply } from '../../helpers/edge.js';
import { startAcqEdge, type AcqEdge } from '../acquisition/support.js';
import type { EdgeConfig } from '../../../src/edge/service.js';
import { eventually } from '../../helpers/util.js';

export interface UaEdge extends AcqEdge {
  endpoint: string;
  /** Runs a query on /opcua/v2 and asserts it had no errors. */
  ua(query: string, variables?: Record<string, unknown>): Promise<any>;
  /** Runs a query on /opcua/v2 as it is (errors included). */
  uaRaw(query: string, variables?: Record<string, unknown>): Promise<HttpReply>;
  /** SyncNodes, then waits for the run to end; answers GetCurrentSync. */
  sync(autoSync?: boolean): Promise<any>;
}

export const NODE_FIELDS = `Ref ID ParentRef Kind Name Description Path NodeID OriginID ValueType DataType
  AccessControl Version SyncState SyncFailureReason HasChildren`;

export async function startUaEdge(overrides: Partial<EdgeConfig> = {}): Promise<UaEdge> {
  const e = await startAcqEdge({ opcuaEnabled: true, opcuaPort: 0, opcuaHost: '127.0.0.1', ...overrides });
  const uaRaw = (query: string, variables?: Record<string, unknown>) =>
    graphql(e.t, '/opcua/v2', e.auth, query, variables);
  const ua = async (query: string, variables?: Record<string, unknown>) => {
    const r = await uaRaw(query, variables);
    assert.equal(r.status, 200, r.text);
    assert.equal(r.body.errors, undefined, JSON.stringify(r.body.errors));
    return r.body.data;
  };
  const server = e.t.edge.shell.module('opcua').server;
  // The server starts in its worker thread after the edge is ready: wait for its address space.
  await server?.ready();
  const endpoint = server ? `opc.tcp://127.0.0.1:${server.port}` : '';
  return {
    ...e,
    endpoint,
    ua,
    uaRaw,
    async sync(autoSync?: boolean) {
      const started = await ua(`mutation($in: SyncNodesRequest) { SyncNodes(input: $in) { ID State } }`, {
        in: autoSync === undefined ? {} : { AutoSync: autoSync },
      });
      return eventually(async () => {
        const d = await ua(`{ GetCurrentSync { ID State Added Removed Modified Error } }`);
        assert.equal(d.GetCurrentSync.ID, started.SyncNodes.ID);
        assert.notEqual(d.GetCurrentSync.State, 'Running');
        return d.GetCurrentSync;
      }, 20_000);
    },
  };
}

/** A client certificate manager in a fresh folder that accepts the server's certificate. */
export function clientPki(): OPCUACertificateManager {
  return new OPCUACertificateManager({
    rootFolder: mkdtempSync(join(tmpdir(), 'mw-opcua-client-')),
    automaticallyAcceptUnknownCertificate: true,
  });
}

export interface UaSessionOptions {
  mode?: keyof typeof MessageSecurityMode;
  policy?: keyof typeof SecurityPolicy;
  user?: { userName: string; password: string } | null;
  pki?: OPCUACertificateManager;
}

/** Connects a node-opcua client and opens a session (user name/password unless `user: null`). */
export async function openSession(
  endpoint: string,
  options: UaSessionOptions = {},
): Promise<{ client: OPCUAClient; session: ClientSession; close: () => Promise<void> }> {
  const pki = options.pki ?? clientPki();
  await pki.initialize();
  const client = OPCUAClient.create({
    applicationName: 'millwright-test-client',
    // The URI of the client's certificate (one per certificate folder).
    applicationUri: `urn:millwright:test:${basename(pki.rootDir)}`,
    securityMode: MessageSecurityMode[options.mode ?? 'None'],
    securityPolicy: SecurityPolicy[options.policy ?? 'None'],
    endpointMustExist: false,
    connectionStrategy: { maxRetry: 0, initialDelay: 100, maxDelay: 200 },
    clientCertificateManager: pki,
  });
  try {
    await client.connect(endpoint);
    const identity: UserIdentityInfo =
      options.user === null
        ? { type: UserTokenType.Anonymous }
        : { type: UserTokenType.UserName, ...(options.user ?? OPERATOR) };
    const session = await client.createSession(identity);
    return {
      client,
      session,
      close: async () => {
        await session.close().catch(() => undefined);
        await client.disconnect();
      },
    };
  } catch (err) {
    await client.disconnect().catch(() => undefined);
    throw err;
  }
}

export const OPERATOR = { userName: 'operator', password: 'operator-password' };

/** A graphql-transport-ws client on `/opcua/v2` (the kernel's GraphQL WebSocket). */
export async function uaSubscriptions(e: UaEdge) {
  const { default: WebSocket } = await import('ws');
  const url = `${e.t.url.replace(/^http/, 'ws')}/opcua/v2`;
  const ws = new WebSocket(url, 'graphql-transport-ws', {
    headers: { authorization: e.auth },
    rejectUnauthorized: false,
  });
  const byId = new Map<string, any[]>();
  let acked = false;
  ws.on('message', (data) => {
    const m = JSON.parse(String(data)) as { type: string; id?: string; payload?: any };
    if (m.type === 'connection_ack') acked = true;
    if ((m.type === 'next' || m.type === 'error') && m.id) {
      let list = byId.get(m.id);
      if (!list) byId.set(m.id, (list = []));
      list.push(m.type === 'next' ? m.payload : { errors: m.payload });
    }
  });
  await new Promise<void>((resolve, reject) => {
    ws.once('open', () => resolve());
    ws.once('error', reject);
  });
  ws.send(JSON.stringify({ type: 'connection_init', payload: {} }));
  await eventually(() => acked, 5000, 'connection_ack');
  let n = 0;
  return {
    /** Starts a subscription; answers the list its results are pushed to. */
    subscribe(query: string): any[] {
      const id = String(++n);
      const list: any[] = [];
      byId.set(id, list);
      ws.send(JSON.stringify({ id, type: 'subscribe', payload: { query } }));
      return list;
    },
    close: () => ws.close(),
  };
}
