/**
 * A stored template's secrets protected from its bytes (`protectSecretsBytes`): the same text as
 * `JSON.stringify(protectSecrets(JSON.parse(text)))`, though the large sections without secrets
 * are not parsed; `sectionRanges` finds each section's value in the compact text.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { protectSecrets, revealSecrets, type TemplateDocument } from '../../src/edge/config/document.js';
import {
  mayHoldSecret,
  piecesInclude,
  protectSecretsBytes,
  sectionRanges,
  slicePieces,
} from '../../src/edge/config/document-bytes.js';

const ODD = 'quote " back \\ end\\ tab \t nul \u0001 sep \u2028 é ☃ 😀 {{x}} ]}{[ "sections":{} "$secret"';

const big = {
  devices: Array.from({ length: 40 }, (_, d) => ({
    Name: `dev-${d}\\`,
    DriverID: 'Generator',
    Description: d % 3 ? ODD : '\\',
    MetaData: { '2': 'two', '1': ['one', { '"': '\\"' }], n: -0.000001, e: 1e21, nil: null },
    Tags: Array.from({ length: 5 }, (_, i) => ({ TagName: `t${i}"`, Properties: { address: `${i}` } })),
  })),
};

const plain = (): TemplateDocument =>
  ({
    format: 'millwright.config-template',
    version: 1,
    createdAt: '2026-11-28T00:00:00.000Z',
    sections: {
      auth: { apiClients: [{ client_id: 'c', name: 'n', role: 'admin', secret: { $secret: 'hash' } }] },
      devicehub: big,
      empty: {},
      datahub: { keys: [{ name: 'k', key: { $secret: 'k-hash' } }, { name: 'none' }] },
      twins: { list: [big.devices[0]] },
      last: big,
    },
  }) as unknown as TemplateDocument;

const viaObjects = async (text: string, key: string | undefined) =>
  JSON.stringify(await protectSecrets(JSON.parse(text) as TemplateDocument, key));

test('sectionRanges finds every section value in the compact text, strings with brackets and quotes included', () => {
  const doc = plain();
  const text = JSON.stringify(doc);
  const bytes = Buffer.from(text, 'utf8');
  const ranges = sectionRanges(bytes);
  assert.ok(ranges);
  assert.deepEqual(
    ranges.map(([start, end]) => JSON.parse(bytes.toString('utf8', start, end)) as unknown),
    Object.values(doc.sections),
  );
  assert.equal(sectionRanges(Buffer.from(JSON.stringify(doc, null, 2))), undefined, 'not compact');
  assert.equal(sectionRanges(Buffer.from('{"sections":{"a":1}')), undefined, 'cut short');
  assert.equal(sectionRanges(Buffer.from('[1]')), undefined, 'not an object');
});

test('without a key, the secrets are left out: the same bytes as parse, protect and stringify', async () => {
  const text = JSON.stringify(plain());
  const out = Buffer.concat(await protectSecretsBytes(Buffer.from(text, 'utf8'), undefined));
  const expected = await viaObjects(text, undefined);
  assert.equal(out.toString('utf8'), expected);
  assert.ok(!expected.includes('"$secret"') && expected.includes('"auth"'));
  // Text that is not compact goes the whole way, with the same answer.
  const spaced = JSON.stringify(plain(), null, 1);
  assert.equal(Buffer.concat(await protectSecretsBytes(Buffer.from(spaced), undefined)).toString(), expected);
});

test('with a key, secrets are sealed and reveal as they were; the rest is the same text', async () => {
  const text = JSON.stringify(plain());
  const out = JSON.parse(
    Buffer.concat(await protectSecretsBytes(Buffer.from(text, 'utf8'), 'the key of the test')).toString(),
  ) as {
    encryption: unknown;
    sections: Record<string, unknown>;
  };
  assert.ok(out.encryption, 'an encryption header');
  const expected = JSON.parse(await viaObjects(text, 'the key of the test')) as typeof out;
  assert.deepEqual(Object.keys(out), Object.keys(expected));
  for (const name of ['devicehub', 'empty', 'twins', 'last'])
    assert.equal(JSON.stringify(out.sections[name]), JSON.stringify(expected.sections[name]));
  const revealed = await revealSecrets(out as unknown as TemplateDocument, 'the key of the test');
  assert.deepEqual(revealed.sections, plain().sections);
});

test('a stored template with encrypted secrets: kept without a key, as parse and stringify give them', async () => {
  const sealed = await protectSecrets(plain(), 'the key of the test');
  const text = JSON.stringify(sealed);
  assert.ok(text.includes('"$encrypted"'));
  const out = Buffer.concat(await protectSecretsBytes(Buffer.from(text, 'utf8'), undefined)).toString('utf8');
  assert.equal(out, await viaObjects(text, undefined));
  assert.equal(out, text, 'nothing to change');
});

/** `bytes` cut at `cuts` (offsets, ascending): pieces as an export hands them, some empty. */
const cut = (bytes: Buffer, cuts: number[]): Buffer[] =>
  [0, ...cuts, bytes.length].slice(1).map((end, i, ends) => bytes.subarray(i === 0 ? 0 : ends[i - 1]!, end));

