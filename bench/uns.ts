/**
 * bench/uns: messages per second, p99 latency and broker CPU-seconds per million messages through
 * Millwright's UNS and through Mosquitto, side by side in one run, with the same client (mqtt.js)
 * and the same load: QoS 0, 1 and 2, one publisher to one subscriber and one to fifty, and
 * retained messages.
 *
 * - Millwright runs as its own process (`millwright uns`, the default SQLite store), its clients
 *   authenticated against an account whose rules are checked on every publish and subscribe
 *   (`bench/#` PubSub among 200 other rules).
 * - Mosquitto runs as its own process on an ephemeral port with the same checks: a password file
 *   and an ACL (`mosquitto -c <conf>` with `listener <port> 127.0.0.1`).
 * - The load comes from worker processes (the publisher in one, the subscribers spread over five),
 *   so neither the broker nor this process runs the clients. Each message carries its send time;
 *   subscribers bucket latencies in a histogram. The publisher keeps a window of messages in
 *   flight (QoS 0: written to the socket; QoS 1: not yet acknowledged), so it runs as fast as the
 *   broker lets it. Counting starts after a warm-up; broker CPU is read from /proc over the same
 *   window. The workers' own CPU is reported too: the same workers drive Mosquitto faster, and a
 *   worker below one core is not the limit.
 *
 *   npm run bench -- uns [--duration 6] [--warmup 2] [--window 200] [--size 64] [--pace 10000]
 *                        [--protocol 4|5] [--qos 0|1|2] [--fanout 1|50] [--shared] [--retained]
 *                        [--topics 10000] [--short]
 *
 * `--protocol 5` runs every client with MQTT 5 (the same rules on both brokers) and adds the
 * shared subscription cases: one publisher to a group of four (`$share/bench/<topic>`, four
 * clients in two worker processes; each message is delivered to one of them). `--shared` runs the
 * shared cases only; `--qos` and `--fanout` pick one case.
 *
 * The retained cases (`--retained` runs them alone): the publish rate of retained QoS 1 messages
 * cycling over `--topics` topics, no subscriber (a publish counts when acknowledged); then
 * `--topics` retained messages (seeded first) delivered to a new subscriber of `<prefix>/#` at
 * QoS 0, five new subscribers one after the other (`--short`: two, over 1,000 topics): messages per second from
 * SUBSCRIBE to the last retained message.
 *
 * The floor (issue 34): every plain case (not the retained ones) runs a third time, on
 * bench/uns-floor.mjs, a bare Node MQTT relay in its own process (hand-rolled frames, exact topics
 * and `$share` groups, QoS 0/1/2 both ways, no persistence, no library): the least a broker in
 * Node does for the same clients. A second table prints it beside Mosquitto and the UNS. After
 * each plain case the publisher stops and the subscribers' totals over the whole case are checked
 * against what it sent: the run fails if the floor lost a message, and warns if a broker did.
 *
 * Each case runs twice per broker: as fast as the broker takes messages (throughput, CPU) and at a
 * fixed pace of `--pace` deliveries per second (latency: p50 and p99 with no backlog).
 *
 * `--short` (for `npm run bench -- summary`): 2 s windows after 1 s of warm-up, and no paced runs
 * (no latency figures), so a case costs about 4 s per broker.
 */
