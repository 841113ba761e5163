/**
 * bench/uns-retained-cpu: the UNS's CPU per retained message (issue 34), a figure that a loaded
 * machine leaves usable where msgs/s are not. Starts the built `millwright uns` (or the build of
 * `MILLWRIGHT_CLI_DIST`), then, `--rounds` times: publishes `--topics` retained QoS 1 messages
 * (one publisher, `--window` in flight, a new payload per round) and reads the broker's CPU
 * (`/proc/<pid>/stat`) over the publishes; then `--subscribers` new clients, one after the other,
 * subscribe to all of them at QoS 0 and the CPU from SUBSCRIBE to the last message is read. Prints
 * µs of broker CPU per retained publish and per delivered retained message, the median of rounds.
 *
 *   npm run bench -- uns-retained-cpu [--topics 1000] [--rounds 5] [--subscribers 4] [--window 100]
 */
import { readFileSync } from 'node:fs';
import mqtt from 'mqtt';
import { PROCESS_ACCOUNT, startUnsProcess } from '../test/helpers/uns.js';
import { numArg as arg } from './support.js';

const ticks = 100;
const cpuSeconds = (pid: number) => {
  const f = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
  return (Number(f[11]) + Number(f[12])) / ticks;
};
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

async function connect(url: string): Promise<mqtt.MqttClient> {
  return mqtt.connectAsync(url, {
    username: PROCESS_ACCOUNT.username,
    password: PROCESS_ACCOUNT.password,
    protocolVersion: 5,
    reconnectPeriod: 0,
    clean: true,
  });
}

async function publishAll(c: mqtt.MqttClient, topics: number, window: number, round: number): Promise<void> {
  const payload = Buffer.alloc(64, round);
  let next = 0;
  await Promise.all(
    Array.from({ length: window }, async () => {
      while (next < topics) await c.publishAsync(`cpu/r/${next++}`, payload, { qos: 1, retain: true });
    }),
  );
}

async function receiveAll(url: string, topics: number): Promise<[number, number]> {
  const c = await connect(url);
  let n = 0;
  let done: () => void = () => {};
  const all = new Promise<void>((r) => (done = r));
  c.on('message', (_t, _p, packet) => {
    if (packet.retain && ++n === topics) done();
  });
  const t0 = performance.now();
  c.subscribe('cpu/r/#', { qos: 0 });
  await all;
  const ms = performance.now() - t0;
  await c.endAsync(true);
  return [n, ms];
}

async function main(): Promise<void> {
  const topics = arg('topics', 1000);
  const rounds = arg('rounds', 5);
  const subscribers = arg('subscribers', 4);
  const window = arg('window', 100);
  const uns = await startUnsProcess(['--log-level', 'warn', '--max-inflight-inbound', String(window)]);
  const pub: number[] = [];
  const del: number[] = [];
  const delMs: number[] = [];
  try {
    const publisher = await connect(uns.mqttUrl);
    await publishAll(publisher, topics, window, 255); // warm-up, and the topics exist
    for (let r = 0; r < rounds; r++) {
      await new Promise((res) => setTimeout(res, 300));
      let cpu0 = cpuSeconds(uns.pid);
      await publishAll(publisher, topics, window, r);
      pub.push(((cpuSeconds(uns.pid) - cpu0) / topics) * 1e6);
      await new Promise((res) => setTimeout(res, 300));
      cpu0 = cpuSeconds(uns.pid);
      let n = 0;
      for (let s = 0; s < subscribers; s++) {
        const [got, ms] = await receiveAll(uns.mqttUrl, topics);
        n += got;
        delMs.push(ms);
      }
      del.push(((cpuSeconds(uns.pid) - cpu0) / n) * 1e6);
    }
    await publisher.endAsync(true);
  } finally {
    await uns.stop();
  }
  const f = (xs: number[]) => xs.map((x) => x.toFixed(1)).join(' ');
  console.log(`build: ${process.env.MILLWRIGHT_CLI_DIST ?? 'dist/'}; ${topics} topics, ${rounds} rounds`);
  console.log(`UNS CPU per retained publish, µs: median ${median(pub).toFixed(1)} (rounds: ${f(pub)})`);
  console.log(
    `UNS CPU per retained delivery, µs: median ${median(del).toFixed(1)} (rounds: ${f(del)}); ms per subscriber median ${median(delMs).toFixed(1)}`,
  );
}

await main();
