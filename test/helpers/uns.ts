/**
 * Starts the real unified namespace service on ephemeral ports (HTTPS, MQTT, MQTT over TLS) in a
 * fresh data directory, and talks to it as users do: the password grant, GraphQL over HTTPS, and
 * the `mqtt` npm client, through the clients of src/client/.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { IClientOptions, MqttClient } from 'mqtt';
import { connectMqtt as clientConnectMqtt, UnsClient } from '../../src/client/index.js';
import { unsConfigWith, type UnsConfig } from '../../src/uns/service.js';
import { openUnsDatabase, startUns, type UnsService } from '../../src/uns/service.js';
import { AccountRepository, AccountService, type Perm } from '../../src/uns/accounts/index.js';
import pino from 'pino';
import { http, type HttpReply } from './edge.js';
import { TEST_LOG_FORMAT } from './log-format.js';
import { eventually } from './util.js';

export const UNS_ADMIN_PASSWORD = 'uns-admin-password';
export const TOKEN_PATH = '/auth/realms/standalone/protocol/openid-connect/token';

export interface TestUns {
  uns: UnsService;
  url: string;
  mqttPort: number;
  mqttsPort: number;
  dataDir: string;
  call: (path: string, options?: Parameters<typeof http>[1]) => Promise<HttpReply>;
  stop(options?: { keepData?: boolean }): Promise<void>;
}

export async function startTestUns(overrides: Partial<UnsConfig> = {}): Promise<TestUns> {
  const dataDir = overrides.dataDir ?? mkdtempSync(join(tmpdir(), 'mw-uns-'));
  const uns = await startUns(
    unsConfigWith({
      host: '127.0.0.1',
      port: 0,
      mqttPort: 0,
      mqttsPort: 0,
      dataDir,
      adminPassword: UNS_ADMIN_PASSWORD,
      logLevel: 'warn',
      logFormat: TEST_LOG_FORMAT,
      authRateLimit: 10_000,
      ...overrides,
    }),
  );
  return {
    uns,
    url: uns.url,
    mqttPort: Number(new URL(uns.mqttUrl).port),
    mqttsPort: Number(new URL(uns.mqttsUrl).port),
    dataDir,
    call: (path, options) => http(`${uns.url}${path}`, options),
    async stop(options = {}) {
      await uns.close();
      if (!overrides.dataDir && !options.keepData) rmSync(dataDir, { recursive: true, force: true });
    },
  };
}

/** An access token from the password grant (client `ide-ui`, empty secret), by UnsClient. */
export async function unsToken(
  t: { url: string },
  username = 'admin',
  password = UNS_ADMIN_PASSWORD,
): Promise<string> {
  const client = new UnsClient({ url: t.url, username, password, insecure: true });
  try {
    return await client.token();
  } finally {
    client.close();
  }
}

/** UnsClient per base address and token, kept for the test file's life. */
const clients = new Map<string, UnsClient>();
function clientFor(url: string, token: string | null): UnsClient {
  const key = `${url} ${token ?? ''}`;
  let client = clients.get(key);
  if (!client) {
    client = new UnsClient({ url, insecure: true, ...(token ? { bearer: token } : {}) });
    clients.set(key, client);
  }
  return client;
}

/** Runs a GraphQL document at /mqtt/gql with UnsClient; throws on GraphQL errors. */
export async function gql(
  t: { url: string },
  token: string | null,
  query: string,
  variables?: Record<string, unknown>,
): Promise<any> {
  return clientFor(t.url, token).graphql(query, variables);
}

export function gqlRaw(
  t: { url: string },
  token: string | null,
  query: string,
  variables?: Record<string, unknown>,
): Promise<HttpReply> {
  return clientFor(t.url, token).graphqlRaw(query, variables, token ? {} : { auth: false });
}

export const ACCOUNT_FIELDS =
  'id username acType enabled clients{ id connected protoLevel remote lastSeen } rules{ id path perm }';

