/**
 * bench/datahub: messages per second and latency of 128-byte messages, one publisher to one
 * subscriber and one to ten, through
 *   (a) the in-process bus (publish() to subscribe() callbacks, same process),
 *   (b) Millwright's NATS gateway (the edge as its own process, `millwright edge`) with the `nats` client,
 *   (c) the real nats-server on 127.0.0.1:4222 with the same client and the same code.
 * Targets: (a) at least 2 million messages per second; (b) at least half of (c).
 *
 * Throughput: the publisher sends as fast as the client takes it (yielding every 1000 messages so
 * that the socket drains); the rate is messages published divided by the time until every
 * subscriber has every message. Latency: a second phase paced at 10 messages per millisecond timer
 * (at most 10,000 messages per second), each message carrying its send time; p50/p99 of arrival
 * minus send time, over every delivery. Rounds alternate (b) and (c) so that drift of the machine
 * hits both. Where nats-server is not running, (c) is left out and said so.
 *
 *   npm run bench -- datahub [--messages 200000] [--rounds 3] [--latency 20000]
 */
import { startCli } from '../test/helpers/cli.js';
import { mkdtempSync, rmSync } from 'node:fs';
import { cpus, tmpdir, totalmem } from 'node:os';
import { join } from 'node:path';
import { connect, type NatsConnection } from 'nats';
import { DataHub } from '../src/edge/datahub/index.js';

const arg = (name: string, dflt: number) => {
  const i = process.argv.indexOf(`--${name}`);
  return i > 0 ? Number(process.argv[i + 1]) : dflt;
};
const MESSAGES = arg('messages', 200_000);
const ROUNDS = arg('rounds', 3);
const LATENCY_MESSAGES = arg('latency', 20_000);
const SIZE = 128;
const FANOUTS = [1, 10];
const NATS_SERVER = 'nats://127.0.0.1:4222';

interface Result {
  msgsPerSec: number;
  deliveriesPerSec: number;
  p50us: number;
  p99us: number;
}

const yieldTurn = () => new Promise<void>((r) => setImmediate(r));
const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

function percentile(sorted: Float64Array, p: number): number {
  if (sorted.length === 0) return NaN;
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!;
}

// --- (a) in-process --------------------------------------------------------------------------

function inProcess(fanout: number): Result {
  const hub = new DataHub();
  let delivered = 0;
  for (let i = 0; i < fanout; i++) hub.subscribe('devicehub.raw.>', () => delivered++);
  const payload = Buffer.alloc(SIZE, 7);
  const n = fanout === 1 ? 5_000_000 : 1_000_000;
  for (let i = 0; i < 200_000; i++) hub.publish('devicehub.raw.Gen1.S', payload); // warm-up (JIT)
  delivered = 0;
  const t0 = process.hrtime.bigint();
  for (let i = 0; i < n; i++) hub.publish('devicehub.raw.Gen1.S', payload);
  const secs = Number(process.hrtime.bigint() - t0) / 1e9;
  if (delivered !== n * fanout) throw new Error(`in-process: ${delivered} of ${n * fanout} delivered`);
  hub.close();

  // Latency: publish to callback, each message stamped with its send time.
  const lat = new DataHub();
  const samples = new Float64Array(LATENCY_MESSAGES * fanout);
  let k = 0;
  for (let i = 0; i < fanout; i++) {
    lat.subscribe('devicehub.raw.>', (m) => {
      samples[k++] = Number(process.hrtime.bigint() - (m.data as { sent: bigint }).sent) / 1000;
    });
  }
  for (let i = 0; i < LATENCY_MESSAGES; i++) {
    lat.publish('devicehub.raw.Gen1.S', { sent: process.hrtime.bigint(), payload });
  }
  samples.sort();
  return {
    msgsPerSec: n / secs,
    deliveriesPerSec: (n * fanout) / secs,
    p50us: percentile(samples, 50),
    p99us: percentile(samples, 99),
  };
}

// --- (b) and (c): the nats client against a server -------------------------------------------

async function overNats(url: string, fanout: number, subject: string): Promise<Result> {
  const pub = await connect({ servers: url, name: 'bench-pub' });
  const subs: NatsConnection[] = [];
  try {
    for (let i = 0; i < fanout; i++) subs.push(await connect({ servers: url, name: `bench-sub-${i}` }));

    // Throughput.
    const total = MESSAGES * fanout;
    let got = 0;
    let finish!: () => void;
    const done = new Promise<void>((r) => (finish = r));
    for (const s of subs) {
      s.subscribe(subject, {
        callback: () => {
          if (++got === total) finish();
        },
      });
      await s.flush();
    }
    const payload = new Uint8Array(SIZE).fill(7);
    const t0 = performance.now();
    for (let i = 0; i < MESSAGES; i++) {
      pub.publish(subject, payload);
      if (i % 1000 === 999) await yieldTurn();
    }
    await done;
    const secs = (performance.now() - t0) / 1000;

    // Latency, paced: the payload carries the send time (same process, same clock).
    const lsubject = `${subject}.lat`;
    const samples = new Float64Array(LATENCY_MESSAGES * fanout);
    let k = 0;
    let finishLat!: () => void;
    const latDone = new Promise<void>((r) => (finishLat = r));
    for (const s of subs) {
      s.subscribe(lsubject, {
        callback: (_e, m) => {
          const view = new DataView(m.data.buffer, m.data.byteOffset, m.data.byteLength);
          samples[k++] = (performance.now() - view.getFloat64(0)) * 1000;
          if (k === samples.length) finishLat();
        },
      });
      await s.flush();
    }
    const msg = new Uint8Array(SIZE);
    const dv = new DataView(msg.buffer);
    for (let i = 0; i < LATENCY_MESSAGES; i++) {
      dv.setFloat64(0, performance.now());
      pub.publish(lsubject, msg);
      if (i % 10 === 9) await sleep(1);
    }
    await latDone;
    samples.sort();
    return {
      msgsPerSec: MESSAGES / secs,
      deliveriesPerSec: total / secs,
      p50us: percentile(samples, 50),
      p99us: percentile(samples, 99),
    };
  } finally {
    await Promise.all([pub, ...subs].map((c) => c.close()));
  }
}

