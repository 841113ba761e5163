/**
 * The manager's end of the link with a stand-in socket: the welcome offers the one-frame answer,
 * a small answer in one frame comes back whole (and an oversized one is refused), and the
 * streamed answer of an older edge (`res`, body frames, `end`) still works.
 */
import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import { EventEmitter } from 'node:events';
import type { Readable } from 'node:stream';
import pino from 'pino';
import type { WebSocket } from 'ws';
import { LinkHub } from '../../src/manager/link/hub.js';
import type { FleetService } from '../../src/manager/fleet/service.js';
import {
  LINK_FEATURE_INLINE,
  LINK_INLINE_MAX,
  bodyFrame,
  type LinkMessage,
} from '../../src/kernel/link/protocol.js';

class FakeSocket extends EventEmitter {
  readonly OPEN = 1;
  readyState = 1;
  bufferedAmount = 0;
  readonly sent: LinkMessage[] = [];
  send(data: string | Buffer) {
    if (typeof data === 'string') this.sent.push(JSON.parse(data) as LinkMessage);
  }
  close() {
    this.readyState = 3;
    this.emit('close', 1000, Buffer.from(''));
  }
  terminate() {
    this.close();
  }
  pause() {}
  resume() {}
  /** A message from the edge. */
  edge(m: LinkMessage | Buffer) {
    if (Buffer.isBuffer(m)) this.emit('message', m, true);
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
  maxSocketsPerDevice: 4,
  maxSocketsPerUser: 4,
});
after(() => hub.close());

async function linked(deviceId: string) {
  const socket = new FakeSocket();
  const accepted = hub.accept(deviceId, socket as unknown as WebSocket, null);
  socket.edge({ t: 'hello', version: '4.4.0', millwright: 'test', host: {} });
  await accepted;
  return socket;
}
const lastReq = (s: FakeSocket) => s.sent.filter((m) => m.t === 'req').at(-1) as { id: number };
const read = async (body: Readable | Buffer) => {
  if (Buffer.isBuffer(body)) return body;
  const chunks: Buffer[] = [];
  for await (const c of body) chunks.push(c as Buffer);
  return Buffer.concat(chunks);
};

test('the welcome offers the one-frame answer; a small answer comes back whole', async () => {
  const s = await linked('dev-inline');
  const welcome = s.sent.find((m) => m.t === 'welcome') as Extract<LinkMessage, { t: 'welcome' }>;
  assert.deepEqual(welcome.features, [LINK_FEATURE_INLINE]);
  const answer = hub.request('dev-inline', { method: 'GET', path: '/v', headers: {}, body: null });
  const { id } = lastReq(s);
  s.edge({
    t: 'res',
    id,
    status: 200,
    headers: { 'content-type': 'application/json' },
    body: Buffer.from('{"v":1}').toString('base64'),
  });
  const res = await answer;
  assert.equal(res.status, 200);
  assert.ok(Buffer.isBuffer(res.body));
  assert.equal(res.body.toString(), '{"v":1}');
  // Nothing is left pending: a late `end` for that id is ignored, and four more fit.
  s.edge({ t: 'end', id });
  const more = [1, 2, 3, 4].map(() =>
    hub.request('dev-inline', { method: 'GET', path: '/v', headers: {}, body: null }),
  );
  for (const m of s.sent.filter((x) => x.t === 'req').slice(-4) as { id: number }[]) {
    s.edge({ t: 'res', id: m.id, status: 204, headers: {}, body: '' });
  }
  assert.deepEqual(
    (await Promise.all(more)).map((r) => r.status),
    [204, 204, 204, 204],
  );
});

test('an inline body over the bound is refused (502)', async () => {
  const s = await linked('dev-big');
  const answer = hub.request('dev-big', { method: 'GET', path: '/v', headers: {}, body: null });
  const { id } = lastReq(s);
  s.edge({
    t: 'res',
    id,
    status: 200,
    headers: {},
    body: Buffer.alloc(LINK_INLINE_MAX + 1).toString('base64'),
  });
  await assert.rejects(answer, (err: { status?: number }) => err.status === 502);
});

