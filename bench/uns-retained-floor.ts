/**
 * bench/uns-retained-floor: the floor of a durable retained publish (issue 34): what SQLite alone
 * charges to store the retained messages of `--topics` topics, with no broker around it. The UNS
 * promises that a PUBACKed retained message is on disk; Mosquitto (as `bench/uns` runs it,
 * `persistence false`) keeps it in memory only. better-sqlite3 directly, the broker's table
 * (`uns_mqtt_retained`, as its migration makes it), the service's pragmas (WAL, `synchronous =
 * NORMAL`), the broker's statement (the multi-row upsert `BrokerRepository.writeRetained` runs,
 * prepared once per row count), the rows' text made before the clock starts (the JSON is the
 * store's format, not SQLite's work). Per batch: BEGIN, one upsert of `batch` rows, COMMIT, as
 * the UNS writes a batch of retained messages in one transaction; `--batch` is the rows per
 * transaction (default 100: the bench's publisher window, the most a batch can hold; the UNS's
 * batches are that or smaller). Figures: messages per second and µs of CPU (`process.cpuUsage`)
 * per message, the median over rounds.
 *
 *   npm run bench -- uns-retained-floor [--topics 1000] [--rounds 7] [--batch 100]
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import SQLite from 'better-sqlite3';
import { encode } from '../src/uns/broker/packet-json.js';
import { numArg, reportFigures } from './support.js';

export interface RetainedFloor {
  msgsPerSecond: number;
  cpuMicrosPerMessage: number;
  topics: number;
  batch: number;
}

/** The upsert of `rows` rows as the broker's repository compiles it for SQLite. */
function upsertText(rows: number): string {
  const values = Array.from({ length: rows }, () => '(?, ?)').join(', ');
  return `insert into "uns_mqtt_retained" ("topic", "packet") values ${values} on conflict ("topic") do update set "packet" = "excluded"."packet"`;
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

/** Stores `topics` retained messages `rounds` times over (a new payload per round), `batch` per transaction. */
export function retainedFloor(
  topics: number,
  rounds = 7,
  batch = 100,
  prefix = 'bench/v5/retained/q1',
): RetainedFloor {
  const dir = mkdtempSync(join(tmpdir(), 'mw-retained-floor-'));
  const db = new SQLite(join(dir, 'floor.sqlite'));
  try {
    db.pragma('journal_mode = WAL');
    db.pragma('synchronous = NORMAL');
    db.exec('create table "uns_mqtt_retained" ("topic" text primary key, "packet" text not null)');
    const statements = new Map<number, SQLite.Statement>();
    const stmt = (rows: number) => {
      let s = statements.get(rows);
      if (!s) statements.set(rows, (s = db.prepare(upsertText(rows))));
      return s;
    };
    const begin = db.prepare('begin');
    const commit = db.prepare('commit');
    const round = (r: number): [number, number] => {
      // The rows' text first (a packet as aedes hands it to the store, a 64-byte payload).
      const params: string[][] = [];
      for (let i = 0; i < topics; i += batch) {
        const part: string[] = [];
        for (let t = i; t < Math.min(topics, i + batch); t++) {
          const topic = `${prefix}/${t}`;
          const packet = {
            cmd: 'publish',
            brokerId: 'c0ffee00-0000-4000-8000-000000000000',
            brokerCounter: r * topics + t,
            topic,
            payload: Buffer.alloc(64, r),
            qos: 1,
            retain: true,
            dup: false,
            messageId: (t % 65535) + 1,
          };
          part.push(topic, encode(packet));
        }
        params.push(part);
      }
      const cpu0 = process.cpuUsage();
      const t0 = performance.now();
      for (const part of params) {
        begin.run();
        stmt(part.length / 2).run(part);
        commit.run();
      }
      const seconds = (performance.now() - t0) / 1000;
      const cpu = process.cpuUsage(cpu0);
      return [topics / seconds, (cpu.user + cpu.system) / topics];
    };
    round(255); // the topics exist, the statements are prepared
    const rates: number[] = [];
    const cpus: number[] = [];
    for (let r = 0; r < rounds; r++) {
      const [rate, cpu] = round(r);
      rates.push(rate);
      cpus.push(cpu);
    }
    return { msgsPerSecond: median(rates), cpuMicrosPerMessage: median(cpus), topics, batch };
  } finally {
    db.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  const topics = numArg('topics', 1000);
  const rounds = numArg('rounds', 7);
  const batch = numArg('batch', 100);
  const f = retainedFloor(topics, rounds, batch);
  console.log(
    `floor: SQLite alone, ${topics} topics' retained messages, ${batch} per transaction: ${Math.round(f.msgsPerSecond)} msgs/s, ${f.cpuMicrosPerMessage.toFixed(2)} µs CPU per message (median of ${rounds} rounds)`,
  );
  reportFigures({
    [`retained publish floor, ${batch} per transaction: msgs/s`]: f.msgsPerSecond,
    [`retained publish floor, ${batch} per transaction: CPU µs per message`]: f.cpuMicrosPerMessage,
  });
}
