/**
 * Run as a process inside a network namespace of its own (`unshare -rn`, see
 * test/e2e/network.test.ts): starts the edge there, lists its static routes over HTTPS and deletes
 * the test's routes through the API, then prints one `RESULT {json}` line with what it saw and what
 * `ip` shows afterwards. With `refuse`, the parent has made it lack CAP_NET_ADMIN over the
 * namespace (a nested `unshare -Ur`), and the deletions must be refused.
 */
import { execFileSync } from 'node:child_process';
import { bootstrapAdmin, startTestEdge } from './edge.js';

const ipJson = (args: string[]): unknown =>
  JSON.parse(execFileSync('ip', ['-j', ...args], { encoding: 'utf8' }));

const t = await startTestEdge();
try {
  const h = { authorization: `Bearer ${await bootstrapAdmin(t)}` };
  const listed = await t.call('/dm/v2/routes', { headers: h });
  const listedAll = await t.call('/dm/v2/routes?all=true', { headers: h });
  const ours = (listed.body?.routes ?? []).filter((r: { destination: string }) =>
    ['10.99.0.0/24', '2001:db8:99::/64'].includes(r.destination),
  );
  const deletions = [];
  for (const r of ours as Array<{ id: string }>) {
    const res = await t.call(`/dm/v2/routes/${r.id}`, { method: 'DELETE', headers: h });
    deletions.push({ id: r.id, status: res.status, body: res.body });
  }
  const again = await t.call(`/dm/v2/routes/${(ours[0] as { id?: string } | undefined)?.id ?? 'x'}`, {
    method: 'DELETE',
    headers: h,
  });
  const result = {
    listed: listed.body,
    listedAll: listedAll.body,
    deletions,
    again: { status: again.status, body: again.body },
    ip4: ipJson(['-4', 'route', 'show', 'table', 'all']),
    ip6: ipJson(['-6', 'route', 'show', 'table', 'all']),
  };
  process.stdout.write(`RESULT ${JSON.stringify(result)}\n`);
} finally {
  await t.stop();
}
