/**
 * The broker's shared verdicts (used by its hooks and by the console's rule tester) and the
 * message meter of `brokerMetrics`.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { DEFAULT_LIMITS } from '../../src/uns/broker/options.js';
import { MessageMeter, publishProblem, subscribeProblem } from '../../src/uns/broker/verdict.js';

test('publishProblem: NUL, too many levels, the internal names of shared subscriptions', () => {
  assert.equal(publishProblem('plant/line1/temp', DEFAULT_LIMITS), null);
  assert.match(publishProblem('a\u0000b', DEFAULT_LIMITS)!, /NUL/);
  assert.match(publishProblem('a/'.repeat(DEFAULT_LIMITS.maxTopicLevels) + 'x', DEFAULT_LIMITS)!, /levels/);
  assert.match(publishProblem('$share/g/t', DEFAULT_LIMITS)!, /cannot start with/);
});

test('subscribeProblem judges a shared subscription by its filter', () => {
  assert.equal(subscribeProblem('$share/g/plant/#', DEFAULT_LIMITS), null);
  assert.match(subscribeProblem('$share//plant/#', DEFAULT_LIMITS)!, /\$share\/<group>\/<filter>/);
});

test('MessageMeter: messages per second over the last 10 full seconds, old seconds forgotten', () => {
  const meter = new MessageMeter();
  const t0 = Math.floor(Date.now() / 1000) * 1000 + 1000;
  for (let i = 0; i < 50; i++) meter.mark(t0 + 100);
  for (let i = 0; i < 30; i++) meter.mark(t0 + 1100);
  // At t0 + 2 s both seconds are full and in the window: 80 messages / 10 s.
  assert.equal(meter.rate(t0 + 2000), 8);
  assert.equal(meter.total, 80);
  // 11 s after the first second ends, it has left the window; the second one is still in it.
  assert.equal(meter.rate(t0 + 11_000), 3);
  assert.equal(meter.rate(t0 + 60_000), 0);
  assert.equal(meter.total, 80);
});
