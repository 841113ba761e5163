/** Topic-filter rules of accounts: validation, matching, covering, and the per-connection cache. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { CompiledRules, ConnectionRules, filterProblem, topicMatches } from '../../src/uns/accounts/index.js';
import { coverLevels } from '../../src/uns/accounts/rules.js';

test('filterProblem accepts MQTT filters and names what is wrong with others', () => {
  for (const ok of ['a', 'a/b', '+', '#', 'a/+/c', 'a/#', '+/+', '/a', 'a//b', '$SYS/#'])
    assert.equal(filterProblem(ok), null, ok);
  assert.match(filterProblem('a/#/b')!, /"#" must be a whole level and the last one/);
  assert.match(filterProblem('a#')!, /"#" must be a whole level/);
  assert.match(filterProblem('a/b+')!, /"\+" must be a whole level/);
  assert.match(filterProblem('')!, /empty/);
});

test('topicMatches follows MQTT 4.7', () => {
  const cases: [string, string, boolean][] = [
    ['a/b', 'a/b', true],
    ['a/b', 'a/c', false],
    ['a/+', 'a/b', true],
    ['a/+', 'a/b/c', false],
    ['a/+', 'a', false],
    ['a/#', 'a', true],
    ['a/#', 'a/b/c', true],
    ['#', 'a/b', true],
    ['+/b', 'a/b', true],
    ['+', '/a', false],
    ['+/+', '/a', true],
    ['#', '$SYS/x', false],
    ['+/x', '$SYS/x', false],
    ['$SYS/#', '$SYS/x', true],
  ];
  for (const [f, t, want] of cases) assert.equal(topicMatches(f, t), want, `${f} ~ ${t}`);
});

test('a rule covers a subscription only when every topic of the subscription matches it', () => {
  const cases: [string, string, boolean][] = [
    ['a/#', 'a/#', true],
    ['a/#', 'a/+/b', true],
    ['a/#', 'a', true],
    ['a/+', 'a/#', false],
    ['a/+', 'a/+', true],
    ['a/+', 'a/b', true],
    ['a/b', 'a/+', false],
    ['#', 'x/y/#', true],
    ['+/b', 'a/b', true],
    ['+/b', '+/b', true],
    ['+/b', '#', false],
    ['a/+/c', 'a/+/c', true],
    ['a/+/c', 'a/+/#', false],
    ['#', '$SYS/#', false],
  ];
  for (const [r, f, want] of cases)
    assert.equal(coverLevels(r.split('/'), f.split('/')), want, `${r} covers ${f}`);
});

test('compiled rules split Pub and Sub; the connection cache follows replaced rules', () => {
  const rules = new CompiledRules([
    { path: 'plant/line1/#', perm: 'Pub' },
    { path: 'cmd/+/dev', perm: 'Sub' },
    { path: 'shared/x', perm: 'PubSub' },
  ]);
  assert.equal(rules.canPublish('plant/line1/temp'), true);
  assert.equal(rules.canPublish('plant/line2/temp'), false);
  assert.equal(rules.canSubscribe('plant/line1/temp'), false);
  assert.equal(rules.canSubscribe('cmd/a/dev'), true);
  assert.equal(rules.canPublish('cmd/a/dev'), false);
  assert.equal(rules.canPublish('shared/x'), true);
  assert.equal(rules.canSubscribe('shared/x'), true);
  assert.equal(rules.canSubscribe('shared/+'), false);

  const conn = new ConnectionRules(rules);
  assert.equal(conn.canPublish('plant/line1/temp'), true);
  assert.equal(conn.canPublish('plant/line1/temp'), true, 'cached');
  conn.replace(new CompiledRules([]));
  assert.equal(conn.canPublish('plant/line1/temp'), false, 'the cache is dropped with the old rules');
  // The cache stays bounded.
  for (let i = 0; i < 5000; i++) conn.canPublish(`t/${i}`);
  assert.equal(conn.canPublish('t/1'), false);
});

test('a publish checked against 1000 rules of an account is allowed exactly where one of them matches', () => {
  // How fast this is lives in no test (tests assert no timings): the UNS benches measure the broker.
  const specs = Array.from({ length: 1000 }, (_, i) => ({ path: `site/${i}/+/#`, perm: 'PubSub' as const }));
  const rules = new CompiledRules(specs);
  let allowed = 0;
  for (let i = 0; i < 10_000; i++) if (rules.canPublish(`site/${i % 1500}/m/temp`)) allowed++;
  assert.equal(allowed, 7000);
  assert.equal(rules.canPublish('site/999/m'), true);
  assert.equal(rules.canPublish('site/1000/m/temp'), false);
  assert.equal(rules.canPublish('site/5'), false, 'the + level needs a level under the site');
});
