/**
 * Acceptance (issue 27): the CSV export of 1,000,000 audit records streams from a real
 * `millwright manager` process whose resident memory stays under 200 MiB (read from /proc every
 * 100 ms while the export runs), and a PDF report of 10,000 records that pdftotext reads back
 * whole (every record's line, in order, and every page number).
 *
 * The records are written straight into the chain's table beforehand (sealed as the service seals
 * them, through better-sqlite3's prepared statement: seconds, where a million requests would take
 * an hour), so the test measures the exports, not the writes.
 */
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import SQLite from 'better-sqlite3';
import { request } from 'undici';
import { openManagerDatabase } from '../../src/manager/service.js';
import { hashOf } from '../../src/manager/audit/index.js';
import { cleanEnv, runCliJson, startCli, tempDirs, type CliProcess } from '../helpers/cli.js';
import { insecureAgent } from '../helpers/edge.js';

// MILLWRIGHT_TEST_AUDIT_RECORDS overrides the acceptance size (a smaller one while investigating).
const N = Number(process.env.MILLWRIGHT_TEST_AUDIT_RECORDS ?? 1_000_000);
/** The bound on the manager's resident memory during the export. */
const RSS_LIMIT_MIB = 200;
const PDF_RECORDS = Math.min(10_000, N);
const T0 = Date.parse('2026-01-01T00:00:00Z');
const ACTIONS = ['company.create', 'project.update', 'device.pretty-names.create', 'token.create', 'sign-in'];
const actionOf = (seq: number) => ACTIONS[seq % ACTIONS.length]!;

const dirs = tempDirs('mw-audit-export-');
let proc: CliProcess | undefined;
let token = '';
after(async () => {
  await proc?.stop();
  dirs.removeAll();
});

function rssMiB(pid: number): number {
  const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  return m ? Number(m[1]) / 1024 : 0;
}

