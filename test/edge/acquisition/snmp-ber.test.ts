/**
 * The SNMP driver's own GET path (src/edge/acquisition/drivers/snmp-ber.ts, snmp-get.ts): byte-level
 * cases decoded, and every case answered by a fake agent to both net-snmp's session (then the
 * driver's `varbindValue`) and the driver's getter, which must agree value for value, error for error.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createSocket } from 'node:dgram';
import type { AddressInfo } from 'node:net';
import snmp from 'net-snmp';
import type { Varbind } from 'net-snmp';
import {
  encodeGetRequest,
  encodeGetVarbind,
  readResponseHead,
  readVarbinds,
  T,
  valueOf,
} from '../../../src/edge/acquisition/drivers/snmp-ber.js';
import { SnmpGetter, VarbindError } from '../../../src/edge/acquisition/drivers/snmp-get.js';
import { varbindValue } from '../../../src/edge/acquisition/drivers/snmp.js';
import type { TagValue } from '../../../src/edge/acquisition/types.js';

const b = (...bytes: number[]) => Buffer.from(bytes);
const v = (type: number, ...bytes: number[]) => valueOf(Buffer.from(bytes), type, 0, bytes.length);

function tlv(tag: number, body: Buffer): Buffer {
  const n = body.length;
  const len = n < 0x80 ? [n] : n < 0x100 ? [0x81, n] : [0x82, n >> 8, n & 0xff];
  return Buffer.concat([b(tag, ...len), body]);
}

test('values decode as net-snmp and varbindValue give them', () => {
  assert.equal(v(T.Integer, 0x00), 0);
  assert.equal(v(T.Integer, 0x7f), 127);
  assert.equal(v(T.Integer, 0xff), -1);
  assert.equal(v(T.Integer, 0x80), -128);
  assert.equal(v(T.Integer, 0xff, 0x7f), -129);
  assert.equal(v(T.Integer, 0x80, 0x00, 0x00, 0x00), -2147483648);
  assert.equal(v(T.Integer, 0x00, 0xff, 0xff, 0xff, 0xff), 4294967295); // out of int32: read anyway
  assert.equal(v(T.Counter, 0x00, 0xff, 0xff, 0xff, 0xff), 4294967295);
  assert.equal(v(T.Gauge, 0xff), 4294967295); // sign-extended, then unsigned 32-bit
  assert.equal(v(T.TimeTicks, 0x01, 0x00, 0x00), 65536);
  assert.equal(v(T.Counter64, 0x00, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff), '18446744073709551615');
  assert.equal(v(T.Counter64, 0x1f, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff), Number.MAX_SAFE_INTEGER);
  assert.equal(v(T.Counter64, 0x20, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00), '9007199254740992');
  assert.equal(v(T.Counter64, 0x05), 5);
  assert.equal(v(T.Counter64), 0);
  assert.equal(v(T.OctetString, ...Buffer.from('eth0 up\n')), 'eth0 up\n');
  assert.equal(v(T.OctetString), '');
  assert.equal(v(T.OctetString, 0x00, 0x1b, 0x21, 0xff), '001b21ff'); // not printable: hex
  assert.equal(v(T.OctetString, 0x41, 0x85), '4185'); // 0x80-0x9f: not printable
  assert.equal(v(T.OctetString, 0xc3, 0xa9), 'é'); // latin1-printable: decoded as UTF-8
  assert.equal(v(T.Opaque, 0x9f, 0x78), '9f78');
  assert.equal(v(T.IpAddress, 192, 168, 0, 254), '192.168.0.254');
  assert.throws(() => v(T.IpAddress, 1, 2, 3));
  assert.equal(v(T.OID, 0x2b, 0x06, 0x01, 0x04, 0x01, 0x82, 0x37, 0x0c), '1.3.6.1.4.1.311.12');
  assert.equal(v(T.Null), null);
  assert.equal(v(T.Boolean, 0xff), true);
  assert.equal(v(T.Boolean, 0x00), false);
  assert.equal(v(T.BitString, 0x04, 0xa0), '1010');
  assert.throws(() => v(0x47, 0x01), /unknown type/);
  assert.throws(() => v(T.Integer), /zero-length/);
});

test('a GetRequest encodes as net-snmp writes it', () => {
  assert.deepEqual(
    encodeGetVarbind('1.3.6.1.2.1.1.3.0'),
    b(0x30, 0x0c, 0x06, 0x08, 0x2b, 0x06, 0x01, 0x02, 0x01, 0x01, 0x03, 0x00, 0x05, 0x00),
  );
  assert.deepEqual(
    encodeGetVarbind('1.3.6.1.4.1.2021.4294967295').subarray(4, 16),
    b(0x2b, 0x06, 0x01, 0x04, 0x01, 0x8f, 0x65, 0x8f, 0xff, 0xff, 0xff, 0x7f),
  );
  assert.throws(() => encodeGetVarbind('1.3.x'));
  assert.throws(() => encodeGetVarbind(''));
  const msg = encodeGetRequest(1, Buffer.from('public'), 0x80, [encodeGetVarbind('1.3.6.1.2.1.1.3.0')]);
  const head = readResponseHead(msg);
  assert.equal(head.version, 1);
  assert.equal(msg.subarray(head.communityStart, head.communityEnd).toString(), 'public');
  assert.equal(head.pduType, T.GetRequest);
  assert.equal(head.requestId, 0x80); // 0x00 0x80: positive
  assert.deepEqual(msg.subarray(head.varbindsStart, head.varbindsEnd), encodeGetVarbind('1.3.6.1.2.1.1.3.0'));
});

test('long lengths: a 200-byte octet string and a varbind list past 255 bytes', () => {
  const text = 'x'.repeat(200);
  const vb = (oid: string, type: number, body: Buffer) =>
    tlv(
      T.Sequence,
      Buffer.concat([encodeGetVarbind(oid).subarray(2, 2 + 2 + encodeGetVarbind(oid)[3]!), tlv(type, body)]),
    );
  const list = Buffer.concat([
    vb('1.3.6.1.2.1.1.1.0', T.OctetString, Buffer.from(text)),
    vb('1.3.6.1.2.1.1.3.0', T.TimeTicks, b(0x01)),
  ]);
  const pdu = tlv(
    T.GetResponse,
    Buffer.concat([tlv(T.Integer, b(7)), tlv(T.Integer, b(0)), tlv(T.Integer, b(0)), tlv(T.Sequence, list)]),
  );
  const msg = tlv(
    T.Sequence,
    Buffer.concat([tlv(T.Integer, b(1)), tlv(T.OctetString, Buffer.from('public')), pdu]),
  );
  assert.equal(msg[1], 0x82);
  const head = readResponseHead(msg);
  const got: TagValue[] = [];
  assert.equal(
    readVarbinds(msg, head, (_k, _t, value) => got.push(value)),
    2,
  );
  assert.deepEqual(got, [text, 1]);
});

/** The varbinds of an answer: OID and the value's TLV. */
type Answer = { oid: string; type: number; body: number[] }[];

