/**
 * bench/uns-idle-heap: what an idle MQTT connection keeps in the UNS (issue 34). Starts the built
 * `millwright uns` with `--heapsnapshot-signal=SIGUSR2`, opens one idle MQTT 3.1.1 client (this
 * process), takes a heap snapshot, opens N-1 more, takes another; then prints, per constructor
 * name (V8's node name), the objects and bytes (self size) per connection beyond the first, the
 * largest first, with the broker's heap statistics and `/proc` memory at both points.
 *
 *   npm run bench -- uns-idle-heap [--idle 2000] [--top 40]
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import mqtt from 'mqtt';
import { PROCESS_ACCOUNT, startUnsProcess } from '../test/helpers/uns.js';
import { numArg as arg } from './support.js';

interface Snapshot {
  snapshot: { meta: { node_fields: string[]; node_types: [string[]] } };
  nodes: number[];
  strings: string[];
}

/** Objects and self bytes per `type:name` of a heap snapshot file. */
function byName(file: string): Map<string, { count: number; bytes: number }> {
  const s = JSON.parse(readFileSync(file, 'utf8')) as Snapshot;
  const fields = s.snapshot.meta.node_fields;
  const width = fields.length;
  const typeAt = fields.indexOf('type');
  const nameAt = fields.indexOf('name');
  const sizeAt = fields.indexOf('self_size');
  const types = s.snapshot.meta.node_types[0];
  const out = new Map<string, { count: number; bytes: number }>();
  for (let i = 0; i < s.nodes.length; i += width) {
    const type = types[s.nodes[i + typeAt]!]!;
    const name =
      type === 'string' || type === 'concatenated string' || type === 'sliced string'
        ? ''
        : s.strings[s.nodes[i + nameAt]!]!;
    const key = `${type}:${name.length > 60 ? `${name.slice(0, 60)}…` : name}`;
    const e = out.get(key) ?? { count: 0, bytes: 0 };
    e.count++;
    e.bytes += s.nodes[i + sizeAt]!;
    out.set(key, e);
  }
  return out;
}

const status = (pid: number) => {
  const t = readFileSync(`/proc/${pid}/status`, 'utf8');
  const kib = (k: string) => Number(new RegExp(`${k}:\\s+(\\d+) kB`).exec(t)?.[1] ?? NaN);
  return { rss: kib('VmRSS'), anon: kib('RssAnon') };
};

async function snapshot(pid: number, dir: string, before: Set<string>): Promise<string> {
  process.kill(pid, 'SIGUSR2');
  for (;;) {
    await new Promise((r) => setTimeout(r, 500));
    const f = readdirSync(dir).find((n) => n.endsWith('.heapsnapshot') && !before.has(n));
    if (!f) continue;
    const path = join(dir, f);
    // Written when its size stops changing.
    const size = readFileSync(path).length;
    await new Promise((r) => setTimeout(r, 1500));
    if (readFileSync(path).length === size && size > 0) {
      before.add(f);
      return path;
    }
  }
}

async function open(url: string, count: number, from: number): Promise<mqtt.MqttClient[]> {
  const clients: mqtt.MqttClient[] = [];
  let next = 0;
  await Promise.all(
    Array.from({ length: Math.min(100, count) }, async () => {
      while (next < count) {
        const i = from + next++;
        clients.push(
          await mqtt.connectAsync(url, {
            clientId: `heap-${process.pid}-${i}`,
            username: PROCESS_ACCOUNT.username,
            password: PROCESS_ACCOUNT.password,
            protocolVersion: 4,
            reconnectPeriod: 0,
            connectTimeout: 60_000,
            keepalive: 600,
          }),
        );
      }
    }),
  );
  return clients;
}

async function main(): Promise<void> {
  const n = arg('idle', 2000);
  const top = arg('top', 40);
  const dir = process.env.MILLWRIGHT_HEAP_DIR ?? '/tmp';
  process.env.MILLWRIGHT_CHILD_NODE_ARGS = `--heapsnapshot-signal=SIGUSR2 --diagnostic-dir=${dir}`;
  const uns = await startUnsProcess(['--log-level', 'warn']);
  const seen = new Set(readdirSync(dir));
  try {
    const first = await open(uns.mqttUrl, 1, 0);
    await new Promise((r) => setTimeout(r, 2000));
    const a = await snapshot(uns.pid, dir, seen);
    const memA = status(uns.pid);
    const rest = await open(uns.mqttUrl, n - 1, 1);
    await new Promise((r) => setTimeout(r, 3000));
    const b = await snapshot(uns.pid, dir, seen);
    const memB = status(uns.pid);
    const ha = byName(a);
    const hb = byName(b);
    const rows = [...hb].map(([k, v]) => {
      const o = ha.get(k) ?? { count: 0, bytes: 0 };
      return { k, count: (v.count - o.count) / (n - 1), bytes: (v.bytes - o.bytes) / (n - 1) };
    });
    rows.sort((x, y) => y.bytes - x.bytes);
    const heap = rows.reduce((s, r) => s + r.bytes, 0);
    console.log(`snapshots: ${a}, ${b}`);
    console.log(
      `per connection beyond the first (${n} idle): VmRSS ${((memB.rss - memA.rss) / (n - 1)).toFixed(2)} KiB, ` +
        `RssAnon ${((memB.anon - memA.anon) / (n - 1)).toFixed(2)} KiB, JS heap (snapshot self sizes) ${(heap / 1024).toFixed(2)} KiB`,
    );
    console.log('\n| type:name | objects per connection | bytes per connection |');
    console.log('| --- | --: | --: |');
    for (const r of rows.slice(0, top))
      console.log(`| ${r.k} | ${r.count.toFixed(2)} | ${r.bytes.toFixed(0)} |`);
    await Promise.all([...first, ...rest].map((c) => c.endAsync(true)));
  } finally {
    await uns.stop();
  }
}

await main();
