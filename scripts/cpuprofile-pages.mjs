#!/usr/bin/env node
// What the edge's main thread ran while each page of bench/devicehub was waited for.
//
//   MILLWRIGHT_BENCH_PAGE_WINDOWS=/tmp/w.json MILLWRIGHT_CHILD_NODE_ARGS="--cpu-prof --cpu-prof-dir=/tmp/p" \
//     npm run bench -- devicehub --short
//   node scripts/cpuprofile-pages.mjs /tmp/p/CPU.<...>.0.001.cpuprofile /tmp/w.json [slowest=4]
//
// The main thread's profile is the one whose name has thread id 0. The windows are the bench's
// pages on the monotonic clock in microseconds, the clock of the profile's timestamps. Each sample
// inside a page's window goes to the first category its stack matches, leaf first: GC, the data
// plane by module (OPC UA, history, DataHub, acquisition), the page's own work (SQL through
// kysely/better-sqlite3, the answer's bytes, GraphQL, the DeviceHub, fastify), sockets and TLS.
// Printed: the sums over all pages, the slowest pages, the pages ranked 3 to 15 (the tail without
// the two slowest), the middle half, and each slowest page alone. A diagnostic, not a bench.
import { readFileSync } from 'node:fs';

const [profileFile, windowsFile, slowestArg] = process.argv.slice(2);
if (!profileFile || !windowsFile) {
  console.error('usage: node scripts/cpuprofile-pages.mjs <main-thread.cpuprofile> <windows.json> [slowest]');
  process.exit(2);
}
const profile = JSON.parse(readFileSync(profileFile, 'utf8'));
const windows = JSON.parse(readFileSync(windowsFile, 'utf8'));
const slowest = Number(slowestArg ?? 4);

const RULES = [
  [/\(garbage collector\)/, 'GC'],
  [/\(idle\)/, 'idle'],
  [/\(program\)/, 'program'],
  [/\/edge\/opcua\//, 'data plane: OPC UA server'],
  [/\/edge\/history\//, 'data plane: history'],
  [/\/edge\/datahub\//, 'data plane: DataHub'],
  [/\/edge\/acquisition\//, 'data plane: acquisition'],
  [/\/edge\/(integrations|twins|analytics)\//, 'data plane: other'],
  [/better-sqlite3|kysely/, 'page: SQL'],
  [/\/kernel\/http\/json-bytes/, 'page: answer bytes'],
  [/graphql-jit|mercurius|node_modules\/graphql\//, 'page: GraphQL'],
  [/\/edge\/devicehub\//, 'page: DeviceHub'],
  [/fastify|\/kernel\/http|\/edge\/auth|avvio/, 'page: fastify, auth'],
  [/_tls_|node:net|stream|_http_/, 'sockets, TLS, HTTP'],
];

const node = new Map(profile.nodes.map((n) => [n.id, n]));
const parent = new Map();
for (const n of profile.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
const categoryOf = new Map();
function category(id) {
  let c = categoryOf.get(id);
  if (c) return c;
  c = 'other';
  search: for (let x = id; x !== undefined; x = parent.get(x)) {
    const f = node.get(x).callFrame;
    const text = `${f.functionName} ${f.url}`;
    for (const [re, name] of RULES)
      if (re.test(text)) {
        c = name;
        break search;
      }
  }
  categoryOf.set(id, c);
  return c;
}

const times = [];
let t = profile.startTime;
for (const d of profile.timeDeltas) times.push((t += d));

// Samples are sorted by time: one pass per page from the first sample at or after its start.
let from = 0;
const pages = windows.map(([start, end], i) => {
  while (from < times.length && times[from] < start) from++;
  const by = {};
  for (let s = from; s < times.length - 1 && times[s] < end; s++) {
    const c = category(profile.samples[s]);
    by[c] = (by[c] ?? 0) + (Math.min(times[s + 1], end) - times[s]) / 1000;
  }
  return { i, ms: (end - start) / 1000, by };
});

function show(label, list) {
  const sum = {};
  let sampled = 0;
  for (const p of list)
    for (const [k, v] of Object.entries(p.by)) {
      sum[k] = (sum[k] ?? 0) + v;
      sampled += v;
    }
  const wall = list.reduce((s, p) => s + p.ms, 0);
  console.log(`\n${label}: ${list.length} pages, ${(wall / list.length).toFixed(1)} ms/page wall`);
  for (const [k, v] of Object.entries(sum).sort((a, b) => b[1] - a[1]))
    console.log(
      `  ${k.padEnd(28)} ${(v / list.length).toFixed(1).padStart(7)} ms/page ${((100 * v) / sampled).toFixed(1).padStart(5)}%`,
    );
}

const byTime = [...pages].sort((a, b) => b.ms - a.ms);
show('all pages', pages);
show(`the ${slowest} slowest`, byTime.slice(0, slowest));
show('ranked 3 to 15 by time', byTime.slice(2, 15));
show('the middle half', byTime.slice(Math.floor(pages.length / 4), Math.floor((3 * pages.length) / 4)));
console.log('\nthe slowest pages, one by one (ms):');
for (const p of byTime.slice(0, slowest)) {
  const parts = Object.entries(p.by)
    .sort((a, b) => b[1] - a[1])
    .slice(0, 6)
    .map(([k, v]) => `${k} ${v.toFixed(1)}`);
  console.log(`  page ${p.i}, ${p.ms.toFixed(1)}: ${parts.join(', ')}`);
}
