/**
 * The disk queue: order, acknowledgement, the two full policies and their counters, reopening
 * (what was committed is there), and a child process killed with SIGKILL right after a commit.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DiskQueue, TAIL_MAX_MESSAGES } from '../../../src/edge/integrations/queue.js';
import { ensureBuilt } from '../../helpers/cli.js';

const dir = () => mkdtempSync(join(tmpdir(), 'mw-queue-'));
const big = { maxBytes: 1 << 30, maxMessages: 1_000_000, policy: 'drop-oldest' as const };
const payload = (i: number) => Buffer.from(JSON.stringify({ value: i }));
const values = (q: DiskQueue) =>
  q.read(0, 1_000_000).map((m) => JSON.parse(m.payload.toString()).value as number);

test('appends in order, reads after a cursor, deletes up to an acknowledged seq', () => {
  const d = dir();
  try {
    const q = new DiskQueue(join(d, 'q.db'), big);
    for (let i = 0; i < 10; i++) q.push('t', 's', payload(i));
    q.flush();
    const first = q.read(0, 4);
    assert.deepEqual(
      first.map((m) => JSON.parse(m.payload.toString()).value),
      [0, 1, 2, 3],
    );
    assert.deepEqual(
      q.read(first[3]!.seq, 2).map((m) => JSON.parse(m.payload.toString()).value),
      [4, 5],
    );
    q.ack(first[3]!.seq);
    q.flush();
    assert.equal(q.depth, 6);
    assert.deepEqual(values(q), [4, 5, 6, 7, 8, 9]);
    const s = q.stats();
    assert.equal(s.depth, 6);
    assert.equal(s.bytes, 6 * (1 + payload(4).length));
    assert.ok(s.fileBytes > 0 && s.oldestTs !== null);
    q.close();
    const again = new DiskQueue(join(d, 'q.db'), big);
    assert.equal(again.depth, 6);
    assert.deepEqual(values(again), [4, 5, 6, 7, 8, 9]);
    // Sequence numbers are never reused, even once the queue was empty.
    const last = again.read(0, 100).at(-1)!.seq;
    again.ack(last);
    again.flush();
    again.push('t', 's', payload(99));
    again.flush();
    assert.ok(again.read(0, 1)[0]!.seq > last);
    again.close();
  } finally {
    rmSync(d, { recursive: true, force: true });
  }
});

test('full, drop-oldest: the oldest go, counted; full, drop-newest: the new ones are refused, counted', () => {
  const d = dir();
  try {
    const oldest = new DiskQueue(join(d, 'a.db'), {
      maxBytes: 1 << 30,
      maxMessages: 1000,
      policy: 'drop-oldest',
    });
    for (let i = 0; i < 1500; i++) oldest.push('t', 's', payload(i));
    oldest.flush();
    assert.equal(oldest.depth, 1000);
    assert.equal(oldest.dropped, 500);
    const v = values(oldest);
    assert.equal(v[0], 500);
    assert.equal(v.at(-1), 1499);
    oldest.close();

    const newest = new DiskQueue(join(d, 'b.db'), {
      maxBytes: 1 << 30,
      maxMessages: 1000,
      policy: 'drop-newest',
    });
    for (let i = 0; i < 600; i++) newest.push('t', 's', payload(i));
    newest.flush();
    for (let i = 600; i < 1500; i++) newest.push('t', 's', payload(i));
    newest.flush();
    assert.equal(newest.depth, 1000);
    assert.equal(newest.dropped, 500);
    const w = values(newest);
    assert.equal(w[0], 0);
    assert.equal(w.at(-1), 999);
    newest.close();

    // The byte bound too.
    const bytes = new DiskQueue(join(d, 'c.db'), {
      maxBytes: 2000,
      maxMessages: 1_000_000,
      policy: 'drop-oldest',
    });
    for (let i = 0; i < 1000; i++) bytes.push('t', 's', payload(i));
    bytes.flush();
    assert.ok(bytes.stats().bytes <= 2000);
    assert.ok(bytes.dropped > 0);
    assert.equal(values(bytes).at(-1), 999);
    bytes.close();
  } finally {
    rmSync(d, { recursive: true, force: true });
  }
});

test('reads served from memory equal the file: past the in-memory bound, after drops, after reopening', () => {
  const d = dir();
  try {
    const file = join(d, 'tail.db');
    const q = new DiskQueue(file, {
      maxBytes: 1 << 30,
      maxMessages: TAIL_MAX_MESSAGES + 500,
      policy: 'drop-oldest',
    });
    // More than the in-memory tail holds, then past the message bound (the oldest 1,000 dropped).
    for (let i = 0; i < TAIL_MAX_MESSAGES + 1500; i++) q.push('t', 's', payload(i));
    q.flush();
    assert.equal(q.dropped, 1000);
    const read = (after: number, n: number) =>
      q.read(after, n).map((m) => JSON.parse(m.payload.toString()).value);
    assert.deepEqual(read(0, 3), [1000, 1001, 1002]);
    // Everything acknowledged: the queue is empty, then what is appended is read from memory.
    q.ack(q.read(0, 1_000_000).at(-1)!.seq);
    q.flush();
    assert.equal(q.depth, 0);
    assert.deepEqual(q.read(0, 10), []);
    for (let i = 0; i < 20; i++) q.push('t', 's', payload(i));
    q.flush();
    const rows = q.read(0, 100);
    assert.deepEqual(
      rows.map((m) => JSON.parse(m.payload.toString()).value),
      Array.from({ length: 20 }, (_, i) => i),
    );
    q.ack(rows[4]!.seq);
    q.flush();
    assert.equal(q.depth, 15);
    assert.equal(
      q.stats().bytes,
      Array.from({ length: 15 }, (_, i) => 1 + payload(i + 5).length).reduce((a, b) => a + b),
    );
    assert.deepEqual(read(rows[9]!.seq, 3), [10, 11, 12]);
    assert.deepEqual(read(0, 2), [5, 6]);
    // The file holds the same: reopened, the reads come from it.
    const fromMemory = q.read(0, 100).map((m) => [m.seq, m.ts, m.topic, m.subject, m.payload.toString()]);
    q.close();
    const again = new DiskQueue(file, big);
    const fromFile = again.read(0, 100).map((m) => [m.seq, m.ts, m.topic, m.subject, m.payload.toString()]);
    assert.deepEqual(fromFile, fromMemory);
    again.close();
  } finally {
    rmSync(d, { recursive: true, force: true });
  }
});

for (const sync of ['normal', 'full'] as const) {
  test(`a commit survives SIGKILL of the process that made it (sync ${sync})`, () => {
    const d = dir();
    try {
      const file = join(d, 'k.db');
      const script = `
      import { DiskQueue } from ${JSON.stringify(new URL('../../../dist/edge/integrations/queue.js', import.meta.url).pathname)};
      const q = new DiskQueue(${JSON.stringify(file)}, { maxBytes: 1 << 30, maxMessages: 1e6, policy: 'drop-oldest', sync: '${sync}' });
      for (let i = 0; i < 5000; i++) q.push('t', 's', Buffer.from(JSON.stringify({ value: i })));
      q.flush();
      process.kill(process.pid, 'SIGKILL');
    `;
      // The built module (dist/): a process of its own starts without the source loader.
      ensureBuilt();
      const r = spawnSync(process.execPath, ['--input-type=module', '-e', script], {
        encoding: 'utf8',
      });
      assert.equal(r.signal, 'SIGKILL', r.stderr);
      const q = new DiskQueue(file, big);
      assert.equal(q.depth, 5000);
      assert.deepEqual(
        values(q),
        Array.from({ length: 5000 }, (_, i) => i),
      );
      q.close();
    } finally {
      rmSync(d, { recursive: true, force: true });
    }
  });
}
