/**
 * Model upload sessions against a real `millwright edge` process: a 200 MB model sent in chunks
 * (PUT with Content-Range), its connection cut half way, then the edge killed (SIGKILL) in the
 * middle of a chunk and started again on the same data directory; the session resumes from the
 * offset the edge stored and closes with a matching SHA-256. A wrong checksum is refused and
 * nothing is kept.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { createHash, randomBytes } from 'node:crypto';
import {
  createReadStream,
  existsSync,
  statSync,
  mkdtempSync,
  openSync,
  readdirSync,
  rmSync,
  writeSync,
  closeSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { graphql } from '../helpers/edge.js';
import { startEdgeProcess, type EdgeProcess } from '../helpers/edge-process.js';
import { putChunk, SESSION_FIELDS, startChunk } from '../helpers/ai-suite.js';
import { eventually } from '../helpers/util.js';

const MiB = 1024 * 1024;
const SIZE = 200 * MiB;
const CHUNK = 32 * MiB;

const dataDir = mkdtempSync(join(tmpdir(), 'mw-upload-'));
const file = join(dataDir, '..', `${dataDir.split('/').pop()}-model.bin`);
let sha256 = '';
let edge: EdgeProcess & { credentials: { clientId: string; secret: string } };

before(async () => {
  const fd = openSync(file, 'w');
  const hash = createHash('sha256');
  for (let i = 0; i < SIZE / MiB; i++) {
    const b = randomBytes(MiB);
    hash.update(b);
    writeSync(fd, b);
  }
  closeSync(fd);
  sha256 = hash.digest('hex');
  edge = await startEdgeProcess(dataDir);
});
after(async () => {
  await edge?.stop();
  rmSync(dataDir, { recursive: true, force: true });
  rmSync(file, { force: true });
});

async function gql(query: string, variables?: Record<string, unknown>): Promise<any> {
  const r = await graphql(edge, '/analytics/v3', edge.auth, query, variables);
  assert.equal(r.status, 200, r.text);
  return r.body;
}
async function ok(query: string, variables?: Record<string, unknown>): Promise<any> {
  const body = await gql(query, variables);
  assert.equal(body.errors, undefined, JSON.stringify(body.errors));
  return body.data;
}

const RESUME = `mutation($id: ID!) { ResumeModelUploadSession(input: { ID: $id }) { ${SESSION_FIELDS} } }`;
const resume = async (id: string) => (await ok(RESUME, { id })).ResumeModelUploadSession;

/** Waits until the edge has taken what a cut connection delivered (the offset stops moving). */
async function settledOffset(id: string, above: number): Promise<number> {
  let last = -1;
  return eventually(
    async () => {
      const o = (await resume(id)).Offset as number;
      const settled = o > above && o === last;
      last = o;
      if (!settled) await new Promise((r) => setTimeout(r, 300));
      return settled ? o : 0;
    },
    30_000,
    'a settled offset',
  );
}

async function sendRange(path: string, from: number, to: number): Promise<number> {
  let at = from;
  while (at < to) {
    const end = Math.min(at + CHUNK, to) - 1;
    const r = await putChunk(edge.url, edge.auth, path, { start: at, end, total: SIZE }, { file });
    assert.equal(r.status, 200, JSON.stringify(r.body));
    assert.equal(r.body.Offset, end + 1);
    at = end + 1;
  }
  return at;
}

