/**
 * Issue 33, findings 1-3: every user expression and script runs bounded, off the edge's main loop,
 * against a real `millwright edge` process watched from outside.
 *
 * - A viewer's `PlaygroundMessages` with a recursive JSONata expression answers a failure naming
 *   the bound within 1 s, while the edge keeps answering HTTPS (it froze for minutes before);
 *   the form that never returns is cut too.
 * - `TestProcessorScript` returning 20 MiB per message over 250 messages is refused with the
 *   output bound, the edge's resident memory staying under 600 MiB (it died of heap exhaustion).
 * - An expression allocating past its heap in one step (`$string([1..9999999])`) fails with the
 *   memory bound; the edge lives on (V8 aborted the whole process: the sandbox now runs in a
 *   process of its own).
 * - A deeply recursive script is the script's `Failure` `stack` (a GraphQL internal error before),
 *   also when the recursion is QuickJS's own C code overflowing the host stack; the next test runs.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { connect, type NatsConnection } from 'nats';
import { TWINS } from '../../src/client/index.js';
import { startLiveEdge, whileProbing, wsClient, type LiveEdge } from '../helpers/live-edge.js';

let e: LiveEdge;
let nc: NatsConnection;
before(async () => {
  e = await startLiveEdge();
  nc = await connect({ servers: e.p.ready.services.edge!.natsUrl! });
});
after(async () => {
  await nc?.close();
  await e?.stop();
});

const RECURSIVE = '($f := function($n){ $n > 20000000 ? 1 : $f($n+1) }; $f(0))';
const DEEP = '($f := function($n){ $n > 20000000 ? 1 : 1 + $f($n+1) }; $f(0))';
const ENDLESS = '($f := function($n){ $f($n+1) }; $f(0))';

/** A viewer's playground run of `expression` on one sample: its one output message. */
async function playground(expression: string): Promise<any> {
  const c = await wsClient(e, '/digital-twins', e.viewer);
  try {
    c.send({
      id: 'p',
      type: 'subscribe',
      payload: {
        query: TWINS.PlaygroundMessages,
        variables: { input: { Expression: expression, Messages: [{}] } },
      },
    });
    const m = await c.next(30_000);
    assert.equal(m.type, 'next', JSON.stringify(m));
    return m.payload.data.PlaygroundMessages;
  } finally {
    c.ws.close();
  }
}

/**
 * While the evaluation runs, the edge answers: a probe within 100 ms, and none near a freeze (the
 * slowest under 1 s: on a machine loaded by other test files single probes have outliers).
 */
function assertResponsive(probes: number[]): void {
  const list = probes.map((p) => p.toFixed(0)).join(', ');
  assert.ok(Math.min(...probes) < 100, `no probe answered within 100 ms (${list})`);
  assert.ok(Math.max(...probes) < 1000, `a probe took over 1 s (${list})`);
}

