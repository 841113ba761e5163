/** Subject rules and the subscription trie, against a straightforward reference matcher. */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { Sublist } from '../../../src/edge/datahub/sublist.js';
import {
  isValidPattern,
  isValidSubject,
  patternCovers,
  patternMatches,
  subjectPrefix,
} from '../../../src/edge/datahub/subject.js';

/** The reference: NATS matching written as plainly as possible, token by token, recursively. */
function reference(pattern: string[], subject: string[]): boolean {
  if (pattern.length === 0) return subject.length === 0;
  const [p, ...prest] = pattern;
  if (p === '>') return subject.length >= 1;
  if (subject.length === 0) return false;
  const [s, ...srest] = subject;
  return (p === '*' || p === s) && reference(prest, srest);
}

const token = fc.constantFrom('a', 'b', 'c', 'dev', 'tag1');
const subjectArb = fc.array(token, { minLength: 1, maxLength: 5 });
const patternArb = fc
  .array(fc.oneof({ weight: 4, arbitrary: token }, { weight: 2, arbitrary: fc.constant('*') }), {
    minLength: 1,
    maxLength: 5,
  })
  .chain((toks) => fc.boolean().map((full) => (full ? [...toks.slice(0, -1), '>'] : toks)));

interface TestSub {
  pattern: string;
  queue: string | undefined;
  n: number;
}