/** Creates an MQTT account with rules through GraphQL; answers its id. */
export async function createAccount(
  t: { url: string },
  token: string,
  username: string,
  password: string,
  rules: { path: string; perm: 'Sub' | 'Pub' | 'PubSub' }[],
): Promise<string> {
  const created = await gql(
    t,
    token,
    `mutation($u: String!, $p: String!) { createAccount(username: $u, password: $p, acType: "General", enabled: true) { id } }`,
    { u: username, p: password },
  );
  const id = created.createAccount.id as string;
  if (rules.length > 0) {
    await gql(
      t,
      token,
      `mutation($id: ID!, $r: [RuleInput!]!) { addAccountRules(accountId: $id, rules: $r) { id } }`,
      {
        id,
        r: rules,
      },
    );
  }
  return id;
}

/**
 * Connects with the `mqtt` client (the clients' `connectMqtt`, accepting the self-signed
 * certificate); resolves on CONNACK, rejects with a named error on refusal.
 */
export function connectMqtt(url: string, options: IClientOptions = {}): Promise<MqttClient> {
  return clientConnectMqtt(url, { rejectUnauthorized: false, ...options });
}

/** Resolves with the next message on `topic` (or any topic with `*`), rejects after `ms`. */
export function nextMessage(
  client: MqttClient,
  topic = '*',
  ms = 5000,
): Promise<{ topic: string; payload: string; retain: boolean; qos: number }> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      client.removeListener('message', on);
      reject(new Error(`no message on ${topic} within ${ms} ms`));
    }, ms);
    const on = (t: string, payload: Buffer, packet: { retain: boolean; qos: number }) => {
      if (topic !== '*' && t !== topic) return;
      clearTimeout(timer);
      client.removeListener('message', on);
      resolve({ topic: t, payload: payload.toString(), retain: packet.retain, qos: packet.qos });
    };
    client.on('message', on);
  });
}

/** Resolves when nothing arrives on `topic` for `ms`; rejects with the message otherwise. */
export function noMessage(client: MqttClient, topic = '*', ms = 300): Promise<void> {
  return nextMessage(client, topic, ms).then(
    (m) => Promise.reject(new Error(`unexpected message on ${m.topic}: ${m.payload}`)),
    () => undefined,
  );
}

/** Subscribes; answers the granted QoS, or 128 when the broker refused (SUBACK failure code). */
export function subscribe(client: MqttClient, topic: string, qos: 0 | 1 | 2 = 0): Promise<number> {
  return new Promise((resolve, reject) =>
    client.subscribe(topic, { qos }, (err, granted) => {
      const refused = (err as { packet?: { granted?: number[] } } | null)?.packet?.granted?.[0];
      if (refused !== undefined) return resolve(refused);
      if (err) return reject(err);
      resolve(granted?.[0]?.qos ?? -1);
    }),
  );
}

export function publish(
  client: MqttClient,
  topic: string,
  payload: string,
  opts: { qos?: 0 | 1 | 2; retain?: boolean } = {},
): Promise<void> {
  return new Promise((resolve, reject) =>
    client.publish(topic, payload, { qos: opts.qos ?? 0, retain: opts.retain ?? false }, (err) =>
      err ? reject(err) : resolve(),
    ),
  );
}

export function closed(client: MqttClient, ms = 5000): Promise<void> {
  return new Promise((resolve, reject) => {
    if (client.disconnected || !client.connected) return resolve();
    const timer = setTimeout(() => reject(new Error(`connection not closed within ${ms} ms`)), ms);
    client.once('close', () => {
      clearTimeout(timer);
      resolve();
    });
  });
}

export function end(client: MqttClient): Promise<void> {
  return new Promise((resolve) => client.end(true, {}, () => resolve()));
}

// ---------------------------------------------------------------------------------------------
// The UNS as its own process, and MQTT on the wire byte by byte (for attacks no client library
// would send).

