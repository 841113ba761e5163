/**
 * The AI suite on /analytics/v3 against real edges: files listed, read, deleted; the whole suite
 * exported by one edge and imported by another as one archive; an archive with a `../` entry
 * refused with nothing written; `ListProviderModels` for `local` and for an OpenAI-compatible
 * endpoint (a small HTTP server started here); the bounds (one file, the total, idle sessions).
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { existsSync, readdirSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { request } from 'undici';
import {
  bootstrapAdmin,
  clientToken,
  graphql,
  insecureAgent,
  startTestEdge,
  type TestEdge,
} from '../helpers/edge.js';
import { putChunk, uploadFile } from '../helpers/ai-suite.js';
import { eventually } from '../helpers/util.js';

const MiB = 1024 * 1024;
let a: TestEdge;
let b: TestEdge;
let authA: string;
let adminA: string;
let authB: string;
let provider: Server;
const seenAuth: string[] = [];

const edgeOptions = {
  analyticsAiSuiteFileBytes: 4 * MiB,
  analyticsAiSuiteTotalBytes: 10 * MiB,
  analyticsAiSuiteSessionIdle: 1500,
  analyticsProviderTimeout: 1000,
};

before(async () => {
  [a, b] = await Promise.all([startTestEdge(edgeOptions), startTestEdge(edgeOptions)]);
  adminA = await bootstrapAdmin(a);
  authA = `Bearer ${(await clientToken(a, adminA)).token}`;
  authB = `Bearer ${(await clientToken(b, await bootstrapAdmin(b))).token}`;
  provider = createServer((req, res) => {
    seenAuth.push(req.headers.authorization ?? '');
    if (req.url === '/v1/models') {
      res.setHeader('content-type', 'application/json');
      res.end(
        JSON.stringify({
          object: 'list',
          data: [
            { id: 'gpt-test-small', object: 'model', created: 1700000000, owned_by: 'tests' },
            { id: 'gpt-test-large', object: 'model', created: 1700000001, owned_by: 'tests' },
          ],
        }),
      );
    } else if (req.url === '/slow/v1/models') {
      // Never answers: the edge's deadline ends the call.
    } else {
      res.statusCode = 404;
      res.end('not found');
    }
  });
  await new Promise<void>((r) => provider.listen(0, '127.0.0.1', r));
});
after(async () => {
  provider?.closeAllConnections();
  provider?.close();
  await Promise.all([a?.stop(), b?.stop()]);
});

async function gql(t: TestEdge, auth: string, query: string, variables?: Record<string, unknown>) {
  const r = await graphql(t, '/analytics/v3', auth, query, variables);
  assert.equal(r.status, 200, r.text);
  return r.body as { data?: any; errors?: Array<{ message: string; extensions?: { code?: string } }> };
}
async function ok(t: TestEdge, auth: string, query: string, variables?: Record<string, unknown>) {
  const body = await gql(t, auth, query, variables);
  assert.equal(body.errors, undefined, JSON.stringify(body.errors));
  return body.data;
}
/** A mutation a viewer may not run: 403, the GraphQL layer's refusal. */
async function refused(auth: string, query: string, variables?: Record<string, unknown>) {
  const r = await graphql(a, '/analytics/v3', auth, query, variables);
  assert.equal(r.status, 403, r.text);
  assert.match(r.body.errors[0].message, /viewer role cannot run mutations/);
}
async function err(t: TestEdge, auth: string, query: string, variables?: Record<string, unknown>) {
  const body = await gql(t, auth, query, variables);
  assert.ok(body.errors?.length, `expected an error, got ${JSON.stringify(body.data)}`);
  return body.errors[0]!.message;
}

const FILES = `query($k: String) { GetAISuiteFiles(input: { Kind: $k }) { Kind Name Size } }`;
const CONTENT = `query($in: GetAISuiteFileContentRequest!) { GetAISuiteFileContent(input: $in) { Kind Name Size Offset Encoding Content Truncated } }`;
const CREATE = `mutation($in: CreateAISuiteUploadSessionRequest!) { CreateAISuiteUploadSession(input: $in) { ID UploadPath Offset } }`;
const sha = (b: Buffer | string) => createHash('sha256').update(b).digest('hex');

/** A ustar archive of `entries` (names as given, unchecked), written here without the edge's code. */
function tar(entries: Array<{ name: string; body: Buffer; type?: string }>): Buffer {
  const parts: Buffer[] = [];
  for (const e of entries) {
    const h = Buffer.alloc(512);
    h.write(e.name, 0, 100);
    h.write('0000644\0', 100);
    h.write('0000000\0', 108);
    h.write('0000000\0', 116);
    h.write(e.body.length.toString(8).padStart(11, '0') + '\0', 124);
    h.write('00000000000\0', 136);
    h.write('        ', 148);
    h.write(e.type ?? '0', 156);
    h.write('ustar\x0000', 257);
    let sum = 0;
    for (const x of h) sum += x;
    h.write(sum.toString(8).padStart(6, '0') + '\0 ', 148);
    parts.push(h, e.body, Buffer.alloc((512 - (e.body.length % 512)) % 512));
  }
  parts.push(Buffer.alloc(1024));
  return Buffer.concat(parts);
}