/** A fake agent answering every GetRequest with the datagrams `answer(requestId)` gives. */
async function fakeAgent(answer: (id: number) => Buffer | Buffer[] | null) {
  const sock = createSocket('udp4');
  sock.on('message', (msg, rinfo) => {
    const reply = answer(readResponseHead(msg).requestId) ?? [];
    for (const d of Array.isArray(reply) ? reply : [reply]) sock.send(d, rinfo.port, rinfo.address);
  });
  await new Promise<void>((r) => sock.bind(0, '127.0.0.1', () => r()));
  return { port: (sock.address() as AddressInfo).port, close: () => sock.close() };
}

function response(
  id: number,
  vbs: Answer,
  o: { version?: number; community?: string; status?: number; index?: number } = {},
): Buffer {
  const list = Buffer.concat(
    vbs.map(({ oid, type, body }) => {
      const enc = encodeGetVarbind(oid);
      const oidTlv = enc.subarray(2, enc.length - 2);
      return tlv(T.Sequence, Buffer.concat([oidTlv, tlv(type, Buffer.from(body))]));
    }),
  );
  const int = (n: number) => {
    const bytes = [n & 0xff];
    for (let x = Math.floor(n / 256); x > 0; x = Math.floor(x / 256)) bytes.unshift(x & 0xff);
    if (bytes[0]! & 0x80) bytes.unshift(0);
    return tlv(T.Integer, Buffer.from(bytes));
  };
  const pdu = tlv(
    T.GetResponse,
    Buffer.concat([
      int(id),
      tlv(T.Integer, b(o.status ?? 0)),
      tlv(T.Integer, b(o.index ?? 0)),
      tlv(T.Sequence, list),
    ]),
  );
  return tlv(
    T.Sequence,
    Buffer.concat([
      tlv(T.Integer, b(o.version ?? 1)),
      tlv(T.OctetString, Buffer.from(o.community ?? 'public')),
      pdu,
    ]),
  );
}

