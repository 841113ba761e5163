/**
 * The UNS's durable MQTT persistence against aedes-persistence's abstract conformance suite (the
 * suite every aedes persistence runs), on SQLite, plus what that suite does not check: the state
 * survives closing and reopening the database.
 */
import { createRequire } from 'node:module';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { Database } from '../../src/kernel/db/index.js';
import type { BrokerTables } from '../../src/uns/broker/repository.js';
import { SqlPersistence } from '../../src/uns/broker/sql-persistence.js';
import { brokerMigrations } from '../../src/uns/broker/index.js';
import { pgTestDatabase } from '../helpers/postgres.js';

const require = createRequire(import.meta.url);
const abstractPersistence = require('aedes-persistence/abstract.js') as (opts: object) => void;
const mqemitter = require('mqemitter') as () => any;

const dir = mkdtempSync(join(tmpdir(), 'mw-uns-persist-'));
const opened: Database[] = [];
let n = 0;
after(async () => {
  for (const d of opened) await d.close();
  rmSync(dir, { recursive: true, force: true });
});

async function freshDatabase(path = join(dir, `p-${++n}.sqlite`)): Promise<Database> {
  const database = Database.open({ sqlitePath: path });
  opened.push(database);
  await database.migrate([brokerMigrations]);
  return database;
}

describe('aedes-persistence abstract conformance suite (SQLite)', () => {
  abstractPersistence({
    test,
    testAsync: true,
    persistence: async () => new SqlPersistence(await freshDatabase()),
  });
});

// The same suite on PostgreSQL (skipped with the printed reason when it is unreachable; fails in CI).
const pg = await pgTestDatabase();
if (pg) {
  after(() => pg.drop());
  const shared = Database.open({ url: pg.url, sqlitePath: ':memory:', poolSize: 4 });
  opened.push(shared);
  await shared.migrate([brokerMigrations]);
  describe('aedes-persistence abstract conformance suite (PostgreSQL)', () => {
    abstractPersistence({
      test,
      testAsync: true,
      // The suite's tests run one after another; each starts from empty tables.
      persistence: async () => {
        for (const table of [
          'uns_mqtt_retained',
          'uns_mqtt_subscription',
          'uns_mqtt_outgoing',
          'uns_mqtt_incoming',
          'uns_mqtt_will',
        ] as const) {
          await shared.typed<BrokerTables>().deleteFrom(table).execute();
        }
        return new SqlPersistence(shared);
      },
    });
  });
} else {
  test(
    'aedes-persistence abstract conformance suite (PostgreSQL)',
    { skip: 'PostgreSQL unreachable' },
    () => undefined,
  );
}

describe('state survives a restart', () => {
  test('retained, subscriptions, queued outgoing with message ids, incoming QoS 2 and wills are read back', async () => {
    const path = join(dir, 'restart.sqlite');
    const mq = mqemitter();
    const broker = { id: 'broker-a', mq, counter: 0 };
    const first = new SqlPersistence(await freshDatabase(path));
    await first.setup(broker);
    await first.storeRetained({
      topic: 'plant/a',
      payload: Buffer.from('r1'),
      retain: true,
      qos: 0,
      cmd: 'publish',
    });
    await first.addSubscriptions({ id: 'c1' }, [{ topic: 'plant/#', qos: 1 }]);
    const p1 = {
      cmd: 'publish',
      brokerId: 'broker-a',
      brokerCounter: 1,
      topic: 'plant/x',
      payload: Buffer.from('m1'),
      qos: 1,
      retain: false,
      dup: false,
    };
    const p2 = { ...p1, brokerCounter: 2, payload: Buffer.from('m2') };
    await first.outgoingEnqueueCombi([{ clientId: 'c1' }], p1);
    await first.outgoingEnqueueCombi([{ clientId: 'c1' }], p2);
    await first.outgoingUpdate({ id: 'c1' }, { ...p1, messageId: 42 });
    await first.incomingStorePacket({ id: 'c2' }, { ...p1, qos: 2, messageId: 7 });
    // A clean session's QoS 2 message awaiting PUBREL: in memory while it lives, not on disk.
    await first.incomingStorePacket({ id: 'c4', clean: true }, { ...p1, qos: 2, messageId: 8 });
    assert.equal(
      (await first.incomingGetPacket({ id: 'c4' }, { messageId: 8 } as any)).payload.toString(),
      'm1',
    );
    await first.putWill(
      { id: 'c3' },
      { topic: 'will/c3', payload: Buffer.from('bye'), qos: 1, retain: false },
    );
    await first.destroy();

    const second = new SqlPersistence(await freshDatabase(path));
    await second.setup({ id: 'broker-b', mq, counter: 0 });
    const retained: any[] = await second.createRetainedStream('plant/#').toArray();
    assert.deepEqual(
      retained.map((p) => [p.topic, p.payload.toString()]),
      [['plant/a', 'r1']],
    );
    assert.deepEqual(
      (await second.subscriptionsByClient({ id: 'c1' })).map((s) => [s.topic, s.qos]),
      [['plant/#', 1]],
    );
    const matched = (await second.subscriptionsByTopic('plant/y')) as { clientId: string }[];
    assert.deepEqual(
      matched.map((s) => s.clientId),
      ['c1'],
    );
    const queued: any[] = await second.outgoingStream({ id: 'c1' }).toArray();
    assert.deepEqual(
      queued.map((p) => [p.payload.toString(), p.messageId]),
      [
        ['m1', 42],
        ['m2', undefined],
      ],
    );
    const cleared = await second.outgoingClearMessageId({ id: 'c1' }, { messageId: 42 } as any);
    assert.equal(cleared?.payload.toString(), 'm1');
    const incoming = await second.incomingGetPacket({ id: 'c2' }, { messageId: 7 } as any);
    assert.equal(incoming.payload.toString(), 'm1');
    await assert.rejects(
      second.incomingGetPacket({ id: 'c4' }, { messageId: 8 } as any),
      'a clean session is not restored',
    );
    const wills: any[] = await second.streamWill({ 'broker-b': Date.now() }).toArray();
    assert.deepEqual(
      wills.map((w) => [w.clientId, w.brokerId, w.payload.toString()]),
      [['c3', 'broker-a', 'bye']],
    );
    await second.destroy();

    // The clear above is durable too.
    const third = new SqlPersistence(await freshDatabase(path));
    await third.setup({ id: 'broker-c', mq, counter: 0 });
    const left: any[] = await third.outgoingStream({ id: 'c1' }).toArray();
    assert.deepEqual(
      left.map((p) => p.payload.toString()),
      ['m2'],
    );
    await third.destroy();
  });
});