describe('analytics: the AI suite', () => {
  test('files are listed, read (text as utf8, binary as base64, by ranges) and deleted', async () => {
    const prompt = 'You are the plant assistant. Answer in one sentence. – ünïcode';
    const model = Buffer.from([0, 1, 2, 3, 254, 255, 0, 7]);
    await uploadFile(a, authA, 'prompt', 'assistant.txt', Buffer.from(prompt));
    await uploadFile(a, authA, 'tool', 'read-tag.json', Buffer.from('{"name":"read-tag"}'));
    await uploadFile(a, authA, 'model', 'tiny.onnx', model);
    const all = (await ok(a, authA, FILES)).GetAISuiteFiles;
    assert.deepEqual(all, [
      { Kind: 'model', Name: 'tiny.onnx', Size: 8 },
      { Kind: 'prompt', Name: 'assistant.txt', Size: Buffer.byteLength(prompt) },
      { Kind: 'tool', Name: 'read-tag.json', Size: 19 },
    ]);
    assert.deepEqual((await ok(a, authA, FILES, { k: 'tool' })).GetAISuiteFiles, [
      { Kind: 'tool', Name: 'read-tag.json', Size: 19 },
    ]);
    const text = (await ok(a, authA, CONTENT, { in: { Kind: 'prompt', Name: 'assistant.txt' } }))
      .GetAISuiteFileContent;
    assert.equal(text.Encoding, 'utf8');
    assert.equal(text.Content, prompt);
    assert.equal(text.Truncated, false);
    const bin = (
      await ok(a, authA, CONTENT, { in: { Kind: 'model', Name: 'tiny.onnx', Offset: 2, Length: 4 } })
    ).GetAISuiteFileContent;
    assert.equal(bin.Encoding, 'base64');
    assert.deepEqual(Buffer.from(bin.Content, 'base64'), model.subarray(2, 6));
    assert.equal(bin.Truncated, true);
    assert.match(
      await err(a, authA, CONTENT, { in: { Kind: 'prompt', Name: '../../service.lock' } }),
      /Name/,
    );
    assert.match(await err(a, authA, CONTENT, { in: { Kind: 'secrets', Name: 'x' } }), /Kind must be one of/);
    const del = `mutation($k: String!, $n: String!) { DeleteAISuiteFile(input: { Kind: $k, Name: $n }) }`;
    assert.equal((await ok(a, authA, del, { k: 'tool', n: 'read-tag.json' })).DeleteAISuiteFile, true);
    assert.match(await err(a, authA, del, { k: 'tool', n: 'read-tag.json' }), /not found/);
  });

  test('a viewer reads the suite but cannot upload, close, delete or import', async () => {
    const viewer = `Bearer ${(await clientToken(a, adminA, 'viewer')).token}`;
    assert.ok((await ok(a, viewer, FILES)).GetAISuiteFiles.length > 0);
    const input = { in: { Kind: 'prompt', Name: 'v.txt', Size: 1, SHA256: sha('v') } };
    await refused(viewer, CREATE, input);
    const s = (await ok(a, authA, CREATE, input)).CreateAISuiteUploadSession;
    const put = await putChunk(a.url, viewer, s.UploadPath, { start: 0, end: 0, total: 1 }, Buffer.from('v'));
    assert.equal(put.status, 403, JSON.stringify(put.body));
    const own = await putChunk(a.url, authA, s.UploadPath, { start: 0, end: 0, total: 1 }, Buffer.from('v'));
    assert.equal(own.status, 200);
    const close = `mutation($id: ID!) { CloseAISuiteUploadSession(input: { ID: $id }) { File { Name } } }`;
    await refused(viewer, close, { id: s.ID });
    assert.equal((await ok(a, authA, close, { id: s.ID })).CloseAISuiteUploadSession.File.Name, 'v.txt');
    const del = `mutation { DeleteAISuiteFile(input: { Kind: "prompt", Name: "v.txt" }) }`;
    await refused(viewer, del);
    assert.equal((await ok(a, authA, del)).DeleteAISuiteFile, true);
    await uploadFile(
      a,
      authA,
      'provider',
      'secret.json',
      Buffer.from('{"type":"openai","baseUrl":"http://x","apiKey":"k"}'),
    );
    const secret = await gql(a, viewer, CONTENT, { in: { Kind: 'provider', Name: 'secret.json' } });
    assert.match(secret.errors?.[0]?.message ?? '', /a viewer cannot read it/);
    assert.equal(
      (await ok(a, authA, CONTENT, { in: { Kind: 'provider', Name: 'secret.json' } })).GetAISuiteFileContent
        .Encoding,
      'utf8',
    );
    const exp = (await ok(a, authA, `mutation { ExportAISuite { DownloadPath } }`)).ExportAISuite;
    const dl = await request(`${a.url}${exp.DownloadPath}`, {
      headers: { authorization: viewer },
      dispatcher: insecureAgent,
    });
    assert.equal(dl.statusCode, 403);
    await dl.body.dump();
    await ok(a, authA, `mutation { DeleteAISuiteFile(input: { Kind: "provider", Name: "secret.json" }) }`);
    const imp = `mutation { ImportAISuite(input: { SessionID: "00000000-0000-0000-0000-000000000000" }) { Files { Name } } }`;
    await refused(viewer, imp);
  });

  test('ExportAISuite on one edge, ImportAISuite on another: the same files, byte for byte', async () => {
    await uploadFile(a, authA, 'tool', 'empty.json', Buffer.alloc(0));
    await uploadFile(
      a,
      authA,
      'provider',
      'lab.json',
      Buffer.from('{"type":"openai","baseUrl":"http://127.0.0.1:1"}'),
    );
    const exp = (await ok(a, authA, `mutation { ExportAISuite { ID Size SHA256 Files DownloadPath } }`))
      .ExportAISuite;
    assert.equal(exp.Files, 4);
    const anonymous = await request(`${a.url}${exp.DownloadPath}`, { dispatcher: insecureAgent });
    assert.equal(anonymous.statusCode, 401);
    await anonymous.body.dump();
    const dl = await request(`${a.url}${exp.DownloadPath}`, {
      headers: { authorization: authA },
      dispatcher: insecureAgent,
    });
    assert.equal(dl.statusCode, 200);
    const archive = Buffer.from(await dl.body.arrayBuffer());
    assert.equal(archive.length, exp.Size);
    assert.equal(sha(archive), exp.SHA256);

    const s = await uploadFile(b, authB, 'archive', 'suite.tar', archive);
    const imported = (
      await ok(
        b,
        authB,
        `mutation($id: ID!) { ImportAISuite(input: { SessionID: $id }) { Files { Kind Name Size } } }`,
        {
          id: s.ID,
        },
      )
    ).ImportAISuite.Files;
    assert.deepEqual(
      imported.map((f: { Kind: string; Name: string }) => `${f.Kind}/${f.Name}`),
      ['model/tiny.onnx', 'prompt/assistant.txt', 'tool/empty.json', 'provider/lab.json'],
    );
    for (const f of (await ok(a, authA, FILES)).GetAISuiteFiles) {
      const read = async (t: TestEdge, auth: string) =>
        (await ok(t, auth, CONTENT, { in: { Kind: f.Kind, Name: f.Name } })).GetAISuiteFileContent.Content;
      assert.equal(await read(b, authB), await read(a, authA), `${f.Kind}/${f.Name}`);
    }
    assert.deepEqual(readdirSync(join(b.dataDir, 'ai-suite', 'uploads')), [], 'the archive is not kept');
  });

  test('an archive with a ../ entry (or a link, or an unknown folder) is refused and nothing is written', async () => {
    const before = (await ok(b, authB, FILES)).GetAISuiteFiles;
    for (const bad of [
      [
        { name: 'prompt/ok.txt', body: Buffer.from('fine') },
        { name: '../escaped.txt', body: Buffer.from('x') },
      ],
      [{ name: 'model/../../../escaped.txt', body: Buffer.from('x') }],
      [{ name: '/etc/escaped', body: Buffer.from('x') }],
      [{ name: 'prompt/link', body: Buffer.alloc(0), type: '2' }],
      [{ name: 'secrets/key', body: Buffer.from('x') }],
    ]) {
      const s = await uploadFile(b, authB, 'archive', 'bad.tar', tar(bad));
      const message = await err(
        b,
        authB,
        `mutation($id: ID!) { ImportAISuite(input: { SessionID: $id }) { Files { Name } } }`,
        {
          id: s.ID,
        },
      );
      assert.match(message, /is not a file <kind>\/<name> of the AI suite .*; nothing imported/, message);
    }
    assert.deepEqual((await ok(b, authB, FILES)).GetAISuiteFiles, before);
    assert.equal(existsSync(join(b.dataDir, 'ai-suite', 'escaped.txt')), false);
    assert.equal(existsSync(join(b.dataDir, 'escaped.txt')), false);
    assert.deepEqual(readdirSync(join(b.dataDir, 'ai-suite', 'uploads')), []);
  });

  test('ListProviderModels: local models, and an OpenAI-compatible /v1/models with its key and a deadline', async () => {
    const port = (provider.address() as AddressInfo).port;
    await uploadFile(
      a,
      authA,
      'provider',
      'vllm.json',
      Buffer.from(JSON.stringify({ type: 'openai', baseUrl: `http://127.0.0.1:${port}`, apiKey: 'k-123' })),
    );
    await uploadFile(
      a,
      authA,
      'provider',
      'slow.json',
      Buffer.from(JSON.stringify({ type: 'openai', baseUrl: `http://127.0.0.1:${port}/slow/v1` })),
    );
    const list = `query($p: String!) { ListProviderModels(input: { Provider: $p }) { ID OwnedBy Created Size } }`;
    assert.deepEqual((await ok(a, authA, list, { p: 'local' })).ListProviderModels, [
      { ID: 'tiny.onnx', OwnedBy: 'local', Created: null, Size: 8 },
    ]);
    assert.deepEqual((await ok(a, authA, list, { p: 'vllm.json' })).ListProviderModels, [
      { ID: 'gpt-test-small', OwnedBy: 'tests', Created: 1700000000, Size: null },
      { ID: 'gpt-test-large', OwnedBy: 'tests', Created: 1700000001, Size: null },
    ]);
    assert.ok(seenAuth.includes('Bearer k-123'));
    const started = Date.now();
    assert.match(await err(a, authA, list, { p: 'slow.json' }), /no answer within 1000 ms/);
    assert.ok(Date.now() - started < 5000);
    assert.match(await err(a, authA, list, { p: 'lab.json' }), /GET http:\/\/127.0.0.1:1\/v1\/models/);
    assert.match(await err(a, authA, list, { p: 'nobody.json' }), /not found/);
  });

  test('bounds: one file, the whole suite, and an idle session expires with its partial file', async () => {
    const create = (name: string, size: number) => ({
      in: { Kind: 'model', Name: name, Size: size, SHA256: sha(name) },
    });
    assert.match(
      await err(a, authA, CREATE, create('huge.onnx', 4 * MiB + 1)),
      /above the limit of one file/,
    );
    const first = (await ok(a, authA, CREATE, create('a.onnx', 4 * MiB))).CreateAISuiteUploadSession;
    const second = (await ok(a, authA, CREATE, create('b.onnx', 4 * MiB))).CreateAISuiteUploadSession;
    assert.match(await err(a, authA, CREATE, create('c.onnx', 4 * MiB)), /above its limit of 10485760/);
    const r = await putChunk(
      a.url,
      authA,
      first.UploadPath,
      { start: 0, end: MiB - 1, total: 4 * MiB },
      Buffer.alloc(MiB, 1),
    );
    assert.equal(r.status, 200, JSON.stringify(r.body));
    assert.equal(r.body.Offset, MiB);
    const resumed = (
      await ok(
        a,
        authA,
        `mutation($id: ID!) { ResumeAISuiteUploadSession(input: { ID: $id }) { Offset State } }`,
        {
          id: first.ID,
        },
      )
    ).ResumeAISuiteUploadSession;
    assert.deepEqual(resumed, { Offset: MiB, State: 'Open' });
    const part = join(a.dataDir, 'ai-suite', 'uploads', `${first.ID}.part`);
    assert.equal(existsSync(part), true);
    // Both sessions go idle for longer than 1.5 s: they expire, their partial files are removed.
    const parts = [first.ID, second.ID].map((id) => join(a.dataDir, 'ai-suite', 'uploads', `${id}.part`));
    await eventually(() => parts.every((p) => !existsSync(p)), 10_000, 'the partial files removed');
    for (const id of [first.ID, second.ID])
      assert.match(
        await err(
          a,
          authA,
          `mutation($id: ID!) { ResumeAISuiteUploadSession(input: { ID: $id }) { Offset } }`,
          { id },
        ),
        /not found/,
      );
    const late = await putChunk(
      a.url,
      authA,
      first.UploadPath,
      { start: MiB, end: 2 * MiB - 1, total: 4 * MiB },
      Buffer.alloc(MiB, 1),
    );
    assert.equal(late.status, 404);
    // The space they held is free again.
    assert.ok((await ok(a, authA, CREATE, create('c.onnx', 4 * MiB))).CreateAISuiteUploadSession.ID);
    const noRange = await request(`${a.url}${first.UploadPath}`, {
      method: 'PUT',
      headers: { authorization: authA, 'content-type': 'application/octet-stream' },
      body: 'x',
      dispatcher: insecureAgent,
    });
    assert.equal(noRange.statusCode, 400);
    assert.match(await noRange.body.text(), /Content-Range: bytes <first>-<last>\/<size>/);
  });
});
