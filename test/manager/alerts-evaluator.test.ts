/**
 * The rule evaluator's state machine, pass by pass, over facts the test sets: an incident opens
 * only once its condition held for `forSeconds`; a threshold rule's open incident stays open
 * while the value is above the threshold minus `hysteresis`, and resolves once clear for
 * `clearSeconds`; a disabled rule's incidents resolve; one resolved by hand stays resolved within
 * the same episode; the watch holds one entry per rule and device at most.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import pino from 'pino';
import { AlertEvaluator } from '../../src/manager/alerts/evaluator.js';
import { RULES, paramsOf } from '../../src/manager/alerts/catalog.js';
import type { AlertService, RuleSettings } from '../../src/manager/alerts/service.js';
import type { DeviceFacts, FleetService } from '../../src/manager/fleet/index.js';
import type { TaskService } from '../../src/manager/tasks/index.js';

interface Open {
  id: string;
  rule_key: string;
  device_id: string;
}

function world() {
  const facts: DeviceFacts = {
    id: 'd1',
    name: 'edge-1',
    projectId: 'p1',
    companyId: 'c1',
    online: true,
    lastSeen: Date.now(),
    activatedAt: Date.now() - 3_600_000,
    metrics: { cpuPercent: 10 },
    linksSince: 1,
  };
  const overrides: Record<string, Partial<RuleSettings>> = {};
  const open: Open[] = [];
  const log: string[] = [];
  let byHand = false;
  let n = 0;
  const alerts = {
    ruleSettings: async () =>
      RULES.map((rule) => ({
        rule,
        enabled: rule.key === 'device-cpu' || rule.key === 'device-offline',
        severity: rule.severity,
        params: paramsOf(rule, {}),
        updatedAt: null,
        updatedBy: null,
        ...overrides[rule.key],
      })),
    openIncidents: async () => [...open],
    instanceSettings: async () => ({ autoResolve: true }),
    resolvedByHandSince: async () => byHand,
    open: async (s: RuleSettings, d: DeviceFacts) => {
      open.push({ id: `i${++n}`, rule_key: s.rule.key, device_id: d.id });
      log.push(`open ${s.rule.key}`);
      return true;
    },
    resolve: async (id: string, by: string) => {
      const i = open.findIndex((o) => o.id === id);
      const [gone] = open.splice(i, 1);
      log.push(`resolve ${gone!.rule_key} ${by}`);
      return gone;
    },
  } as unknown as AlertService;
  const fleet = { alertFacts: async () => [facts] } as unknown as FleetService;
  const tasks = { latestFailures: async () => new Map() } as unknown as TaskService;
  const evaluator = new AlertEvaluator(alerts, fleet, tasks, {
    intervalMs: 1000,
    logger: pino({ level: 'silent' }),
  });
  return {
    facts,
    open,
    log,
    evaluator,
    cpu: (params: Record<string, number>) => {
      const rule = RULES.find((r) => r.key === 'device-cpu')!;
      overrides['device-cpu'] = { params: paramsOf(rule, params) };
    },
    offlineFor: (forSeconds: number) => {
      const rule = RULES.find((r) => r.key === 'device-offline')!;
      overrides['device-offline'] = { params: paramsOf(rule, { forSeconds }) };
    },
    disable: (key: string) => (overrides[key] = { enabled: false }),
    setByHand: (v: boolean) => (byHand = v),
  };
}

test('a threshold rule opens after forSeconds, holds within the hysteresis, resolves after clearSeconds', async () => {
  const w = world();
  w.cpu({ threshold: 80, hysteresis: 10, forSeconds: 0.2, clearSeconds: 0.2 });
  w.facts.metrics = { cpuPercent: 95 };
  await w.evaluator.evaluate();
  assert.deepEqual(w.log, [], 'not before forSeconds');
  // Time is the test: forSeconds (200 ms) passes.
  await new Promise((r) => setTimeout(r, 250));
  await w.evaluator.evaluate();
  assert.deepEqual(w.log, ['open device-cpu']);
  // Under the threshold but within the hysteresis: still open, however long.
  w.facts.metrics = { cpuPercent: 75 };
  await w.evaluator.evaluate();
  await new Promise((r) => setTimeout(r, 250));
  await w.evaluator.evaluate();
  assert.equal(w.open.length, 1);
  // Under threshold minus hysteresis: clear, resolved after clearSeconds.
  w.facts.metrics = { cpuPercent: 60 };
  await w.evaluator.evaluate();
  assert.equal(w.open.length, 1, 'not before clearSeconds');
  await new Promise((r) => setTimeout(r, 250));
  await w.evaluator.evaluate();
  assert.deepEqual(w.log, ['open device-cpu', 'resolve device-cpu manager:auto']);
  // A blip above the threshold shorter than forSeconds opens nothing.
  w.facts.metrics = { cpuPercent: 99 };
  await w.evaluator.evaluate();
  w.facts.metrics = { cpuPercent: 10 };
  await w.evaluator.evaluate();
  await new Promise((r) => setTimeout(r, 250));
  await w.evaluator.evaluate();
  assert.equal(w.log.length, 2);
  assert.ok(w.evaluator.watched <= 2, `watched ${w.evaluator.watched}`);
});

test('offline counts from the last heartbeat; a disabled rule resolves; a hand resolution holds for the episode', async () => {
  const w = world();
  w.facts.online = false;
  w.facts.lastSeen = Date.now() - 120_000;
  w.offlineFor(0.1);
  // Time is the test: 100 ms pass since the evaluator started (it counts from then at most).
  await new Promise((r) => setTimeout(r, 150));
  w.setByHand(true);
  await w.evaluator.evaluate();
  assert.deepEqual(w.log, [], 'resolved by hand within this episode: not opened again');
  w.setByHand(false);
  await w.evaluator.evaluate();
  assert.deepEqual(w.log, ['open device-offline'], 'offline longer than forSeconds: opened');
  w.disable('device-offline');
  await w.evaluator.evaluate();
  assert.deepEqual(w.log, ['open device-offline', 'resolve device-offline manager:rule-disabled']);
});

test('an edge offline since before the evaluator started is counted from its start', async () => {
  const w = world();
  w.facts.online = false;
  w.facts.lastSeen = Date.now() - 3_600_000;
  await w.evaluator.evaluate();
  assert.deepEqual(w.log, [], 'the manager just started: 60 s not passed since');
});