/** `millwright uns` as a child process, on ephemeral ports, with one MQTT account. */
export interface UnsProcess {
  pid: number;
  url: string;
  mqttUrl: string;
  mqttPort: number;
  dataDir: string;
  output(): string;
  /** Resident set size of the process, bytes (from /proc). */
  rss(): number;
  alive(): boolean;
  /** Stops the process; its data directory is removed unless `keepData`. */
  stop(options?: { keepData?: boolean }): Promise<number | null>;
}

export const PROCESS_ACCOUNT = { username: 'dev1', password: 'dev1-password' };

export async function startUnsProcess(
  args: string[] = [],
  rules: string[] = ['#:PubSub'],
  /** The data directory of an earlier process (its account is kept): a restart. */
  reuseDataDir?: string,
): Promise<UnsProcess> {
  const { startCli, cleanEnv } = await import('./cli.js');
  const { readFileSync } = await import('node:fs');
  const dataDir = reuseDataDir ?? mkdtempSync(join(tmpdir(), 'mw-uns-proc-'));
  const env = cleanEnv({
    MILLWRIGHT_UNS_DATA_DIR: dataDir,
    MILLWRIGHT_UNS_ADMIN_PASSWORD: UNS_ADMIN_PASSWORD,
  });
  // The account as `millwright uns account create` makes it (the same stores, the same service),
  // in this process: a CLI process of its own costs seconds of CPU loading the services.
  if (!reuseDataDir) await createProcessAccount(dataDir, rules);
  const p = await startCli(
    [
      'uns',
      '--host',
      '127.0.0.1',
      '--port',
      '0',
      '--mqtt-port',
      '0',
      '--mqtts-port',
      '0',
      '--log-level',
      'info',
      ...args,
    ],
    // A loaded machine (tests of other files, benches) can take long to start a process.
    { env, timeoutMs: 120_000 },
  );
  const mqttUrl = p.ready.services.uns!.mqttUrl!;
  let exited = false;
  return {
    pid: p.pid,
    url: p.ready.services.uns!.url,
    mqttUrl,
    mqttPort: Number(new URL(mqttUrl).port),
    dataDir,
    output: p.output,
    rss() {
      const status = readFileSync(`/proc/${p.pid}/status`, 'utf8');
      return Number(/VmRSS:\s+(\d+) kB/.exec(status)![1]) * 1024;
    },
    alive() {
      if (exited) return false;
      try {
        process.kill(p.pid, 0);
        return true;
      } catch {
        return false;
      }
    },
    async stop(options = {}) {
      exited = true;
      const code = await p.stop();
      if (!options.keepData) rmSync(dataDir, { recursive: true, force: true });
      return code;
    },
  };
}

/** `millwright uns account create --username dev1 --password ... --rule ...` on `dataDir`. */
async function createProcessAccount(dataDir: string, rules: string[]): Promise<void> {
  const database = await openUnsDatabase({ dataDir });
  try {
    const accounts = new AccountService(new AccountRepository(database.db), pino({ level: 'silent' }));
    await accounts.refresh();
    await accounts.create({
      ...PROCESS_ACCOUNT,
      rules: rules.map((r) => {
        const i = r.lastIndexOf(':');
        return { path: r.slice(0, i), perm: r.slice(i + 1) as Perm };
      }),
      enabled: true,
    });
  } finally {
    await database.close();
  }
}

/** Waits until the process's output (its JSON log lines) contains `text`; answers those lines. */
export async function waitForLog(p: { output(): string }, text: string, ms = 5000): Promise<string[]> {
  const lines = () =>
    p
      .output()
      .split('\n')
      .filter((l) => l.includes(text));
  return eventually(() => lines().length > 0 && lines(), ms, `a log line with "${text}"`);
}

function mqttString(s: string | Buffer): Buffer {
  const b = typeof s === 'string' ? Buffer.from(s, 'utf8') : s;
  const len = Buffer.alloc(2);
  len.writeUInt16BE(b.length);
  return Buffer.concat([len, b]);
}

function remainingLength(n: number): Buffer {
  const out: number[] = [];
  do {
    let byte = n % 128;
    n = Math.floor(n / 128);
    if (n > 0) byte |= 0x80;
    out.push(byte);
  } while (n > 0);
  return Buffer.from(out);
}