test('a 200 MB model: cut half way, the edge killed mid-chunk and restarted, resumed, closed with its checksum', async () => {
  const created = (
    await ok(
      `mutation($in: CreateModelUploadSessionRequest!) { CreateModelUploadSession(input: $in) { ${SESSION_FIELDS} } }`,
      { in: { Name: 'big.onnx', Size: SIZE, SHA256: sha256 } },
    )
  ).CreateModelUploadSession;
  assert.equal(created.Offset, 0);
  assert.equal(created.State, 'Open');
  const { ID: id, UploadPath: path } = created;

  // A chunk that does not start at the offset is refused.
  const wrong = await putChunk(edge.url, edge.auth, path, { start: 5, end: 9, total: SIZE }, Buffer.alloc(5));
  assert.equal(wrong.status, 409, JSON.stringify(wrong.body));
  assert.match(wrong.body.message, /offset is 0/);

  let at = await sendRange(path, 0, 3 * CHUNK); // 96 MiB
  // Half way: the connection is cut after 8 MiB of the next chunk.
  const cut = await startChunk(
    edge.url,
    edge.auth,
    path,
    { start: at, end: at + CHUNK - 1, total: SIZE },
    file,
    8 * MiB,
  );
  const part = join(dataDir, 'ai-suite', 'uploads', `${id}.part`);
  // The edge has written part of the chunk: then the connection goes.
  const before = at;
  await eventually(() => statSync(part).size > before, 30_000, 'bytes of the chunk on disk');
  cut.cut();
  at = await settledOffset(id, at);
  assert.ok(at > 96 * MiB && at <= 104 * MiB, `offset after the cut: ${at}`);

  at = await sendRange(path, at, at + CHUNK);
  // The edge is killed while a chunk is on its way, then started on the same data directory.
  const started = at;
  const half = await startChunk(
    edge.url,
    edge.auth,
    path,
    { start: at, end: at + CHUNK - 1, total: SIZE },
    file,
    8 * MiB,
  );
  await eventually(() => statSync(part).size > started, 30_000, 'bytes of the chunk on disk');
  await edge.kill();
  const onDisk = statSync(part).size;
  half.cut();
  edge = await startEdgeProcess(dataDir, edge.credentials);
  const back = await resume(id);
  assert.equal(back.State, 'Open');
  at = back.Offset;
  assert.ok(
    at === onDisk && at > started && at <= started + 8 * MiB,
    `offset after the restart: ${at} (chunk from ${started}, ${onDisk} bytes on disk at the kill)`,
  );

  await sendRange(path, at, SIZE);
  const got = (
    await ok(`query($id: ID!) { GetModelUploadSession(input: { ID: $id }) { ${SESSION_FIELDS} } }`, { id })
  ).GetModelUploadSession;
  assert.equal(got.State, 'Complete');
  const closed = (
    await ok(
      `mutation($id: ID!) { CloseModelUploadSession(input: { ID: $id }) { Session { State Offset } File { Kind Name Size } } }`,
      { id },
    )
  ).CloseModelUploadSession;
  assert.deepEqual(closed.Session, { State: 'Closed', Offset: SIZE });
  assert.deepEqual(closed.File, { Kind: 'model', Name: 'big.onnx', Size: SIZE });
  const stored = join(dataDir, 'ai-suite', 'files', 'model', 'big.onnx');
  const h = createHash('sha256');
  for await (const c of createReadStream(stored)) h.update(c as Buffer);
  assert.equal(h.digest('hex'), sha256, 'the stored model is the one sent');
  assert.deepEqual(readdirSync(join(dataDir, 'ai-suite', 'uploads')), [], 'no partial file left');
  const local = (await ok(`{ ListProviderModels(input: { Provider: "local" }) { ID OwnedBy Size } }`))
    .ListProviderModels;
  assert.deepEqual(local, [{ ID: 'big.onnx', OwnedBy: 'local', Size: SIZE }]);
});

test('a wrong checksum is refused at close and nothing is kept', async () => {
  const bytes = randomBytes(3 * MiB);
  const declared = createHash('sha256').update('something else').digest('hex');
  const s = (
    await ok(
      `mutation($in: CreateModelUploadSessionRequest!) { CreateModelUploadSession(input: $in) { ${SESSION_FIELDS} } }`,
      { in: { Name: 'wrong.onnx', Size: bytes.length, SHA256: declared } },
    )
  ).CreateModelUploadSession;
  const r = await putChunk(
    edge.url,
    edge.auth,
    s.UploadPath,
    { start: 0, end: bytes.length - 1, total: bytes.length },
    bytes,
  );
  assert.equal(r.status, 200, JSON.stringify(r.body));
  const refused = await gql(
    `mutation($id: ID!) { CloseModelUploadSession(input: { ID: $id }) { Session { State } } }`,
    {
      id: s.ID,
    },
  );
  assert.match(refused.errors?.[0]?.message ?? '', /checksum mismatch/);
  const gone = await gql(`query($id: ID!) { GetModelUploadSession(input: { ID: $id }) { State } }`, {
    id: s.ID,
  });
  assert.match(gone.errors?.[0]?.message ?? '', /not found/);
  assert.equal(existsSync(join(dataDir, 'ai-suite', 'uploads', `${s.ID}.part`)), false);
  assert.equal(existsSync(join(dataDir, 'ai-suite', 'files', 'model', 'wrong.onnx')), false);
  const files = (await ok(`{ GetAISuiteFiles(input: { Kind: "model" }) { Name } }`)).GetAISuiteFiles;
  assert.deepEqual(files, [{ Name: 'big.onnx' }]);
});