/** What net-snmp's session plus `varbindValue` make of an answer, and what the getter makes of it. */
async function both(vbs: Answer, o: Parameters<typeof response>[2] = {}, version: 0 | 1 = 1) {
  const agent = await fakeAgent((id) => response(id, vbs, o));
  const oids = vbs.map((x) => x.oid);
  try {
    const session = snmp.createSession('127.0.0.1', 'public', {
      port: agent.port,
      version,
      retries: 0,
      timeout: 500,
    });
    const viaNetSnmp = await new Promise<unknown>((resolve) =>
      session.get(oids, (err: Error | null, res?: Varbind[]) =>
        resolve(
          err
            ? { error: err.message }
            : res!.map((vb) =>
                snmp.isVarbindError(vb) ? { varbindError: snmp.varbindError(vb) } : varbindValue(vb),
              ),
        ),
      ),
    );
    session.close();
    const getter = new SnmpGetter('127.0.0.1', agent.port, version, 'public', 500, 0);
    const viaGetter = await getter.get(oids.map(encodeGetVarbind)).then(
      (values) => values.map((x) => (x instanceof VarbindError ? { varbindError: x.text } : x)),
      (err: Error) => ({ error: err.message }),
    );
    getter.close();
    return { viaNetSnmp, viaGetter };
  } finally {
    agent.close();
  }
}

const MIB = '1.3.6.1.2.1';
test('the getter answers as net-snmp with varbindValue, type by type', async () => {
  const cases: Answer = [
    { oid: `${MIB}.1.3.0`, type: T.TimeTicks, body: [0x00, 0x9a, 0x7e, 0xc1, 0x10] },
    { oid: `${MIB}.1.1.0`, type: T.OctetString, body: [...Buffer.from('Linux edge 6.1')] },
    { oid: `${MIB}.2.2.1.6.2`, type: T.OctetString, body: [0x52, 0x54, 0x00, 0x12, 0x35, 0x02] },
    { oid: `${MIB}.2.2.1.2.1`, type: T.OctetString, body: [] },
    { oid: `${MIB}.4.1.0`, type: T.Integer, body: [0xfe] },
    { oid: `${MIB}.4.20.1.1.127.0.0.1`, type: T.IpAddress, body: [127, 0, 0, 1] },
    { oid: `${MIB}.1.2.0`, type: T.OID, body: [0x2b, 6, 1, 4, 1, 0x88, 0x6d, 3, 1] },
    { oid: `${MIB}.31.1.1.1.6.1`, type: T.Counter64, body: [0x00, 0xf0, 0, 0, 0, 0, 0, 0, 1] },
    { oid: `${MIB}.31.1.1.1.10.1`, type: T.Counter64, body: [0x01, 0x02, 0x03] },
    { oid: `${MIB}.2.2.1.10.1`, type: T.Counter, body: [0x00, 0xff, 0xff, 0xff, 0xfe] },
    { oid: `${MIB}.2.2.1.5.1`, type: T.Gauge, body: [0x3b, 0x9a, 0xca, 0x00] },
    { oid: `${MIB}.99.1.0`, type: T.NoSuchObject, body: [] },
    { oid: `${MIB}.1.9.1.2.99`, type: T.NoSuchInstance, body: [] },
    { oid: `${MIB}.1.9.9.9`, type: T.EndOfMibView, body: [] },
    { oid: `${MIB}.1.4.0`, type: T.Null, body: [] },
    { oid: `${MIB}.1.5.0`, type: T.Opaque, body: [0x9f, 0x78, 0x04, 0x3f, 0x80, 0, 0] },
  ];
  const { viaNetSnmp, viaGetter } = await both(cases);
  assert.deepEqual(viaGetter, viaNetSnmp);
  assert.equal((viaGetter as unknown[]).length, cases.length);
});

