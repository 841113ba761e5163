/**
 * Fuzzing user expressions and scripts on a real `millwright edge` process (issue 33): JSONata
 * expressions (token soup, recursive and endless functions, huge ranges and outputs) through a
 * viewer's `PlaygroundMessages`, and analytics script sources (token soup, recursion, endless
 * loops, huge outputs and allocations) through `TestProcessorScript`. After every case: an answer
 * (never a GraphQL internal error), the edge answering a concurrent probe within 1 s the whole time
 * (no stall); after every target: the process alive, `/health` answering, memory under the bound.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { TWINS } from '../../src/client/index.js';
import { startLiveEdge, whileProbing, wsClient, type LiveEdge, type WsClient } from '../helpers/live-edge.js';
import { alive as processAlive, checkProcess, params, tokenSoup } from './support.js';

/** Longest stall tolerated: a probe request answered within it while an evaluation runs. */
const STALL_MS = 1000;

let e: LiveEdge;
let ws: WsClient;
before(async () => {
  e = await startLiveEdge();
  ws = await wsClient(e, '/digital-twins', e.viewer);
});
after(async () => {
  // A dead edge fails every case after it: its last words say why.
  if (e && !processAlive(e.p.pid)) {
    console.error(
      `the edge died (${JSON.stringify(e.p.exitStatus())}); stdout:\n${e.p.output().slice(-3000)}\nstderr:\n${e.p.stderr().slice(-3000)}`,
    );
  }
  ws?.ws.close();
  await e?.stop();
});

const alive = () => checkProcess(e.p.pid, Number(new URL(e.url).port), e.p.output);
/**
 * No stall: every probe answered within `STALL_MS`, or, when one was slower, the edge's main thread
 * never ran that long without yielding (its own measure: a machine loaded by other work delays a
 * probe without the edge stalling).
 */
async function noStall(probes: number[], what: string): Promise<void> {
  const slowest = Math.max(...probes);
  if (slowest < STALL_MS) return;
  const blocked = await e.blockedMs();
  assert.ok(
    blocked < STALL_MS,
    `probe took ${slowest.toFixed(0)} ms during ${what}; the edge's main thread ran ${blocked.toFixed(0)} ms without yielding`,
  );
}

const n = fc.integer({ min: 0, max: 100_000_000 }).map(String);
const jsonataShapes = fc.oneof(
  tokenSoup([
    '$',
    '$$',
    '.',
    '[',
    ']',
    '(',
    ')',
    '{',
    '}',
    ':',
    ';',
    ',',
    '..',
    '?',
    '&',
    '*',
    '+',
    '~>',
    ':=',
    '$f',
    'function($n)',
    '$string',
    '$pad',
    '$map',
    '$reduce',
    '$sort',
    '$match',
    '/(a+)+$/',
    'value',
    '"x"',
    'true',
  ]),
  n.map((k) => `($f := function($n){ $n > ${k} ? 1 : $f($n+1) }; $f(0))`),
  n.map((k) => `($f := function($n){ $n > ${k} ? 1 : 1 + $f($n+1) }; $f(0))`),
  fc.constant('($f := function($n){ $f($n+1) }; $f(0))'),
  n.map((k) => `$count([1..${k}])`),
  n.map((k) => `$pad("", ${k}, "x")`),
  n.map((k) => `$join([1..${Math.min(Number(k), 9_999_999)}].$string(), ",")`),
  fc.integer({ min: 1, max: 5000 }).map((k) => '('.repeat(k) + '1' + ')'.repeat(k)),
);

let nextId = 0;
/** One playground run of `expression` on the shared WebSocket: its first answer for this id. */
async function playground(expression: string): Promise<any> {
  const id = `f${++nextId}`;
  ws.send({
    id,
    type: 'subscribe',
    payload: {
      query: TWINS.PlaygroundMessages,
      variables: { input: { Expression: expression, Messages: [{ value: 1 }] } },
    },
  });
  for (;;) {
    const m = await ws.next(10_000);
    if (m.id !== id) continue; // a late message of an earlier run
    if (m.type === 'next') ws.send({ id, type: 'complete' });
    return m;
  }
}

