/** The rules of the kernel's credential throttle (issue 33, finding 7): the guesser waits, not the user. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { AuthThrottle } from '../../src/kernel/auth-throttle.js';

const opts = {
  freeFailures: 3,
  baseDelayMs: 100,
  maxDelayMs: 1000,
  maxUsersPerAddress: 4,
  addressBlockMs: 5000,
  windowMs: 60_000,
};

test('failures of one user from one address delay only that pair, doubling up to the cap', () => {
  const t = new AuthThrottle(opts);
  let now = 1_000_000;
  for (let i = 0; i < 3; i++) {
    assert.deepEqual(t.check('10.0.0.1', 'alice', now), { ok: true });
    t.failure('10.0.0.1', 'alice', now);
  }
  // The free failures cost nothing.
  assert.deepEqual(t.check('10.0.0.1', 'alice', now), { ok: true });
  const delays: number[] = [];
  for (let i = 0; i < 6; i++) {
    t.failure('10.0.0.1', 'alice', now);
    const v = t.check('10.0.0.1', 'alice', now);
    assert.equal(v.ok, false);
    if (!v.ok) {
      assert.equal(v.reason, 'user');
      delays.push(v.retryMs);
      now += v.retryMs;
    }
  }
  assert.deepEqual(delays, [100, 200, 400, 800, 1000, 1000]);
  assert.deepEqual(t.check('10.0.0.1', 'alice', now), { ok: true });
  // Another user from the same address, and the same user from another address: not delayed.
  assert.deepEqual(t.check('10.0.0.1', 'bob', now - 500), { ok: true });
  assert.deepEqual(t.check('10.0.0.2', 'alice', now - 500), { ok: true });
  // User names compare case-insensitively (one pair for ALICE and alice).
  t.failure('10.0.0.1', 'ALICE', now);
  assert.equal(t.check('10.0.0.1', 'alice', now).ok, false);
});

test('a success forgets the pair; idle pairs are forgotten after the window', () => {
  const t = new AuthThrottle(opts);
  for (let i = 0; i < 5; i++) t.failure('a', 'u', 0);
  assert.equal(t.check('a', 'u', 1).ok, false);
  t.success('a', 'u');
  assert.deepEqual(t.check('a', 'u', 1), { ok: true });
  for (let i = 0; i < 5; i++) t.failure('a', 'v', 0);
  // After the window, one more failure starts over (free again).
  t.failure('a', 'v', 61_000);
  assert.deepEqual(t.check('a', 'v', 61_000), { ok: true });
});

test('many distinct user names failing from one address refuse the address, for everyone', () => {
  const t = new AuthThrottle(opts);
  for (const u of ['a', 'b', 'c', 'd']) t.failure('192.0.2.7', u, 0);
  assert.deepEqual(t.check('192.0.2.7', 'someone-else', 0), { ok: true });
  t.failure('192.0.2.7', 'e', 0);
  const v = t.check('192.0.2.7', 'someone-else', 10);
  assert.deepEqual(v, { ok: false, retryMs: 4990, reason: 'address' });
  // Only that address.
  assert.deepEqual(t.check('192.0.2.8', 'someone-else', 10), { ok: true });
  assert.deepEqual(t.check('192.0.2.7', 'someone-else', 5000), { ok: true });
});

test('the maps are bounded: idle entries swept first, then the oldest evicted', () => {
  const t = new AuthThrottle({ ...opts, maxPairs: 100, maxAddresses: 50, maxUsersPerAddress: 1_000 });
  for (let i = 0; i < 1000; i++) t.failure(`10.1.${i % 200}.1`, `user-${i}`, i);
  assert.ok(t.size.pairs <= 100, JSON.stringify(t.size));
  assert.ok(t.size.addresses <= 50, JSON.stringify(t.size));
  // The newest pair is still held.
  for (let i = 0; i < 3; i++) t.failure('10.1.199.1', 'user-999', 1000);
  assert.equal(t.check('10.1.199.1', 'user-999', 1000).ok, false);
});