describe('expressions and scripts run bounded', () => {
  test('a viewer’s recursive playground expression fails on a bound within 1 s; HTTPS keeps answering', async () => {
    await playground('1'); // the expression worker is up
    for (const [expression, bound] of [
      [RECURSIVE, /time limit exceeded/],
      [DEEP, /depth limit exceeded/],
      [ENDLESS, /time limit exceeded/],
    ] as const) {
      const { result, ms, probes } = await whileProbing(e, () => playground(expression));
      assert.equal(result.Output, null);
      assert.match(result.Error, bound);
      assert.ok(ms < 1000, `${expression}: answered after ${ms.toFixed(0)} ms`);
      assertResponsive(probes);
    }
    // A synchronous step JSONata cannot interrupt (a huge range): the worker is replaced.
    const huge = await playground('$count([1..10000000].($ * 2))');
    assert.match(huge.Error, /time limit exceeded|memory limit exceeded/);
    assert.equal((await playground('1 + 1')).Output, 2);
  });

  test('an expression that outgrows its heap in one step fails with the memory bound; the edge lives on', async () => {
    // One JSONata step allocating hundreds of MiB in a native call: past a worker thread's heap
    // limit faster than V8 can stop the thread, which aborted the whole edge before the sandbox ran
    // in a process of its own (found by the fuzz suite).
    for (const expression of ['$string([1..9999999])', '[1..9999999].$string()', '[1..9999999].{"a": $}']) {
      const r = await playground(expression);
      assert.equal(r.Output, null, expression);
      assert.match(r.Error, /memory limit exceeded|time limit exceeded/, expression);
      await e.probe();
    }
    // The sandbox process that died held what was sent to it meanwhile (those fail with the bound);
    // the next evaluations run on a new one.
    let next: any;
    for (let i = 0; i < 10; i++) {
      next = await playground('1 + 1');
      if (next.Output === 2) break;
      assert.match(next.Error, /memory limit exceeded|sandbox process ended/, 'only a lost sandbox fails it');
      await new Promise((r) => setTimeout(r, 500));
    }
    assert.equal(next.Output, 2, `the next evaluations run: ${JSON.stringify(next)}`);
  });

  test('a playground output past the output bound is refused', async () => {
    const r = await playground('$pad("", 1100000, "x")');
    assert.match(r.Error, /output limit exceeded/);
  });

  const TEST = `mutation($in: TestProcessorScriptRequest!) {
    TestProcessorScript(input: $in) { Outputs Error Failure DurationMs } }`;
  const testScript = async (Script: string, extra: Record<string, unknown> = {}, count = 1) => {
    const body = await e.gql('/analytics/v3', e.admin, TEST, {
      in: { Script, Messages: Array.from({ length: count }, (_, i) => ({ value: i })), ...extra },
    });
    assert.equal(body.errors, undefined, JSON.stringify(body.errors));
    return body.data.TestProcessorScript;
  };

  test('TestProcessorScript with 20 MiB outputs over 250 messages is refused; the edge stays under 600 MiB', async () => {
    let peak = e.rss();
    const sampler = setInterval(() => (peak = Math.max(peak, e.rss())), 20);
    try {
      const { result, probes } = await whileProbing(e, () =>
        testScript(
          'function onMessage(m) { return "x".repeat(20 * 1024 * 1024) }',
          { MemoryBytes: 256 * 1024 * 1024, TimeoutMs: 5000 },
          250,
        ),
      );
      assert.equal(result.Failure, 'output', JSON.stringify(result));
      assert.match(result.Error, /output limit exceeded/);
      assert.deepEqual(result.Outputs, []);
      assertResponsive(probes);
      // Many small outputs: past the bound of the whole call.
      const many = await testScript('function onMessage(m) { return "y".repeat(900 * 1024) }', {}, 20);
      assert.equal(many.Failure, 'output', JSON.stringify(many).slice(0, 300));
      assert.match(many.Error, /outputs of the call/);
    } finally {
      clearInterval(sampler);
    }
    assert.ok(peak < 600 * 1024 * 1024, `edge RSS peaked at ${(peak / 1048576).toFixed(0)} MiB`);
  });

  test('a deeply recursive script is its Failure, not an internal error', async () => {
    const plain = await testScript(
      'function f(n) { return f(n + 1) + 1 }\nfunction onMessage(m) { return f(0) }',
      {
        TimeoutMs: 5000,
      },
    );
    assert.equal(plain.Failure, 'stack', JSON.stringify(plain));
    assert.match(plain.Error, /stack depth limit exceeded/);
    // QuickJS's own recursion in C (JSON.stringify of a deep object: it overflowed the host stack,
    // or ran uninterruptibly for seconds, quadratic in the depth) is refused on the depth bound,
    // whether the script stringifies or returns the value.
    const DEEP_OBJECT = 'let o = {}, c = o; for (let i = 0; i < 100000; i++) { c.a = {}; c = c.a }';
    for (const body of ['return JSON.stringify(o).length', 'return o']) {
      const r = await testScript(`function onMessage(m) { ${DEEP_OBJECT}; ${body} }`, { TimeoutMs: 5000 });
      assert.equal(r.Failure, 'stack', JSON.stringify(r));
      assert.match(r.Error, /depth limit exceeded: JSON.stringify of a value nested deeper than 1000 levels/);
    }
    // The same edge still runs scripts.
    assert.deepEqual((await testScript('function onMessage(m) { return m.value + 1 }')).Failure, null);
  });

  /** A live script instance reading `subject` (as the admin): its ID. */
  async function liveScript(name: string, source: string, extra: Record<string, unknown> = {}) {
    const ws = await e.gql(
      '/analytics/v3',
      e.admin,
      `mutation { CreateWorkspace(input: { Name: "${name}" }) { ID } }`,
    );
    const made = await e.gql(
      '/analytics/v3',
      e.admin,
      `mutation($in: CreateProcessorInstanceRequest!) { CreateProcessorInstance(input: $in) { ID State Error } }`,
      {
        in: {
          WorkspaceID: ws.data.CreateWorkspace.ID,
          Name: name,
          Kind: 'script',
          Parameters: { inputs: [{ subject: `test.${name}` }], script: source, ...extra },
        },
      },
    );
    assert.equal(made.errors, undefined, JSON.stringify(made.errors));
    assert.equal(made.data.CreateProcessorInstance.State, 'Running', JSON.stringify(made.data));
    return made.data.CreateProcessorInstance.ID as string;
  }
  const instance = async (id: string) =>
    (
      await e.gql(
        '/analytics/v3',
        e.admin,
        `query($id: ID!) { GetProcessorInstance(ID: $id) { State Error MessagesIn MessagesOut } }`,
        { id },
      )
    ).data.GetProcessorInstance;

  test('a busy live script processor does not delay HTTPS (it runs off the main loop)', async () => {
    // 1.5 s of busy loop per message, within its 5 s time limit: not a failure, just slow.
    const id = await liveScript(
      'busy',
      'function onMessage(m) { const t = Date.now(); while (Date.now() - t < 1500) {} return m.value + 1 }',
      { timeoutMs: 5000 },
    );
    const outputs: number[] = [];
    const sub = nc.subscribe(`analytics.publish.${id}`, {
      callback: (_e, m) => outputs.push((m.json() as { value: number }).value),
    });
    await nc.flush();
    const { probes } = await whileProbing(e, async () => {
      for (let i = 0; i < 3; i++)
        nc.publish('test.busy', JSON.stringify({ value: i, timestamp: Date.now() }));
      const end = Date.now() + 30_000;
      while (outputs.length < 3 && Date.now() < end) await new Promise((r) => setTimeout(r, 50));
    });
    sub.unsubscribe();
    assert.deepEqual(outputs, [1, 2, 3]);
    // 4.5 s of script time: on the main loop every probe would have waited up to 1.5 s.
    const sorted = [...probes].sort((a, b) => a - b);
    const list = probes.map((p) => p.toFixed(0)).join(', ');
    assert.ok(probes.length >= 10, `${probes.length} probes (${list})`);
    assert.ok(sorted[Math.floor(sorted.length / 2)]! < 100, `median probe over 100 ms (${list})`);
    assert.ok(sorted.at(-1)! < 1000, `a probe took over 1 s (${list})`);
    assert.equal((await instance(id)).State, 'Running');
  });

  test('a live script past its time limit, or returning a too deep value, is Failed naming the bound', async () => {
    const loop = await liveScript('loop', 'function onMessage(m) { for (;;) {} }', { timeoutMs: 200 });
    const deep = await liveScript(
      'deep',
      'function onMessage(m) { let o = {}, c = o; for (let i = 0; i < 100000; i++) { c.a = {}; c = c.a } return o }',
      { timeoutMs: 5000 },
    );
    const healthy = await liveScript('healthy', 'function onMessage(m) { return m.value * 2 }');
    for (const s of ['loop', 'deep']) nc.publish(`test.${s}`, JSON.stringify({ value: 1 }));
    for (const [id, bound] of [
      [loop, /time limit exceeded/],
      [deep, /depth limit exceeded: JSON.stringify of a value nested deeper than 1000 levels/],
    ] as const) {
      const end = Date.now() + 20_000;
      let s = await instance(id);
      while (s.State !== 'Failed' && Date.now() < end) {
        await new Promise((r) => setTimeout(r, 100));
        s = await instance(id);
      }
      assert.equal(s.State, 'Failed', JSON.stringify(s));
      assert.match(s.Error, bound);
    }
    // The other scripts run on.
    const out: number[] = [];
    const sub = nc.subscribe(`analytics.publish.${healthy}`, {
      callback: (_e, m) => out.push((m.json() as { value: number }).value),
    });
    await nc.flush();
    nc.publish('test.healthy', JSON.stringify({ value: 21 }));
    const end = Date.now() + 10_000;
    while (out.length === 0 && Date.now() < end) await new Promise((r) => setTimeout(r, 50));
    sub.unsubscribe();
    assert.deepEqual(out, [42]);
  });
});
