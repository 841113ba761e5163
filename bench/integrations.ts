/**
 * bench/integrations: the MQTT connector against a private Mosquitto, in one run.
 *   (1) DataHub → Mosquitto messages per second through the connector (every message through the
 *       disk queue) at QoS 0 and QoS 1, beside the ceiling: mqtt.js publishing the same messages
 *       in a tight loop to the same broker. Target: the connector at least 90% of the ceiling (issue 34; 70% before).
 *   (2) The drain of a 100,000-message backlog after an outage (broker stopped, values queued on
 *       disk, broker started): messages per second until the queue is empty, at QoS 1. Target: at
 *       least 20,000 msgs/s. And disk bytes per queued message (queue file + WAL / depth).
 * Rates are messages divided by the time until a `mosquitto_sub` process (QoS 1, persistent
 * session) has received all of them. The edge runs in this process (its DataHub publish is the
 * in-process call); the broker and the subscriber are processes of their own.
 *
 *   npm run bench -- integrations [--messages 100000] [--backlog 100000] [--rounds 2] [--inflight 1000]
 *                                 [--short]
 *
 * `--short` (for `npm run bench -- summary`): 50,000 messages per case and no drain (2).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { cpus, loadavg, tmpdir, totalmem } from 'node:os';
import { join } from 'node:path';
import mqtt from 'mqtt';
import { edgeConfigWith } from '../src/edge/service.js';
import { startEdge, type EdgeService } from '../src/edge/service.js';
import { MQTT_PROVIDER_ID } from '../src/edge/integrations/index.js';
import { Mosquitto } from '../test/helpers/peers/mosquitto.js';
import { eventually } from '../test/helpers/util.js';
import { numArg as arg, reportFigures, SHORT } from './support.js';

const MESSAGES = arg('messages', 100_000, 50_000);
const BACKLOG = arg('backlog', 100_000);
const ROUNDS = arg('rounds', 2);
const INFLIGHT = arg('inflight', 1000);
const ONLY = process.argv.includes('--drain-only');
const yieldTurn = () => new Promise<void>((r) => setImmediate(r));

/**
 * This process's CPU time (user + system) per message of each case, the least over the rounds:
 * the edge side's cost, steadier than a rate on a loaded machine (the broker and the subscriber
 * are processes of their own and not counted).
 */
const cpuPerMessage = new Map<string, number>();
function countCpu(name: string, since: NodeJS.CpuUsage): void {
  const u = process.cpuUsage(since);
  const us = (u.user + u.system) / MESSAGES;
  cpuPerMessage.set(name, Math.min(cpuPerMessage.get(name) ?? Infinity, us));
}

/** A mosquitto_sub process that exits once it has `count` messages; resolves with the exit time. */
function subscriber(
  port: number,
  topic: string,
  count: number,
  id: string,
): { ready: Promise<void>; done: Promise<number>; proc: ChildProcess } {
  const proc = spawn(
    'mosquitto_sub',
    ['-h', '127.0.0.1', '-p', String(port), '-t', topic, '-q', '1', '-C', String(count), '-c', '-i', id],
    {
      stdio: ['ignore', 'ignore', 'pipe'],
    },
  );
  const done = new Promise<number>((resolve, reject) => {
    proc.once('exit', (code) =>
      code === 0 ? resolve(performance.now()) : reject(new Error(`mosquitto_sub exited ${code}`)),
    );
  });
  // Subscribed once the broker lists the session: give it a moment (no ready signal in mosquitto_sub).
  const ready = new Promise<void>((r) => setTimeout(r, 500));
  return { ready, done, proc };
}

