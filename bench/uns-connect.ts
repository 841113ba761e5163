/**
 * bench/uns-connect: a connect storm on the UNS broker. `--clients` MQTT clients (mqtt.js, MQTT
 * 3.1.1, one account, distinct client ids) open their connections at the same moment against a
 * fresh `millwright uns` process; each records the time from its start to its CONNACK. Reported:
 * how many were answered within 5 s (the target: all of 2,000), p50, p99 and the slowest.
 *
 *   npm run bench -- uns-connect [--clients 2000] [--runs 3] [--timeout 30]
 *
 * `--cli <path to dist/cli/main.js>` runs another build (for example today's `main`) as the
 * baseline in the same run: the storm alternates between the two builds, each on its own fresh
 * process. The clients run in this process; the broker in its own.
 *
 *   npm run bench -- uns-connect --idle 10000 [--short]
 *
 * `--idle N` measures memory per idle connection instead (issue 34: at most 2 times Mosquitto's):
 * N MQTT 3.1.1 clients (the same account on both brokers: a password file for Mosquitto) connect,
 * 200 at a time, to a fresh `millwright uns` and to a fresh Mosquitto, and stay connected and
 * idle; the broker's resident memory (VmRSS, /proc) 3 s after the last CONNACK, minus the same
 * after one connection, divided by N-1. A third row is the floor: a bare Node `net` server in its
 * own process holding the same N sockets (each client sends 60 bytes), what Node itself keeps per
 * socket. 100,000 connections cannot be opened here: the machine
 * allows 20,000 open files per process (`ulimit -Hn`), the client process and each broker included.
 * `--short` (for `npm run bench -- summary`) is `--idle 2000`.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { connect, type Socket } from 'node:net';
import { cpus, loadavg } from 'node:os';
import { performance } from 'node:perf_hooks';
import mqtt from 'mqtt';
import { CLI_ARGS } from '../test/helpers/cli.js';
import { Mosquitto } from '../test/helpers/peers/mosquitto.js';
import { PROCESS_ACCOUNT, startUnsProcess, type UnsProcess } from '../test/helpers/uns.js';
import { numArg as arg, reportFigures, SHORT } from './support.js';

const strArg = (name: string) => {
  const i = process.argv.indexOf(`--${name}`);
  return i > 0 ? process.argv[i + 1] : undefined;
};

interface StormResult {
  answered: number;
  within5s: number;
  failed: number;
  p50: number;
  p99: number;
  max: number;
}

async function storm(uns: UnsProcess, clients: number, timeoutS: number): Promise<StormResult> {
  const times: number[] = [];
  let failed = 0;
  const all: mqtt.MqttClient[] = [];
  const t0 = performance.now();
  await Promise.all(
    Array.from(
      { length: clients },
      (_, i) =>
        new Promise<void>((resolve) => {
          const c = mqtt.connect(uns.mqttUrl, {
            clientId: `storm-${process.pid}-${i}`,
            username: PROCESS_ACCOUNT.username,
            password: PROCESS_ACCOUNT.password,
            protocolVersion: 4,
            reconnectPeriod: 0,
            connectTimeout: timeoutS * 1000,
          });
          all.push(c);
          c.once('connect', () => {
            times.push(performance.now() - t0);
            resolve();
          });
          const fail = () => {
            failed++;
            resolve();
          };
          c.once('error', fail);
          c.once('close', () => {
            if (!c.connected) fail();
          });
        }),
    ),
  );
  await Promise.all(all.map((c) => new Promise<void>((r) => c.end(true, {}, () => r()))));
  times.sort((a, b) => a - b);
  const at = (q: number) => times[Math.min(times.length - 1, Math.floor(q * times.length))] ?? NaN;
  return {
    answered: times.length,
    within5s: times.filter((t) => t <= 5000).length,
    failed: Math.min(failed, clients - times.length),
    p50: at(0.5),
    p99: at(0.99),
    max: times[times.length - 1] ?? NaN,
  };
}

const rssKiB = (pid: number) =>
  Number(/VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1] ?? NaN);

/** Opens `count` idle connections, `width` at a time; answers the clients (to close later). */
async function openIdle(url: string, count: number, width: number): Promise<mqtt.MqttClient[]> {
  const clients: mqtt.MqttClient[] = [];
  let next = 0;
  await Promise.all(
    Array.from({ length: width }, async () => {
      while (next < count) {
        const i = next++;
        const c = await mqtt.connectAsync(url, {
          clientId: `idle-${process.pid}-${i}`,
          username: PROCESS_ACCOUNT.username,
          password: PROCESS_ACCOUNT.password,
          protocolVersion: 4,
          reconnectPeriod: 0,
          connectTimeout: 60_000,
          keepalive: 600,
        });
        clients.push(c);
      }
    }),
  );
  return clients;
}

/**
 * The floor: what Node itself keeps per accepted socket. A bare `net` server (no MQTT, no
 * framework) in its own Node process, reading and dropping what arrives; each client sends the
 * bytes of an MQTT 3.1.1 CONNECT of the same size as the MQTT clients' and stays open.
 */
const FLOOR_SERVER = `
const sockets = new Set();
const server = require('node:net').createServer((s) => {
  sockets.add(s);
  s.on('data', () => {});
  s.on('error', () => {});
  s.on('close', () => sockets.delete(s));
});
server.listen(0, '127.0.0.1', () => console.log(server.address().port));
`;

async function startFloor(): Promise<{ port: number; child: ChildProcess }> {
  const child = spawn(process.execPath, ['-e', FLOOR_SERVER], { stdio: ['ignore', 'pipe', 'inherit'] });
  const port = await new Promise<number>((resolve) =>
    child.stdout!.once('data', (d: Buffer) => resolve(Number(String(d).trim()))),
  );
  return { port, child };
}

