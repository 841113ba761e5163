/** The processor kinds of the catalogue, as plain state machines (no bus). */
import { before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { checkParameters, parsePath, readPath } from '../../../src/edge/analytics/catalogue.js';
import {
  createProcessor,
  loadExpressions,
  type Output,
  type Processor,
} from '../../../src/edge/analytics/processors.js';

before(() => loadExpressions());

const ctx = (vars: Record<string, unknown> = {}) => ({
  variables: () => vars,
  variablesJson: () => JSON.stringify(vars),
});

function make(kind: string, params: Record<string, unknown>, inputs = 1, vars = {}): Processor {
  const p = checkParameters(kind, {
    inputs: Array.from({ length: inputs }, (_, i) => ({ subject: `s.${i}`, name: `in${i}` })),
    ...params,
  });
  return createProcessor(kind, p, ctx(vars));
}

/** Feeds [value, time] pairs to input 0 (or [input, value, time]); answers the output values. */
function feed(
  p: Processor,
  values: Array<[number | string | boolean, number] | [number, unknown, number]>,
): Output[] {
  const out: Output[] = [];
  for (const v of values) {
    const r =
      v.length === 3
        ? p.input(v[0] as number, v[1], v[2] as number, {})
        : p.input(0, v[0], v[1] as number, {});
    assert.ok(!(r instanceof Promise), 'a synchronous kind');
    if (r) out.push(...(Array.isArray(r) ? r : [r]));
  }
  return out;
}

describe('window statistics', () => {
  const series: Array<[number, number]> = [4, 8, 15, 16, 23, 42].map((v, i) => [v, 1000 + i * 100]);
  test('count, sum, mean, min, max, stddev, percentile over a sliding count window', () => {
    const expect: Record<string, number> = {
      count: 3,
      sum: 16 + 23 + 42,
      mean: (16 + 23 + 42) / 3,
      min: 16,
      max: 42,
      stddev: Math.sqrt(((16 - 27) ** 2 + (23 - 27) ** 2 + (42 - 27) ** 2) / 3),
      percentile: 23 + (42 - 23) * 0.8, // p90 of [16, 23, 42], linear
    };
    for (const [statistic, want] of Object.entries(expect)) {
      const p = make('window', { statistic, windowType: 'sliding', windowCount: 3, percentile: 90 });
      const out = feed(p, series);
      assert.equal(out.length, 6);
      assert.ok(
        Math.abs((out.at(-1)!.value as number) - want) < 1e-9,
        `${statistic}: ${out.at(-1)!.value} != ${want}`,
      );
    }
  });

  test('sliding by time drops values older than the window', () => {
    const p = make('window', { statistic: 'sum', windowType: 'sliding', windowMs: 250 });
    assert.deepEqual(
      feed(p, series).map((o) => o.value),
      [4, 12, 27, 39, 54, 81],
    );
  });

  test('tumbling by count and by time (aligned windows; closed by the next value or the clock)', () => {
    const c = make('window', { statistic: 'mean', windowCount: 2 });
    assert.deepEqual(
      feed(c, series).map((o) => o.value),
      [6, 15.5, 32.5],
    );
    const t = make('window', { statistic: 'max', windowMs: 300 });
    const out = feed(t, series); // windows [900,1200) [1200,1500): 1000..1100 | 1200..1400 | 1500
    assert.deepEqual(
      out.map((o) => [o.value, o.metadata!.windowStart, o.metadata!.windowEnd]),
      [
        [8, 900, 1200],
        [23, 1200, 1500],
      ],
    );
    // The last window [1500, 1800) closes by the clock a tenth of its length (30 ms) after its end.
    assert.equal(t.tick!(1810), undefined, 'not before the grace time');
    const closed = t.tick!(1900) as Output;
    assert.deepEqual([closed.value, closed.metadata!.count], [42, 1]);
  });

  test('state snapshot and restore', () => {
    const a = make('window', { statistic: 'sum', windowType: 'sliding', windowMs: 120_000 });
    feed(a, [
      [1, 1],
      [2, 2],
    ]);
    const b = make('window', { statistic: 'sum', windowType: 'sliding', windowMs: 120_000 });
    b.restore!(JSON.parse(JSON.stringify(a.snapshot!())));
    assert.equal(feed(b, [[3, 3]])[0]!.value, 6);
  });
});

describe('other kinds', () => {
  test('rate of change per second', () => {
    const p = make('rate', {});
    assert.deepEqual(
      feed(p, [
        [0, 0],
        [5, 500],
        [5, 1500],
      ]).map((o) => o.value),
      [10, 0],
    );
  });

  test('integrator (trapezoidal, per second)', () => {
    const p = make('integrator', { initial: 1 });
    assert.deepEqual(
      feed(p, [
        [2, 0],
        [4, 1000],
        [4, 3000],
      ]).map((o) => o.value),
      [1, 4, 12],
    );
  });

  test('deadband and debounce', () => {
    const d = make('deadband', { band: 1 });
    assert.deepEqual(
      feed(d, [
        [10, 1],
        [10.5, 2],
        [11, 3],
        [10.2, 4],
        [9.9, 5],
      ]).map((o) => o.value),
      [10, 11, 9.9],
    );
    const b = make('debounce', { ms: 50 });
    assert.deepEqual(feed(b, [[1, 1]]), []);
    assert.equal(b.tick!(Date.now()), undefined);
    assert.equal((b.tick!(Date.now() + 60) as Output).value, 1);
    assert.equal(b.tick!(Date.now() + 120), undefined);
  });

  test('threshold below with hysteresis, emit every value', () => {
    const p = make('threshold', { limit: 10, direction: 'below', hysteresis: 2, emit: 'every' });
    assert.deepEqual(
      feed(p, [
        [11, 1],
        [9, 2],
        [11, 3],
        [12.5, 4],
        [9.5, 5],
      ]).map((o) => o.value),
      [false, true, true, false, true],
    );
  });

  test('range alarm with hysteresis, on changes', () => {
    const p = make('range', { min: 0, max: 100, hysteresis: 5 });
    assert.deepEqual(
      feed(p, [
        [50, 1],
        [101, 2],
        [97, 3],
        [94, 4],
        [-1, 5],
        [3, 6],
        [6, 7],
      ]).map((o) => [o.value, o.metadata!.input]),
      [
        [false, 50],
        [true, 101],
        [false, 94],
        [true, -1],
        [false, 6],
      ],
    );
  });

  test('expression over two inputs and a variable (mathjs, not eval)', () => {
    const p = make('expression', { expression: 'in0 * k + in1' }, 2, { k: 10 });
    assert.deepEqual(
      feed(p, [
        [0, 2, 1],
        [1, 3, 2],
        [0, 4, 3],
      ]).map((o) => o.value),
      [23, 43],
    );
    assert.throws(() => make('expression', { expression: 'import("fs")' }).input(0, 1, 1, {}));
  });

  test('join by time within the tolerance', () => {
    const p = make('join', { toleranceMs: 100 }, 2);
    assert.deepEqual(
      feed(p, [
        [0, 1, 1000],
        [1, 2, 1200], // too far apart
        [0, 3, 1250],
      ]).map((o) => o.value),
      [{ in0: 3, in1: 2 }],
    );
  });

  test('downsample: mean per interval', () => {
    const p = make('downsample', { intervalMs: 1000, mode: 'mean' });
    assert.deepEqual(
      feed(p, [
        [1, 100],
        [3, 900],
        [10, 1100],
        [20, 2100],
      ]).map((o) => [o.value, o.timestamp]),
      [
        [2, 1000],
        [10, 2000],
      ],
    );
  });

  test('state counter: time in state and transitions', () => {
    const p = make('state-counter', {});
    const out = feed(p, [
      ['run', 0],
      ['run', 1000],
      ['stop', 3000],
      ['run', 3500],
    ]);
    assert.deepEqual(out.at(-1)!.value, {
      state: 'run',
      transitions: 2,
      timeInState: { run: 3000, stop: 500 },
    });
  });
});

describe('parameters', () => {
  test('JSON paths', () => {
    assert.deepEqual(parsePath('$.metadata.values[2]'), ['metadata', 'values', 2]);
    assert.equal(readPath({ a: { b: [1, 2, 3] } }, parsePath('a.b[1]')), 2);
    assert.equal(readPath({ a: 1 }, parsePath('constructor')), undefined, 'own properties only');
  });

  test('inputs: exactly one of subject and processor; names are identifiers and unique', () => {
    assert.throws(() => checkParameters('rate', { inputs: [{}] }), /exactly one of subject and processor/);
    assert.throws(
      () => checkParameters('rate', { inputs: [{ subject: 'a', processor: 'b' }] }),
      /exactly one/,
    );
    assert.throws(
      () =>
        checkParameters('join', {
          inputs: [
            { subject: 'a', name: 'x' },
            { subject: 'b', name: 'x' },
          ],
        }),
      /twice/,
    );
    assert.throws(() => checkParameters('rate', { inputs: [{ subject: 'a', name: '1x' }] }), /identifier/);
    assert.throws(
      () => checkParameters('window', { inputs: [{ subject: 'a' }], windowMs: 1, windowCount: 1 }),
      /exactly one of windowMs/,
    );
  });
});

describe('window inputTo (the runtime path)', () => {
  test('a long sliding window: trimmed arrays, drift recomputed, at most maxWindowValues values', () => {
    // 30,000 values through a 1 s window (100 per window: the arrays are trimmed many times and
    // the running sums recomputed three times): every mean equals the mean of the values in the
    // window, recomputed from scratch; by count the same.
    const byTime = make('window', { statistic: 'mean', windowType: 'sliding', windowMs: 1000 });
    const byCount = make('window', { statistic: 'stddev', windowType: 'sliding', windowCount: 7 });
    const values: number[] = [];
    for (let k = 0; k < 30_000; k++) {
      const v = Math.sin(k / 3) * 1e6 + (k % 11);
      values.push(v);
      const t = 1_000_000 + k * 10;
      const [o] = feed(byTime, [[v, t]]);
      const inWindow = values.slice(Math.max(0, k - 99));
      const mean = inWindow.reduce((x, y) => x + y, 0) / inWindow.length;
      assert.ok(Math.abs((o!.value as number) - mean) < 1e-6 * 1e6, `mean at ${k}`);
      assert.equal(o!.metadata?.count, inWindow.length);
      const [c] = feed(byCount, [[v, t]]);
      assert.equal(c!.metadata?.count, Math.min(7, k + 1));
    }
    // More values in the window's time than LIMITS.maxWindowValues (100,000): the oldest go.
    const many = make('window', { statistic: 'sum', windowType: 'sliding', windowMs: 3_600_000 });
    let last: Output | undefined;
    for (let k = 0; k < 100_010; k++)
      many.inputTo!(
        0,
        k < 10 ? 1e9 : 1,
        5_000,
        {},
        {
          emit: (value, timestamp, metadata) => {
            last = { value, timestamp, metadata };
          },
        },
      );
    assert.deepEqual(last, {
      value: 100_000,
      timestamp: 5_000,
      metadata: { statistic: 'sum', count: 100_000 },
    });
  });

  test('emits what input answers, for every kind of window', () => {
    const series: Array<[unknown, number]> = [4, 8, 'x', 15, 16, 23, 42, 7, 1].map((v, i) => [
      v,
      1000 + i * 400,
    ]);
    const configs: Array<Record<string, unknown>> = [
      { statistic: 'mean', windowType: 'sliding', windowMs: 1000 },
      { statistic: 'stddev', windowType: 'sliding', windowCount: 3 },
      { statistic: 'sum', windowType: 'tumbling', windowCount: 2 },
      { statistic: 'max', windowType: 'tumbling', windowMs: 1000 },
      { statistic: 'percentile', percentile: 90, windowType: 'sliding', windowMs: 2000 },
    ];
    for (const params of configs) {
      const a = make('window', params);
      const b = make('window', params);
      assert.ok(b.inputTo, 'window has inputTo');
      const viaInput: Output[] = [];
      const viaEmit: Output[] = [];
      for (const [v, t] of series) {
        const r = a.input(0, v, t, {});
        assert.ok(!(r instanceof Promise));
        if (r) viaInput.push(...(Array.isArray(r) ? r : [r]));
        b.inputTo(
          0,
          v,
          t,
          {},
          { emit: (value, timestamp, metadata) => viaEmit.push({ value, timestamp, metadata }) },
        );
      }
      assert.ok(viaInput.length > 0);
      assert.deepEqual(viaEmit, viaInput, JSON.stringify(params));
      assert.equal(JSON.stringify(viaEmit), JSON.stringify(viaInput));
    }
  });
});
