/**
 * bench/audit-floor: what SQLite itself charges for an audit record (issue 27), without the
 * manager around it. better-sqlite3 directly, the manager's schema (the company table and the
 * audit tables as migrations 0001 and 0002 leave them, copied from a running manager's store),
 * the manager's pragmas (WAL, `synchronous = NORMAL`), cached prepared statements, one
 * connection. Per operation:
 *
 * - `company`: BEGIN; the company's uniqueness select; its insert; COMMIT (what the trail-off
 *   manager's SQL does for `POST /api/v1/company`);
 * - `company + record`: the same plus the record's insert (its eighteen columns, `on conflict
 *   (seq) do nothing`, sealed with SHA-256 over its canonical text like `hashOf`, a uuidv7);
 * - the same without the `action` index, and without the `at` and `action` indexes;
 * - `record's JavaScript only`: the record's fields, JSON, uuidv7 and hash, no SQL.
 *
 * Cases alternate in rounds (same file system, same load); the figure is the process's CPU time
 * (user + system, `process.cpuUsage`) per operation, the median over rounds. With `--manager-off-us`
 * (default 120: the trail-off manager's CPU per request on a quiet machine, docs/performance.md)
 * it prints what 90% leaves for the record beside what SQLite alone charges for it.
 *
 *   npm run bench -- audit-floor [--ops 5000] [--rounds 5] [--manager-off-us 120]
 */
import { randomUUID, hash as digest } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir, loadavg } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import SQLite from 'better-sqlite3';
import { uuidv7 } from '../src/kernel/ids.js';
import { numArg, reportFigures } from './support.js';
import { INSERT_RECORD as RECORD_INSERT } from '../src/manager/audit/repository.js';

const SCHEMA = [
  `CREATE TABLE "mgr_company" ("id" text primary key, "name" text not null unique, "created_at" bigint not null)`,
  `CREATE TABLE "audit_head" ("id" integer primary key, "seq" bigint not null, "hash" text not null, "base_seq" bigint not null, "base_hash" text not null)`,
  `CREATE TABLE "audit_record" (seq integer primary key, id text not null, at bigint not null,
    actor text not null, actor_name text, company_id text, project_id text, module text not null,
    action text not null, origin text not null, target text, outcome text not null, status integer,
    request_id text, details text not null, legacy_id text, prev_hash text not null, hash text not null)`,
  `CREATE UNIQUE INDEX audit_record_legacy_id on audit_record (legacy_id) where legacy_id is not null`,
];
const AT_INDEX = `CREATE INDEX "audit_record_at" on "audit_record" ("at")`;
const ACTION_INDEX = `CREATE INDEX "audit_record_action" on "audit_record" ("action")`;
/** The manager's own insert of a record (src/manager/audit/repository.ts), not a copy. */
const INSERT_RECORD = RECORD_INSERT.sqlite;

interface Store {
  dir: string;
  db: SQLite.Database;
  begin: SQLite.Statement;
  commit: SQLite.Statement;
  select: SQLite.Statement;
  insert: SQLite.Statement;
  record: SQLite.Statement;
  seq: number;
  prev: string;
}

function open(indexes: string[]): Store {
  const dir = mkdtempSync(join(tmpdir(), 'mw-audit-floor-'));
  const db = new SQLite(join(dir, 'manager.db'));
  db.pragma('journal_mode = WAL');
  db.pragma('synchronous = NORMAL');
  db.pragma('foreign_keys = ON');
  db.pragma('busy_timeout = 5000');
  for (const s of [...SCHEMA, ...indexes]) db.exec(s);
  db.prepare(`insert into audit_head values (1, 0, '', 0, '')`).run();
  return {
    dir,
    db,
    begin: db.prepare('begin'),
    commit: db.prepare('commit'),
    select: db.prepare('select * from "mgr_company" where "name" = ?'),
    insert: db.prepare('insert into "mgr_company" ("id", "name", "created_at") values (?, ?, ?)'),
    record: db.prepare(INSERT_RECORD),
    seq: 0,
    prev: '',
  };
}

let serial = 0;

/** The record as `AuditService.record` seals it: its values in column order. */
function sealRecord(s: Store, name: string, companyId: string): unknown[] {
  const at = Date.now();
  const seq = s.seq + 1;
  const details = JSON.stringify({ method: 'POST', path: '/api/v1/company' });
  const fields = [
    seq,
    uuidv7(at),
    at,
    'token:0190a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b',
    'bench',
    null,
    null,
    'fleet',
    'company.create',
    'API',
    `companyName=${name}`,
    'success',
    201,
    `req-${serial.toString(36)}`,
    details,
    null,
  ];
  const h = digest('sha256', s.prev + JSON.stringify(fields), 'hex');
  void companyId;
  return [...fields, s.prev, h];
}

function create(s: Store, withRecord: boolean): void {
  const name = `bench-${++serial}`;
  const id = randomUUID();
  s.begin.run();
  if (s.select.get(name)) throw new Error('exists');
  s.insert.run(id, name, Date.now());
  if (withRecord) {
    const values = sealRecord(s, name, id);
    if (s.record.run(...values).changes !== 1) throw new Error('seq taken');
    s.seq = values[0] as number;
    s.prev = values[17] as string;
  }
  s.commit.run();
}