import { fork, spawn, execFileSync, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { cpus, tmpdir, totalmem, userInfo } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import mqtt from 'mqtt';
import { CLI_ARGS, ensureBuilt, startCli } from '../test/helpers/cli.js';
import { numArg, reportFigures, SHORT } from './support.js';
import { retainedFloor } from './uns-retained-floor.js';

const arg = numArg;

// ---------------------------------------------------------------------------------------------
// Worker side

const BUCKET_MS = 0.05;
const BUCKETS = 40_000; // up to 2 s; slower lands in the last bucket

interface WorkerStart {
  role: 'pub' | 'sub';
  url: string;
  username: string;
  password: string;
  topic: string;
  qos: 0 | 1 | 2;
  clients: number;
  window: number;
  size: number;
  /** Messages per second to publish at a fixed pace; 0 for as fast as the broker takes them. */
  rate: number;
  protocolVersion: 4 | 5;
  /** Subscribe as members of one shared subscription group. */
  shared: boolean;
  /** Publish retained messages, over `topics` distinct topics (`<topic>/<n mod topics>`). */
  retain?: boolean;
  topics?: number;
}

type ToWorker =
  | { cmd: 'start'; spec: WorkerStart }
  | { cmd: 'mark' }
  | { cmd: 'report' }
  | { cmd: 'halt' }
  | { cmd: 'total' }
  | { cmd: 'stop' };

async function worker(): Promise<void> {
  let spec: WorkerStart | undefined;
  const clients: mqtt.MqttClient[] = [];
  let counting = false;
  let count = 0;
  let hist = new Uint32Array(BUCKETS);
  let stopped = false;
  let published = 0;
  // Over the whole case, for the check that every message sent arrived: messages received (all of
  // a subscriber worker's clients), messages handed to mqtt.js and messages done (publisher).
  let total = 0;
  let sentTotal = 0;
  let inflightNow = 0;
  let cpuMark = process.cpuUsage();
  let markAt = performance.now();
  const send = (m: object) => process.send!(m);

  process.on('message', async (msg: ToWorker) => {
    if (msg.cmd === 'start') {
      spec = msg.spec;
      for (let i = 0; i < spec.clients; i++) {
        const c = mqtt.connect(spec.url, {
          username: spec.username,
          password: spec.password,
          reconnectPeriod: 0,
          clean: true,
          protocolVersion: spec.protocolVersion,
        });
        await new Promise<void>((resolve, reject) => {
          c.once('connect', () => resolve());
          c.once('error', reject);
        });
        // As brokers do on their side: no Nagle delay on small messages.
        (c.stream as unknown as { setNoDelay?: (on: boolean) => void }).setNoDelay?.(true);
        clients.push(c);
        if (spec.role === 'sub') {
          c.on('message', (_t, payload) => {
            total++;
            if (!counting) return;
            count++;
            const sent = payload.readDoubleLE(0);
            const ms = performance.timeOrigin + performance.now() - sent;
            hist[Math.min(BUCKETS - 1, Math.max(0, Math.floor(ms / BUCKET_MS)))]!++;
          });
          await c.subscribeAsync(spec.shared ? `$share/bench/${spec.topic}` : spec.topic, { qos: spec.qos });
        }
      }
      if (spec.role === 'pub')
        void (spec.rate > 0 ? pacedLoop(clients[0]!, spec) : publishLoop(clients[0]!, spec));
      send({ cmd: 'ready' });
    } else if (msg.cmd === 'mark') {
      counting = true;
      count = 0;
      published = 0;
      hist = new Uint32Array(BUCKETS);
      cpuMark = process.cpuUsage();
      markAt = performance.now();
    } else if (msg.cmd === 'report') {
      const cpu = process.cpuUsage(cpuMark);
      const elapsed = (performance.now() - markAt) / 1000;
      counting = false;
      send({
        cmd: 'report',
        count,
        published,
        hist: Array.from(hist),
        cpu: (cpu.user + cpu.system) / 1e6,
        elapsed,
      });
    } else if (msg.cmd === 'halt') {
      // The publisher stops and waits (up to 10 s) until what it sent is done (written or acknowledged).
      stopped = true;
      for (let i = 0; i < 1000 && inflightNow > 0; i++) await new Promise((r) => setTimeout(r, 10));
      send({ cmd: 'halted', sent: sentTotal, inflight: inflightNow });
    } else if (msg.cmd === 'total') {
      send({ cmd: 'total', total });
    } else if (msg.cmd === 'stop') {
      stopped = true;
      await Promise.all(clients.map((c) => c.endAsync(true)));
      send({ cmd: 'stopped' });
      process.exit(0);
    }
  });

  async function publishLoop(client: mqtt.MqttClient, s: WorkerStart): Promise<void> {
    let inflight = 0;
    let n = 0;
    let wake: (() => void) | undefined;
    // MQTT 5: no more QoS 1/2 messages in flight than the broker's Receive Maximum (a broker may
    // close a connection that sends more: the UNS does, at its --max-inflight-inbound).
    const told = (client as unknown as { connackPacket?: { properties?: { receiveMaximum?: number } } })
      .connackPacket?.properties?.receiveMaximum;
    const window = s.qos > 0 && told !== undefined ? Math.min(s.window, told) : s.window;
    const done = () => {
      inflight--;
      inflightNow--;
      published++;
      if (wake && inflight < window) {
        const w = wake;
        wake = undefined;
        w();
      }
    };
    while (!stopped) {
      if (inflight >= window) await new Promise<void>((r) => (wake = r));
      const payload = Buffer.alloc(s.size);
      payload.writeDoubleLE(performance.timeOrigin + performance.now(), 0);
      inflight++;
      inflightNow++;
      sentTotal++;
      const topic = s.topics ? `${s.topic}/${n % s.topics}` : s.topic;
      client.publish(topic, payload, { qos: s.qos, retain: s.retain ?? false }, done);
      // Yield now and then so that acknowledgements and IPC are served.
      if ((++n & 1023) === 0) await new Promise((r) => setImmediate(r));
    }
  }

  /** A fixed pace: every millisecond, the messages due by then. */
  async function pacedLoop(client: mqtt.MqttClient, s: WorkerStart): Promise<void> {
    const started = performance.now();
    let sent = 0;
    while (!stopped) {
      const due = Math.floor(((performance.now() - started) / 1000) * s.rate);
      while (sent < due) {
        const payload = Buffer.alloc(s.size);
        payload.writeDoubleLE(performance.timeOrigin + performance.now(), 0);
        inflightNow++;
        sentTotal++;
        client.publish(s.topic, payload, { qos: s.qos }, () => {
          inflightNow--;
          published++;
        });
        sent++;
      }
      await new Promise((r) => setTimeout(r, 1));
    }
  }
}

// ---------------------------------------------------------------------------------------------
// Driver side

/**
 * The Receive Maximum both brokers tell MQTT 5 clients (the UNS's default; Mosquitto's
 * `max_inflight_messages`, whose default of 20 gave Mosquitto's publisher a window of 20 against
 * the UNS's 100 in the QoS 1/2 cases).
 */
const IN_FLIGHT = 100;

interface Broker {
  name: string;
  url: string;
  pid: number;
  /** The floor (bench/uns-floor.mjs): not a broker; the run fails if it loses a message. */
  floor?: boolean;
  stop(): Promise<void>;
}

const FLOOR_NAME = 'floor, a bare Node relay';

/**
 * The floor of the plain cases: bench/uns-floor.mjs, a bare Node MQTT relay in its own process
 * (with MILLWRIGHT_CHILD_NODE_ARGS, as the UNS, for a profile), told the same Receive Maximum and
 * the bench's credentials.
 */
async function startFloor(): Promise<Broker> {
  const nodeArgs = process.env.MILLWRIGHT_CHILD_NODE_ARGS?.split(' ').filter(Boolean) ?? [];
  const child = spawn(
    process.execPath,
    [...nodeArgs, join(import.meta.dirname, 'uns-floor.mjs'), String(IN_FLIGHT), USER, PASS],
    { stdio: ['ignore', 'pipe', 'inherit'] },
  );
  const port = await new Promise<number>((resolve, reject) => {
    let text = '';
    child.stdout!.on('data', (d: Buffer) => {
      text += d.toString();
      const m = /floor-ready (\{.*\})\n/.exec(text);
      if (m) resolve((JSON.parse(m[1]!) as { port: number }).port);
    });
    child.once('exit', (code) => reject(new Error(`the floor relay exited (${code})`)));
  });
  return {
    name: FLOOR_NAME,
    url: `mqtt://127.0.0.1:${port}`,
    pid: child.pid!,
    floor: true,
    stop: () => stopChild(child),
  };
}

function freePort(): Promise<number> {
  return new Promise((resolve) => {
    const s = createServer();
    s.listen(0, '127.0.0.1', () => {
      const port = (s.address() as { port: number }).port;
      s.close(() => resolve(port));
    });
  });
}

function cpuSeconds(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return (Number(fields[11]) + Number(fields[12])) / 100; // utime + stime, in clock ticks (100 Hz)
}

function stopChild(child: ChildProcess): Promise<void> {
  return new Promise((resolve) => {
    if (child.exitCode !== null) return resolve();
    child.once('exit', () => resolve());
    child.kill('SIGTERM');
  });
}

const USER = 'bench';
const PASS = 'bench-password-1';

async function startMillwright(dir: string): Promise<Broker> {
  const env = {
    ...process.env,
    MILLWRIGHT_UNS_DATA_DIR: dir,
    MILLWRIGHT_UNS_ADMIN_PASSWORD: 'bench-admin-password',
  };
  const rules = ['--rule', 'bench/#:PubSub'];
  for (let i = 0; i < 200; i++) rules.push('--rule', `site${i}/+/line/#:PubSub`);
  ensureBuilt();
  execFileSync(
    process.execPath,
    [...CLI_ARGS, 'uns', 'account', 'create', '--username', USER, '--password', PASS, ...rules],
    { env, stdio: 'ignore' },
  );
  const uns = await startCli(
    [
      'uns',
      '--port',
      '0',
      '--mqtt-port',
      '0',
      '--mqtts-port',
      '0',
      '--host',
      '127.0.0.1',
      '--log-level',
      'warn',
      '--max-inflight-inbound',
      String(IN_FLIGHT),
    ],
    { env, inheritStderr: true },
  );
  return {
    name: 'Millwright UNS',
    url: uns.ready.services.uns!.mqttUrl!,
    pid: uns.pid,
    stop: async () => void (await uns.stop()),
  };
}

async function startMosquitto(dir: string): Promise<Broker> {
  const port = await freePort();
  const pwfile = join(dir, 'passwd');
  writeFileSync(pwfile, '');
  execFileSync('mosquitto_passwd', ['-b', pwfile, USER, PASS]);
  const acl = [`user ${USER}`, 'topic readwrite bench/#'];
  for (let i = 0; i < 200; i++) acl.push(`topic readwrite site${i}/+/line/#`);
  writeFileSync(join(dir, 'acl'), `${acl.join('\n')}\n`);
  writeFileSync(
    join(dir, 'mosquitto.conf'),
    // `user`: mosquitto started as root would switch to the `mosquitto` user, who cannot read a temp dir.
    [
      `listener ${port} 127.0.0.1`,
      `user ${userInfo().username}`,
      'allow_anonymous false',
      `password_file ${pwfile}`,
      `acl_file ${join(dir, 'acl')}`,
      'persistence false',
      // The same in-flight limit as the UNS (an MQTT 5 publisher keeps no more QoS 1/2 messages in
      // flight than the Receive Maximum each broker tells: Mosquitto's default is 20, the UNS's 100).
      `max_inflight_messages ${IN_FLIGHT}`,
      'log_type error',
      '',
    ].join('\n'),
  );
  const child = spawn('mosquitto', ['-c', join(dir, 'mosquitto.conf')], {
    stdio: ['ignore', 'ignore', 'inherit'],
  });
  // Wait until it accepts connections.
  for (let i = 0; i < 50; i++) {
    try {
      const c = await mqtt.connectAsync(`mqtt://127.0.0.1:${port}`, {
        username: USER,
        password: PASS,
        reconnectPeriod: 0,
      });
      await c.endAsync();
      break;
    } catch {
      await new Promise((r) => setTimeout(r, 100));
    }
  }
  return {
    name: `Mosquitto ${mosquittoVersion()}`,
    url: `mqtt://127.0.0.1:${port}`,
    pid: child.pid!,
    stop: () => stopChild(child),
  };
}

function mosquittoVersion(): string {
  try {
    return /version (\S+)/.exec(execFileSync('mosquitto', ['-h'], { encoding: 'utf8' }))?.[1] ?? '';
  } catch (err) {
    return /version (\S+)/.exec(String((err as { stdout?: string }).stdout))?.[1] ?? '';
  }
}

interface Report {
  count: number;
  published: number;
  hist: number[];
  cpu: number;
  elapsed: number;
}

class Worker {
  readonly child: ChildProcess;
  #waiters: ((m: any) => void)[] = [];

  constructor() {
    this.child = fork(import.meta.filename, ['--worker'], {
      execArgv: ['--import', 'tsx'],
      stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
    });
    this.child.on('message', (m) => this.#waiters.shift()?.(m));
  }

  ask(msg: ToWorker): Promise<any> {
    return new Promise((resolve) => {
      this.#waiters.push(resolve);
      this.child.send(msg);
    });
  }

  tell(msg: ToWorker): void {
    this.child.send(msg);
  }
}

interface Result {
  /** The case, as in the table and the summary's figures. */
  label: string;
  broker: string;
  protocol: number;
  shared: boolean;
  qos: number;
  fanout: number;
  delivered: number;
  published: number;
  p50: number;
  p99: number;
  cpuPerMillion: number;
  brokerCores: number;
  workerMaxCpu: number;
}

function percentile(hist: number[], q: number): number {
  const total = hist.reduce((a, b) => a + b, 0);
  let seen = 0;
  for (let i = 0; i < hist.length; i++) {
    seen += hist[i]!;
    if (seen >= total * q) return (i + 1) * BUCKET_MS;
  }
  return NaN;
}

async function runCase(
  broker: Broker,
  qos: 0 | 1 | 2,
  fanout: number,
  opts: {
    duration: number;
    warmup: number;
    window: number;
    size: number;
    rate: number;
    protocol: 4 | 5;
    shared: boolean;
    /** Retained messages over this many topics, no subscriber: the figure is publishes per second. */
    retainedTopics?: number;
  },
): Promise<Result> {
  const retained = opts.retainedTopics !== undefined;
  const topic = retained
    ? `bench/v${opts.protocol}/retained/q${qos}`
    : `bench/v${opts.protocol}/q${qos}/f${fanout}${opts.shared ? 's' : ''}/${opts.rate > 0 ? 'paced' : 'max'}`;
  const subProcs = retained ? 0 : fanout === 1 ? 1 : opts.shared ? 2 : 5;
  const subs = Array.from({ length: subProcs }, () => new Worker());
  const pub = new Worker();
  const base = {
    url: broker.url,
    username: USER,
    password: PASS,
    topic,
    qos,
    window: opts.window,
    size: opts.size,
    rate: opts.rate,
    protocolVersion: opts.protocol,
    shared: opts.shared,
    retain: retained,
    topics: opts.retainedTopics,
  };
  await Promise.all(
    subs.map((w) => w.ask({ cmd: 'start', spec: { ...base, role: 'sub', clients: fanout / subProcs } })),
  );
  await pub.ask({ cmd: 'start', spec: { ...base, role: 'pub', clients: 1 } });
  await new Promise((r) => setTimeout(r, opts.warmup * 1000));
  for (const w of [...subs, pub]) w.tell({ cmd: 'mark' });
  const cpu0 = cpuSeconds(broker.pid);
  const t0 = performance.now();
  await new Promise((r) => setTimeout(r, opts.duration * 1000));
  const reports: Report[] = await Promise.all([...subs, pub].map((w) => w.ask({ cmd: 'report' })));
  const cpu = cpuSeconds(broker.pid) - cpu0;
  const elapsed = (performance.now() - t0) / 1000;
  if (!retained) await checkDelivered(broker, subs, pub, opts.shared ? 1 : fanout);
  await Promise.all([...subs, pub].map((w) => w.ask({ cmd: 'stop' })));
  const subReports = reports.slice(0, subs.length);
  const published = reports[reports.length - 1]!.published;
  // A retained case has no subscriber: its figure is what the broker took (and acknowledged).
  const delivered = retained ? published : subReports.reduce((a, r) => a + r.count, 0);
  const hist = new Array<number>(BUCKETS).fill(0);
  for (const r of subReports) for (let i = 0; i < BUCKETS; i++) hist[i]! += r.hist[i]!;
  const proto = `MQTT ${opts.protocol === 5 ? '5' : '3.1.1'}`;
  return {
    label: retained
      ? `${proto} QoS ${qos} retained publish, ${opts.retainedTopics} topics`
      : `${proto} QoS ${qos}, 1→${opts.shared ? 'group of ' : ''}${fanout}`,
    broker: broker.name,
    protocol: opts.protocol,
    shared: opts.shared,
    qos,
    fanout,
    delivered: delivered / elapsed,
    published: published / elapsed,
    p50: percentile(hist, 0.5),
    p99: percentile(hist, 0.99),
    cpuPerMillion: delivered > 0 ? cpu / (delivered / 1e6) : NaN,
    brokerCores: cpu / elapsed,
    workerMaxCpu: Math.max(...reports.map((r) => r.cpu / r.elapsed)),
  };
}

/**
 * Every message sent arrived: the publisher stops, waits until what it sent is done, and the
 * subscribers' totals over the whole case (not only the window) must reach `copies` times what it
 * sent (each subscriber gets every message; a shared group, each message once), within 10 s. The
 * floor failing it fails the run (a relay that drops is no floor); a broker failing it is a
 * warning on stderr (the figure counts what arrived).
 */
async function checkDelivered(broker: Broker, subs: Worker[], pub: Worker, copies: number): Promise<void> {
  const { sent, inflight } = (await pub.ask({ cmd: 'halt' })) as { sent: number; inflight: number };
  const expected = sent * copies;
  let got = 0;
  for (let i = 0; i < 100; i++) {
    const totals = (await Promise.all(subs.map((w) => w.ask({ cmd: 'total' })))) as { total: number }[];
    got = totals.reduce((a, t) => a + t.total, 0);
    if (got >= expected) break;
    await new Promise((r) => setTimeout(r, 100));
  }
  if (got === expected) return;
  const msg =
    `${broker.name}: ${got} deliveries of the ${expected} due (${sent} messages sent, ${copies} ` +
    `cop${copies === 1 ? 'y' : 'ies'} each; ${inflight} still in flight at the publisher)`;
  if (broker.floor) throw new Error(`the floor lost messages: ${msg}`);
  process.stderr.write(`warning: ${msg}\n`);
}

/**
 * Retained messages to new subscribers: `rounds` times, a new client (mqtt.js, in this process)
 * subscribes to `<topic>/#` at QoS `qos` over the `topics` retained topics that `runCase` left under
 * `<topic>`, and waits for all of them. The figure: retained messages delivered per second over
 * the rounds (from SUBSCRIBE to the last message; the connect is not counted).
 */
async function runRetainedDelivery(
  broker: Broker,
  topic: string,
  topics: number,
  opts: { protocol: 4 | 5; rounds: number; qos: 0 | 1 },
): Promise<Result> {
  let seconds = 0;
  let cpu = 0;
  let delivered = 0;
  for (let round = 0; round < opts.rounds; round++) {
    const c = await mqtt.connectAsync(broker.url, {
      username: USER,
      password: PASS,
      reconnectPeriod: 0,
      clean: true,
      protocolVersion: opts.protocol,
    });
    let n = 0;
    let done: () => void = () => {};
    const all = new Promise<void>((r) => (done = r));
    c.on('message', (_t, _p, packet) => {
      if (packet.retain && ++n === topics) done();
    });
    const cpu0 = cpuSeconds(broker.pid);
    const t0 = performance.now();
    c.subscribe(`${topic}/#`, { qos: opts.qos });
    const timeout = new Promise<void>((r) => setTimeout(r, 60_000).unref());
    await Promise.race([all, timeout]);
    seconds += (performance.now() - t0) / 1000;
    cpu += cpuSeconds(broker.pid) - cpu0;
    delivered += n;
    await c.endAsync(true);
  }
  return {
    label: `MQTT ${opts.protocol === 5 ? '5' : '3.1.1'} QoS ${opts.qos} retained to a new subscriber, ${topics} topics`,
    broker: broker.name,
    protocol: opts.protocol,
    shared: false,
    qos: opts.qos,
    fanout: 1,
    delivered: delivered / seconds,
    published: 0,
    p50: NaN,
    p99: NaN,
    cpuPerMillion: delivered > 0 ? cpu / (delivered / 1e6) : NaN,
    brokerCores: cpu / seconds,
    workerMaxCpu: NaN,
  };
}

interface Opts {
  duration: number;
  warmup: number;
  window: number;
  size: number;
  pace: number;
  protocol: 4 | 5;
  /** Retained topics (the publish case cycles over them; the delivery case seeds them first). */
  topics: number;
}

/** A case: a publisher to subscribers, or `retained` (publish rate, then delivery to new subscribers). */
type Case = { kind: 'pubsub'; qos: 0 | 1 | 2; fanout: number; shared: boolean } | { kind: 'retained' };

function pickCases(protocol: 4 | 5): Case[] {
  // One case only, for investigating: --qos 1 --fanout 50. `--retained`: the retained cases only.
  const onlyQos = process.argv.includes('--qos') ? (arg('qos', 0) as 0 | 1 | 2) : undefined;
  const onlyFanout = process.argv.includes('--fanout') ? arg('fanout', 1) : undefined;
  const onlyShared = process.argv.includes('--shared');
  const onlyRetained = process.argv.includes('--retained');
  const cases: Case[] = [];
  if (!onlyRetained)
    for (const qos of onlyQos === undefined ? ([0, 1, 2] as const) : [onlyQos]) {
      if (!onlyShared)
        for (const fanout of onlyFanout === undefined ? [1, 50] : [onlyFanout])
          cases.push({ kind: 'pubsub', qos, fanout, shared: false });
      if (protocol === 5 || onlyShared) cases.push({ kind: 'pubsub', qos, fanout: 4, shared: true });
    }
  if (onlyRetained || (onlyQos === undefined && onlyFanout === undefined && !onlyShared))
    cases.push({ kind: 'retained' });
  return cases;
}

type Row = { max: Result; paced: Result | undefined };

async function runOne(broker: Broker, c: Case, opts: Opts): Promise<Row[]> {
  const o = { ...opts, shared: false };
  if (c.kind === 'retained') {
    // QoS 1 so that a publish counts once the broker has stored (acknowledged) it.
    const publish = await runCase(broker, 1, 0, { ...o, rate: 0, retainedTopics: opts.topics });
    const topic = `bench/v${opts.protocol}/retained-delivery`;
    await seedRetained(broker, topic, opts.topics, opts.protocol);
    const deliver = await runRetainedDelivery(broker, topic, opts.topics, {
      protocol: opts.protocol,
      rounds: SHORT ? 2 : 5,
      qos: 0,
    });
    for (const r of [publish, deliver])
      process.stderr.write(`${r.broker} ${r.label}: ${Math.round(r.delivered)} msgs/s\n`);
    return [
      { max: publish, paced: undefined },
      { max: deliver, paced: undefined },
    ];
  }
  const { qos, fanout, shared } = c;
  const max = await runCase(broker, qos, fanout, { ...o, shared, rate: 0 });
  // Deliveries per second at the fixed pace: a shared group delivers each message once.
  const paced = SHORT
    ? undefined
    : await runCase(broker, qos, fanout, { ...o, shared, rate: shared ? opts.pace : opts.pace / fanout });
  process.stderr.write(
    `${max.broker} ${max.label}: ${Math.round(max.delivered)} msgs/s delivered` +
      `${paced ? `; at ${opts.pace} deliveries/s p99 ${paced.p99.toFixed(2)} ms` : ''}\n`,
  );
  return [{ max, paced }];
}

/** Publishes one retained QoS 1 message on each of `<topic>/0` … `<topic>/<topics-1>`. */
async function seedRetained(broker: Broker, topic: string, topics: number, protocol: 4 | 5): Promise<void> {
  const c = await mqtt.connectAsync(broker.url, {
    username: USER,
    password: PASS,
    reconnectPeriod: 0,
    protocolVersion: protocol,
  });
  const payload = Buffer.alloc(64);
  let next = 0;
  await Promise.all(
    Array.from({ length: 100 }, async () => {
      while (next < topics) await c.publishAsync(`${topic}/${next++}`, payload, { qos: 1, retain: true });
    }),
  );
  await c.endAsync(true);
}

/** The floor beside Mosquitto and the UNS, per plain case (bench/uns-floor.mjs). */
function printFloorTable(rows: Row[]): void {
  const floors = rows.filter((r) => r.max.broker === FLOOR_NAME).map((r) => r.max);
  if (floors.length === 0) return;
  const of = (label: string, test: (b: string) => boolean) =>
    rows.find((r) => r.max.label === label && test(r.max.broker))?.max;
  console.log(
    `The floor of each plain case: ${FLOOR_NAME} (bench/uns-floor.mjs), the same clients in the same run. ` +
      'Floor below Mosquitto: the case is out of reach of a Node broker here.\n',
  );
  console.log(
    '| case | Mosquitto msgs/s | floor msgs/s | floor vs Mosquitto | UNS vs floor | UNS vs Mosquitto | CPU µs per message: Mosquitto / floor / UNS |',
  );
  console.log('|---|---:|---:|---:|---:|---:|---:|');
  for (const f of floors) {
    const m = of(f.label, (b) => b.startsWith('Mosquitto'))!;
    const u = of(f.label, (b) => !b.startsWith('Mosquitto') && b !== FLOOR_NAME);
    const pc = (a: number, b: number) => `${((100 * a) / b).toFixed(0)}%`;
    console.log(
      `| ${f.label} | ${Math.round(m.delivered)} | ${Math.round(f.delivered)} | ${pc(f.delivered, m.delivered)} | ` +
        `${u ? pc(u.delivered, f.delivered) : '-'} | ${u ? pc(u.delivered, m.delivered) : '-'} | ` +
        `${m.cpuPerMillion.toFixed(1)} / ${f.cpuPerMillion.toFixed(1)} / ${u ? u.cpuPerMillion.toFixed(1) : '-'} |`,
    );
  }
  console.log('');
}

function printTable(rows: Row[], opts: Opts): void {
  const cpu = cpus()[0]?.model ?? 'unknown CPU';
  console.log(
    `\nMachine: ${cpus().length} vCPUs (${cpu}), ${Math.round(totalmem() / 2 ** 30)} GiB, Node.js ${process.version}`,
  );
  const flags = ['--shared', '--retained'].filter((f) => process.argv.includes(f)).join(' ');
  console.log(
    `Command: npm run bench -- uns --protocol ${opts.protocol}${flags ? ` ${flags}` : ''}${SHORT ? ' --short' : ''} --duration ${opts.duration} --warmup ${opts.warmup} --window ${opts.window} --size ${opts.size} --pace ${opts.pace} --topics ${opts.topics}\n`,
  );
  console.log(
    `| case | broker | msgs/s delivered (max) | vs Mosquitto | broker CPU-s per 1M msgs | broker cores busy | busiest load worker, cores | p50 ms at ${opts.pace}/s | p99 ms at ${opts.pace}/s | p99 ms at max |`,
  );
  console.log('|---|---|---:|---:|---:|---:|---:|---:|---:|---:|');
  const figures: Record<string, number> = {};
  const fmt = (x: number | undefined, digits: number) =>
    x === undefined || Number.isNaN(x) ? '-' : x.toFixed(digits);
  for (const { max, paced } of rows) {
    const base = rows.find((x) => x.max.label === max.label && x.max.broker.startsWith('Mosquitto'))!.max;
    const p99max = Number.isNaN(max.p99) ? '-' : max.p99 >= 2000 ? '>2000' : max.p99.toFixed(1);
    console.log(
      `| ${max.label} | ${max.broker} | ${Math.round(max.delivered)} | ${((100 * max.delivered) / base.delivered).toFixed(0)}% | ` +
        `${max.cpuPerMillion.toFixed(1)} | ${max.brokerCores.toFixed(2)} | ${fmt(Math.max(max.workerMaxCpu, paced?.workerMaxCpu ?? 0), 2)} | ` +
        `${fmt(paced?.p50, 2)} | ${fmt(paced?.p99, 2)} | ${p99max} |`,
    );
    const who = max.broker.startsWith('Mosquitto')
      ? 'Mosquitto'
      : max.broker === FLOOR_NAME
        ? 'relay floor'
        : 'UNS';
    figures[`${max.label}: ${who} msgs/s`] = max.delivered;
    figures[`${max.label}: ${who} CPU µs per message`] = max.cpuPerMillion;
  }
  console.log('');
  printFloorTable(rows);
  const publish = rows.find((r) => r.max.label.includes('retained publish'))?.max;
  if (publish) {
    // The floor of a durable retained publish: SQLite alone storing the same topics' messages, in
    // transactions of the publisher's window (bench/uns-retained-floor.ts). Mosquitto runs with
    // `persistence false`: it keeps retained messages in memory and never writes them.
    const floor = retainedFloor(opts.topics, 7, IN_FLIGHT);
    const mosq = rows.find((r) => r.max.label === publish.label && r.max.broker.startsWith('Mosquitto'))!.max;
    console.log(
      `${publish.label}, floor of a durable store (SQLite alone, ${IN_FLIGHT} messages a transaction, no broker): ` +
        `${Math.round(floor.msgsPerSecond)} msgs/s (${((100 * floor.msgsPerSecond) / mosq.delivered).toFixed(0)}% of Mosquitto's in-memory figure), ` +
        `${floor.cpuMicrosPerMessage.toFixed(2)} µs CPU per message (Mosquitto: ${mosq.cpuPerMillion.toFixed(1)} µs per message, all of its work)\n`,
    );
    figures[`${publish.label}: floor msgs/s`] = floor.msgsPerSecond;
    figures[`${publish.label}: floor CPU µs per message`] = floor.cpuMicrosPerMessage;
  }
  reportFigures(figures);
}

async function main(): Promise<void> {
  const opts: Opts = {
    duration: arg('duration', 6, 2),
    warmup: arg('warmup', 2, 1),
    window: arg('window', 200),
    size: arg('size', 64),
    // The fixed pace of the latency runs, in deliveries per second (the same for every fan-out).
    pace: arg('pace', 10_000),
    protocol: arg('protocol', 4) === 5 ? 5 : 4,
    topics: arg('topics', 10_000, 1_000),
  };
  const cases = pickCases(opts.protocol);
  const dir = mkdtempSync(join(tmpdir(), 'mw-bench-uns-'));
  const rows: Row[] = [];
  try {
    const millwright = await startMillwright(join(dir, 'uns'));
    const mosquitto = await startMosquitto(dir);
    const floor = await startFloor();
    try {
      // Alternate the brokers (and the floor, plain cases only) so that drift of the machine hits all.
      for (const c of cases)
        for (const broker of c.kind === 'retained' ? [mosquitto, millwright] : [mosquitto, millwright, floor])
          rows.push(...(await runOne(broker, c, opts)));
    } finally {
      await millwright.stop();
      await mosquitto.stop();
      await floor.stop();
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
  printTable(rows, opts);
}

if (process.argv.includes('--worker')) await worker();
else await main();
