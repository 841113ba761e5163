/**
 * Fuzzing a real `millwright uns` process (issue 10): malformed JSON bodies, GraphQL documents and
 * query strings over HTTPS, and MQTT packets (raw bytes, and well-formed packets with fuzzed
 * fields after a valid CONNECT) to the MQTT port. After every case: no 5xx, an answer in time;
 * after every target: the process alive, `/health` answering, resident memory under the bound,
 * a real MQTT client still served, no error-level log line.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import {
  PROCESS_ACCOUNT,
  TOKEN_PATH,
  connectMqtt,
  connectPacket,
  end,
  mqttPacket,
  nextMessage,
  publish,
  startUnsProcess,
  subscribe,
  unsToken,
  type UnsProcess,
} from '../helpers/uns.js';
import {
  ANSWER_MS,
  checkHttp,
  checkProcess,
  errorLines,
  exchange,
  httpRequest,
  params,
  tokenSoup,
} from './support.js';

let p: UnsProcess;
let port: number;
let auth: string;

before(async () => {
  p = await startUnsProcess(['--http-headers-timeout', '2000', '--http-request-timeout', '4000']);
  port = Number(new URL(p.url).port);
  auth = `Bearer ${await unsToken(p)}`;
});
after(() => p.stop());

async function alive(): Promise<void> {
  await checkProcess(p.pid, port, p.output);
  const c = await connectMqtt(p.mqttUrl, {
    username: PROCESS_ACCOUNT.username,
    password: PROCESS_ACCOUNT.password,
  });
  try {
    assert.equal(await subscribe(c, 'fuzz/alive'), 0);
    const got = nextMessage(c, 'fuzz/alive', 5000);
    await publish(c, 'fuzz/alive', 'yes');
    assert.equal((await got).payload, 'yes');
  } finally {
    await end(c);
  }
}

const jsonish = fc.oneof(
  fc.json({ maxDepth: 4 }),
  tokenSoup(['{', '}', '[', ']', '"', ':', ',', '1e309', 'null', '"query"', '"variables"', '\\']),
  fc.string({ unit: 'binary', maxLength: 200 }),
  fc.integer({ min: 1, max: 5000 }).map((n) => '['.repeat(n) + ']'.repeat(n)),
);

/** A variable-length MQTT string. */
const mqttString = (s: Buffer) => {
  const len = Buffer.alloc(2);
  len.writeUInt16BE(Math.min(s.length, 0xffff));
  return Buffer.concat([len, s]);
};