interface Case {
  name: string;
  run: () => void;
  samples: number[];
  system: number[];
}

export interface Floor {
  /** CPU µs per operation (medians over rounds): the company's statements alone. */
  companyUs: number;
  /** What the record adds: its insert, its share of the commit, its JavaScript. */
  recordUs: number;
  recordNoActionIndexUs: number;
  recordNoIndexesUs: number;
  /** The record's JavaScript alone (fields, JSON, uuidv7, SHA-256). */
  recordJsUs: number;
  /** The system time's share of what the record adds (the commit's WAL writes). */
  recordSystemUs: number;
  table: string[];
}

/** Measures the floor (see the file comment): `ops` operations of each case per round. */
export function measureFloor(ops: number, rounds: number): Floor {
  const stores = {
    plain: open([AT_INDEX, ACTION_INDEX]),
    full: open([AT_INDEX, ACTION_INDEX]),
    noAction: open([AT_INDEX]),
    noIndexes: open([]),
  };
  const jsOnly: Store = { ...stores.plain, seq: 0, prev: '' };
  const cases: Case[] = [
    { name: 'company (BEGIN, select, insert, COMMIT)', run: () => create(stores.plain, false) },
    { name: 'company + record (as deployed)', run: () => create(stores.full, true) },
    { name: 'company + record, no `action` index', run: () => create(stores.noAction, true) },
    { name: 'company + record, no `at`/`action` index', run: () => create(stores.noIndexes, true) },
    {
      name: "the record's JavaScript only (no SQL)",
      run: () => {
        const v = sealRecord(jsOnly, `bench-${++serial}`, 'x');
        jsOnly.seq++;
        jsOnly.prev = v[17] as string;
      },
    },
  ].map((c) => ({ ...c, samples: [], system: [] }));
  try {
    for (const c of cases) for (let i = 0; i < ops / 5; i++) c.run(); // warm-up
    for (let r = 0; r < rounds; r++)
      for (const c of cases) {
        const t0 = process.cpuUsage();
        for (let i = 0; i < ops; i++) c.run();
        const t = process.cpuUsage(t0);
        c.samples.push((t.user + t.system) / ops);
        c.system.push(t.system / ops);
      }
  } finally {
    for (const s of Object.values(stores)) {
      s.db.close();
      rmSync(s.dir, { recursive: true, force: true });
    }
  }
  const table = [
    '| case                                      | CPU µs / op, rounds                 | median | of it system |',
    '| ----------------------------------------- | ----------------------------------- | ------ | ------------ |',
    ...cases.map(
      (c) =>
        `| ${c.name.padEnd(41)} | ${c.samples
          .map((x) => x.toFixed(1))
          .join(', ')
          .padEnd(
            35,
          )} | ${median(c.samples).toFixed(1).padStart(6)} | ${median(c.system).toFixed(1).padStart(12)} |`,
    ),
  ];
  const [company, full, noAction, noIndexes, js] = cases.map((c) => median(c.samples)) as number[];
  return {
    companyUs: company!,
    recordUs: full! - company!,
    recordNoActionIndexUs: noAction! - company!,
    recordNoIndexesUs: noIndexes! - company!,
    recordJsUs: js!,
    recordSystemUs: median(cases[1]!.system) - median(cases[0]!.system),
    table,
  };
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

/** The floor's lines: the table, and what 90% leaves beside a trail-off request of `offUs`. */
export function floorReport(f: Floor, offUs: number, label: string): string[] {
  const budget = offUs / 0.9 - offUs;
  return [
    ...f.table,
    '',
    `the record costs SQLite and its JavaScript ${f.recordUs.toFixed(1)} µs per change, ${f.recordSystemUs.toFixed(1)} of it system time (${f.recordNoActionIndexUs.toFixed(1)} without the action index, ${f.recordNoIndexesUs.toFixed(1)} without both; its JavaScript alone ${f.recordJsUs.toFixed(1)})`,
    `a trail-off request of ${offUs.toFixed(0)} µs (${label}) leaves ${budget.toFixed(1)} µs for the record at 90%; the floor alone caps the ratio at ${((100 * offUs) / (offUs + f.recordUs)).toFixed(1)}% (${((100 * offUs) / (offUs + f.recordNoActionIndexUs)).toFixed(1)}% without the action index)`,
  ];
}

if (import.meta.url === pathToFileURL(process.argv[1]!).href) {
  const ops = numArg('ops', 5000, 1000);
  const rounds = numArg('rounds', 5, 3);
  const managerOffUs = numArg('manager-off-us', 120);
  const load0 = loadavg()[0]!;
  const f = measureFloor(ops, rounds);
  console.log(
    `\nSQLite alone (better-sqlite3, WAL, synchronous NORMAL), ${ops} operations x ${rounds} rounds per case; load average ${load0.toFixed(2)} at start, ${loadavg()[0]!.toFixed(2)} at end\n`,
  );
  for (const line of floorReport(f, managerOffUs, 'given')) console.log(line);
  const { table: _table, ...figures } = f;
  reportFigures(figures, 'sources');
}