/** Writes records 1..n, chained, into the manager's SQLite file (migrated first). */
async function seed(dataDir: string, n: number): Promise<void> {
  await (await openManagerDatabase({ dataDir, databaseUrl: undefined })).close();
  const db = new SQLite(join(dataDir, 'manager.db'));
  try {
    // Positional parameters: binding 18 named ones from an object per row took about twice the
    // CPU (1.5 s against 0.8 s per 100,000 rows, 2026-11-28).
    const insert = db.prepare(
      `INSERT INTO audit_record (seq, id, at, actor, actor_name, company_id, project_id, module, action,
         origin, target, outcome, status, request_id, details, legacy_id, prev_hash, hash)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
    );
    let prev = '0'.repeat(64);
    const batch = db.transaction((from: number, to: number) => {
      for (let seq = from; seq <= to; seq++) {
        const row = {
          seq,
          id: `r${seq}`,
          at: T0 + seq * 1000,
          actor: 'token:bulk',
          actor_name: 'bulk',
          company_id: null,
          project_id: 'p1',
          module: 'fleet',
          action: actionOf(seq),
          origin: 'API',
          target: `deviceId=d${seq}`,
          outcome: 'success',
          status: 200,
          request_id: `req-${seq}`,
          details: '{}',
          legacy_id: null,
          prev_hash: prev,
        };
        const hash = hashOf(row);
        insert.run(
          row.seq,
          row.id,
          row.at,
          row.actor,
          row.actor_name,
          row.company_id,
          row.project_id,
          row.module,
          row.action,
          row.origin,
          row.target,
          row.outcome,
          row.status,
          row.request_id,
          row.details,
          row.legacy_id,
          row.prev_hash,
          hash,
        );
        prev = hash;
      }
    });
    for (let from = 1; from <= n; from += 10_000) batch(from, Math.min(n, from + 9_999));
    db.prepare('UPDATE audit_head SET seq = ?, hash = ? WHERE id = 1').run(n, prev);
  } finally {
    db.close();
  }
}

before(async () => {
  const dataDir = dirs.make();
  await seed(dataDir, N);
  const env = cleanEnv();
  token = runCliJson(['manager', 'token', 'create', '--data-dir', dataDir, '--name', 'export'], env)
    .token as string;
  proc = await startCli(
    [
      'manager',
      '--host',
      '127.0.0.1',
      '--port',
      '0',
      '--admin-port',
      '0',
      '--data-dir',
      dataDir,
      '--log-level',
      'warn',
    ],
    { env, timeoutMs: 60_000 },
  );
});

test(
  `CSV export of ${N} records with the manager's RSS under ${RSS_LIMIT_MIB} MiB`,
  { timeout: 900_000 },
  async () => {
    const pid = proc!.pid;
    const base = rssMiB(pid);
    let peak = base;
    const timer = setInterval(() => (peak = Math.max(peak, rssMiB(pid))), 100);
    let lines = 0;
    let bytes = 0;
    // The last 2,000 bytes (decoded at the end: the export is ASCII but for the names it carries).
    let tail: Buffer = Buffer.alloc(0);
    try {
      const res = await request(
        `${proc!.ready.services.manager!.adminUrl}/admin/v1/logs/v2/export?format=csv`,
        {
          headers: { 'x-authtoken': token },
          dispatcher: insecureAgent,
        },
      );
      assert.equal(res.statusCode, 200);
      // Counted on the bytes as they come (no decoding of the whole export into strings).
      for await (const chunk of res.body) {
        const b = chunk as Buffer;
        bytes += b.length;
        for (let i = b.indexOf(10); i !== -1; i = b.indexOf(10, i + 1)) lines++;
        tail = b.length >= 2000 ? b.subarray(-2000) : Buffer.concat([tail, b]).subarray(-2000);
      }
    } finally {
      clearInterval(timer);
    }
    peak = Math.max(peak, rssMiB(pid));
    console.log(
      `# exported ${lines} lines, ${(bytes / 1048576).toFixed(0)} MiB; manager RSS ${base.toFixed(0)} MiB at ready, peak ${peak.toFixed(0)} MiB (limit ${RSS_LIMIT_MIB})`,
    );
    // The N records written beforehand, then the CLI's creation of the export token (seq N + 1).
    assert.equal(lines, N + 2, 'a header line and one line per record');
    const last = tail.toString('utf8');
    assert.match(last, new RegExp(`\\n${N},[^\\n]*,${actionOf(N)},[^\\n]*deviceId=d${N},`));
    assert.match(
      last,
      new RegExp(`\\n${N + 1},[^\\n]*,cli:[^\\n]*,admin,api-tokens\\.create,CLI,name=export,`),
    );
    assert.ok(peak < RSS_LIMIT_MIB, `the manager's RSS peaked at ${peak.toFixed(0)} MiB`);
  },
);

test(
  `a PDF report of ${PDF_RECORDS} records that pdftotext reads back whole`,
  { timeout: 300_000 },
  async () => {
    assert.ok(
      (() => {
        try {
          execFileSync('pdftotext', ['-v'], { stdio: 'ignore' });
          return true;
        } catch {
          return false;
        }
      })(),
      'pdftotext is required (Debian poppler-utils, installed by .ci/run)',
    );
    // Records 1..PDF_RECORDS by their time (record seq is at T0 + seq s).
    const to = new Date(T0 + PDF_RECORDS * 1000).toISOString();
    const res = await request(
      `${proc!.ready.services.manager!.adminUrl}/admin/v1/logs/v2/export?format=pdf&to=${encodeURIComponent(to)}`,
      { headers: { 'x-authtoken': token }, dispatcher: insecureAgent },
    );
    assert.equal(res.statusCode, 200);
    const pdf = Buffer.from(await res.body.arrayBuffer());
    assert.equal(pdf.subarray(0, 5).toString(), '%PDF-');
    const file = join(dirs.make(), 'report.pdf');
    writeFileSync(file, pdf);
    const text = execFileSync('pdftotext', ['-layout', file, '-'], {
      maxBuffer: 256 * 1024 * 1024,
    }).toString();
    assert.match(text, /Millwright edge manager: audit trail/);
    assert.match(text, new RegExp(`Chain head: record ${N + 1}, hash [0-9a-f]{64}`));
    assert.match(text, /Filters: to=2026-/);
    assert.match(text, new RegExp(`${PDF_RECORDS} record\\(s\\)\\.`));
    // Every record's line, in order: its seq, time, action and target.
    const seen: number[] = [];
    for (const line of text.split('\n')) {
      const m =
        /^\s*(\d+)\s+(2026-\S+ \S+)\s+bulk\s+fleet\s+(\S+)\s+API\s+deviceId=d(\d+)\s+success 200\s*$/.exec(
          line,
        );
      if (!m) continue;
      const seq = Number(m[1]);
      assert.equal(m[2], new Date(T0 + seq * 1000).toISOString().replace('T', ' '), `record ${seq}'s time`);
      assert.equal(m[3], actionOf(seq), `record ${seq}'s action`);
      assert.equal(Number(m[4]), seq, `record ${seq}'s target`);
      seen.push(seq);
    }
    assert.equal(seen.length, PDF_RECORDS, 'one line per record');
    assert.ok(
      seen.every((s, i) => s === i + 1),
      'the records in chain order, none missing',
    );
    // Every page carries its number; pdftotext separates pages with a form feed.
    const pages = text.split('\f').filter((p) => p.trim());
    assert.ok(pages.length > 100, `${pages.length} pages`);
    pages.forEach((p, i) => assert.match(p, new RegExp(`Page ${i + 1}\\b`), `page ${i + 1}'s number`));
    console.log(
      `# PDF: ${PDF_RECORDS} records, ${pages.length} pages, ${(pdf.length / 1048576).toFixed(1)} MiB`,
    );
  },
);