/** `count` raw TCP clients, `width` at a time, each sending a CONNECT-sized packet. */
async function openRaw(port: number, count: number, width: number): Promise<Socket[]> {
  const sockets: Socket[] = [];
  const hello = Buffer.alloc(60, 0x10);
  let next = 0;
  await Promise.all(
    Array.from({ length: width }, async () => {
      while (next < count) {
        next++;
        const s = connect(port, '127.0.0.1');
        await new Promise<void>((resolve, reject) => {
          s.once('connect', () => resolve());
          s.once('error', reject);
        });
        s.write(hello);
        sockets.push(s);
      }
    }),
  );
  return sockets;
}

interface IdleFigure {
  perConnKiB: number;
  rssMiB: number;
}

/** Server RSS with one connection, then with `count`: KiB per connection beyond the first. */
async function idleMemory<C>(
  pid: number,
  count: number,
  opener: (count: number, width: number) => Promise<C[]>,
  close: (c: C) => Promise<unknown>,
): Promise<IdleFigure> {
  const settle = () => new Promise((r) => setTimeout(r, 3000));
  const first = await opener(1, 1);
  await settle();
  const before = rssKiB(pid);
  const rest = await opener(count - 1, 200);
  await settle();
  const after = rssKiB(pid);
  await Promise.all([...first, ...rest].map(close));
  return { perConnKiB: (after - before) / (count - 1), rssMiB: after / 1024 };
}

const mqttIdle = (url: string) => (n: number, width: number) => openIdle(url, n, width);
const endMqtt = (c: mqtt.MqttClient) => c.endAsync(true);

async function idle(count: number): Promise<void> {
  console.log(
    `idle connections: ${count} MQTT 3.1.1 clients per broker, ${cpus().length} cores, load ${loadavg()
      .map((l) => l.toFixed(2))
      .join(' ')} at start`,
  );
  const mosquitto = new Mosquitto({ passwords: { [PROCESS_ACCOUNT.username]: PROCESS_ACCOUNT.password } });
  await mosquitto.start();
  let m: IdleFigure;
  try {
    m = await idleMemory(mosquitto.pid!, count, mqttIdle(`mqtt://127.0.0.1:${mosquitto.port}`), endMqtt);
  } finally {
    await mosquitto.dispose();
  }
  const floor = await startFloor();
  let f: IdleFigure;
  try {
    f = await idleMemory(
      floor.child.pid!,
      count,
      (n, width) => openRaw(floor.port, n, width),
      async (s) => void s.destroy(),
    );
  } finally {
    floor.child.kill();
  }
  const uns = await startUnsProcess(['--log-level', 'warn']);
  let u: IdleFigure;
  try {
    u = await idleMemory(uns.pid, count, mqttIdle(uns.mqttUrl), endMqtt);
  } finally {
    await uns.stop();
  }
  console.log(
    `\n| broker | idle connections | RSS MiB with all connected | KiB per connection | vs Mosquitto |`,
  );
  console.log('| --- | --: | --: | --: | --: |');
  console.log(`| Mosquitto | ${count} | ${m.rssMiB.toFixed(1)} | ${m.perConnKiB.toFixed(1)} | 1.00 |`);
  console.log(
    `| floor: bare Node \`net\` server, no MQTT (${process.version}) | ${count} | ${f.rssMiB.toFixed(1)} | ${f.perConnKiB.toFixed(1)} | ${(f.perConnKiB / m.perConnKiB).toFixed(2)} |`,
  );
  console.log(
    `| Millwright UNS | ${count} | ${u.rssMiB.toFixed(1)} | ${u.perConnKiB.toFixed(1)} | ${(u.perConnKiB / m.perConnKiB).toFixed(2)} |`,
  );
  console.log('');
  reportFigures({
    connections: count,
    unsKiBPerConnection: u.perConnKiB,
    mosquittoKiBPerConnection: m.perConnKiB,
    floorKiBPerConnection: f.perConnKiB,
  });
}

async function main(): Promise<void> {
  if (SHORT || process.argv.includes('--idle')) return idle(arg('idle', 10_000, 2000));
  const clients = arg('clients', 2000);
  const runs = arg('runs', 3);
  const timeoutS = arg('timeout', 30);
  const baseline = strArg('cli');
  const builds: { name: string; cli: string }[] = [];
  if (baseline) builds.push({ name: 'baseline', cli: baseline });
  builds.push({ name: 'this tree', cli: CLI_ARGS[0]! });
  console.log(
    `connect storm: ${clients} clients, ${runs} runs, ${cpus().length} cores, load ${loadavg()
      .map((l) => l.toFixed(2))
      .join(' ')} at start`,
  );
  const rows: string[] = [];
  for (let run = 1; run <= runs; run++) {
    for (const build of builds) {
      CLI_ARGS[0] = build.cli;
      const uns = await startUnsProcess(['--log-level', 'warn']);
      try {
        const r = await storm(uns, clients, timeoutS);
        const line =
          `| ${build.name} | ${run} | ${r.answered}/${clients} | ${r.within5s} | ${r.p50.toFixed(0)} | ` +
          `${r.p99.toFixed(0)} | ${r.max.toFixed(0)} | ${loadavg()[0]!.toFixed(2)} |`;
        console.log(line);
        rows.push(line);
      } finally {
        await uns.stop();
      }
    }
  }
  console.log('\n| build | run | CONNACK | within 5 s | p50 ms | p99 ms | slowest ms | load (1 min) |');
  console.log('| --- | --: | --: | --: | --: | --: | --: | --: |');
  for (const r of rows) console.log(r);
}

await main();