test('an older edge answers in frames: res, body slices, end', async () => {
  const s = await linked('dev-streamed');
  const answer = hub.request('dev-streamed', { method: 'GET', path: '/v', headers: {}, body: null });
  const { id } = lastReq(s);
  s.edge({ t: 'res', id, status: 200, headers: { 'content-type': 'text/plain' } });
  const res = await answer;
  s.edge(bodyFrame(id, Buffer.from('hello ')));
  s.edge(bodyFrame(id, Buffer.from('world')));
  s.edge({ t: 'end', id });
  assert.equal((await read(res.body)).toString(), 'hello world');
});

test('an edge that does not answer in time: 504 to the caller, cancel to the edge', async () => {
  const quick = new LinkHub({
    fleet,
    logger: pino({ level: 'silent' }),
    heartbeatMs: 60_000,
    bridgeTimeoutMs: 200,
    maxPendingPerDevice: 4,
    maxLinks: 10,
    maxSocketsPerDevice: 4,
    maxSocketsPerUser: 4,
  });
  // The hub's timers do not hold the process (a server's listener does); this test holds it.
  const hold = setInterval(() => {}, 1000);
  try {
    const socket = new FakeSocket();
    const accepted = quick.accept('dev-slow', socket as unknown as WebSocket, null);
    socket.edge({ t: 'hello', version: '4.4.0', millwright: 'test', host: {} });
    await accepted;
    const t0 = Date.now();
    const answer = quick.request('dev-slow', { method: 'GET', path: '/v', headers: {}, body: null });
    const { id } = lastReq(socket);
    await assert.rejects(answer, (err: { status?: number; message: string }) => {
      assert.equal(err.status, 504);
      assert.match(err.message, /did not answer within 200 ms/);
      return true;
    });
    const waited = Date.now() - t0;
    assert.ok(waited >= 200 && waited < 1500, `504 after ${waited} ms`);
    assert.ok(
      socket.sent.some((m) => m.t === 'cancel' && m.id === id),
      'the edge is told to cancel',
    );
    // A late answer for that id is ignored; the slot is free again.
    socket.edge({ t: 'res', id, status: 200, headers: {}, body: '' });
    const next = quick.request('dev-slow', { method: 'GET', path: '/v', headers: {}, body: null });
    socket.edge({ t: 'res', id: lastReq(socket).id, status: 204, headers: {}, body: '' });
    assert.equal((await next).status, 204);

    // A streamed answer whose slices keep coming is not cut by the deadline; one that stalls is.
    const streamed = quick.request('dev-slow', { method: 'GET', path: '/s', headers: {}, body: null });
    const sid = lastReq(socket).id;
    socket.edge({ t: 'res', id: sid, status: 200, headers: {} });
    const res = await streamed;
    for (let i = 0; i < 4; i++) {
      // Time is the test: a body streamed in parts spaced in time.
      await new Promise((r) => setTimeout(r, 120));
      socket.edge(bodyFrame(sid, Buffer.from(`part${i} `)));
    }
    const body = res.body as Readable;
    const got: Buffer[] = [];
    body.on('data', (c: Buffer) => got.push(c));
    const ended = new Promise<Error | null>((resolve) => {
      body.once('error', resolve);
      body.once('end', () => resolve(null));
    });
    const err = await ended;
    assert.equal((err as { status?: number } | null)?.status, 504, 'stalled after its last slice');
    assert.equal(Buffer.concat(got).toString(), 'part0 part1 part2 part3 ');
  } finally {
    clearInterval(hold);
    await quick.close();
  }
});

test('forwardable headers: hop-by-hop ones, those named by Connection and the dropped ones go', async () => {
  const { forwardableHeaders } = await import('../../src/kernel/link/protocol.js');
  assert.deepEqual(
    forwardableHeaders(
      {
        host: 'm:8444',
        connection: 'keep-alive, X-Private',
        'x-private': '1',
        'keep-alive': 'timeout=5',
        'transfer-encoding': 'chunked',
        'content-type': 'application/json',
        'X-AuthToken': 'secret',
        accept: '*/*',
        cookie: 'a=1',
        'x-list': ['1', '2'],
        absent: undefined,
      },
      new Set(['x-authtoken', 'cookie']),
    ),
    { 'content-type': 'application/json', accept: '*/*', 'x-list': ['1', '2'] },
  );
  assert.deepEqual(forwardableHeaders({ connection: 'close', accept: 'a' }), { accept: 'a' });
});
