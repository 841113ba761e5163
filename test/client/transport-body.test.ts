/**
 * The transport's answer body: with a `content-length` its chunks are copied into one buffer of
 * that length as they arrive; without one they are concatenated. Either way the text is every
 * byte in order (a chunk dropped, doubled or out of place fails), multi-byte characters split
 * across chunks included.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { Transport } from '../../src/client/transport.js';

// 3 MB of JSON in numbered pieces, with characters of 2, 3 and 4 bytes.
const pieces = Array.from({ length: 3000 }, (_, i) => `{"i":${i},"s":"é☃😀${'x'.repeat(i % 997)}"}`);
const text = `[${pieces.join(',')}]`;
const bytes = Buffer.from(text, 'utf8');

async function serve(sized: boolean, fn: (t: Transport, url: string) => Promise<void>): Promise<void> {
  const server = http.createServer((_req, res) => {
    res.writeHead(200, {
      'content-type': 'application/json',
      ...(sized ? { 'content-length': String(bytes.length) } : {}),
    });
    // Odd chunk sizes, so that characters are cut between chunks.
    let at = 0;
    const next = () => {
      if (at >= bytes.length) return void res.end();
      const end = Math.min(at + 7919 + (at % 13), bytes.length);
      res.write(bytes.subarray(at, end));
      at = end;
      setImmediate(next);
    };
    next();
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const t = new Transport();
  try {
    await fn(t, `http://127.0.0.1:${(server.address() as AddressInfo).port}/x`);
  } finally {
    t.close();
    server.close();
  }
}

for (const sized of [true, false]) {
  test(`an answer ${sized ? 'with' : 'without'} content-length arrives whole, in order`, async () => {
    await serve(sized, async (t, url) => {
      const res = await t.request('GET', url);
      assert.equal(res.status, 200);
      assert.equal(res.text.length, text.length);
      assert.ok(res.text === text, 'the same text');
      assert.equal((res.body as unknown[]).length, pieces.length);
    });
  });
}
