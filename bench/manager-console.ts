/**
 * bench/manager-console: the manager console's bundle budget (issue 26), on the build
 * (`npm run build` first; the manager serves dist/console/manager): the initial JavaScript (the
 * entry script of index.html and its `modulepreload`s) gzipped as the manager sends it, limit
 * 250 KB like the edge console's; all JavaScript (every page's chunk, uPlot included) beside it,
 * and the edge console's initial JavaScript as the baseline.
 *
 *   npm run build && npm run bench -- manager-console
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { gzipSync } from 'node:zlib';

const KB = 1024;
const BUDGET = 250 * KB;

function sizes(dir: string) {
  const html = readFileSync(join(dir, 'index.html'), 'utf8');
  const initial = [
    ...html.matchAll(/<script[^>]+src="\.?\/([^"]+\.js)"/g),
    ...html.matchAll(/<link[^>]+rel="modulepreload"[^>]+href="\.?\/([^"]+\.js)"/g),
  ].map((m) => m[1]!);
  const all = readdirSync(join(dir, 'assets'))
    .filter((f) => f.endsWith('.js'))
    .map((f) => `assets/${f}`);
  const gz = (f: string) => gzipSync(readFileSync(join(dir, f)), { level: 9 }).length;
  const raw = (f: string) => readFileSync(join(dir, f)).length;
  const sum = (fs: string[], m: (f: string) => number) => fs.reduce((n, f) => n + m(f), 0);
  return {
    initialRaw: sum(initial, raw),
    initial: sum(initial, gz),
    allRaw: sum(all, raw),
    all: sum(all, gz),
    files: all.length,
  };
}

const kb = (n: number) => `${(n / KB).toFixed(1)} KB`;
const dist = join(import.meta.dirname, '../dist/console');
const manager = sizes(join(dist, 'manager'));
const edge = sizes(join(dist, 'edge'));
console.log('| Console | Initial JS raw | Initial JS gzipped | All JS raw | All JS gzipped | JS files |');
console.log('| --- | --- | --- | --- | --- | --- |');
for (const [name, s] of [
  ['manager (dist/console/manager)', manager],
  ['edge, baseline (dist/console/edge)', edge],
] as const) {
  console.log(
    `| ${name} | ${kb(s.initialRaw)} | ${kb(s.initial)} | ${kb(s.allRaw)} | ${kb(s.all)} | ${s.files} |`,
  );
}
console.log(
  `\nbudget: initial JavaScript at most ${kb(BUDGET)} gzipped: ${manager.initial <= BUDGET ? 'met' : 'NOT MET'}`,
);
if (manager.initial > BUDGET) process.exitCode = 1;