test('errors as net-snmp gives them: error status naming a varbind, count, version, community, PDU', async () => {
  const two: Answer = [
    { oid: `${MIB}.1.3.0`, type: T.Null, body: [] },
    { oid: `${MIB}.1.77.0`, type: T.Null, body: [] },
  ];
  for (const o of [
    { status: 2, index: 2 },
    { status: 5, index: 0 },
    { status: 99, index: 1 },
    { version: 0 },
    { community: 'private' },
  ]) {
    const { viaNetSnmp, viaGetter } = await both(two, o);
    assert.deepEqual(viaGetter, viaNetSnmp, JSON.stringify(o));
    assert.ok('error' in (viaGetter as object), JSON.stringify(o));
  }
  assert.deepEqual((await both(two, { status: 2, index: 2, version: 0 }, 0)).viaGetter, {
    error: `NoSuchName: ${MIB}.1.77.0`,
  });
});

test('no answer: the request is sent again, then fails as a timeout; close fails what is in flight', async () => {
  let asked = 0;
  const agent = await fakeAgent(() => {
    asked++;
    return null;
  });
  const getter = new SnmpGetter('127.0.0.1', agent.port, 1, 'public', 100, 2);
  const err = await getter.get([encodeGetVarbind(`${MIB}.1.3.0`)]).catch((e: Error) => e);
  assert.equal((err as Error).name, 'RequestTimedOutError');
  assert.equal(asked, 3);
  const pending = getter.get([encodeGetVarbind(`${MIB}.1.3.0`)]).catch((e: Error) => e);
  getter.close();
  assert.match(((await pending) as Error).message, /closed/);
  agent.close();
});

test('an undecodable answer is dropped (the request times out) and a stray id ignored', async () => {
  const agent = await fakeAgent((id) => [
    response(id + 1, []),
    response(id, [{ oid: `${MIB}.1.3.0`, type: 0x47, body: [1] }]),
    b(0x30, 0x05, 0x02, 0x01),
  ]);
  const getter = new SnmpGetter('127.0.0.1', agent.port, 1, 'public', 100, 0);
  const err = await getter.get([encodeGetVarbind(`${MIB}.1.3.0`)]).catch((e: Error) => e);
  assert.equal((err as Error).name, 'RequestTimedOutError');
  getter.close();
  agent.close();
});

test('the GetRequest is byte for byte the one net-snmp sends (1, 50 and 120 OIDs, short and long lengths)', async () => {
  const sent: Buffer[] = [];
  const agent = await fakeAgent(() => null);
  const sock = createSocket('udp4');
  const catcher = await new Promise<number>((r) =>
    sock.bind(0, '127.0.0.1', () => r((sock.address() as AddressInfo).port)),
  );
  sock.on('message', (msg) => sent.push(msg));
  for (const [n, version] of [
    [1, 1],
    [50, 1],
    [120, 0],
  ] as const) {
    const oids = Array.from({ length: n }, (_, k) => `${MIB}.2.2.1.${k % 22}.${k * 977}`);
    const session = snmp.createSession('127.0.0.1', 'a-community', {
      port: catcher,
      version,
      retries: 0,
      timeout: 200,
    });
    await new Promise((r) => session.get(oids, r));
    session.close();
    const theirs = sent.pop()!;
    const id = readResponseHead(theirs).requestId;
    assert.deepEqual(
      encodeGetRequest(version, Buffer.from('a-community'), id, oids.map(encodeGetVarbind)),
      theirs,
    );
  }
  for (const id of [1, 0x7f, 0x80, 0xffff, 0x7fffffff]) {
    const head = readResponseHead(
      encodeGetRequest(1, Buffer.from('c'), id, [encodeGetVarbind(`${MIB}.1.3.0`)]),
    );
    assert.equal(head.requestId, id);
  }
  sock.close();
  agent.close();
});
