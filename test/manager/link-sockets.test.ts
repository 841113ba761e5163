/**
 * Bridged WebSockets on the manager's end of the link (src/manager/link/sockets.ts), with
 * stand-in sockets for the edge's link and the browser: `wsopen` and the messages held until the
 * edge's `wsup`; messages both ways as binary frames; the CSRF check of the first message; the
 * bounds per device and per user (1013); an older edge (4501); the link's end (4503).
 */
import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import { EventEmitter } from 'node:events';
import pino from 'pino';
import type { WebSocket } from 'ws';
import { LinkHub } from '../../src/manager/link/hub.js';
import type { FleetService } from '../../src/manager/fleet/service.js';
import {
  LINK_FEATURE_SOCKETS,
  LINK_SOCKET_CLOSE_OFFLINE,
  bodyFrame,
  parseBodyFrame,
  type LinkMessage,
} from '../../src/kernel/link/protocol.js';
import type { SocketRequest } from '../../src/manager/link/sockets.js';

class FakeSocket extends EventEmitter {
  readonly OPEN = 1;
  readyState = 1;
  bufferedAmount = 0;
  readonly sent: LinkMessage[] = [];
  readonly frames: Buffer[] = [];
  readonly texts: string[] = [];
  closed: { code: number; reason: string } | null = null;
  send(data: string | Buffer, options?: { binary?: boolean }) {
    if (typeof data === 'string') this.sent.push(JSON.parse(data) as LinkMessage);
    else if (options?.binary === false) this.texts.push(data.toString('utf8'));
    else this.frames.push(data);
  }
  close(code = 1005, reason = '') {
    if (this.readyState === 3) return;
    this.readyState = 3;
    this.closed = { code, reason };
    this.emit('close', code, Buffer.from(reason));
  }
  terminate() {
    this.close(1006);
  }
  pause() {}
  resume() {}
  /** A message from the other end. */
  from(m: LinkMessage | Buffer | string) {
    if (Buffer.isBuffer(m)) this.emit('message', m, true);
    else if (typeof m === 'string') this.emit('message', Buffer.from(m), false);
    else this.emit('message', Buffer.from(JSON.stringify(m)), false);
  }
}

const fleet = {
  linkUp: async () => 'connection',
  linkDown: async () => undefined,
  recordHeartbeats: async () => undefined,
} as unknown as FleetService;
const hub = new LinkHub({
  fleet,
  logger: pino({ level: 'silent' }),
  heartbeatMs: 60_000,
  bridgeTimeoutMs: 5000,
  maxPendingPerDevice: 4,
  maxLinks: 10,
  maxSocketsPerDevice: 2,
  maxSocketsPerUser: 2,
});
after(() => hub.close());

async function linked(deviceId: string, features: string[] | null = [LINK_FEATURE_SOCKETS]) {
  const link = new FakeSocket();
  const accepted = hub.accept(deviceId, link as unknown as WebSocket, null);
  link.from({
    t: 'hello',
    version: '4.4.0',
    millwright: 'test',
    host: {},
    ...(features ? { features } : {}),
  });
  await accepted;
  return link;
}

const request = (owner = 'token:a', checkInit: (p: unknown) => void = () => {}): SocketRequest => ({
  path: '/devicehub/v2',
  headers: { authorization: 'Basic x' },
  protocol: 'graphql-transport-ws',
  actor: {
    role: 'viewer',
    subject: owner,
    user: null,
    companyId: null,
    projectId: null,
    requestId: null,
  },
  owner,
  checkInit,
});

function open(deviceId: string, req = request()) {
  const browser = new FakeSocket();
  hub.openSocket(deviceId, req, browser as unknown as WebSocket);
  return browser;
}
const opened = (link: FakeSocket) =>
  link.sent.filter((m) => m.t === 'wsopen').at(-1) as Extract<LinkMessage, { t: 'wsopen' }>;
const INIT = JSON.stringify({ type: 'connection_init', payload: {} });

