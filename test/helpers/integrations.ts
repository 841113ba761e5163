/**
 * Shared scaffolding of the integration tests and bench: an edge with an admin token and `/cc/v2`
 * helpers, test certificates made with openssl, a TCP proxy, the MySQL and RabbitMQ checks and a
 * private nats-server. The private Mosquitto is in peers/mosquitto.ts, the waits in util.ts.
 */
import assert from 'node:assert/strict';
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { chmodSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { Socket, type AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { bootstrapAdmin, clientToken, graphql, startTestEdge, type TestEdge } from './edge.js';
import type { EdgeConfig } from '../../src/edge/service.js';
import { eventually, freePort, have, portOpen } from './util.js';

export const CC = '/cc/v2';

export interface IntegEdge {
  t: TestEdge;
  auth: string;
  gql(query: string, variables?: Record<string, unknown>): Promise<any>;
  ok(query: string, variables?: Record<string, unknown>): Promise<any>;
  refused(query: string, variables: Record<string, unknown>, ...patterns: RegExp[]): Promise<string>;
  createInstance(name: string, providerId: string, config: Record<string, unknown>): Promise<string>;
  subscribe(
    instanceId: string,
    isLocalToRemote: boolean,
    localName: string,
    remoteName: string,
  ): Promise<string>;
  status(instanceId: string): Promise<any>;
  waitState(instanceId: string, state: string, ms?: number): Promise<any>;
  stop(): Promise<void>;
}

export const STATUS = `query($in: GetInstanceStatusRequest!) { GetInstanceStatus(input: $in) {
  InstanceID InstanceState Reason LastError ProviderName ExecCommandEnabled
  Counters { Sent Received Queued Enqueued Dropped Malformed }
  Queue { Depth Bytes FileBytes OldestMessageAgeMs MaxBytes MaxMessages FullPolicy Dropped }
} }`;

export async function startIntegEdge(overrides: Partial<EdgeConfig> = {}): Promise<IntegEdge> {
  const t = await startTestEdge(overrides);
  const bearer = await bootstrapAdmin(t);
  const { token } = await clientToken(t, bearer);
  const auth = `Bearer ${token}`;
  const gql = async (query: string, variables?: Record<string, unknown>) => {
    const r = await graphql(t, CC, auth, query, variables);
    return { status: r.status, ...r.body };
  };
  const ok = async (query: string, variables?: Record<string, unknown>) => {
    const body = await gql(query, variables);
    assert.equal(body.errors, undefined, JSON.stringify(body.errors));
    assert.equal(body.status, 200);
    return body.data;
  };
  const e: IntegEdge = {
    t,
    auth,
    gql,
    ok,
    async refused(query, variables, ...patterns) {
      const body = await gql(query, variables);
      assert.ok(body.errors?.length, `expected an error, got ${JSON.stringify(body.data)}`);
      const message = body.errors[0].message as string;
      for (const p of patterns) assert.match(message, p);
      return message;
    },
    async createInstance(name, providerId, config) {
      const d = await ok(
        `mutation($input: CreateInstanceRequest!) { CreateInstance(input: $input) { ID } }`,
        { input: { Name: name, ProviderID: providerId, Config: config } },
      );
      return d.CreateInstance.ID as string;
    },
    async subscribe(instanceId, isLocalToRemote, localName, remoteName) {
      const d = await ok(
        `mutation($input: CreateSubscriptionRequest!) { CreateSubscription(input: $input) { TopicID } }`,
        {
          input: {
            InstanceID: instanceId,
            IsLocalToRemote: isLocalToRemote,
            LocalName: localName,
            RemoteName: remoteName,
          },
        },
      );
      return d.CreateSubscription.TopicID as string;
    },
    async status(instanceId) {
      return (await ok(STATUS, { in: { InstanceID: instanceId } })).GetInstanceStatus;
    },
    async waitState(instanceId, state, ms = 15_000) {
      let last: any;
      await eventually(
        async () => {
          last = await e.status(instanceId);
          return last.InstanceState === state;
        },
        ms,
        `instance ${state} (last: ${JSON.stringify(last)})`,
      ).catch((err: Error) => {
        throw new Error(`${err.message}; last status ${JSON.stringify(last)}`);
      });
      return last;
    },
    stop: () => t.stop(),
  };
  return e;
}

// ---------------------------------------------------------------------------------------------
// Certificates

export interface TestPki {
  dir: string;
  ca: string;
  caKey: string;
  serverCert: string;
  serverKey: string;
  clientCert: string;
  clientKey: string;
  /** File paths of the same, for brokers. */
  files: { ca: string; serverCert: string; serverKey: string; clientCert: string; clientKey: string };
  dispose(): void;
}

/** A CA, a server certificate for localhost / 127.0.0.1 and a client certificate (CN = `clientCn`). */
export function makePki(clientCn = 'millwright-test-client'): TestPki {
  const dir = mkdtempSync(join(tmpdir(), 'mw-pki-'));
  const f = (n: string) => join(dir, n);
  const ssl = (...args: string[]) => {
    const r = spawnSync('openssl', args, { cwd: dir, encoding: 'utf8' });
    if (r.status !== 0) throw new Error(`openssl ${args.join(' ')}: ${r.stderr}`);
  };
  ssl(
    'req',
    '-x509',
    '-newkey',
    'rsa:2048',
    '-nodes',
    '-days',
    '2',
    '-subj',
    '/CN=Millwright Test CA',
    '-keyout',
    'ca.key',
    '-out',
    'ca.pem',
  );
  writeFileSync(f('server.ext'), 'subjectAltName=DNS:localhost,IP:127.0.0.1\nextendedKeyUsage=serverAuth\n');
  ssl(
    'req',
    '-newkey',
    'rsa:2048',
    '-nodes',
    '-subj',
    '/CN=localhost',
    '-keyout',
    'server.key',
    '-out',
    'server.csr',
  );
  ssl(
    'x509',
    '-req',
    '-in',
    'server.csr',
    '-CA',
    'ca.pem',
    '-CAkey',
    'ca.key',
    '-CAcreateserial',
    '-days',
    '2',
    '-extfile',
    'server.ext',
    '-out',
    'server.pem',
  );
  writeFileSync(f('client.ext'), 'extendedKeyUsage=clientAuth\n');
  ssl(
    'req',
    '-newkey',
    'rsa:2048',
    '-nodes',
    '-subj',
    `/CN=${clientCn}`,
    '-keyout',
    'client.key',
    '-out',
    'client.csr',
  );
  ssl(
    'x509',
    '-req',
    '-in',
    'client.csr',
    '-CA',
    'ca.pem',
    '-CAkey',
    'ca.key',
    '-CAcreateserial',
    '-days',
    '2',
    '-extfile',
    'client.ext',
    '-out',
    'client.pem',
  );
  // Readable by a broker that dropped root for its own user (test material only).
  chmodSync(dir, 0o755);
  for (const n of readdirSync(dir)) chmodSync(f(n), 0o644);
  const read = (n: string) => spawnSync('cat', [f(n)], { encoding: 'utf8' }).stdout;
  return {
    dir,
    ca: read('ca.pem'),
    caKey: read('ca.key'),
    serverCert: read('server.pem'),
    serverKey: read('server.key'),
    clientCert: read('client.pem'),
    clientKey: read('client.key'),
    files: {
      ca: f('ca.pem'),
      serverCert: f('server.pem'),
      serverKey: f('server.key'),
      clientCert: f('client.pem'),
      clientKey: f('client.key'),
    },
    dispose: () => rmSync(dir, { recursive: true, force: true }),
  };
}

/**
 * An OPC UA application certificate (`applicationUri` in its SAN, the key usages OPC UA asks for,
 * key identifiers) signed by the CA of `pki`: its file alone (`cert`), the file with the CA after
 * it (`chain`, what a server that sends its chain has) and the key.
 */
export function signOpcuaServerCertificate(
  pki: TestPki,
  applicationUri: string,
): { cert: string; chain: string; key: string } {
  const f = (n: string) => join(pki.dir, n);
  writeFileSync(
    f('opcua.ext'),
    [
      `subjectAltName=URI:${applicationUri},DNS:localhost,IP:127.0.0.1`,
      'basicConstraints=CA:FALSE',
      'keyUsage=critical,digitalSignature,nonRepudiation,keyEncipherment,dataEncipherment',
      'extendedKeyUsage=serverAuth,clientAuth',
      'subjectKeyIdentifier=hash',
      'authorityKeyIdentifier=keyid,issuer',
      '',
    ].join('\n'),
  );
  const ssl = (...args: string[]) => {
    const r = spawnSync('openssl', args, { cwd: pki.dir, encoding: 'utf8' });
    if (r.status !== 0) throw new Error(`openssl ${args.join(' ')}: ${r.stderr}`);
  };
  ssl(
    ...['req', '-newkey', 'rsa:2048', '-nodes', '-subj', '/CN=opcua-ca-server/O=Millwright Test'],
    ...['-keyout', 'opcua.key', '-out', 'opcua.csr'],
  );
  ssl(
    ...['x509', '-req', '-in', 'opcua.csr', '-CA', 'ca.pem', '-CAkey', 'ca.key', '-CAcreateserial'],
    ...['-days', '2', '-extfile', 'opcua.ext', '-out', 'opcua.pem'],
  );
  // The same certificate followed by its CA: what a server that sends its chain has in its file.
  writeFileSync(f('opcua-chain.pem'), readFileSync(f('opcua.pem'), 'utf8') + pki.ca);
  return { cert: f('opcua.pem'), chain: f('opcua-chain.pem'), key: f('opcua.key') };
}

// ---------------------------------------------------------------------------------------------
// A TCP proxy: a system service (RabbitMQ, PostgreSQL) made unreachable and reachable again.

import { createServer as createTcpServer, connect as tcpConnect, type Server as TcpServer } from 'node:net';

export class TcpProxy {
  port = 0;
  #server: TcpServer | undefined;
  #sockets = new Set<Socket>();

  constructor(
    readonly targetPort: number,
    readonly targetHost = '127.0.0.1',
  ) {}

  async start(): Promise<number> {
    const server = createTcpServer((client) => {
      const upstream = tcpConnect(this.targetPort, this.targetHost);
      this.#sockets.add(client);
      this.#sockets.add(upstream);
      const end = () => {
        client.destroy();
        upstream.destroy();
        this.#sockets.delete(client);
        this.#sockets.delete(upstream);
      };
      client.on('error', end).on('close', end);
      upstream.on('error', end).on('close', end);
      client.pipe(upstream);
      upstream.pipe(client);
    });
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(this.port, '127.0.0.1', () => resolve());
    });
    this.port = (server.address() as AddressInfo).port;
    this.#server = server;
    return this.port;
  }

  /** Refuses new connections and cuts the open ones. */
  async stop(): Promise<void> {
    const s = this.#server;
    this.#server = undefined;
    for (const sock of this.#sockets) sock.destroy();
    this.#sockets.clear();
    if (s) await new Promise<void>((r) => s.close(() => r()));
  }
}

// ---------------------------------------------------------------------------------------------
// MySQL / MariaDB, RabbitMQ, nats-server

import mysql from 'mysql2/promise';

export const mysqlUrl =
  process.env.MILLWRIGHT_TEST_MYSQL_URL ?? 'mysql://millwright:millwright@127.0.0.1:3306/millwright_test';

/**
 * The URL of the test MySQL/MariaDB database when it answers; otherwise, on a host where the
 * server runs and `mysql` can log in as root over the socket (as on the CI machine, see
 * `.ci/run`), the database and user are made first. Null (after printing why) when neither
 * works; with `CI=true` it throws.
 */
export async function mysqlTestUrl(): Promise<string | null> {
  const tryConnect = async () => {
    const c = await mysql.createConnection({ uri: mysqlUrl, connectTimeout: 3000 });
    await c.end();
  };
  try {
    await tryConnect();
    return mysqlUrl;
  } catch (first) {
    const u = new URL(mysqlUrl);
    const db = u.pathname.slice(1);
    const user = decodeURIComponent(u.username);
    const pass = decodeURIComponent(u.password);
    const setup = spawnSync(
      'mysql',
      [
        '-uroot',
        '-e',
        `create database if not exists \`${db}\`; create user if not exists '${user}'@'127.0.0.1' identified by '${pass}'; create user if not exists '${user}'@'localhost' identified by '${pass}'; grant all on \`${db}\`.* to '${user}'@'127.0.0.1'; grant all on \`${db}\`.* to '${user}'@'localhost';`,
      ],
      { encoding: 'utf8' },
    );
    try {
      if (setup.status !== 0) throw first;
      await tryConnect();
      return mysqlUrl;
    } catch (err) {
      const detail = err instanceof Error ? err.message : String(err);
      if (process.env.CI === 'true')
        throw new Error(`MySQL/MariaDB is required in CI but unreachable at ${mysqlUrl}: ${detail}`);
      console.log(
        `# skipping MySQL suite: unreachable at ${mysqlUrl} (${detail}); set MILLWRIGHT_TEST_MYSQL_URL`,
      );
      return null;
    }
  }
}

export const amqpUrl = process.env.MILLWRIGHT_TEST_AMQP_URL ?? 'amqp://guest:guest@127.0.0.1:5672';

/** Null when RabbitMQ answers at `amqpUrl`, else the reason to skip (throws on CI). */
export async function amqpUnreachable(): Promise<string | null> {
  const port = Number(new URL(amqpUrl).port || 5672);
  if (await portOpen(port, new URL(amqpUrl).hostname)) return null;
  if (process.env.CI === 'true') throw new Error(`RabbitMQ is required in CI but unreachable at ${amqpUrl}`);
  return `RabbitMQ unreachable at ${amqpUrl}; set MILLWRIGHT_TEST_AMQP_URL`;
}

/** A private nats-server (JetStream on, store in a temporary directory) on a free port. */
export class NatsServer {
  readonly dir = mkdtempSync(join(tmpdir(), 'mw-nats-'));
  port = 0;
  #proc: ChildProcess | undefined;

  async start(): Promise<number> {
    if (!this.port) this.port = await freePort();
    const bin = have('nats-server') ? 'nats-server' : '/usr/sbin/nats-server';
    this.#proc = spawn(bin, ['-a', '127.0.0.1', '-p', String(this.port), '-js', '-sd', this.dir], {
      stdio: 'ignore',
    });
    await eventually(() => portOpen(this.port), 10_000, `nats-server on ${this.port}`);
    return this.port;
  }

  async stop(): Promise<void> {
    const p = this.#proc;
    this.#proc = undefined;
    if (p && p.exitCode === null) {
      const done = new Promise((r) => p.once('exit', r));
      p.kill('SIGTERM');
      await done;
    }
  }

  async dispose(): Promise<void> {
    await this.stop();
    rmSync(this.dir, { recursive: true, force: true });
  }
}
