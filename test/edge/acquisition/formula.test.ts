/** TagFormula: the safe expression evaluator. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { compileFormula, FormulaError } from '../../../src/edge/acquisition/formula.js';

test('arithmetic, precedence, functions, comparisons and the conditional', () => {
  const cases: Array<[string, number, number]> = [
    ['x * 2.5 + 1', 4, 11],
    ['(x - 32) * 5 / 9', 212, 100],
    ['1 + 2 * 3 * 4', 0, 25],
    ['10 - 4 - 3', 0, 3],
    ['2 ^ 3 ^ 2', 0, 512],
    ['-x ^ 2', 3, -9],
    ['x % 7', 23, 2],
    ['round(x / 3, 2)', 10, 3.33],
    ['max(1, x, 3) + min(x, 2)', 5, 7],
    ['clamp(x, 0, 100)', 250, 100],
    ['x > 10 ? 1 : 0', 11, 1],
    ['x >= 10 && x < 20', 15, 1],
    ['!(x == 3) || 0', 3, 0],
    ['0x10 + .5 + 1e2', 0, 116.5],
    ['value + raw + X', 1, 3],
    ['sqrt(abs(x)) * pi', -4, 2 * Math.PI],
  ];
  for (const [src, x, want] of cases)
    assert.ok(Math.abs(compileFormula(src)(x) - want) < 1e-9, `${src} at ${x}`);
});

test('refusals name the problem and its position; nothing outside the grammar is reachable', () => {
  const refused: Array<[string, RegExp]> = [
    ['x +', /unexpected end of formula at 3/],
    ['x +* 2', /unexpected "\*" at 3/],
    ['process', /unknown name "process"/],
    ['process.exit(1)', /unexpected character "\." at 7/],
    ['constructor', /unknown name "constructor"/],
    ['eval(1)', /unknown function "eval"/],
    ['toString(1)', /unknown function "toString"/],
    ['__proto__', /unknown name "__proto__"/],
    ['x ; 1', /unexpected character ";" at 2/],
    ['(x', /expected "\)" at 2/],
    ['pow(x)', /pow takes 2 arguments, got 1/],
    ['"a"', /unexpected character/],
    ['x[0]', /unexpected character "\["/],
    ['('.repeat(100) + 'x' + ')'.repeat(100), /nests deeper/],
  ];
  for (const [src, re] of refused)
    assert.throws(
      () => compileFormula(src),
      (err: Error) => err instanceof FormulaError && re.test(err.message),
      src,
    );
});

test('linear formulas agree with the arithmetic they describe', () => {
  fc.assert(
    fc.property(
      fc.integer({ min: -1000, max: 1000 }),
      fc.integer({ min: -100, max: 100 }),
      fc.integer({ min: -1e6, max: 1e6 }),
      (a, b, x) => {
        assert.equal(compileFormula(`${a} * x + ${b}`)(x), a * x + b);
      },
    ),
  );
});
