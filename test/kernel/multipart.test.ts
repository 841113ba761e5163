import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { AppError } from '../../src/kernel/errors.js';
import { isMultipartForm, parseMultipart, MAX_MULTIPART_PARTS } from '../../src/kernel/http/multipart.js';

async function encode(form: FormData): Promise<{ type: string; body: Buffer }> {
  const r = new Request('http://localhost/', { method: 'POST', body: form });
  return { type: r.headers.get('content-type')!, body: Buffer.from(await r.arrayBuffer()) };
}

const bad = (fn: () => unknown, message: RegExp) =>
  assert.throws(fn, (e: unknown) => e instanceof AppError && e.status === 400 && message.test(e.message));

describe('buffered multipart/form-data', () => {
  test('fields and files as a browser or fetch encodes them, binary bytes intact', async () => {
    const bytes = Buffer.from([0, 13, 10, 45, 45, 255, 1, 2, 13, 10]);
    const form = new FormData();
    form.append('friendlyName', 'line 1');
    form.append('file', new Blob([bytes], { type: 'application/zip' }), 'a b.zip');
    const { type, body } = await encode(form);
    assert.ok(isMultipartForm(type));
    const parts = parseMultipart(body, type);
    assert.equal(parts.length, 2);
    assert.deepEqual(
      { name: parts[0]!.name, filename: parts[0]!.filename, data: parts[0]!.data.toString() },
      { name: 'friendlyName', filename: undefined, data: 'line 1' },
    );
    assert.equal(parts[1]!.name, 'file');
    assert.equal(parts[1]!.filename, 'a b.zip');
    assert.equal(parts[1]!.contentType, 'application/zip');
    assert.deepEqual(parts[1]!.data, bytes);
  });

  test('a malformed body is a 400 saying what', async () => {
    assert.ok(!isMultipartForm('application/zip'));
    bad(() => parseMultipart(Buffer.from('x'), 'multipart/form-data'), /no boundary/);
    bad(
      () => parseMultipart(Buffer.from('no parts here'), 'multipart/form-data; boundary=b'),
      /no part starts/,
    );
    bad(
      () =>
        parseMultipart(
          Buffer.from('--b\r\nContent-Disposition: form-data; name="a"'),
          'multipart/form-data; boundary=b',
        ),
      /no end of headers/,
    );
    bad(
      () =>
        parseMultipart(
          Buffer.from('--b\r\nContent-Disposition: form-data; name="a"\r\n\r\ncut'),
          'multipart/form-data; boundary=b',
        ),
      /cut/,
    );
    bad(
      () => parseMultipart(Buffer.from('--b\r\nX: y\r\n\r\nv\r\n--b--'), 'multipart/form-data; boundary=b'),
      /no Content-Disposition name/,
    );
    const many = `${'--b\r\nContent-Disposition: form-data; name="a"\r\n\r\nv\r\n'.repeat(MAX_MULTIPART_PARTS + 1)}--b--`;
    bad(() => parseMultipart(Buffer.from(many), 'multipart/form-data; boundary="b"'), /more than 100 parts/);
  });
});