describe('UNS fuzz', () => {
  test('malformed JSON bodies at /mqtt/gql and the token endpoint', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.constantFrom('/mqtt/gql', TOKEN_PATH),
        jsonish,
        fc.constantFrom(
          'application/json',
          'application/x-www-form-urlencoded',
          'application/graphql',
          'text/plain',
        ),
        async (path, body, type) => {
          await checkHttp(
            port,
            httpRequest('POST', path, { authorization: auth, 'content-type': type }, body),
            () => `${path} ${type} ${JSON.stringify(body).slice(0, 300)}`,
          );
        },
      ),
      params(),
    );
    await alive();
  });

  test('GraphQL documents at /mqtt/gql', async () => {
    const doc = tokenSoup(
      [
        '{',
        '}',
        '(',
        ')',
        ':',
        '!',
        '$',
        '...',
        'query',
        'mutation',
        'subscription',
        'fragment',
        ' on ',
        'broker',
        'mqttPort',
        'account',
        'accounts',
        'id',
        'topics',
        '__typename',
        '__schema',
        'types',
        '"x"',
        '1e309',
        ' ',
        '#',
      ],
      60,
    );
    await fc.assert(
      fc.asyncProperty(
        doc,
        fc.option(fc.jsonValue({ maxDepth: 3 }), { nil: undefined }),
        fc.boolean(),
        async (query, variables, get) => {
          const request = get
            ? httpRequest('GET', `/mqtt/gql?query=${encodeURIComponent(query)}`, { authorization: auth })
            : httpRequest(
                'POST',
                '/mqtt/gql',
                { authorization: auth, 'content-type': 'application/json' },
                JSON.stringify({ query, variables }),
              );
          await checkHttp(port, request, () => JSON.stringify({ query, variables, get }));
        },
      ),
      params(),
    );
    await alive();
  });

  test('query strings', async () => {
    const pair = fc.tuple(
      fc.oneof(
        fc.constantFrom('query', 'variables', 'operationName', 'limit', 'first', 'after'),
        fc.string({ maxLength: 8 }),
      ),
      fc.oneof(fc.constantFrom('1e309', 'Infinity', '%', '%zz', '{}', '[', ''), fc.string({ maxLength: 20 })),
    );
    await fc.assert(
      fc.asyncProperty(
        fc.constantFrom(
          '/mqtt/gql',
          '/health',
          TOKEN_PATH,
          '/auth/realms/standalone/.well-known/openid-configuration',
        ),
        fc.array(pair, { maxLength: 5 }),
        async (path, pairs) => {
          const qs = pairs.map(([k, v]) => `${encodeURIComponent(k)}=${encodeURIComponent(v)}`).join('&');
          await checkHttp(
            port,
            httpRequest('GET', `${path}?${qs}`, { authorization: auth }),
            () => `${path}?${qs}`,
          );
        },
      ),
      params(),
    );
    await alive();
  });

  test('MQTT packets: raw bytes, and fuzzed packets after a valid CONNECT', async () => {
    const field = fc.oneof(
      fc.uint8Array({ maxLength: 40 }).map((a) => Buffer.from(a)),
      fc.constantFrom('a/b', '#', '+', 'a/#/b', '', '\u0000', '$SYS/x').map((s) => Buffer.from(s)),
    );
    const packet = fc.oneof(
      fc.uint8Array({ minLength: 1, maxLength: 64 }).map((a) => Buffer.from(a)),
      // PUBLISH with any flags (QoS 3, DUP on QoS 0), any topic, an id or none.
      fc
        .tuple(fc.integer({ min: 0, max: 15 }), field, fc.uint8Array({ maxLength: 20 }))
        .map(([flags, topic, rest]) =>
          mqttPacket(0x30 | flags, Buffer.concat([mqttString(topic), Buffer.from(rest)])),
        ),
      // SUBSCRIBE / UNSUBSCRIBE with fuzzed flags, ids, filters and options.
      fc
        .tuple(fc.constantFrom(0x80, 0x82, 0xa0, 0xa2), fc.nat(0xffff), field, fc.nat(255))
        .map(([first, id, filter, qos]) => {
          const idb = Buffer.alloc(2);
          idb.writeUInt16BE(id);
          return mqttPacket(first, Buffer.concat([idb, mqttString(filter), Buffer.from([qos])]));
        }),
      // PUBACK..PUBCOMP, PINGREQ, DISCONNECT, a second CONNECT, AUTH (MQTT 5 only), reserved types.
      fc
        .tuple(
          fc.constantFrom(0x40, 0x50, 0x62, 0x70, 0xc0, 0xe0, 0x10, 0xf0, 0x00),
          fc.uint8Array({ maxLength: 6 }),
        )
        .map(([first, body]) => mqttPacket(first, Buffer.from(body))),
      // A remaining length that lies (longer than what follows, or malformed varint).
      fc.constantFrom(
        Buffer.from([0x30, 0xff, 0xff, 0xff, 0xff, 0x7f]),
        Buffer.from([0x30, 0x80]),
        Buffer.from([0x82, 0x05, 0x00]),
      ),
    );
    const connect = connectPacket('fuzzer', PROCESS_ACCOUNT.username, PROCESS_ACCOUNT.password);
    await fc.assert(
      fc.asyncProperty(
        fc.boolean(),
        fc.array(packet, { minLength: 1, maxLength: 6 }),
        async (connectFirst, packets) => {
          const bytes = Buffer.concat([
            ...(connectFirst ? [connect] : []),
            ...packets,
            mqttPacket(0xc0, Buffer.alloc(0)),
          ]);
          // The broker answers (CONNACK, SUBACK, PINGRESP...) or closes; the exchange is bounded.
          const r = await exchange({ port: p.mqttPort, tls: false }, bytes, {
            ms: 1000,
            until: (b) => b.includes(0xd0),
          });
          assert.ok(
            p.alive(),
            `the UNS died after ${bytes.toString('hex')} (${r.received.length} bytes back):\n${p.output().slice(-2000)}`,
          );
          // Meanwhile a new client is answered in time.
          const fresh = await exchange({ port: p.mqttPort, tls: false }, connect, {
            ms: ANSWER_MS,
            until: (b) => b.length >= 4,
          });
          assert.equal(fresh.received[0], 0x20, `no CONNACK in time after ${bytes.toString('hex')}`);
        },
      ),
      params(),
    );
    await alive();
  });

  test('no error-level log line was written during the fuzzing', () => {
    assert.deepEqual(errorLines(p.output()), []);
  });
});