test('a QoS 2 message that reached PUBREL is restored as the PUBREL, with its message id', async () => {
  const path = join(dir, 'pubrel.sqlite');
  const mq = mqemitter();
  const first = new SqlPersistence(await freshDatabase(path));
  await first.setup({ id: 'broker-a', mq, counter: 0 });
  const p = {
    cmd: 'publish',
    brokerId: 'broker-a',
    brokerCounter: 5,
    topic: 't',
    payload: Buffer.from('x'),
    qos: 2,
    retain: false,
    dup: false,
  };
  await first.outgoingEnqueueCombi([{ clientId: 'c' }], p);
  await first.outgoingUpdate({ id: 'c' }, { ...p, messageId: 9 });
  await first.outgoingUpdate({ id: 'c' }, { cmd: 'pubrel', messageId: 9 } as any);
  await first.destroy();
  const second = new SqlPersistence(await freshDatabase(path));
  await second.setup({ id: 'broker-b', mq, counter: 0 });
  const queued: any[] = await second.outgoingStream({ id: 'c' }).toArray();
  assert.deepEqual(
    queued.map((q) => [q.cmd, q.messageId]),
    [['pubrel', 9]],
  );
  assert.ok(await second.outgoingClearMessageId({ id: 'c' }, { messageId: 9 } as any));
  await second.destroy();
});

test('a QoS 2 message awaiting PUBREL: stored, found, deleted; a miss is one shared error, not a new one each time', async () => {
  const mq = mqemitter();
  const p = new SqlPersistence(await freshDatabase());
  await p.setup({ id: 'broker-a', mq, counter: 0 });
  const client = { id: 'q2', clean: true };
  // aedes looks every new QoS 2 PUBLISH up first: a miss must not cost an Error with its stack.
  const miss = (id: number) => p.incomingGetPacket(client, { messageId: id } as any).catch((e: unknown) => e);
  const first = await miss(1);
  assert.ok(first instanceof Error);
  assert.equal((first as Error).message, 'no such packet');
  assert.equal(await miss(2), first, 'the same error object');
  const packet = { cmd: 'publish', topic: 't', payload: Buffer.from('x'), qos: 2, retain: false, dup: false };
  await p.incomingStorePacket(client, { ...packet, messageId: 1, length: 9 } as any);
  const kept: any = await p.incomingGetPacket(client, { messageId: 1 } as any);
  assert.equal(kept.payload.toString(), 'x');
  assert.equal(kept.messageId, 1);
  assert.equal(kept.length, undefined, 'aedes-packet fields only');
  assert.equal(await miss(2), first, 'another id of the same client is still a miss');
  await p.incomingDelPacket(client, { messageId: 1 } as any);
  assert.equal(await miss(1), first);
  await assert.rejects(p.incomingDelPacket(client, { messageId: 1 } as any), /no such packet/);
  await p.incomingStorePacket(client, { ...packet, messageId: 3 } as any);
  await p.cleanIncoming(client);
  assert.equal(await miss(3), first, 'cleaned');
  await p.destroy();
});