test('pieces: a pattern is found across their boundaries; slices and the protected answer are those of one buffer', async () => {
  const bytes = Buffer.from('ab"$secret"cd"$encrypted"é{{x', 'utf8');
  for (let a = 0; a <= bytes.length; a++)
    for (let b = a; b <= bytes.length; b += 3) {
      const pieces = cut(bytes, [a, a, b]);
      for (const pattern of ['"$secret"', '"$encrypted"', '{{x', 'ab', 'é', 'zz', 'x"$'])
        assert.equal(piecesInclude(pieces, pattern), bytes.includes(pattern), `${pattern} cut at ${a}, ${b}`);
      assert.ok(mayHoldSecret(pieces), `a marker cut at ${a}, ${b}`);
      for (const [s, e] of [
        [0, bytes.length],
        [2, 11],
        [a, b],
        [b, bytes.length],
        [a, a],
      ] as const)
        assert.ok(Buffer.concat(slicePieces(pieces, s, e)).equals(bytes.subarray(s, e)), `slice ${s}-${e}`);
    }
  // Each marker alone, or neither (a `$` at either end, `$` in other words), cut everywhere.
  for (const text of ['$x"$secret"', '"$encrypted"$', '$"$secre"$encrypte"$$', '"$secret', '$secret"$']) {
    const one = Buffer.from(text, 'utf8');
    const expected = one.includes('"$secret"') || one.includes('"$encrypted"');
    for (let a = 0; a <= one.length; a++)
      for (let b = a; b <= one.length; b++)
        assert.equal(mayHoldSecret(cut(one, [a, b, b])), expected, `${text} cut at ${a}, ${b}`);
  }
  // A document in pieces (cut inside the large sections and between them), its ranges given as an
  // export gives them: the same answer as from one buffer, without and with a key.
  const doc = Buffer.from(JSON.stringify(plain()), 'utf8');
  const ranges = sectionRanges(doc)!;
  const cuts = [5, ...ranges.flatMap(([s, e]) => [s, Math.floor((s + e) / 2), e]), doc.length - 3].sort(
    (x, y) => x - y,
  );
  const pieces = cut(doc, cuts);
  const one = Buffer.concat(await protectSecretsBytes(doc, undefined)).toString('utf8');
  assert.equal(Buffer.concat(await protectSecretsBytes(pieces, undefined, ranges)).toString('utf8'), one);
  assert.equal(Buffer.concat(await protectSecretsBytes(pieces, undefined)).toString('utf8'), one);
  const sealed = JSON.parse(
    Buffer.concat(await protectSecretsBytes(pieces, 'the key of the test', ranges)).toString('utf8'),
  ) as TemplateDocument;
  assert.deepEqual((await revealSecrets(sealed, 'the key of the test')).sections, plain().sections);
});
