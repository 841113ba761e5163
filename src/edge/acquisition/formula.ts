/**
 * `TagFormula`: a small arithmetic expression on the raw value, parsed once into a tree of
 * closures (no `eval`, no `new Function`, no access to anything but the value and the functions
 * listed here).
 *
 * Grammar: numbers (`1`, `2.5`, `1e3`, `0x1F`), the raw value as `x` (also `X`, `value`, `raw`),
 * constants `pi` and `e`, `+ - * / %`, `^` or `**` (power, right-associative), unary `-`, `+` and
 * `!`, comparisons `< <= > >= == !=` (1 or 0), `&&`, `||`, `cond ? a : b`, parentheses, and the
 * functions abs, min, max, round, floor, ceil, trunc, sqrt, pow, exp, log, log10, log2, sin, cos,
 * tan, asin, acos, atan, atan2, sign, clamp(v, lo, hi), hypot.
 */

export type Formula = (x: number) => number;

export class FormulaError extends Error {
  override readonly name = 'FormulaError';
}

type Node = (x: number) => number;

const FUNCTIONS: Record<string, { arity: [number, number]; fn: (...a: number[]) => number }> = {
  abs: { arity: [1, 1], fn: Math.abs },
  min: { arity: [1, 16], fn: Math.min },
  max: { arity: [1, 16], fn: Math.max },
  round: { arity: [1, 2], fn: (v, d = 0) => Math.round(v * 10 ** d) / 10 ** d },
  floor: { arity: [1, 1], fn: Math.floor },
  ceil: { arity: [1, 1], fn: Math.ceil },
  trunc: { arity: [1, 1], fn: Math.trunc },
  sqrt: { arity: [1, 1], fn: Math.sqrt },
  pow: { arity: [2, 2], fn: Math.pow },
  exp: { arity: [1, 1], fn: Math.exp },
  log: { arity: [1, 1], fn: Math.log },
  log10: { arity: [1, 1], fn: Math.log10 },
  log2: { arity: [1, 1], fn: Math.log2 },
  sin: { arity: [1, 1], fn: Math.sin },
  cos: { arity: [1, 1], fn: Math.cos },
  tan: { arity: [1, 1], fn: Math.tan },
  asin: { arity: [1, 1], fn: Math.asin },
  acos: { arity: [1, 1], fn: Math.acos },
  atan: { arity: [1, 1], fn: Math.atan },
  atan2: { arity: [2, 2], fn: Math.atan2 },
  sign: { arity: [1, 1], fn: Math.sign },
  hypot: { arity: [1, 16], fn: Math.hypot },
  clamp: { arity: [3, 3], fn: (v, lo, hi) => Math.min(Math.max(v, lo), hi) },
};
const VARIABLES = new Set(['x', 'X', 'value', 'raw']);
const CONSTANTS: Record<string, number> = { pi: Math.PI, PI: Math.PI, e: Math.E, E: Math.E };

