/**
 * Rules of the asset hierarchy and the fleet twins, without a service: CSV quoting both ways, the
 * access a branch grant gives (and never to a sibling), the top-most granted nodes, and the
 * DataHub form of a DT2 topic.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { csvLine, parseCsv } from '../../src/manager/hierarchy/csv.js';
import { grantedTops, levelAt, type CompanyAccess } from '../../src/manager/hierarchy/access.js';
import type { GrantWithPath } from '../../src/manager/hierarchy/repository.js';
import { convertTopic, escapePlaceholders } from '../../src/manager/twins/model.js';

test('CSV: a line written and parsed again is the same values, quotes, commas and line breaks included', () => {
  const values = ['a', 'b, c', 'say "hi"', 'two\nlines', '', ' padded ', '{"k":"v"}'];
  const text =
    csvLine(['h1', 'h2', 'h3', 'h4', 'h5', 'h6', 'h7']) +
    csvLine(values) +
    csvLine(['x', '', '', '', '', '', '']);
  const parsed = parseCsv(text);
  assert.deepEqual(
    parsed.map((r) => r.line),
    [1, 2, 4],
    'the line each record starts on',
  );
  assert.deepEqual(parsed[1]!.values, values);
  assert.deepEqual(
    parseCsv('a,b\r\n1,2\r\n').map((r) => r.values),
    [
      ['a', 'b'],
      ['1', '2'],
    ],
  );
  assert.deepEqual(
    parseCsv('\ufeffa\n\n').map((r) => r.values),
    [['a']],
    'a BOM and blank lines',
  );
  assert.throws(() => parseCsv('a\n"open\n'), /line 2: a quoted value does not end/);
});

const grant = (path: string, access: 'edit' | 'read'): GrantWithPath => ({
  id: path,
  company_id: 'c',
  node_id: `n-${path}`,
  username: 'u',
  access,
  created_by: 't',
  created_at: 0,
  path,
  node_key: path,
  node_name: path,
});
const P = (...segs: string[]) => segs.map((s) => s.repeat(32)).join('');

test('a branch grant covers its node and what is under it, never a sibling', () => {
  const a: CompanyAccess = {
    companyId: 'c',
    companyName: 'acme',
    principal: { subject: 's', tokenId: 't', tokenName: 't', username: 'u', grants: [] },
    companyLevel: null,
    grants: [grant(P('a', 'b'), 'edit'), grant(P('a', 'c', 'd'), 'read')],
  };
  assert.equal(levelAt(a, P('a', 'b')), 'edit');
  assert.equal(levelAt(a, P('a', 'b', 'e', 'f')), 'edit');
  assert.equal(levelAt(a, P('a')), null, 'not the parent');
  assert.equal(levelAt(a, P('a', 'c')), null, 'not the sibling');
  assert.equal(levelAt(a, P('a', 'c', 'd', '1')), 'read');
  assert.equal(
    levelAt({ ...a, companyLevel: 'read' }, P('a', 'b')),
    'edit',
    'the stronger of role and grant',
  );
  assert.equal(levelAt({ ...a, companyLevel: 'admin' }, P('a', 'c', 'd')), 'admin');
  const nested = { ...a, grants: [...a.grants, grant(P('a', 'b', 'e'), 'read')] };
  assert.deepEqual(
    grantedTops(nested).map((g) => g.path),
    [P('a', 'b'), P('a', 'c', 'd')],
  );
});

test('a DT2 topic in its DataHub form', () => {
  assert.equal(convertTopic('lab/{{Cell}}/temp'), 'lab.{{Cell}}.temp');
  assert.equal(convertTopic('plant/+/line/#'), 'plant.*.line.>');
  assert.equal(convertTopic('devicehub.raw.gen.speed'), 'devicehub.raw.gen.speed');
  assert.equal(convertTopic('/a/b/'), 'a.b');
});

test('a DT2 section keeps its twins placeholders out of the template parameters', () => {
  const section = { models: [{ Topic: 'lab.{{Cell}}.temp', Parameters: [{ Key: 'K', Value: 'a{{b}}' }] }] };
  assert.deepEqual(escapePlaceholders(section), {
    models: [{ Topic: 'lab.\\{{Cell}}.temp', Parameters: [{ Key: 'K', Value: 'a\\{{b}}' }] }],
  });
});
