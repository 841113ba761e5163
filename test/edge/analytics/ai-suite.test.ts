/**
 * The AI suite's rules on a real directory, without HTTP: chunks (a cut body keeps what came, a
 * body longer than its range keeps nothing), sessions taken back by a new instance (a restart),
 * expiry at start, the archive reader's bounds, the Content-Range parser.
 */
import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { mkdtempSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { AISuite, type AISuiteBounds } from '../../../src/edge/analytics/ai-suite.js';
import { importSuite, MAX_ARCHIVE_ENTRIES } from '../../../src/edge/analytics/ai-suite-archive.js';
import { parseContentRange } from '../../../src/edge/analytics/ai-suite-routes.js';

const dirs: string[] = [];
const root = () => {
  const d = mkdtempSync(join(tmpdir(), 'mw-ai-suite-'));
  dirs.push(d);
  return d;
};
after(() => dirs.forEach((d) => rmSync(d, { recursive: true, force: true })));

const BOUNDS: AISuiteBounds = {
  fileBytes: 1024 * 1024,
  totalBytes: 4 * 1024 * 1024,
  sessions: 4,
  idleMs: 60_000,
  chunkBytes: 1024 * 1024,
};
const sha = (b: Buffer) => createHash('sha256').update(b).digest('hex');

/** A body that sends `first` and then breaks (a connection cut). */
function cutBody(first: Buffer): Readable {
  let sent = false;
  return new Readable({
    read() {
      if (!sent) {
        sent = true;
        this.push(first);
      } else this.destroy(new Error('socket hang up'));
    },
  });
}

test('a cut body keeps what came; a body longer than its range keeps nothing; a new instance takes the session back', async () => {
  const dir = root();
  const suite = await AISuite.open(dir, BOUNDS);
  const bytes = Buffer.from('0123456789abcdefghij');
  const s = await suite.createSession({ kind: 'prompt', name: 'p.txt', size: 20, sha256: sha(bytes) });
  const cut = await suite.append(s.id, { start: 0, end: 9, total: 20 }, cutBody(bytes.subarray(0, 6)));
  assert.equal(cut.offset, 6);
  await assert.rejects(
    suite.append(s.id, { start: 6, end: 9, total: 20 }, Readable.from([bytes.subarray(6, 16)])),
    /longer than its Content-Range \(4 bytes\): nothing of it is kept/,
  );
  assert.equal(suite.view(s.id).offset, 6);
  assert.equal(statSync(suite.partPath(s.id)).size, 6);
  await assert.rejects(
    suite.append(s.id, { start: 4, end: 9, total: 20 }, Readable.from([bytes.subarray(4, 10)])),
    /the session's offset is 6/,
  );
  await assert.rejects(
    suite.append(s.id, { start: 6, end: 9, total: 21 }, Readable.from([bytes.subarray(6, 10)])),
    /not the session's size 20/,
  );
  suite.dispose();

  // A restart: the offset is the partial file's size.
  const again = await AISuite.open(dir, BOUNDS);
  assert.equal((await again.resume(s.id)).offset, 6);
  await again.append(s.id, { start: 6, end: 19, total: 20 }, Readable.from([bytes.subarray(6)]));
  await assert.rejects(again.close(s.id, ['model']), /not found/, 'a prompt session is not a model session');
  const closed = await again.close(s.id, ['prompt']);
  assert.equal(closed.session.state, 'Closed');
  assert.deepEqual(
    (await again.files()).map((f) => `${f.kind}/${f.name}:${f.size}`),
    ['prompt/p.txt:20'],
  );
  again.dispose();
});

test('an idle session expires with its partial file; strays are removed at start', async () => {
  const dir = root();
  const suite = await AISuite.open(dir, BOUNDS);
  const s = await suite.createSession({
    kind: 'model',
    name: 'm.onnx',
    size: 10,
    sha256: sha(Buffer.alloc(10)),
  });
  await suite.append(s.id, { start: 0, end: 4, total: 10 }, Readable.from([Buffer.alloc(5)]));
  suite.dispose();
  writeFileSync(join(dir, 'uploads', 'stray.part'), 'x');
  writeFileSync(join(dir, 'files', 'model', '.import-leftover'), 'x');
  const later = await AISuite.open(dir, { ...BOUNDS, idleMs: 1000 });
  assert.equal(await later.expire(Date.now() + 2000), 1);
  assert.deepEqual(readdirSync(join(dir, 'uploads')), []);
  assert.deepEqual(readdirSync(join(dir, 'files', 'model')), []);
  later.dispose();
});

test('quotas: one file, the total, the number of open sessions', async () => {
  const suite = await AISuite.open(root(), BOUNDS);
  const create = (name: string, size: number) =>
    suite.createSession({ kind: 'model', name, size, sha256: sha(Buffer.from(name)) });
  await assert.rejects(create('big', BOUNDS.fileBytes + 1), /above the limit of one file/);
  for (let i = 0; i < 4; i++) await create(`m${i}`, BOUNDS.fileBytes);
  await assert.rejects(create('m4', 1), /4 upload sessions are open already/);
  await assert.rejects(
    suite.createSession({ kind: 'model', name: '../x', size: 1, sha256: 'a'.repeat(64) }),
    /Name/,
  );
  await assert.rejects(suite.createSession({ kind: 'model', name: 'x', size: 1, sha256: 'nope' }), /SHA256/);
  suite.dispose();
  const tight = await AISuite.open(root(), { ...BOUNDS, totalBytes: BOUNDS.fileBytes + 10 });
  await tight.createSession({ kind: 'model', name: 'a', size: BOUNDS.fileBytes, sha256: 'a'.repeat(64) });
  await assert.rejects(
    tight.createSession({ kind: 'model', name: 'b', size: 11, sha256: 'a'.repeat(64) }),
    /above its limit/,
  );
  tight.dispose();
});

/** A ustar archive of the given entries (and its end blocks, unless `end` is false). */
function tar(entries: Array<{ name: string; body: Buffer }>, end = true): Buffer {
  const parts: Buffer[] = [];
  for (const e of entries) {
    const h = Buffer.alloc(512);
    h.write(e.name, 0, 100);
    h.write(e.body.length.toString(8).padStart(11, '0') + '\0', 124);
    h.write('0', 156);
    parts.push(h, e.body, Buffer.alloc((512 - (e.body.length % 512)) % 512));
  }
  if (end) parts.push(Buffer.alloc(1024));
  return Buffer.concat(parts);
}

test('the archive reader: entry count, one file, duplicates, truncation; nothing written when refused', async () => {
  const dir = root();
  const suite = await AISuite.open(dir, BOUNDS);
  const file = join(dir, 'a.tar');
  const refuse = async (archive: Buffer, why: RegExp) => {
    writeFileSync(file, archive);
    await assert.rejects(importSuite(suite, file), why);
    assert.deepEqual(await suite.files(), []);
  };
  await refuse(
    tar(
      Array.from({ length: MAX_ARCHIVE_ENTRIES + 1 }, (_, i) => ({
        name: `prompt/p${i}`,
        body: Buffer.alloc(0),
      })),
    ),
    /more than 10000 entries/,
  );
  await refuse(
    tar([{ name: 'model/big', body: Buffer.alloc(BOUNDS.fileBytes + 1) }]),
    /above the limit of one file/,
  );
  await refuse(
    tar([
      { name: 'prompt/a', body: Buffer.from('1') },
      { name: 'prompt/a', body: Buffer.from('2') },
    ]),
    /appears twice/,
  );
  await refuse(tar([{ name: 'prompt/a', body: Buffer.from('1') }], false), /truncated/);
  await refuse(tar([{ name: 'prompt/..', body: Buffer.from('1') }]), /is not a file <kind>\/<name>/);
  writeFileSync(file, tar([{ name: 'prompt/a', body: Buffer.from('hello') }]));
  assert.deepEqual(await importSuite(suite, file), [{ kind: 'prompt', name: 'a', size: 5 }]);
  suite.dispose();
});

test('two closes of one session at once: one stores the file, the other is refused (busy)', async () => {
  const suite = await AISuite.open(root(), BOUNDS);
  const bytes = Buffer.alloc(512 * 1024, 7);
  const s = await suite.createSession({
    kind: 'model',
    name: 'twice.onnx',
    size: bytes.length,
    sha256: sha(bytes),
  });
  await suite.append(s.id, { start: 0, end: bytes.length - 1, total: bytes.length }, Readable.from([bytes]));
  const [a, b] = await Promise.allSettled([suite.close(s.id, ['model']), suite.close(s.id, ['model'])]);
  assert.equal(a.status, 'fulfilled');
  assert.equal(b.status, 'rejected');
  assert.match(String((b as PromiseRejectedResult).reason), /is busy/);
  assert.deepEqual(
    (await suite.files()).map((f) => f.name),
    ['twice.onnx'],
  );
  suite.dispose();
});

test('Content-Range: bytes <first>-<last>/<size>, nothing else', () => {
  assert.deepEqual(parseContentRange('bytes 0-9/20'), { start: 0, end: 9, total: 20 });
  for (const bad of [
    undefined,
    '',
    'bytes 0-9/*',
    'bytes */20',
    'items 0-9/20',
    'bytes -1-9/20',
    'bytes 0-9',
  ])
    assert.throws(() => parseContentRange(bad), /Content-Range: bytes <first>-<last>\/<size>/);
});