const TOKEN =
  /\s*(?:(0[xX][0-9a-fA-F]+|(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?)|([A-Za-z_][A-Za-z0-9_]*)|(\*\*|<=|>=|==|!=|&&|\|\||[-+*/%^()<>!?:,]))/y;

interface Token {
  kind: 'num' | 'id' | 'op' | 'end';
  text: string;
  pos: number;
}

function tokenize(src: string): Token[] {
  const out: Token[] = [];
  let pos = 0;
  while (pos < src.length) {
    if (/^\s*$/.test(src.slice(pos))) break;
    TOKEN.lastIndex = pos;
    const m = TOKEN.exec(src);
    if (!m) {
      const at = pos + (src.length - pos - src.slice(pos).trimStart().length);
      throw new FormulaError(`unexpected character ${JSON.stringify(src[at])} at ${at}`);
    }
    const start = m.index + m[0].length - (m[1] ?? m[2] ?? m[3])!.length;
    if (m[1] !== undefined) out.push({ kind: 'num', text: m[1], pos: start });
    else if (m[2] !== undefined) out.push({ kind: 'id', text: m[2], pos: start });
    else out.push({ kind: 'op', text: m[3]!, pos: start });
    pos = TOKEN.lastIndex;
  }
  out.push({ kind: 'end', text: '', pos: src.length });
  return out;
}

const BINARY: Record<string, [number, boolean, (a: number, b: number) => number]> = {
  '||': [1, false, (a, b) => (a || b ? 1 : 0)],
  '&&': [2, false, (a, b) => (a && b ? 1 : 0)],
  '==': [3, false, (a, b) => (a === b ? 1 : 0)],
  '!=': [3, false, (a, b) => (a !== b ? 1 : 0)],
  '<': [4, false, (a, b) => (a < b ? 1 : 0)],
  '<=': [4, false, (a, b) => (a <= b ? 1 : 0)],
  '>': [4, false, (a, b) => (a > b ? 1 : 0)],
  '>=': [4, false, (a, b) => (a >= b ? 1 : 0)],
  '+': [5, false, (a, b) => a + b],
  '-': [5, false, (a, b) => a - b],
  '*': [6, false, (a, b) => a * b],
  '/': [6, false, (a, b) => a / b],
  '%': [6, false, (a, b) => a % b],
  '^': [8, true, (a, b) => a ** b],
  '**': [8, true, (a, b) => a ** b],
};
const MAX_LENGTH = 1000;
const MAX_DEPTH = 64;

/** A call of function `name` with its parsed arguments, once their count is checked. */
function callNode(name: string, f: (typeof FUNCTIONS)[string], args: Node[]): Node {
  if (args.length < f.arity[0] || args.length > f.arity[1])
    throw new FormulaError(
      `${name} takes ${f.arity[0] === f.arity[1] ? f.arity[0] : `${f.arity[0]} to ${f.arity[1]}`} arguments, got ${args.length}`,
    );
  const fn = f.fn;
  if (args.length === 1) {
    const a = args[0]!;
    return (x) => fn(a(x));
  }
  return (x) => fn(...args.map((a) => a(x)));
}

/** Parses a formula; throws `FormulaError` with the position of the problem. */
export function compileFormula(source: string): Formula {
  if (source.length > MAX_LENGTH) throw new FormulaError(`formula is longer than ${MAX_LENGTH} characters`);
  const tokens = tokenize(source);
  let i = 0;
  let depth = 0;
  const peek = () => tokens[i]!;
  const next = () => tokens[i++]!;
  const expect = (text: string) => {
    const t = next();
    if (t.text !== text || t.kind === 'num')
      throw new FormulaError(
        `expected "${text}" at ${t.pos}, found ${t.kind === 'end' ? 'the end' : `"${t.text}"`}`,
      );
  };

  function primary(): Node {
    const t = next();
    if (t.kind === 'num') {
      const v = Number(t.text);
      return () => v;
    }
    if (t.kind === 'id') {
      if (VARIABLES.has(t.text)) return (x) => x;
      if (peek().text === '(') {
        // Own properties only: `constructor`, `toString`... are not functions of the grammar.
        const f = Object.hasOwn(FUNCTIONS, t.text) ? FUNCTIONS[t.text] : undefined;
        if (!f)
          throw new FormulaError(
            `unknown function "${t.text}" at ${t.pos}; functions: ${Object.keys(FUNCTIONS).join(', ')}`,
          );
        next();
        const args: Node[] = [];
        if (peek().text !== ')') {
          args.push(expression(0));
          while (peek().text === ',') {
            next();
            args.push(expression(0));
          }
        }
        expect(')');
        return callNode(t.text, f, args);
      }
      if (Object.hasOwn(CONSTANTS, t.text)) {
        const v = CONSTANTS[t.text]!;
        return () => v;
      }
      throw new FormulaError(`unknown name "${t.text}" at ${t.pos}; the raw value is x`);
    }
    if (t.text === '(') {
      const e = expression(0);
      expect(')');
      return e;
    }
    if (t.text === '-' || t.text === '+' || t.text === '!') {
      // Unary binds tighter than everything but power: -x^2 is -(x^2).
      const operand = expression(7);
      if (t.text === '-') return (x) => -operand(x);
      if (t.text === '!') return (x) => (operand(x) ? 0 : 1);
      return operand;
    }
    throw new FormulaError(`unexpected ${t.kind === 'end' ? 'end of formula' : `"${t.text}"`} at ${t.pos}`);
  }

  function expression(minPrec: number): Node {
    if (++depth > MAX_DEPTH) throw new FormulaError(`formula nests deeper than ${MAX_DEPTH}`);
    let left = primary();
    for (;;) {
      const t = peek();
      if (t.kind !== 'op') break;
      if (t.text === '?' && minPrec === 0) {
        next();
        const a = expression(0);
        expect(':');
        const b = expression(0);
        const c = left;
        left = (x) => (c(x) ? a(x) : b(x));
        continue;
      }
      const op = Object.hasOwn(BINARY, t.text) ? BINARY[t.text] : undefined;
      if (!op || op[0] < minPrec) break;
      next();
      const right = expression(op[1] ? op[0] : op[0] + 1);
      const l = left;
      const f = op[2];
      left = (x) => f(l(x), right(x));
    }
    depth--;
    return left;
  }

  const root = expression(0);
  const end = peek();
  if (end.kind !== 'end') throw new FormulaError(`unexpected "${end.text}" at ${end.pos}`);
  return root;
}
