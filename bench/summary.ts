/**
 * bench/summary: every bench of issue 34's target table in its short mode (`--short`), one after
 * the other, and one table: each path, its baseline measured in the same run, the figure, the
 * ratio, the target and whether it is met. The measurements are the benches' own (each hands its
 * figures over through `reportFigures` of bench/support.ts); this file only runs them and compares.
 *
 *   npm run bench -- summary [--lock /tmp/bench.lock] [--only devicehub,uns]
 *   npm run bench -- summary --report /tmp/mw-bench-summary-XXXXXX
 *
 * `--lock FILE` runs each bench under `flock FILE` (the lock is held per bench, not for the whole
 * summary, so that other benches can run between; a bench's time limit starts once it holds the
 * lock). `--only` runs some of the benches. Each bench's own output goes to a log file (named at
 * the end); a bench that fails or runs past its time limit is a row `FAILED` and makes the exit
 * code 1. A target not met does not: the exit code says whether the figures could be taken.
 * `--report DIR` prints the table of an earlier run again from its directory (`summary.json`).
 */
import { spawn } from 'node:child_process';
import { createWriteStream, existsSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { cpus, loadavg, tmpdir, totalmem } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { ensureBuilt } from '../test/helpers/cli.js';
import { measuredBuild, type Figures } from './support.js';

interface Row {
  path: string;
  baseline: string;
  measured: string;
  /** The figure over its baseline, as printed (a share or a multiple); `-` for a fixed limit. */
  ratio: string;
  target: string;
  met: boolean;
}

interface Entry {
  bench: string;
  args: string[];
  /** Seconds the bench may run in its short mode before it counts as failed. */
  limitS: number;
  rows: (f: Record<string, number>) => Row[];
}

const n0 = (x: number) => Math.round(x).toLocaleString('en-US');
const pct = (x: number) => `${(100 * x).toFixed(0)}%`;
const times = (x: number) => `${x.toFixed(2)}×`;

/** A throughput compared with its baseline: at least `min` of it. */
function share(path: string, baseline: string, base: number, value: number, unit: string, min: number): Row {
  return {
    path,
    baseline: `${baseline}: ${n0(base)} ${unit}`,
    measured: `${n0(value)} ${unit}`,
    ratio: pct(value / base),
    target: `≥ ${pct(min)}`,
    met: value / base >= min,
  };
}

const ENTRIES: Entry[] = [
  {
    bench: 'acquisition',
    args: ['--short', '--floors'],
    limitS: 480,
    rows: (f) => {
      const ceiling = `modbus-serial tight loop: ${n0(f.ceilingPerSecond!)} values/s`;
      // The floors of bench/acquisition-floor.ts: the same work in bare Node processes, no
      // Millwright code (read and deliver; `all` also records every value as the history does).
      const floors = f.bothFloorCpuShareOfCore !== undefined;
      const baseline = floors
        ? `${ceiling}; floor, read + deliver in bare Node: ${pct(f.bothFloorCpuShareOfCore!)}` +
          ` of a core (+ history: ${pct(f.allFloorCpuShareOfCore!)})`
        : ceiling;
      const path = `acquisition, ${n0(f.offeredPerSecond!)} Modbus values/s`;
      // The CPU share is about the offered rate: an edge that falls behind uses less.
      const delivered = f.deliveredPerSecond! / f.offeredPerSecond!;
      return [
        {
          path: `${path}: edge CPU`,
          baseline,
          measured: `${pct(f.cpuShareOfCore!)} of a core, ${n0(f.deliveredPerSecond!)} values/s delivered`,
          ratio: `${pct(delivered)} delivered`,
          target: '≤ 25% of a core, all delivered',
          met: f.cpuShareOfCore! <= 0.25 && delivered >= 0.99,
        },
        {
          path: `${path}: edge RSS`,
          baseline: floors
            ? `floor, bare Node with the tags' state: ${f.floorRssMiB!.toFixed(0)} MiB (+ history: ${f.allFloorRssMiB!.toFixed(0)})`
            : '',
          measured: `${f.rssMaxMiB!.toFixed(0)} MiB`,
          ratio: '-',
          target: '< 250 MiB',
          met: f.rssMaxMiB! < 250,
        },
        {
          path: `${path}: poll-to-subscriber p99`,
          // The same subscriber taking the same frames from a bare Node process, in the same run.
          baseline:
            f.bothFloorP99Ms !== undefined
              ? `floor, read + deliver in bare Node: ${f.bothFloorP99Ms.toFixed(1)} ms (+ history: ${f.allFloorP99Ms?.toFixed(1) ?? '-'} ms)`
              : '',
          measured: `${f.p99Ms!.toFixed(1)} ms`,
          ratio: '-',
          target: '< 5 ms',
          met: f.p99Ms! < 5,
        },
      ];
    },
  },
  {
    bench: 'devicehub',
    args: ['--short'],
    limitS: 600,
    rows: (f) => [
      {
        path: `ListRegistersFromAllDevices, pages of 1,000 of ${n0(f.tags!)} tags: p99`,
        baseline: `the same SQL directly: p99 ${f.sqlPageP99Ms!.toFixed(1)} ms`,
        measured: `p99 ${f.pageP99Ms!.toFixed(1)} ms`,
        ratio: times(f.pageP99Ms! / f.sqlPageP99Ms!),
        target: '≤ 3×',
        met: f.pageP99Ms! / f.sqlPageP99Ms! <= 3,
      },
    ],
  },
  {
    bench: 'fleet',
    args: ['--short'],
    limitS: 240,
    // The share is the median of each round's own share (rounds alternate, ABBA); the floor is a
    // bare Node proxy over one TLS socket to a bare answerer, against that answerer direct.
    rows: (f) => [
      {
        path: `bridged GET …/devicehub/version (${n0(f.edges!)} edges linked)`,
        baseline:
          `the same call direct: ${n0(f.directPerSecond!)} req/s` +
          (f.floorShare === undefined ? '' : `; floor, a bare Node proxy: ${pct(f.floorShare)} of direct`),
        measured: `${n0(f.bridgedPerSecond!)} req/s`,
        ratio: pct(f.bridgedShare ?? f.bridgedPerSecond! / f.directPerSecond!),
        target: '≥ 80%',
        met: (f.bridgedShare ?? f.bridgedPerSecond! / f.directPerSecond!) >= 0.8,
      },
    ],
  },
  {
    bench: 'integrations',
    args: ['--short'],
    limitS: 240,
    rows: (f) =>
      ([0, 1] as const).map((q) =>
        share(
          `MQTT connector QoS ${q} (DataHub → Mosquitto)`,
          'mqtt.js tight loop',
          f[`ceilingQos${q}PerSecond`]!,
          f[`connectorQos${q}PerSecond`]!,
          'msgs/s',
          0.9,
        ),
      ),
  },
  {
    bench: 'analytics',
    args: ['--short'],
    limitS: 180,
    rows: (f) => [
      share(
        'analytics: 1,000 built-in mean processors',
        'bare subscriber, same outputs',
        f.bareValuesPerSecond!,
        f.builtInValuesPerSecond!,
        'values/s',
        0.8,
      ),
      // The same comparison in CPU time per value (alternating rounds): steadier than wall clock
      // on a shared machine. The floor: a Float64Array ring with the same outputs, no processor.
      {
        path: 'analytics: 1,000 built-in mean processors, by CPU time per value',
        baseline:
          `bare subscriber, same outputs: ${f.bareNsPerValue!.toFixed(0)} ns/value` +
          (f.floorNsPerValue === undefined ? '' : `; floor: ${f.floorNsPerValue.toFixed(0)} ns/value`),
        measured: `${f.builtInNsPerValue!.toFixed(0)} ns/value`,
        ratio: pct(f.builtInShareByCpu!),
        target: '≥ 80%',
        met: f.builtInShareByCpu! >= 0.8,
      },
      // The ceiling until 2026-11-28 (a subscriber computing the mean, publishing nothing): kept
      // beside the fair one so that the change of baseline is visible in every summary.
      share(
        'analytics: 1,000 built-in mean processors',
        'bare subscriber, mean only, no output',
        f.meanOnlyValuesPerSecond!,
        f.builtInValuesPerSecond!,
        'values/s',
        0.8,
      ),
    ],
  },
  {
    bench: 'config',
    args: ['--short'],
    limitS: 300,
    rows: (f) =>
      (['export', 'preview'] as const).map((step) => {
        const s = f[`${step}Seconds`]!;
        return {
          path: `configuration ${step}, ${n0(f.tags!)} tags`,
          baseline:
            `floor, the rows inserted directly: ${f.floorSeconds!.toFixed(2)} s` +
            (step === 'export' && f.exportFloorSeconds !== undefined
              ? `; export floor (rows read, text, gzip, client parse): ${f.exportFloorSeconds.toFixed(2)} s`
              : ''),
          measured: `${s.toFixed(2)} s`,
          ratio: times(s / f.floorSeconds!),
          target: '< 2 s',
          met: s < 2,
        };
      }),
  },
  {
    bench: 'uns',
    args: ['--short', '--protocol', '5'],
    limitS: 600,
    rows: (f) =>
      Object.keys(f)
        .filter((k) => k.endsWith(': UNS msgs/s'))
        .map((k) => {
          const label = k.slice(0, -': UNS msgs/s'.length);
          const row = share(
            `UNS ${label}`,
            'Mosquitto',
            f[`${label}: Mosquitto msgs/s`]!,
            f[k]!,
            'msgs/s',
            1,
          );
          // A durable retained publish: what the store alone takes (bench/uns-retained-floor).
          const floor = f[`${label}: floor msgs/s`];
          if (floor !== undefined) row.baseline += `; floor, the store alone: ${n0(floor)} msgs/s`;
          // A plain case: a bare Node MQTT relay, the same clients in the same run (bench/uns-floor.mjs).
          const relay = f[`${label}: relay floor msgs/s`];
          if (relay !== undefined)
            row.baseline +=
              `; floor, a bare Node relay: ${n0(relay)} msgs/s` +
              ` (${pct(relay / f[`${label}: Mosquitto msgs/s`]!)} of Mosquitto)`;
          return row;
        }),
  },
  {
    bench: 'uns-connect',
    args: ['--short'],
    limitS: 240,
    rows: (f) => [
      {
        path: `UNS memory per idle MQTT connection (${n0(f.connections!)} connections, not 100,000)`,
        baseline:
          `Mosquitto: ${f.mosquittoKiBPerConnection!.toFixed(1)} KiB` +
          (f.floorKiBPerConnection === undefined
            ? ''
            : `; floor, a bare Node net server: ${f.floorKiBPerConnection.toFixed(1)} KiB`),
        measured: `${f.unsKiBPerConnection!.toFixed(1)} KiB`,
        ratio: times(f.unsKiBPerConnection! / f.mosquittoKiBPerConnection!),
        target: '≤ 2×',
        met: f.unsKiBPerConnection! / f.mosquittoKiBPerConnection! <= 2,
      },
    ],
  },
  // The other issues' figures (27, 30, 32): their benches as they run alone (no short mode).
  {
    bench: 'audit',
    args: ['--duration', '10', '--rounds', '2', '--warmup', '3'],
    limitS: 180,
    rows: (f) => [
      share(
        'POST /api/v1/company with the audit trail on (SQLite; issue 27)',
        'the same call with the trail off',
        f.offPerSecond!,
        f.onPerSecond!,
        'req/s',
        0.9,
      ),
    ],
  },
  {
    bench: 'hierarchy',
    args: [],
    limitS: 300,
    rows: (f) =>
      (['P50', 'P95'] as const).map((q) => ({
        path: `asset hierarchy, ${n0(f.nodes!)} nodes: a subtree of ${n0(f.largestNodes!)} read, ${q.toLowerCase()} (issue 30)`,
        baseline: `its query alone: p50 ${f.largestQueryP50Ms!.toFixed(1)} ms`,
        measured: `${f[`largest${q}Ms`]!.toFixed(1)} ms`,
        ratio: '-',
        target: '< 100 ms',
        met: f[`largest${q}Ms`]! < 100,
      })),
  },
  {
    bench: 'acquisition-drivers',
    args: ['--driver', 'all', '--seconds', '8'],
    limitS: 300,
    rows: (f) =>
      (['s7', 'snmp'] as const).map((d) =>
        share(
          `${d === 's7' ? 'S7' : 'SNMP'} driver, edge at full speed (issue 32)`,
          "the library's tight loop",
          f[`${d}CeilingPerSecond`]!,
          f[`${d}EdgePerSecond`]!,
          'values/s',
          0.7,
        ),
      ),
  },
];

function strArg(name: string): string | undefined {
  const i = process.argv.indexOf(`--${name}`);
  return i > 0 ? process.argv[i + 1] : undefined;
}

interface Outcome {
  figures?: Figures;
  error?: string;
  seconds: number;
  load: number;
}

const STARTED = 'millwright-bench-started';

/** Runs one bench to its end (or its time limit) with its output in `log`; answers its figures. */
function runBench(entry: Entry, dir: string, lock: string | undefined): Promise<Outcome> {
  const figuresFile = join(dir, `${entry.bench}.json`);
  const log = createWriteStream(join(dir, `${entry.bench}.log`));
  const node = [process.execPath, '--import', 'tsx', `bench/${entry.bench}.ts`, ...entry.args];
  // A marker once the lock is held: the time limit and the clock start there.
  const argv = ['sh', '-c', `echo ${STARTED}; exec "$@"`, 'sh', ...node];
  const [cmd, ...args] = lock ? ['flock', lock, ...argv] : argv;
  // Its own process group: at the time limit the bench and the services it started end together.
  const child = spawn(cmd!, args, {
    detached: true,
    stdio: ['ignore', 'pipe', 'pipe'],
    env: { ...process.env, MILLWRIGHT_BENCH_FIGURES: figuresFile },
  });
  child.stderr.pipe(log, { end: false });
  return new Promise((resolve) => {
    let started: number | undefined;
    let load = NaN;
    let timer: NodeJS.Timeout | undefined;
    let timedOut = false;
    child.stdout.on('data', (d: Buffer) => {
      if (started === undefined && d.toString().includes(STARTED)) {
        started = performance.now();
        load = loadavg()[0]!;
        process.stderr.write(`  ${entry.bench}: started (load ${load.toFixed(2)})\n`);
        timer = setTimeout(() => {
          timedOut = true;
          process.kill(-child.pid!, 'SIGTERM');
          setTimeout(() => process.kill(-child.pid!, 'SIGKILL'), 5000).unref();
        }, entry.limitS * 1000);
      }
      log.write(d);
    });
    child.on('exit', (code, signal) => {
      clearTimeout(timer);
      log.end();
      const seconds = started === undefined ? 0 : (performance.now() - started) / 1000;
      const out: Outcome = { seconds, load };
      if (timedOut) out.error = `no result within ${entry.limitS} s`;
      else if (code !== 0) out.error = `exited ${code ?? signal}`;
      else if (!existsSync(figuresFile)) out.error = 'no figures reported';
      else out.figures = JSON.parse(readFileSync(figuresFile, 'utf8')) as Figures;
      resolve(out);
    });
  });
}

interface Run {
  command: string;
  measured: string;
  minutes: number;
  results: { bench: string; outcome: Outcome }[];
}

async function main(): Promise<void> {
  const report = strArg('report');
  if (report)
    return printTable(JSON.parse(readFileSync(join(report, 'summary.json'), 'utf8')) as Run, report);
  const lock = strArg('lock');
  const only = strArg('only')?.split(',');
  const entries = ENTRIES.filter((e) => !only || only.includes(e.bench));
  if (only && entries.length !== only.length) {
    console.error(`--only: the benches of the summary are ${ENTRIES.map((e) => e.bench).join(', ')}`);
    process.exit(2);
  }
  // Built once before the first bench, so that no bench's time limit pays for the build.
  ensureBuilt();
  const dir = mkdtempSync(join(tmpdir(), 'mw-bench-summary-'));
  const t0 = performance.now();
  const run: Run = {
    command: `npm run bench -- summary${process.argv.length > 2 ? ` ${process.argv.slice(2).join(' ')}` : ''}`,
    measured: measuredBuild(),
    minutes: 0,
    results: [],
  };
  for (const entry of entries) {
    process.stderr.write(`${entry.bench} ${entry.args.join(' ')}${lock ? ` (waiting for ${lock})` : ''}\n`);
    const outcome = await runBench(entry, dir, lock);
    process.stderr.write(
      `  ${entry.bench}: ${outcome.error ?? 'done'} after ${outcome.seconds.toFixed(0)} s; log ${join(dir, `${entry.bench}.log`)}\n`,
    );
    run.results.push({ bench: entry.bench, outcome });
    run.minutes = (performance.now() - t0) / 60_000;
    // Kept, so that `--report DIR` prints the table again.
    writeFileSync(join(dir, 'summary.json'), JSON.stringify(run));
  }
  printTable(run, dir);
}

/** The one table of a run; the exit code 1 when a bench failed. */
function printTable(run: Run, dir: string): void {
  console.log(
    `\nbench/summary: ${cpus().length} vCPUs (${cpus()[0]?.model ?? 'unknown CPU'}), ${Math.round(totalmem() / 2 ** 30)} GiB, ` +
      `Node.js ${process.version}; ${run.minutes.toFixed(1)} min in all`,
  );
  console.log(
    `Measured: ${run.measured}; integrations and analytics: the sources in the bench's process (src/ through tsx)`,
  );
  console.log(`Command: ${run.command}\n`);
  console.log(
    '| path | baseline, same run | measured | ratio | target | met | bench (load at its start, seconds) |',
  );
  console.log('|---|---|---:|---:|---|---|---|');
  let failed = 0;
  let missed = 0;
  for (const { bench: name, outcome } of run.results) {
    const entry = ENTRIES.find((e) => e.bench === name)!;
    const bench = `${entry.bench} ${entry.args.join(' ')} (${Number.isFinite(outcome.load) ? outcome.load.toFixed(1) : '-'}, ${outcome.seconds.toFixed(0)} s)`;
    let rows: Row[] = [];
    try {
      if (outcome.figures) rows = entry.rows(outcome.figures as Record<string, number>);
      if (outcome.figures && rows.length === 0) outcome.error = 'no figures for this path';
    } catch (err) {
      outcome.error = `figures not understood: ${(err as Error).message}`;
    }
    if (outcome.error) {
      failed++;
      console.log(`| ${entry.bench} | | FAILED: ${outcome.error} | | | | ${bench} |`);
      continue;
    }
    for (const r of rows) {
      // A baseline or figure of 0 (a load generator that did not get the processor in its window)
      // is no measurement: the bench counts as failed rather than the target as met or not.
      if (/NaN|Infinity/.test(`${r.measured} ${r.ratio} ${r.baseline}`) || /: 0 /.test(`${r.baseline} `)) {
        failed++;
        console.log(
          `| ${r.path} | ${r.baseline} | FAILED: ${r.measured}, not a measurement | ${r.ratio} | ${r.target} | | ${bench} |`,
        );
        continue;
      }
      if (!r.met) missed++;
      console.log(
        `| ${r.path} | ${r.baseline} | ${r.measured} | ${r.ratio} | ${r.target} | ${r.met ? 'met' : 'NOT MET'} | ${bench} |`,
      );
    }
  }
  console.log(
    `\n${failed ? `${failed} bench(es) FAILED; ` : ''}${missed} target(s) not met. Each bench's output: ${dir}/<bench>.log`,
  );
  process.exit(failed ? 1 : 0);
}

await main();
