/** Template parameters against placeholders of a module's own (`\{{` is the text `{{`). */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { escapePlaceholders, substitute } from '../../src/edge/config/document.js';
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