test('wsopen, messages held until wsup, then relayed both ways; closing either side closes the other', async () => {
  const link = await linked('dev-relay');
  const browser = open('dev-relay');
  const m = opened(link);
  assert.equal(m.path, '/devicehub/v2');
  assert.deepEqual(m.protocols, ['graphql-transport-ws']);
  assert.equal(m.actor?.role, 'viewer');
  browser.from(INIT);
  assert.equal(link.frames.length, 0, 'held until the edge opened its side');
  link.from({ t: 'wsup', id: m.id, protocol: 'graphql-transport-ws' });
  assert.equal(link.frames.length, 1);
  const frame = parseBodyFrame(link.frames[0]!)!;
  assert.equal(frame.id, m.id);
  assert.equal(frame.chunk.toString(), INIT);
  link.from(bodyFrame(m.id, Buffer.from('{"type":"connection_ack"}')));
  assert.deepEqual(browser.texts, ['{"type":"connection_ack"}']);
  // The edge closes: the browser's socket closes with its code.
  link.from({ t: 'wsclose', id: m.id, code: 4403, reason: 'Forbidden' });
  assert.deepEqual(browser.closed, { code: 4403, reason: 'Forbidden' });
  assert.equal(hub.sockets, 0);
  // The browser closes: the edge hears wsclose.
  const second = open('dev-relay');
  const m2 = opened(link);
  second.close(1000, 'bye');
  assert.deepEqual(link.sent.at(-1), { t: 'wsclose', id: m2.id, code: 1000, reason: 'bye' });
});

test('a first message that is not connection_init, or fails the CSRF check, closes 4403', async () => {
  const link = await linked('dev-csrf');
  const b1 = open('dev-csrf');
  b1.from('{"type":"subscribe","id":"1"}');
  assert.equal(b1.closed?.code, 4403);
  const b2 = open(
    'dev-csrf',
    request('token:a', () => {
      throw new Error('needs X-CSRF-Token');
    }),
  );
  const m = opened(link);
  b2.from(INIT);
  assert.equal(b2.closed?.code, 4403);
  assert.match(b2.closed!.reason, /X-CSRF-Token/);
  assert.deepEqual(link.sent.at(-1), { t: 'wsclose', id: m.id, code: 4403, reason: b2.closed!.reason });
  assert.equal(link.frames.length, 0, 'nothing reached the edge');
});

test('bounds: sockets per device and per user close 1013; binary messages 1003', async () => {
  await linked('dev-a');
  await linked('dev-b');
  const a1 = open('dev-a', request('token:u'));
  const b1 = open('dev-b', request('token:u'));
  // token:u holds two (the most per user), dev-b only one.
  const b2 = open('dev-b', request('token:u'));
  assert.equal(b2.closed?.code, 1013);
  assert.match(b2.closed!.reason, /you hold 2 bridged sockets/);
  // dev-a holds two (the most per device).
  const a2 = open('dev-a', request('token:v'));
  const a3 = open('dev-a', request('token:w'));
  assert.equal(a3.closed?.code, 1013);
  assert.match(a3.closed!.reason, /has 2 bridged sockets/);
  for (const s of [a1, b1, a2]) assert.equal(s.closed, null);
  a1.from(Buffer.from([1, 2]));
  assert.equal(a1.closed?.code, 1003);
  for (const s of [a2, b1]) s.close(1000);
  assert.equal(hub.sockets, 0);
});

test('an older edge (no sockets feature) closes 4501; the link ending closes 4503', async () => {
  await linked('dev-old', null);
  const old = open('dev-old');
  assert.equal(old.closed?.code, 4501);
  const offline = open('dev-none');
  assert.equal(offline.closed?.code, LINK_SOCKET_CLOSE_OFFLINE);
  const link = await linked('dev-drop');
  const browser = open('dev-drop');
  link.close(1006);
  assert.equal(browser.closed?.code, LINK_SOCKET_CLOSE_OFFLINE);
  assert.match(browser.closed!.reason, /went offline/);
});
