/**
 * The machine's network through the edge: `/dm/ifconfig` against `ip -j addr` of this machine,
 * `/dm/v2/routes` against `ip -j route`, and deleting a route in a network namespace of the
 * test's own (`unshare -rn`: the machine's routes, shared with other work, are never touched),
 * once with CAP_NET_ADMIN over it (the route is gone from `ip route`) and once without (a nested
 * `unshare -Ur`: refused with 403 naming the capability, the route still there).
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile, execFileSync, spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { bootstrapAdmin, startTestEdge, type TestEdge } from '../helpers/edge.js';
import { skipUnless } from '../helpers/util.js';

type Json = Record<string, any>;
const ipJson = (args: string[]): Json[] =>
  JSON.parse(execFileSync('ip', ['-j', ...args], { encoding: 'utf8' }));

const noIp = skipUnless('ip');

describe('network of the machine', { skip: noIp }, () => {
  let t: TestEdge;
  let h: Record<string, string>;
  before(async () => {
    t = await startTestEdge();
    h = { authorization: `Bearer ${await bootstrapAdmin(t)}` };
  });
  after(() => t?.stop());

  test('/dm/ifconfig answers the interfaces `ip -j addr` shows; bridges only with show_bridges', async () => {
    const withBridges = await t.call('/dm/ifconfig?show_bridges=true', { headers: h });
    assert.equal(withBridges.status, 200);
    const ip = ipJson(['-d', 'addr', 'show']);
    const byName = new Map<string, Json>(withBridges.body.interfaces.map((i: Json) => [i.name, i]));
    assert.equal(withBridges.body.count, ip.length);
    for (const link of ip) {
      const mine = byName.get(link.ifname);
      assert.ok(mine, `${link.ifname} is listed`);
      assert.equal(mine.mac, link.address ?? null, `${link.ifname} MAC`);
      assert.equal(mine.mtu, link.mtu, `${link.ifname} MTU`);
      assert.equal(mine.state, String(link.operstate).toLowerCase(), `${link.ifname} state`);
      assert.equal(mine.bridge, link.linkinfo?.info_kind === 'bridge');
      const want = (link.addr_info ?? []).map((a: Json) => `${a.local}/${a.prefixlen}`).sort();
      assert.deepEqual(mine.addresses.map((a: Json) => a.cidr).sort(), want, `${link.ifname} addresses`);
    }
    const lo = byName.get('lo');
    assert.ok(lo?.addresses.some((a: Json) => a.address === '127.0.0.1' && a.family === 'inet'));

    const plain = await t.call('/dm/ifconfig', { headers: h });
    assert.equal(plain.status, 200);
    const bridges = ip.filter((l) => l.linkinfo?.info_kind === 'bridge').map((l) => l.ifname);
    assert.deepEqual(
      plain.body.interfaces.map((i: Json) => i.name).sort(),
      ip
        .map((l) => l.ifname)
        .filter((n) => !bridges.includes(n))
        .sort(),
      `bridges (${bridges.join(', ') || 'none on this machine'}) are left out without show_bridges`,
    );
  });

  test('/dm/v2/routes answers the static routes `ip -j route` shows, with stable ids', async () => {
    const all = await t.call('/dm/v2/routes?all=true', { headers: h });
    assert.equal(all.status, 200);
    const want = [
      ...ipJson(['-4', 'route', 'show', 'table', 'all']).map((r): Json => ({ ...r, family: 'inet' })),
      ...ipJson(['-6', 'route', 'show', 'table', 'all']).map((r): Json => ({ ...r, family: 'inet6' })),
    ].filter(
      (r) =>
        (r.table ?? 'main') !== 'local' && !['local', 'broadcast', 'multicast', 'anycast'].includes(r.type),
    );
    assert.deepEqual(
      all.body.routes.map((r: Json) => `${r.family} ${r.destination} ${r.device}`).sort(),
      want.map((r) => `${r.family} ${r.dst} ${r.dev}`).sort(),
    );
    const again = await t.call('/dm/v2/routes?all=true', { headers: h });
    assert.deepEqual(
      again.body.routes.map((r: Json) => r.id),
      all.body.routes.map((r: Json) => r.id),
    );
    assert.equal(new Set(all.body.routes.map((r: Json) => r.id)).size, all.body.count, 'ids are unique');
    const statics = await t.call('/dm/v2/routes', { headers: h });
    assert.ok(statics.body.routes.every((r: Json) => r.static && ['boot', 'static'].includes(r.protocol)));
    assert.equal(
      (await t.call('/dm/v2/routes/0123456789abcdef', { method: 'DELETE', headers: h })).status,
      404,
    );
  });

  test('/dm/v2/ha/role is standalone', async () => {
    const res = await t.call('/dm/v2/ha/role', { headers: h });
    assert.equal(res.status, 200);
    assert.deepEqual(
      { role: res.body.role, paired: res.body.paired, peer: res.body.peer, polling: res.body.polling },
      { role: 'standalone', paired: false, peer: null, polling: true },
    );
  });
});

/** Runs the netns child (test/helpers/network-netns.ts) and answers its RESULT. */
async function inNamespace(refuse: boolean): Promise<Json> {
  const compiled = join(import.meta.dirname, '../helpers/network-netns.js');
  const node = existsSync(compiled)
    ? `'${process.execPath}' '${compiled}'`
    : `'${process.execPath}' --import tsx '${join(import.meta.dirname, '../helpers/network-netns.ts')}'`;
  const script = [
    'set -e',
    'ip link set lo up',
    'ip route add 10.99.0.0/24 dev lo',
    'ip -6 route add 2001:db8:99::/64 dev lo',
    refuse ? `exec unshare -Ur ${node}` : `exec ${node}`,
  ].join('\n');
  const run = await new Promise<{ stdout: string; stderr: string; error: Error | null }>((resolve) =>
    execFile(
      'unshare',
      ['-rn', 'sh', '-c', script],
      { encoding: 'utf8', timeout: 120_000 },
      (error, stdout, stderr) => resolve({ stdout, stderr, error }),
    ),
  );
  const line = run.stdout.split('\n').find((l) => l.startsWith('RESULT '));
  assert.ok(line, `the namespace child answered (${String(run.error)}): ${run.stderr.slice(-2000)}`);
  return JSON.parse(line.slice('RESULT '.length));
}

