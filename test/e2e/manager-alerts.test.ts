/**
 * Alerts that reach people, live: two manager processes on one PostgreSQL, a real edge enrolled
 * with the first, a real SMTP server (smtp-server, with a password), a webhook receiver and a
 * Mosquitto with an MQTT subscriber, all started by the test on free ports.
 *
 * The edge is killed (SIGKILL): an incident opens within the rule's window (not before it); the
 * e-mail and the signed webhook (after one 503 answer: retried with the same delivery id) arrive.
 * The broker is down meanwhile, so the MQTT message waits in the outbox; both managers are killed
 * (SIGKILL) with it there, the broker comes back, the managers start again: the message arrives.
 * The edge comes back: the incident resolves and each channel gets the second notification.
 * Through all of it, two managers evaluating and sending: each notification arrives once.
 */
import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import { copyFileSync, mkdirSync } from 'node:fs';
import { createServer, type IncomingHttpHeaders } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import mqtt from 'mqtt';
import { SMTPServer } from 'smtp-server';
import { LOCAL_PROVIDER_ID } from '../../src/edge/auth/index.js';
import { webhookSignature } from '../../src/manager/alerts/index.js';
import { cleanEnv, runCliJson, startCli, tempDirs, type CliProcess } from '../helpers/cli.js';
import { http } from '../helpers/edge.js';
import { Mosquitto } from '../helpers/peers/mosquitto.js';
import { pgTestDatabase } from '../helpers/postgres.js';
import { eventually, sleep } from '../helpers/util.js';

const dirs = tempDirs('mw-alerts-');
const env = cleanEnv({ MILLWRIGHT_EDGE_ADMIN_PASSWORD: 'first-run-password' });
const procs: CliProcess[] = [];
const cleanups: (() => Promise<unknown> | unknown)[] = [];
after(async () => {
  for (const c of cleanups.reverse()) await c();
  for (const p of procs) await p.stop();
  dirs.removeAll();
});

async function start(args: string[]): Promise<CliProcess> {
  const p = await startCli(args, { env, timeoutMs: 90_000 });
  procs.push(p);
  return p;
}