const scriptShapes = fc.oneof(
  tokenSoup([
    'function',
    'onMessage',
    '(',
    ')',
    '{',
    '}',
    'return',
    'm',
    '.value',
    ';',
    'while(true)',
    '[',
    ']',
    '"x"',
    '.repeat(',
    'JSON.stringify',
    '=>',
  ]),
  n.map((k) => `function f(n){ return n > ${k} ? 0 : f(n+1)+1 }\nfunction onMessage(m){ return f(0) }`),
  n.map((k) => `function onMessage(m){ return "x".repeat(${k}) }`),
  n.map((k) => `function onMessage(m){ const a = []; for (let i = 0; i < ${k}; i++) a.push({i}); return a }`),
  fc
    .integer({ min: 1, max: 200_000 })
    .map(
      (k) =>
        `function onMessage(m){ let o = {}, c = o; for (let i = 0; i < ${k}; i++) { c.a = {}; c = c.a } return JSON.stringify(o).length }`,
    ),
  fc.constant('function onMessage(m){ for(;;){} }'),
  fc.constant('function onMessage(m){ try { return onMessage(m) } catch (e) { return onMessage(m) } }'),
);

/**
 * fast-check's time limit (`interruptAfterTimeLimit`) ends a property while a run may still be in
 * flight: the test waits for it, so that no probe outlives the edge.
 */
let inflight: Promise<unknown> = Promise.resolve();
function tracked<A extends unknown[]>(run: (...args: A) => Promise<void>): (...args: A) => Promise<void> {
  return (...args) => {
    const p = run(...args).catch((err: unknown) => {
      // A dead edge explains every later failure: say so with its last output, and the input.
      if (!processAlive(e.p.pid)) {
        throw new Error(
          `the edge died on ${JSON.stringify(args).slice(0, 300)}:\n${e.p.output().slice(-2000)}\nstderr: ${e.p.stderr().slice(-2000)}`,
        );
      }
      throw err;
    });
    inflight = p.catch(() => undefined);
    return p;
  };
}

describe('expressions and scripts fuzz', () => {
  test('JSONata expressions in a viewer’s playground', async () => {
    await fc.assert(
      fc.asyncProperty(
        jsonataShapes,
        tracked(async (expression: string) => {
          const { result, probes } = await whileProbing(e, () => playground(expression));
          assert.ok(['next', 'error'].includes(result.type), JSON.stringify(result).slice(0, 300));
          assert.doesNotMatch(JSON.stringify(result), /internal error/i, expression);
          await noStall(probes, expression.slice(0, 200));
        }),
      ),
      params(),
    );
    await inflight;
    await alive();
    const blocked = await e.blockedMs();
    assert.ok(blocked < STALL_MS, `the edge's main thread ran ${blocked.toFixed(0)} ms without yielding`);
  });

  test('script sources in TestProcessorScript', async () => {
    const TEST = `mutation($in: TestProcessorScriptRequest!) { TestProcessorScript(input: $in) { Error Failure } }`;
    await fc.assert(
      fc.asyncProperty(
        scriptShapes,
        fc.integer({ min: 1, max: 20 }),
        tracked(async (script: string, count: number) => {
          const { result, probes } = await whileProbing(e, () =>
            e.gql('/analytics/v3', e.admin, TEST, {
              in: {
                Script: script,
                Messages: Array.from({ length: count }, (_, i) => ({ value: i })),
                TimeoutMs: 200,
              },
            }),
          );
          assert.equal(result.errors, undefined, `${script.slice(0, 200)}: ${JSON.stringify(result.errors)}`);
          await noStall(probes, script.slice(0, 200));
        }),
      ),
      params(),
    );
    await inflight;
    await alive();
    const blocked = await e.blockedMs();
    assert.ok(blocked < STALL_MS, `the edge's main thread ran ${blocked.toFixed(0)} ms without yielding`);
  });
});