async function ceiling(port: number, qos: 0 | 1, round: number): Promise<number> {
  const topic = `bench/ceiling/${qos}/${round}`;
  const sub = subscriber(port, topic, MESSAGES, `ceil-${qos}-${round}`);
  await sub.ready;
  const client = await mqtt.connectAsync(`mqtt://127.0.0.1:${port}`, { clientId: `ceiling-${qos}-${round}` });
  const cpu0 = process.cpuUsage();
  const start = performance.now();
  for (let i = 0; i < MESSAGES; i++) {
    // The same work per message as the connector: a DataHub value encoded as JSON, published.
    const value = { value: 1.5, deviceName: 'd', tagName: 't', timestamp: Date.now(), success: true };
    client.publish(topic, Buffer.from(JSON.stringify(value)), { qos });
    if (i % 1000 === 999) await yieldTurn();
  }
  const end = await sub.done;
  countCpu(`mqtt.js tight loop, QoS ${qos}`, cpu0);
  await client.endAsync();
  return MESSAGES / ((end - start) / 1000);
}

async function throughConnector(edge: EdgeService, port: number, qos: 0 | 1, round: number): Promise<number> {
  const integrations = edge.shell.module('integrations');
  const topic = `bench/connector/${qos}/${round}`;
  const inst = await integrations.createInstance({
    Name: `bench-${qos}-${round}`,
    ProviderID: MQTT_PROVIDER_ID,
    Config: { host: '127.0.0.1', port, qos, reconnectInterval: 200, maxInflight: INFLIGHT },
  });
  await integrations.createSubscription({
    InstanceID: inst.ID,
    IsLocalToRemote: true,
    LocalName: `bench.c${qos}r${round}.>`,
    RemoteName: topic,
  });
  await eventually(
    async () => (await integrations.status(inst.ID)).InstanceState === 'Connected',
    10_000,
    'connected',
  );
  const sub = subscriber(port, topic, MESSAGES, `conn-${qos}-${round}`);
  await sub.ready;
  const hub = edge.datahub.hub;
  const subject = `bench.c${qos}r${round}.t`;
  const cpu0 = process.cpuUsage();
  const start = performance.now();
  for (let i = 0; i < MESSAGES; i++) {
    hub.publish(subject, { value: 1.5, deviceName: 'd', tagName: 't', timestamp: Date.now(), success: true });
    if (i % 1000 === 999) await yieldTurn();
  }
  const end = await sub.done;
  countCpu(`connector, QoS ${qos}`, cpu0);
  await integrations.deleteInstance(inst.ID);
  return MESSAGES / ((end - start) / 1000);
}

async function drain(
  edge: EdgeService,
  broker: Mosquitto,
): Promise<{ rate: number; bytesPerMessage: number; queueSeconds: number }> {
  const integrations = edge.shell.module('integrations');
  const topic = 'bench/drain';
  const inst = await integrations.createInstance({
    Name: 'bench-drain',
    ProviderID: MQTT_PROVIDER_ID,
    Config: { host: '127.0.0.1', port: broker.port, qos: 1, reconnectInterval: 100, maxInflight: INFLIGHT },
  });
  await integrations.createSubscription({
    InstanceID: inst.ID,
    IsLocalToRemote: true,
    LocalName: 'bench.drain.>',
    RemoteName: topic,
  });
  await eventually(
    async () => (await integrations.status(inst.ID)).InstanceState === 'Connected',
    10_000,
    'connected',
  );
  // A persistent subscriber session, made before the outage.
  const pre = subscriber(broker.port, topic, 1, 'drain-sub');
  await pre.ready;
  pre.proc.kill();
  await broker.stop();
  await eventually(
    async () => (await integrations.status(inst.ID)).InstanceState === 'Disconnected',
    10_000,
    'disconnected',
  );
  const hub = edge.datahub.hub;
  const q0 = performance.now();
  for (let i = 0; i < BACKLOG; i++) {
    hub.publish('bench.drain.t', {
      value: i,
      deviceName: 'd',
      tagName: 't',
      timestamp: Date.now(),
      success: true,
    });
    if (i % 1000 === 999) await yieldTurn();
  }
  await eventually(
    async () => (await integrations.status(inst.ID)).Queue.Depth === BACKLOG,
    60_000,
    'backlog queued',
  );
  const queueSeconds = (performance.now() - q0) / 1000;
  const q = (await integrations.status(inst.ID)).Queue;
  const bytesPerMessage = q.FileBytes / q.Depth;
  await broker.start();
  const sub = subscriber(broker.port, topic, BACKLOG, 'drain-sub');
  const start = performance.now();
  await eventually(async () => (await integrations.status(inst.ID)).Queue.Depth === 0, 120_000, 'drained');
  const acked = performance.now();
  await sub.done;
  await integrations.deleteInstance(inst.ID);
  return { rate: BACKLOG / ((acked - start) / 1000), bytesPerMessage, queueSeconds };
}

