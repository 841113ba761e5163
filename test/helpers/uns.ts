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
import { unsConfigWith, type UnsConfig } from '../../src/uns/options.js';
import { startUns, type UnsService } from '../../src/uns/service.js';
import { http, type HttpReply } from './edge.js';

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
