/**
 * Edge high availability, live (issue 29, item 2): a real manager process, two real edge
 * processes enrolled with it, and one Modbus TCP server of this test that records each request
 * and the connection it came on. The edges are paired (timeout 6 s, lease 3 s), the same
 * configuration template (one Modbus TCP device) is applied to both through a manager task, and
 * a NATS subscriber on both edges' DataHubs receives the values.
 *
 * 1. kill -9 of the active edge: the standby polls within the timeout plus 5 s; the values never
 *    stop for longer than that; the killed edge, started again, stays standby and never polls.
 * 2. The same the other way round with the manager killed (kill -9) right after the active edge
 *    and started again during the failover: the lease is in its database.
 * Throughout: no two connections ever poll at once (each connection's requests span a time
 * interval; no two intervals overlap).
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import net from 'node:net';
import { connect as natsConnect, type NatsConnection } from 'nats';
import { LOCAL_PROVIDER_ID } from '../../src/edge/auth/index.js';
import { cleanEnv, runCliJson, startCli, tempDirs, type CliProcess } from '../helpers/cli.js';
import { http } from '../helpers/edge.js';
import { eventually, sleep } from '../helpers/util.js';

const TIMEOUT_S = 6;
const LEASE_S = 3;
const BOUND_MS = (TIMEOUT_S + 5) * 1000;
const dirs = tempDirs('mw-ha-');
const env = cleanEnv({ MILLWRIGHT_EDGE_ADMIN_PASSWORD: 'first-run-password' });
const procs = new Set<CliProcess>();

/** A Modbus TCP server (MBAP, function codes 3 and 4) recording every request and its connection. */
class RecordingModbus {
  readonly requests: { conn: number; at: number }[] = [];
  readonly connections: { id: number; opened: number; closed: number | null }[] = [];
  #next = 0;
  #counter = 0;
  #open = new Set<net.Socket>();
  maxOpenAtOnce = 0;
  readonly server = net.createServer((socket) => {
    const id = ++this.#next;
    const rec = { id, opened: Date.now(), closed: null as number | null };
    this.connections.push(rec);
    this.#open.add(socket);
    this.maxOpenAtOnce = Math.max(this.maxOpenAtOnce, this.#open.size);
    let buf = Buffer.alloc(0);
    socket.on('error', () => undefined);
    socket.on('close', () => {
      rec.closed = Date.now();
      this.#open.delete(socket);
    });
    socket.on('data', (d: Buffer) => {
      buf = Buffer.concat([buf, d]);
      while (buf.length >= 7) {
        const len = buf.readUInt16BE(4);
        if (buf.length < 6 + len) break;
        const frame = buf.subarray(0, 6 + len);
        buf = buf.subarray(6 + len);
        this.requests.push({ conn: id, at: Date.now() });
        const fc = frame[7]!;
        const count = frame.readUInt16BE(10);
        const pdu =
          fc === 3 || fc === 4
            ? Buffer.concat([
                Buffer.from([fc, count * 2]),
                Buffer.from(
                  Array.from({ length: count }, () => (this.#counter = (this.#counter + 1) & 0xffff)).flatMap(
                    (v) => [v >> 8, v & 0xff],
                  ),
                ),
              ])
            : Buffer.from([fc | 0x80, 1]);
        const head = Buffer.alloc(7);
        frame.copy(head, 0, 0, 4);
        head.writeUInt16BE(pdu.length + 1, 4);
        head[6] = frame[6]!;
        socket.write(Buffer.concat([head, pdu]));
      }
    });
  });

  listen(): Promise<number> {
    return new Promise((resolve) =>
      this.server.listen(0, '127.0.0.1', () => resolve((this.server.address() as net.AddressInfo).port)),
    );
  }

  /** The connections that sent requests, with the first and last request's time. */
  pollers(): { conn: number; first: number; last: number; n: number }[] {
    const by = new Map<number, { conn: number; first: number; last: number; n: number }>();
    for (const r of this.requests) {
      const p = by.get(r.conn);
      if (p) {
        p.last = r.at;
        p.n++;
      } else by.set(r.conn, { conn: r.conn, first: r.at, last: r.at, n: 1 });
    }
    return [...by.values()].sort((a, b) => a.first - b.first);
  }

  close(): void {
    for (const s of this.#open) s.destroy();
    this.server.close();
  }
}

/** No two connections poll at once: each one's requests end before the next one's begin. */
function assertNeverTwoPollers(modbus: RecordingModbus): void {
  const p = modbus.pollers();
  for (let i = 1; i < p.length; i++)
    assert.ok(
      p[i - 1]!.last < p[i]!.first,
      `two clients polled at once: ${JSON.stringify(p[i - 1])} and ${JSON.stringify(p[i])}`,
    );
}

/**
 * A TCP relay in front of the manager for one edge's link: `cut()` black-holes the traffic both
 * ways without closing anything (a partition, not a crash); `heal()` lets it flow again, and a
 * connection whose manager side ended meanwhile is then ended on the edge's side too.
 */
class Partition {
  #cut = false;
  readonly #pairs = new Set<{ client: net.Socket; upstream: net.Socket; upstreamGone: boolean }>();
  readonly server: net.Server;

  constructor(readonly target: () => number) {
    this.server = net.createServer((client) => {
      if (this.#cut) return; // a connection attempt in a partition goes nowhere
      const upstream = net.connect(this.target(), '127.0.0.1');
      const pair = { client, upstream, upstreamGone: false };
      this.#pairs.add(pair);
      client.on('error', () => undefined);
      upstream.on('error', () => undefined);
      client.on('data', (d: Buffer) => !this.#cut && upstream.write(d));
      upstream.on('data', (d: Buffer) => !this.#cut && client.write(d));
      upstream.on('close', () => {
        pair.upstreamGone = true;
        if (!this.#cut) client.destroy();
      });
      client.on('close', () => {
        this.#pairs.delete(pair);
        if (!this.#cut) upstream.destroy();
      });
    });
  }

  listen(): Promise<number> {
    return new Promise((resolve) =>
      this.server.listen(0, '127.0.0.1', () => resolve((this.server.address() as net.AddressInfo).port)),
    );
  }

  cut(): void {
    this.#cut = true;
  }

  heal(): void {
    this.#cut = false;
    for (const p of this.#pairs) if (p.upstreamGone) p.client.destroy();
  }

  close(): void {
    for (const p of this.#pairs) {
      p.client.destroy();
      p.upstream.destroy();
    }
    this.server.close();
  }
}

interface Edge {
  proc: CliProcess;
  dir: string;
  url: string;
  natsUrl: string;
  ports: [string, string];
  deviceId: string;
  cookie: Record<string, string>;
}

let modbus: RecordingModbus;
let partition: Partition;
let manager: CliProcess;
let managerDir: string;
let mPorts: [string, string];
let token: string;
let edges: Edge[] = [];
const arrivals: number[] = [];
const ncs: NatsConnection[] = [];

async function start(args: string[]): Promise<CliProcess> {
  const p = await startCli(args, { env, timeoutMs: 90_000 });
  procs.add(p);
  return p;
}

async function kill(p: CliProcess): Promise<void> {
  process.kill(p.pid, 'SIGKILL');
  await p.exited;
  procs.delete(p);
}

const managerArgs = (port: string, admin: string) =>
  `manager --host 127.0.0.1 --port ${port} --admin-port ${admin} --data-dir ${managerDir} --heartbeat-interval 300 --log-level warn`.split(
    ' ',
  );
const edgeArgs = (dir: string, port: string, datahub: string) =>
  `edge --host 127.0.0.1 --port ${port} --datahub-host 127.0.0.1 --datahub-port ${datahub} --data-dir ${dir} --log-level warn`.split(
    ' ',
  );

async function api(path: string, o: Parameters<typeof http>[1] = {}) {
  const url = manager.ready.services.manager!.url;
  for (let attempt = 0; ; attempt++) {
    try {
      return await http(`${url}${path}`, { ...o, headers: { 'x-authtoken': token, ...o.headers } });
    } catch (err) {
      if (attempt >= 5) throw err;
      await new Promise((r) => setTimeout(r, 500));
    }
  }
}

/** A new edge process enrolled with the manager (at `managerUrl`) as a user does it. */
async function enrolledEdge(projectId: string, managerUrl?: string): Promise<Edge> {
  const dir = dirs.make();
  const proc = await start(edgeArgs(dir, '0', '0'));
  const e = proc.ready.services.edge!;
  const call = (path: string, o: Parameters<typeof http>[1] = {}) => http(`${e.url}${path}`, o);
  const login = await call('/auth/v2/login', {
    json: { username: 'admin', password: 'first-run-password', providerId: LOCAL_PROVIDER_ID },
  });
  let c = { cookie: `jwtAccess=${login.body.jwtAccess}` };
  await call('/auth/v2/eula', { method: 'PUT', headers: c, json: { agree: true, version: '1.0' } });
  const pw = await call('/auth/v2/password?locale=en-US', {
    method: 'PUT',
    headers: c,
    json: { currentPassword: 'first-run-password', newPassword: 'a-new-admin-password' },
  });
  c = { cookie: `jwtAccess=${pw.body.jwtAccess}` };
  const m = manager.ready.services.manager!;
  const tx = (await call('/dm/cloud/url?locale=en-US', { headers: c, json: { url: managerUrl ?? m.url } }))
    .body.tx;
  await call(`/dm/cloud/url/${tx}/confirm?locale=en-US`, { method: 'PUT', headers: c });
  const code = await api('/api/v1/activation/code', { json: { projectId } });
  const activated = await call('/dm/cloud?locale=en-US', { headers: c, json: { code: code.body.code } });
  assert.equal(activated.status, 200, activated.text);
  return {
    proc,
    dir,
    url: e.url,
    natsUrl: e.natsUrl!.replace('localhost', '127.0.0.1'),
    ports: [String(e.ports.port), String(e.ports['datahub-port'])],
    deviceId: activated.body.deviceId as string,
    cookie: c,
  };
}

const sessions = new Map<number, string>();

/** `/dm/v2/ha/role` of an edge (signed in once per edge process). */
async function role(e: Edge) {
  const url = e.proc.ready.services.edge!.url;
  let cookie = sessions.get(e.proc.pid);
  if (!cookie) {
    const login = await http(`${url}/auth/v2/login`, {
      json: { username: 'admin', password: 'a-new-admin-password', providerId: LOCAL_PROVIDER_ID },
    });
    assert.equal(login.status, 200, login.text);
    cookie = `jwtAccess=${login.body.jwtAccess}`;
    sessions.set(e.proc.pid, cookie);
  }
  const r = await http(`${url}/dm/v2/ha/role`, { headers: { cookie } });
  assert.equal(r.status, 200, r.text);
  return r.body as {
    role: string;
    epoch: number;
    polling: boolean;
    linked: boolean;
    paired: boolean;
    leaseRemainingMs: number;
  };
}

async function restartEdge(e: Edge): Promise<void> {
  e.proc = await start(edgeArgs(e.dir, ...e.ports));
}

/** The longest time without a value between `from` and `to`. */
function longestGap(from: number, to: number): number {
  const ts = [from, ...arrivals.filter((t) => t > from && t < to), to];
  let gap = 0;
  for (let i = 1; i < ts.length; i++) gap = Math.max(gap, ts[i]! - ts[i - 1]!);
  return gap;
}

/** Kills the active edge (and, with `alsoManager`, the manager right after); checks the failover. */
async function failover(active: Edge, standby: Edge, alsoManager: boolean): Promise<void> {
  await eventually(async () => (await role(active)).polling, 30_000, 'the active polls');
  const steadyFrom = Date.now();
  await sleep(3000); // a steady stretch of values before the kill
  const pollersBefore = modbus.pollers().length;
  const killedAt = Date.now();
  await kill(active.proc);
  if (alsoManager) {
    await kill(manager);
    await sleep(1000); // the manager is down for a while during the failover
    manager = await start(managerArgs(...mPorts));
  }
  const taken = await eventually(
    async () => modbus.pollers().length > pollersBefore && modbus.pollers().at(-1)!.first,
    BOUND_MS + 30_000,
    'the standby polls',
  );
  const after = taken - killedAt;
  console.log(`standby polled ${after} ms after the kill${alsoManager ? ' (manager restarted)' : ''}`);
  assert.ok(after <= BOUND_MS, `the standby polled ${after} ms after the kill (bound ${BOUND_MS} ms)`);
  const r = await role(standby);
  assert.equal(r.role, 'active');
  assert.equal(r.polling, true);
  // Values keep coming; then the killed edge starts again and stays standby.
  await sleep(2000); // values from the new active
  await restartEdge(active);
  const back = await eventually(
    async () => {
      const v = await role(active);
      return v.linked && v.role === 'standby' && v;
    },
    30_000,
    'the restarted edge is linked, standby',
  );
  assert.equal(back.polling, false);
  assert.ok(back.epoch >= r.epoch);
  await sleep(LEASE_S * 2000); // two leases: the restarted edge must not start polling
  assert.equal((await role(active)).polling, false, 'the restarted edge stays standby');
  assert.equal(modbus.pollers().length, pollersBefore + 1, 'no client polls but the new active');
  const gap = longestGap(steadyFrom, Date.now());
  console.log(`longest gap between values: ${gap} ms`);
  assert.ok(gap <= BOUND_MS, `no value for ${gap} ms (bound ${BOUND_MS} ms)`);
  assertNeverTwoPollers(modbus);
}

before(async () => {
  modbus = new RecordingModbus();
  const mbPort = await modbus.listen();
  managerDir = dirs.make();
  token = runCliJson(['manager', 'token', 'create', '--data-dir', managerDir, '--name', 't'], env)
    .token as string;
  manager = await start(managerArgs('0', '0'));
  const m = manager.ready.services.manager!;
  mPorts = [String(m.ports.port), String(m.ports['admin-port'])];
  const company = await api('/api/v1/company', { json: { companyName: 'ha' } });
  const project = await api('/api/v1/project', { json: { companyId: company.body.id, name: 'p' } });
  const projectId = project.body.id as string;
  // The first edge links through a relay that the last test cuts (a partition).
  partition = new Partition(() => manager.ready.services.manager!.ports.port!);
  const relay = `https://127.0.0.1:${await partition.listen()}`;
  edges = [await enrolledEdge(projectId, relay), await enrolledEdge(projectId)];
  const [a, b] = edges as [Edge, Edge];
  for (const e of edges)
    await eventually(async () => (await api(`/api/v1/device/${e.deviceId}`)).body.online === true, 30_000);

  // Pair first (the secondary hears it is the standby), then give both the same configuration.
  const bad = await api(`/api/v1/device/${a.deviceId}/ha/configure`, {
    json: { secondaryDeviceId: b.deviceId, timeoutSeconds: 3, leaseSeconds: 3 },
  });
  assert.equal(bad.status, 400, bad.text);
  const pair = await api(`/api/v1/device/${a.deviceId}/ha/configure`, {
    json: { secondaryDeviceId: b.deviceId, timeoutSeconds: TIMEOUT_S, leaseSeconds: LEASE_S },
  });
  assert.equal(pair.status, 200, pair.text);
  assert.equal(pair.body.activeDeviceId, a.deviceId);
  assert.equal(pair.body.enabled, false);
  const enabled = await api(`/api/v1/device/${b.deviceId}/ha/enable`, { method: 'POST' });
  assert.equal(enabled.status, 200, enabled.text);
  assert.equal(enabled.body.role, 'standby');
  assert.equal(enabled.body.enabled, true);
  await eventually(async () => (await role(b)).role === 'standby', 20_000, 'b is standby');

  const tpl = await api('/api/v1/template/create/v2', {
    json: {
      friendlyName: 'ha-plc',
      projectId,
      content: {
        format: 'millwright.config-template',
        version: 1,
        sections: {
          devicehub: {
            devices: [
              {
                Name: 'ha-plc',
                DriverID: 'Modbus TCP',
                Properties: { host: '127.0.0.1', port: String(mbPort) },
                Tags: [
                  {
                    TagName: 'counter',
                    Name: 'HR',
                    ValueType: 'uint16',
                    IntervalMs: 200,
                    Properties: { address: '0' },
                  },
                ],
              },
            ],
          },
        },
      },
    },
  });
  assert.equal(tpl.status, 201, tpl.text);
  const task = await api('/api/v1/async-task/template-apply', {
    json: { templateId: tpl.body.id, deviceIds: [a.deviceId, b.deviceId], deadlineSeconds: 300 },
  });
  assert.equal(task.status, 202, task.text);
  const ended = await eventually(
    async () => {
      const r = await api(`/api/v1/async-task/${task.body.taskId}`);
      return r.body.status !== 'RUNNING' && r;
    },
    120_000,
    'the template is applied to both edges',
  );
  assert.equal(ended.body.status, 'SUCCEEDED', ended.text);
  for (const e of edges) {
    const nc = await natsConnect({ servers: e.natsUrl, maxReconnectAttempts: -1, reconnectTimeWait: 250 });
    ncs.push(nc);
    nc.subscribe('devicehub.raw.ha-plc.>', {
      callback: (_err, msg) => {
        if (msg.json<{ success?: boolean }>().success !== false) arrivals.push(Date.now());
      },
    });
  }
  try {
    await eventually(() => arrivals.length > 5, 60_000, 'values arrive');
  } catch (err) {
    const roles = await Promise.all(edges.map((e) => role(e).catch((x: Error) => x.message)));
    throw new Error(
      `${(err as Error).message}; Modbus requests ${modbus.requests.length}; roles ${JSON.stringify(roles)}`,
    );
  }
});

after(async () => {
  for (const nc of ncs) await nc.close().catch(() => undefined);
  for (const p of procs) await p.stop();
  modbus?.close();
  partition?.close();
  dirs.removeAll();
});

test('kill -9 of the active edge: the standby polls within timeout + 5 s, the old active stays standby', async () => {
  const [a, b] = edges as [Edge, Edge];
  assert.equal((await role(b)).polling, false);
  await failover(a, b, false);
  const ha = await api(`/api/v1/device/${a.deviceId}/ha`);
  assert.equal(ha.body.activeDeviceId, b.deviceId);
  assert.equal(ha.body.epoch, 2);
});

test('the same with the manager killed and started again during the failover: the lease is kept', async () => {
  const [a, b] = edges as [Edge, Edge];
  await failover(b, a, true);
  const ha = await api(`/api/v1/device/${a.deviceId}/ha`);
  assert.equal(ha.body.activeDeviceId, a.deviceId);
  assert.equal(ha.body.epoch, 3);
  assert.ok(modbus.maxOpenAtOnce >= 1);
});

test('a partition: the active edge keeps running, cut off from the manager: it stops polling when its lease runs out, before the standby starts; after the heal it stays standby', async () => {
  const [a, b] = edges as [Edge, Edge];
  await eventually(async () => (await role(a)).polling, 30_000, 'a polls');
  const steadyFrom = Date.now();
  await sleep(3000); // a steady stretch of values before the partition
  const pollersBefore = modbus.pollers().length;
  const cutAt = Date.now();
  partition.cut();
  // Still running, and for all it knows still active: it stops on its own (the fence).
  const fenced = await eventually(
    async () => {
      const v = await role(a);
      return !v.polling && v;
    },
    LEASE_S * 1000 + 5000,
    'the cut-off active stops polling',
  );
  assert.equal(fenced.role, 'active');
  assert.equal(fenced.leaseRemainingMs, 0);
  const stoppedAfter = Date.now() - cutAt;
  console.log(`the cut-off active stopped polling ${stoppedAfter} ms after the cut`);
  const taken = await eventually(
    async () => modbus.pollers().length > pollersBefore && modbus.pollers().at(-1)!.first,
    BOUND_MS + 30_000,
    'the standby polls',
  );
  const after = taken - cutAt;
  console.log(`standby polled ${after} ms after the partition`);
  assert.ok(after <= BOUND_MS, `the standby polled ${after} ms after the cut (bound ${BOUND_MS} ms)`);
  assert.equal((await role(b)).role, 'active');
  assertNeverTwoPollers(modbus);
  // The partition heals: the former active links again, hears of the newer epoch, stays standby.
  partition.heal();
  const back = await eventually(
    async () => {
      const v = await role(a);
      return v.linked && v.role === 'standby' && v;
    },
    30_000,
    'the former active is linked again, standby',
  );
  assert.equal(back.polling, false);
  assert.equal(back.epoch, 4);
  await sleep(LEASE_S * 2000); // two leases: the former active must not poll again
  assert.equal(modbus.pollers().length, pollersBefore + 1, 'no client polls but the new active');
  assertNeverTwoPollers(modbus);
  const gap = longestGap(steadyFrom, Date.now());
  console.log(`longest gap between values: ${gap} ms`);
  assert.ok(gap <= BOUND_MS, `no value for ${gap} ms (bound ${BOUND_MS} ms)`);
});