const namespaces = (() => {
  if (noIp) return noIp;
  const probe = spawnSync('unshare', ['-rn', 'ip', 'link', 'set', 'lo', 'up']);
  if (probe.status === 0) return false;
  if (process.env.CI === 'true')
    throw new Error('unshare -rn (user and network namespaces) is required on CI');
  return `this machine refuses network namespaces (unshare -rn: ${String(probe.stderr).trim()})`;
})();

describe('deleting a route, in a network namespace of the test', { skip: namespaces }, () => {
  // Both children at once: each starts an edge of its own (seconds on a loaded machine).
  let results: Promise<[Json, Json]>;
  before(() => {
    results = Promise.all([inNamespace(false), inNamespace(true)]);
    results.catch(() => undefined);
  });

  test('with CAP_NET_ADMIN: the route is deleted and gone from `ip route`', async () => {
    const [r] = await results;
    const dsts = r.listed.routes.map((x: Json) => x.destination).sort();
    assert.deepEqual(
      dsts,
      ['10.99.0.0/24', '2001:db8:99::/64'],
      'the two static routes, nothing of the local table',
    );
    assert.ok(r.listed.routes.every((x: Json) => x.device === 'lo' && x.static));
    assert.deepEqual(
      r.deletions.map((d: Json) => d.status),
      [204, 204],
    );
    assert.equal(r.again.status, 404, 'deleting it again: not found');
    assert.ok(!r.ip4.some((x: Json) => x.dst === '10.99.0.0/24'), 'gone from ip -4 route');
    assert.ok(!r.ip6.some((x: Json) => x.dst === '2001:db8:99::/64'), 'gone from ip -6 route');
  });

  test('without CAP_NET_ADMIN: 403 naming the capability, the route still there', async () => {
    const [, r] = await results;
    assert.equal(r.deletions.length, 2);
    for (const d of r.deletions) {
      assert.equal(d.status, 403);
      assert.equal(d.body.code, 'privilege_required');
      assert.match(d.body.message, /CAP_NET_ADMIN/);
      assert.match(d.body.message, /Operation not permitted/);
    }
    assert.ok(
      r.ip4.some((x: Json) => x.dst === '10.99.0.0/24'),
      'still in ip -4 route',
    );
    assert.ok(
      r.ip6.some((x: Json) => x.dst === '2001:db8:99::/64'),
      'still in ip -6 route',
    );
  });
});