const fmt = (n: number) => Math.round(n).toLocaleString('en-US');

async function main(): Promise<void> {
  const dataDir = mkdtempSync(join(tmpdir(), 'mw-bench-integ-'));
  const broker = new Mosquitto({ persistence: true });
  await broker.start();
  const edge = await startEdge(
    edgeConfigWith({
      host: '127.0.0.1',
      port: 0,
      datahubHost: '127.0.0.1',
      datahubPort: 0,
      dataDir,
      adminPassword: 'bench-password',
      logLevel: 'error',
    }),
  );
  try {
    const best = { c0: 0, c1: 0, m0: 0, m1: 0 };
    for (let r = 0; r < (ONLY ? 0 : ROUNDS); r++) {
      best.c0 = Math.max(best.c0, await ceiling(broker.port, 0, r));
      best.m0 = Math.max(best.m0, await throughConnector(edge, broker.port, 0, r));
      best.c1 = Math.max(best.c1, await ceiling(broker.port, 1, r));
      best.m1 = Math.max(best.m1, await throughConnector(edge, broker.port, 1, r));
    }
    const d = SHORT ? undefined : await drain(edge, broker);
    console.log(
      `\n${cpus().length} CPUs, ${Math.round(totalmem() / 2 ** 30)} GiB, load ${loadavg()
        .map((x) => x.toFixed(1))
        .join(' ')}; ${fmt(MESSAGES)} messages per case, best of ${ROUNDS}\n`,
    );
    console.log('| case | msgs/s | share of ceiling | target |');
    console.log('| --- | ---: | ---: | --- |');
    console.log(`| mqtt.js tight loop, QoS 0 (ceiling) | ${fmt(best.c0)} | 100% | |`);
    console.log(
      `| DataHub → MQTT connector → Mosquitto, QoS 0 | ${fmt(best.m0)} | ${((100 * best.m0) / best.c0).toFixed(0)}% | ≥ 90% |`,
    );
    console.log(`| mqtt.js tight loop, QoS 1 (ceiling) | ${fmt(best.c1)} | 100% | |`);
    console.log(
      `| DataHub → MQTT connector → Mosquitto, QoS 1 | ${fmt(best.m1)} | ${((100 * best.m1) / best.c1).toFixed(0)}% | ≥ 90% |`,
    );
    console.log(
      `\nthis process's CPU per message (user + system, least of the rounds): ${[...cpuPerMessage]
        .map(([k, v]) => `${k} ${v.toFixed(1)} µs`)
        .join('; ')}`,
    );
    if (d) {
      console.log(
        `| drain of a ${fmt(BACKLOG)}-message backlog after an outage, QoS 1 | ${fmt(d.rate)} | | ≥ 20,000 |`,
      );
      console.log(
        `\nqueueing the backlog took ${d.queueSeconds.toFixed(1)} s (${fmt(BACKLOG / d.queueSeconds)} msgs/s to disk); disk bytes per queued message: ${d.bytesPerMessage.toFixed(0)}`,
      );
    }
    if (!ONLY)
      reportFigures(
        {
          messages: MESSAGES,
          ceilingQos0PerSecond: best.c0,
          connectorQos0PerSecond: best.m0,
          ceilingQos1PerSecond: best.c1,
          connectorQos1PerSecond: best.m1,
        },
        'sources',
      );
  } finally {
    await edge.close();
    await broker.dispose();
    rmSync(dataDir, { recursive: true, force: true });
  }
}

await main();