describe('subject matching', () => {
  test('valid subjects and patterns', () => {
    for (const s of ['a', 'a.b', 'devicehub.raw.Pump-1.S', 'a*b.c', '_INBOX.x1'])
      assert.ok(isValidSubject(s), s);
    for (const s of ['', '.a', 'a.', 'a..b', 'a b', 'a.*', '>', 'a.>', 'a\tb'])
      assert.ok(!isValidSubject(s), s);
    for (const p of ['a.*', '>', 'a.>', '*.*.c', 'a.*.>']) assert.ok(isValidPattern(p), p);
    for (const p of ['a.>.b', '>.a', 'a..b', '', 'a.', 'a b.>']) assert.ok(!isValidPattern(p), p);
  });

  test('covers: a subscription is allowed when every subject it matches is allowed', () => {
    assert.ok(patternCovers('devicehub.>', 'devicehub.raw.>'));
    assert.ok(patternCovers('devicehub.>', 'devicehub.raw.p1.S'));
    assert.ok(patternCovers('devicehub.*.p1', 'devicehub.raw.p1'));
    assert.ok(patternCovers('>', 'a.*'));
    assert.ok(!patternCovers('devicehub.raw.>', 'devicehub.>'));
    assert.ok(!patternCovers('devicehub.*', 'devicehub.>'));
    assert.ok(!patternCovers('devicehub.raw', 'devicehub.*'));
    assert.ok(!patternCovers('a.>', 'a'));
  });

  test('counters are keyed by the first tokens of the subject', () => {
    assert.equal(subjectPrefix('devicehub.raw.p1.S', 2), 'devicehub.raw');
    assert.equal(subjectPrefix('devicehub', 2), 'devicehub');
    assert.equal(subjectPrefix('a.b', 2), 'a.b');
  });

  test('property: patternMatches agrees with the reference', () => {
    fc.assert(
      fc.property(patternArb, subjectArb, (p, s) => {
        assert.equal(patternMatches(p.join('.'), s.join('.')), reference(p, s));
      }),
      { numRuns: 5000 },
    );
  });

  test('property: the trie (with its cache, through inserts and removals) agrees with the reference', () => {
    fc.assert(
      fc.property(
        fc.array(patternArb, { minLength: 1, maxLength: 25 }),
        fc.array(subjectArb, { minLength: 1, maxLength: 15 }),
        fc.array(fc.nat(), { maxLength: 10 }),
        (patterns, subjects, removals) => {
          const list = new Sublist<TestSub>({ cacheSize: 8 });
          const subs = patterns.map((p, n) => ({
            pattern: p.join('.'),
            queue: n % 3 === 0 ? 'q' : undefined,
            n,
          }));
          // Match before, during and after changes so that stale cache entries would show.
          for (const s of subjects) list.match(s.join('.'));
          for (const sub of subs) list.insert(sub);
          const live = new Set(subs);
          for (const r of removals) {
            const victim = subs[r % subs.length]!;
            assert.equal(list.remove(victim), live.delete(victim));
          }
          for (const s of subjects) {
            const subject = s.join('.');
            const got = list.match(subject);
            const ids = [...got.plain, ...got.groups.flat()].map((x) => x.n).sort((a, b) => a - b);
            const want = [...live]
              .filter((x) => reference(x.pattern.split('.'), s))
              .map((x) => x.n)
              .sort((a, b) => a - b);
            assert.deepEqual(ids, want, `subject ${subject}`);
            assert.equal(got.groups.length, want.some((n) => n % 3 === 0) ? 1 : 0);
          }
          assert.equal(list.size, live.size);
        },
      ),
      { numRuns: 1500 },
    );
  });

  test('subjects matched by the same subscriptions share one result; others keep their own', () => {
    const list = new Sublist<TestSub>();
    const all = { pattern: 'devicehub.raw.>', queue: undefined, n: 0 };
    const history = { pattern: 'devicehub.raw.>', queue: undefined, n: 1 };
    const one = { pattern: 'devicehub.raw.plc.hr7', queue: undefined, n: 2 };
    for (const s of [all, history, one]) list.insert(s);
    const a = list.match('devicehub.raw.plc.hr1');
    const b = list.match('devicehub.raw.plc.hr2');
    assert.deepEqual(
      a.plain.map((s) => s.n),
      [0, 1],
    );
    // Two subscriptions on `devicehub.raw.>`: one result for every such subject, not one each.
    assert.equal(a, b);
    assert.ok(Object.isFrozen(a.plain));
    const c = list.match('devicehub.raw.plc.hr7');
    assert.notEqual(c, a);
    assert.deepEqual(c.plain.map((s) => s.n).sort(), [0, 1, 2]);
    assert.deepEqual(
      list.match('devicehub.raw.plc.hr3').plain.map((s) => s.n),
      [0, 1],
    );
    // A subscription gone: the results made after it leave it out.
    list.remove(history);
    const d = list.match('devicehub.raw.plc.hr1');
    assert.deepEqual(
      d.plain.map((s) => s.n),
      [0],
    );
    assert.equal(list.match('devicehub.raw.plc.hr2'), d);
    assert.deepEqual(
      list
        .match('devicehub.raw.plc.hr7')
        .plain.map((s) => s.n)
        .sort(),
      [0, 2],
    );
  });

  test('tens of thousands of subscriptions: matching stays fast', () => {
    const list = new Sublist<TestSub>();
    let n = 0;
    for (let d = 0; d < 200; d++) {
      for (let t = 0; t < 100; t++)
        list.insert({ pattern: `devicehub.raw.dev${d}.tag${t}`, queue: undefined, n: n++ });
      list.insert({ pattern: `devicehub.raw.dev${d}.>`, queue: undefined, n: n++ });
    }
    list.insert({ pattern: 'devicehub.*.*.tag7', queue: undefined, n: n++ });
    assert.ok(list.size > 20_000);
    const r = list.match('devicehub.raw.dev42.tag7');
    assert.equal(r.plain.length, 3);
    // Every match over the large list is right; its speed is measured in bench/datahub, not here.
    let found = 0;
    for (let i = 0; i < 100_000; i++)
      found += list.match(`devicehub.raw.dev${i % 200}.tag${i % 100}`).plain.length;
    // tag7 of any device matches three patterns, every other tag two.
    assert.equal(found, 100_000 * 2 + 1_000);
  });
});