// --- the edge as its own process ----------------------------------------------------------

async function startEdge(dataDir: string): Promise<{ url: string; stop: () => Promise<unknown> }> {
  const edge = await startCli(
    [
      'edge',
      '--port',
      '0',
      '--host',
      '127.0.0.1',
      '--datahub-port',
      '0',
      '--datahub-host',
      '127.0.0.1',
      '--log-level',
      'warn',
    ],
    {
      env: {
        ...process.env,
        MILLWRIGHT_EDGE_DATA_DIR: dataDir,
        MILLWRIGHT_EDGE_ADMIN_PASSWORD: 'bench-admin-password',
      },
      inheritStderr: true,
    },
  );
  return { url: edge.ready.services.edge!.natsUrl!, stop: edge.stop };
}

async function natsServerUp(): Promise<boolean> {
  try {
    const nc = await connect({ servers: NATS_SERVER, timeout: 1000, reconnect: false });
    const version = nc.info?.version;
    await nc.close();
    console.log(`nats-server ${version} on ${NATS_SERVER}`);
    return true;
  } catch {
    return false;
  }
}

const fmt = (n: number) => Math.round(n).toLocaleString('en-US');
const us = (n: number) => (n < 1000 ? `${n.toFixed(1)} µs` : `${(n / 1000).toFixed(2)} ms`);

const dataDir = mkdtempSync(join(tmpdir(), 'mw-bench-datahub-'));
const edge = await startEdge(dataDir);
const rows: [string, number, Result][] = [];
try {
  const serverUp = await natsServerUp();
  if (!serverUp) console.log(`nats-server is not reachable on ${NATS_SERVER}: case (c) is left out`);
  for (const fanout of FANOUTS) {
    const a = inProcess(fanout);
    rows.push(['(a) in-process bus', fanout, a]);
    const bs: Result[] = [];
    const cs: Result[] = [];
    for (let round = 0; round < ROUNDS; round++) {
      const tag = `bench${process.pid}r${round}f${fanout}`;
      bs.push(await overNats(edge.url, fanout, `devicehub.raw.${tag}`));
      if (serverUp) cs.push(await overNats(NATS_SERVER, fanout, `devicehub.raw.${tag}`));
    }
    const median = (rs: Result[]): Result => {
      const sorted = [...rs].sort((x, y) => x.msgsPerSec - y.msgsPerSec);
      return sorted[Math.floor(sorted.length / 2)]!;
    };
    rows.push(['(b) Millwright gateway, nats client', fanout, median(bs)]);
    if (serverUp) rows.push(['(c) nats-server 127.0.0.1:4222, nats client', fanout, median(cs)]);
  }
} finally {
  await edge.stop();
  setTimeout(() => rmSync(dataDir, { recursive: true, force: true }), 500);
}

console.log(
  `\nbench/datahub: ${SIZE}-byte messages; (b)/(c) ${fmt(MESSAGES)} messages per run, median of ${ROUNDS} runs; ` +
    `latency over ${fmt(LATENCY_MESSAGES)} paced messages per subscriber; ` +
    `${cpus().length} CPUs (${cpus()[0]?.model ?? 'unknown'}), ${Math.round(totalmem() / 2 ** 30)} GiB, Node ${process.version}\n`,
);
console.log('| path | publisher → subscribers | msgs/s | deliveries/s | p50 latency | p99 latency |');
console.log('|---|---|---:|---:|---:|---:|');
for (const [name, fanout, r] of rows) {
  console.log(
    `| ${name} | 1 → ${fanout} | ${fmt(r.msgsPerSec)} | ${fmt(r.deliveriesPerSec)} | ${us(r.p50us)} | ${us(r.p99us)} |`,
  );
}
console.log('');
for (const fanout of FANOUTS) {
  const a = rows.find((r) => r[0].startsWith('(a)') && r[1] === fanout)![2];
  console.log(
    `target (a) >= 2,000,000 msgs/s, 1 → ${fanout}: ${fmt(a.msgsPerSec)} ${a.msgsPerSec >= 2e6 ? 'MET' : 'NOT MET'}`,
  );
  const b = rows.find((r) => r[0].startsWith('(b)') && r[1] === fanout)![2];
  const c = rows.find((r) => r[0].startsWith('(c)') && r[1] === fanout)?.[2];
  if (c) {
    const share = b.msgsPerSec / c.msgsPerSec;
    console.log(
      `target (b) >= 50% of (c), 1 → ${fanout}: ${(share * 100).toFixed(0)}% ${share >= 0.5 ? 'MET' : 'NOT MET'}`,
    );
  }
}
process.exit(0);