/** An SMTP server of the test's own that wants a password; answers the mails it took. */
async function smtpServer() {
  const mails: { to: string[]; raw: string }[] = [];
  const server = new SMTPServer({
    disabledCommands: ['STARTTLS'],
    allowInsecureAuth: true,
    logger: false,
    onAuth(auth, _session, cb) {
      if (auth.username === 'alerts' && auth.password === 'smtp-secret') cb(null, { user: 'alerts' });
      else cb(new Error('wrong credentials'));
    },
    onData(stream, session, cb) {
      let raw = '';
      stream.on('data', (d: Buffer) => (raw += d.toString()));
      stream.on('end', () => {
        mails.push({ to: session.envelope.rcptTo.map((r) => r.address), raw });
        cb();
      });
    },
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  cleanups.push(() => new Promise((r) => server.close(() => r(undefined))));
  return { mails, port: (server.server.address() as AddressInfo).port };
}

/** A webhook receiver: answers 503 to the first call, 204 after; keeps every call. */
async function webhookReceiver() {
  const calls: { headers: IncomingHttpHeaders; body: string; status: number }[] = [];
  const server = createServer((req, res) => {
    let body = '';
    req.on('data', (d: Buffer) => (body += d.toString()));
    req.on('end', () => {
      const status = calls.length === 0 ? 503 : 204;
      calls.push({ headers: req.headers, body, status });
      res.statusCode = status;
      res.end();
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  cleanups.push(() => new Promise((r) => server.close(() => r(undefined))));
  return { calls, url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/hooks/incidents` };
}

test('kill -9 an edge: incident, e-mail, signed webhook, MQTT; back: resolved, each channel twice; two managers, each once', async (t) => {
  const db = await pgTestDatabase(t);
  if (!db) return;
  const t0 = Date.now();
  const mark = (what: string) => t.diagnostic(`${what}: ${Date.now() - t0} ms`);
  const smtp = await smtpServer();
  const hook = await webhookReceiver();
  const broker = new Mosquitto({ persistence: true });
  cleanups.push(() => broker.dispose());
  const brokerPort = await broker.start();
  const messages: { topic: string; body: any }[] = [];
  const sub = await mqtt.connectAsync(`mqtt://127.0.0.1:${brokerPort}`, {
    clientId: 'alerts-test-subscriber',
    clean: false,
    reconnectPeriod: 300,
  });
  cleanups.push(() => sub.endAsync(true));
  sub.on('message', (topic, payload) => messages.push({ topic, body: JSON.parse(payload.toString()) }));
  await sub.subscribeAsync('millwright/incidents/#', { qos: 1 });

  const [dirA, dirB, edgeDir] = [dirs.make(), dirs.make(), dirs.make()];
  const managerArgs = (dir: string, port = '0', adminPort = '0') =>
    `manager --host 127.0.0.1 --port ${port} --admin-port ${adminPort} --data-dir ${dir} --database-url ${db.url} --heartbeat-interval 300 --alert-evaluation-interval 300 --alert-notification-lease 3000 --alert-notification-backoff-max 1500 --log-level warn`.split(
      ' ',
    );
  const token = runCliJson(
    ['manager', 'token', 'create', '--data-dir', dirA, '--database-url', db.url, '--name', 't'],
    env,
  ).token as string;
  let a = await start(managerArgs(dirA));
  // Both managers open the sealed secrets with the same key (docs/manager.md).
  mkdirSync(join(dirB, 'secrets'), { recursive: true, mode: 0o700 });
  copyFileSync(join(dirA, 'secrets', 'credentials.key'), join(dirB, 'secrets', 'credentials.key'));
  let b = await start(managerArgs(dirB));
  const portsOf = (p: CliProcess) =>
    [
      String(p.ready.services.manager!.ports.port),
      String(p.ready.services.manager!.ports['admin-port']),
    ] as const;
  const [portsA, portsB] = [portsOf(a), portsOf(b)];
  const main = (path: string, o: Parameters<typeof http>[1] = {}) =>
    http(`${a.ready.services.manager!.url}${path}`, {
      ...o,
      headers: { 'x-authtoken': token, ...o.headers },
    });
  const admin = (path: string, o: Parameters<typeof http>[1] = {}) =>
    http(`${b.ready.services.manager!.adminUrl}${path}`, {
      ...o,
      headers: { 'x-authtoken': token, ...o.headers },
    });

  mark('managers up');
  // The settings: the rule's window, the SMTP server, the broker, the instance's destinations.
  const rule = await admin('/admin/v1/platform-rule/device-offline', { json: { params: { forSeconds: 3 } } });
  assert.equal(rule.status, 200, rule.text);
  const settings = await admin('/admin/v1/config/incident-settings', {
    json: {
      smtp: {
        host: '127.0.0.1',
        port: smtp.port,
        security: 'none',
        username: 'alerts',
        password: 'smtp-secret',
        from: 'Millwright <mw@example.com>',
      },
      mqtt: { url: `mqtt://127.0.0.1:${brokerPort}` },
      notify: {
        enabled: true,
        emails: ['ops@example.com'],
        webhooks: [{ url: hook.url, secret: 'hook-secret' }],
        mqtt: true,
      },
    },
  });
  assert.equal(settings.status, 200, settings.text);
  assert.equal(settings.body.smtp.passwordSet, true);
  assert.ok(!settings.text.includes('smtp-secret'));

  // A real edge, enrolled as a user does it.
  const edgeArgs =
    `edge --host 127.0.0.1 --port 0 --datahub-port 0 --data-dir ${edgeDir} --log-level warn`.split(' ');
  let edge = await start(edgeArgs);
  const company = await main('/api/v1/company', { json: { companyName: 'alerts' } });
  const project = await main('/api/v1/project', { json: { companyId: company.body.id, name: 'p' } });
  const projectId = project.body.id as string;
  const code = await main('/api/v1/activation/code', { json: { projectId } });
  const e = edge.ready.services.edge!;
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
  const tx = (
    await call('/dm/cloud/url?locale=en-US', { headers: c, json: { url: a.ready.services.manager!.url } })
  ).body.tx;
  await call(`/dm/cloud/url/${tx}/confirm?locale=en-US`, { method: 'PUT', headers: c });
  const activated = await call('/dm/cloud?locale=en-US', { headers: c, json: { code: code.body.code } });
  assert.equal(activated.status, 200, activated.text);
  const deviceId = activated.body.deviceId as string;
  const device = async () => (await main(`/api/v1/device/${deviceId}`)).body;
  await eventually(async () => (await device()).online === true, 30_000, 'online');
  // The heartbeat carries what the other rules read.
  const metrics = await eventually(
    async () => (await device()).metrics?.diskPercent !== undefined && (await device()).metrics,
    15_000,
    'metrics',
  );
  assert.equal(typeof metrics.memoryPercent, 'number');
  assert.match(String(metrics.certNotAfter), /^\d{4}-/);
  assert.deepEqual(metrics.integrationsDown, []);

  mark('edge online');
  // The broker goes down: the MQTT notification will wait in the outbox.
  await broker.stop();
  process.kill(edge.pid, 'SIGKILL');
  const killedAt = Date.now();
  await edge.exited;
  const incidents = async () =>
    (await admin('/admin/v1/instance-alert/incident?sort=openedAt:asc')).body.items as any[];
  const [incident] = await eventually(
    async () => {
      const list = await incidents();
      return list.length > 0 && list;
    },
    30_000,
    'incident opened',
  );
  assert.equal(incident.ruleKey, 'device-offline');
  assert.equal(incident.deviceId, deviceId);
  assert.equal(incident.status, 'OPEN');
  assert.equal(incident.severity, 'CRITICAL');
  const openedAfter = Date.parse(incident.openedAt) - killedAt;
  assert.ok(
    openedAfter >= 3000 - 700,
    `opened ${openedAfter} ms after the kill: before the rule's 3 s window`,
  );
  assert.ok(openedAfter <= 3000 + 10_000, `opened ${openedAfter} ms after the kill: the window is 3 s`);

  mark('incident');
  // The e-mail, over SMTP with the sealed password.
  await eventually(() => smtp.mails.length >= 1, 20_000, 'e-mail');
  assert.deepEqual(smtp.mails[0]!.to, ['ops@example.com']);
  assert.match(smtp.mails[0]!.raw, /Subject: \[CRITICAL\] Device offline opened/);
  assert.match(smtp.mails[0]!.raw, new RegExp(deviceId));
  // The webhook, signed; the first answer (503) is retried with the same delivery id.
  await eventually(() => hook.calls.filter((x) => x.status === 204).length >= 1, 20_000, 'webhook');
  const [refused, accepted] = hook.calls;
  assert.equal(refused!.status, 503);
  assert.equal(accepted!.headers['x-millwright-delivery'], refused!.headers['x-millwright-delivery']);
  const signature = webhookSignature(
    'hook-secret',
    String(accepted!.headers['x-millwright-timestamp']),
    accepted!.body,
  );
  assert.equal(accepted!.headers['x-millwright-signature'], signature);
  assert.equal(JSON.parse(accepted!.body).event, 'incident.opened');
  assert.equal(JSON.parse(accepted!.body).incident.id, incident.id);

  // Both managers killed while the MQTT notification waits (the e-mail and the webhook recorded
  // as sent: a kill between a peer's acceptance and that record would send it again, with the
  // same delivery id); the broker back; the managers back.
  const status = async () =>
    (await admin(`/admin/v1/instance-alert/incident/${incident.id}/notifications`)).body.items as any[];
  await eventually(
    async () => (await status()).filter((n) => n.status === 'SENT').length === 2,
    20_000,
    'sent recorded',
  );
  const waiting = (await status()).find((n) => n.channel === 'mqtt');
  assert.notEqual(waiting.status, 'SENT');
  assert.match(String(waiting.lastError), /./, 'the broker was down');
  assert.equal(messages.length, 0);
  process.kill(a.pid, 'SIGKILL');
  process.kill(b.pid, 'SIGKILL');
  await Promise.all([a.exited, b.exited]);
  await broker.start();
  a = await start(managerArgs(dirA, ...portsA));
  b = await start(managerArgs(dirB, ...portsB));
  await eventually(() => messages.length >= 1, 30_000, 'MQTT message after the restart');
  assert.equal(messages[0]!.topic, `millwright/incidents/${projectId}/${deviceId}/device-offline`);
  assert.equal(messages[0]!.body.event, 'incident.opened');

  mark('mqtt after restart');
  // The edge comes back: the incident resolves; each channel gets the second notification.
  edge = await start(edgeArgs);
  await eventually(async () => (await device()).online === true, 30_000, 'online again');
  await eventually(async () => (await incidents())[0]?.status === 'RESOLVED', 20_000, 'resolved');
  await eventually(
    () =>
      smtp.mails.length >= 2 &&
      messages.length >= 2 &&
      hook.calls.filter((x) => x.status === 204).length >= 2,
    30_000,
    'second notifications',
  );
  assert.match(smtp.mails[1]!.raw, /Subject: \[CRITICAL\] Device offline resolved/);
  assert.equal(messages[1]!.body.event, 'incident.resolved');
  const second = hook.calls.filter((x) => x.status === 204)[1]!;
  assert.equal(
    JSON.parse(second.body).event,
    'incident.resolved',
    JSON.stringify(
      hook.calls.map((x) => [x.status, x.headers['x-millwright-delivery'], x.body.slice(0, 60)]),
    ),
  );
  mark('second notifications');
  // Two managers evaluating and sending: no more arrives (a second is many evaluation passes).
  await sleep(2000);
  assert.equal(smtp.mails.length, 2, smtp.mails.map((m) => m.raw.slice(0, 300)).join('\n---\n'));
  assert.equal(messages.length, 2, JSON.stringify(messages));
  assert.equal(hook.calls.filter((x) => x.status === 204).length, 2);
  assert.equal(new Set(hook.calls.map((x) => x.headers['x-millwright-delivery'])).size, 2);
  assert.equal((await incidents()).length, 1, 'one incident');
  const notes = await admin(`/admin/v1/instance-alert/incident/${incident.id}/notifications`);
  assert.equal(notes.body.total, 6, notes.text);
  assert.ok(
    notes.body.items.every((n: any) => n.status === 'SENT'),
    notes.text,
  );
});