/** One MQTT 3.1.1 packet: the fixed header's first byte and the rest. */
export function mqttPacket(first: number, body: Buffer): Buffer {
  return Buffer.concat([Buffer.from([first]), remainingLength(body.length), body]);
}

/** CONNECT (MQTT 3.1.1, clean session) with a user name and password. */
export function connectPacket(clientId: string, username: string, password: string, keepalive = 60): Buffer {
  const header = Buffer.concat([
    mqttString('MQTT'),
    Buffer.from([4, 0xc2, keepalive >> 8, keepalive & 0xff]),
  ]);
  return mqttPacket(
    0x10,
    Buffer.concat([header, mqttString(clientId), mqttString(username), mqttString(password)]),
  );
}

/** PUBLISH; `topic` as bytes so that invalid UTF-8 or NUL can be sent. */
export function publishPacket(
  topic: string | Buffer,
  payload: Buffer,
  qos: 0 | 1 | 2 = 0,
  messageId = 1,
): Buffer {
  const id = Buffer.alloc(qos > 0 ? 2 : 0);
  if (qos > 0) id.writeUInt16BE(messageId);
  return mqttPacket(0x30 | (qos << 1), Buffer.concat([mqttString(topic), id, payload]));
}

/** SUBSCRIBE to one filter. */
export function subscribePacket(filter: string | Buffer, qos: 0 | 1 = 0, messageId = 1): Buffer {
  const id = Buffer.alloc(2);
  id.writeUInt16BE(messageId);
  return mqttPacket(0x82, Buffer.concat([id, mqttString(filter), Buffer.from([qos])]));
}

/** A raw TCP MQTT connection: send bytes, read what comes back, see when it closes. */
export interface RawMqtt {
  socket: import('node:net').Socket;
  /** Every byte received so far. */
  received(): Buffer;
  /** The CONNACK return code (waits for it). */
  connack(ms?: number): Promise<number>;
  /** Resolves when the server closes the connection; rejects after `ms`. */
  closed(ms?: number): Promise<void>;
  isClosed(): boolean;
}

export async function rawMqtt(port: number): Promise<RawMqtt> {
  const { connect } = await import('node:net');
  const socket = connect({ host: '127.0.0.1', port });
  await new Promise<void>((resolve, reject) => {
    socket.once('connect', resolve);
    socket.once('error', reject);
  });
  socket.on('error', () => {});
  let buf = Buffer.alloc(0);
  let closed = false;
  const closeWaiters: (() => void)[] = [];
  const dataWaiters: (() => void)[] = [];
  socket.on('data', (d) => {
    buf = Buffer.concat([buf, d]);
    for (const w of dataWaiters.splice(0)) w();
  });
  socket.on('close', () => {
    closed = true;
    for (const w of [...closeWaiters.splice(0), ...dataWaiters.splice(0)]) w();
  });
  return {
    socket,
    received: () => buf,
    isClosed: () => closed,
    // Generous: the CONNACK only has to come (a password check is tens of ms of scrypt, and a
    // CI machine running four test files at once gave the UNS under attack less than that).
    async connack(ms = 20_000) {
      const until = Date.now() + ms;
      while (buf.length < 4) {
        if (closed) throw new Error('closed before CONNACK');
        if (Date.now() > until) throw new Error('no CONNACK in time');
        await new Promise<void>((r) => {
          dataWaiters.push(r);
          setTimeout(r, 100);
        });
      }
      if (buf[0] !== 0x20) throw new Error(`not a CONNACK: ${buf.subarray(0, 4).toString('hex')}`);
      return buf[3]!;
    },
    closed(ms = 5000) {
      if (closed) return Promise.resolve();
      return new Promise((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error(`connection not closed within ${ms} ms`)), ms);
        closeWaiters.push(() => {
          clearTimeout(timer);
          resolve();
        });
      });
    },
  };
}
