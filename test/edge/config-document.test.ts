/** Template parameters against placeholders of a module's own (`\{{` is the text `{{`). */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { escapePlaceholders, substitute, walkSecrets } from '../../src/edge/config/document.js';
import type { SectionIssue } from '../../src/kernel/service/index.js';

test('an exported {{ is escaped and applies as the text it was; placeholders still substitute', () => {
  const issues: SectionIssue[] = [];
  const exported = { a: 'x.{{Device}}.y', b: ['{{p}}'], c: 1, d: 'a\\{{b', e: null };
  const doc = escapePlaceholders(exported);
  assert.deepEqual(doc, { a: 'x.\\{{Device}}.y', b: ['\\{{p}}'], c: 1, d: 'a\\\\{{b', e: null });
  assert.deepEqual(substitute(doc, {}, issues), exported);
  assert.deepEqual(issues, []);
  assert.deepEqual(substitute({ a: 'h.{{p}}.\\{{q}}' }, { p: 'v' }, issues), { a: 'h.v.{{q}}' });
  assert.deepEqual(issues, []);
  substitute({ a: '{{missing}}' }, {}, issues);
  assert.deepEqual(issues, [{ path: 'a', message: 'parameter "missing" has no value' }]);
});

test('escaping and the secret walk copy only what changes, and name where a secret is', () => {
  const untouched = { devices: [{ Name: 'd', Tags: [{ TagName: 't', Properties: { a: '1' } }] }] };
  assert.equal(escapePlaceholders(untouched), untouched, 'nothing to escape: the same object');
  const partly = { a: { x: 'plain' }, b: { y: 'h.{{p}}' } };
  const escaped = escapePlaceholders(partly);
  assert.equal(escaped.a, partly.a, 'an unchanged branch is shared');
  assert.notEqual(escaped.b, partly.b);
  assert.equal(partly.b.y, 'h.{{p}}', 'the input is left as it was');

  const seen: string[] = [];
  const doc = { clients: [{ name: 'c', secret: { $secret: 's' } }, { name: 'd' }], key: { $secret: 'k' } };
  const out = walkSecrets(doc, (s, path) => {
    seen.push(path);
    return s.$secret === 'k' ? undefined : { $encrypted: 'x' };
  }) as typeof doc;
  assert.deepEqual(seen, ['clients[0].secret', 'key']);
  assert.deepEqual(out, { clients: [{ name: 'c', secret: { $encrypted: 'x' } }, { name: 'd' }] });
  assert.equal(out.clients[1], doc.clients[1], 'an item without secrets is shared');
  assert.deepEqual(doc.clients[0]!.secret, { $secret: 's' }, 'the input is left as it was');
  assert.equal(
    walkSecrets(untouched, () => undefined),
    untouched,
  );
});
