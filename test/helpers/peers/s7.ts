/**
 * An S7 peer: snap7's own server (node-snap7's `S7Server`) in a child process of its own, so that a
 * test can kill it (SIGKILL) and start it again on the same port. It serves DB1 and DB2 (256 bytes
 * each; DB3 of 8,192 bytes for benches), 64 bytes of markers, inputs and outputs, and timers and counters, preset as the script
 * says. In front of it, in the same child process (never in the test's or bench's own process, whose
 * event loop the client under test may need), a TCP relay counts the S7 read requests (and their
 * items) that pass, for the tests and benches of request grouping (`stats()`). Killing the
 * server kills its relay too: the edge's connection drops as at a power loss, and the relay's port
 * refuses connections until `start()` again.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { writeFileSync, mkdtempSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { eventually, freePort, portOpen } from '../util.js';

const require = createRequire(import.meta.url);

/** The server's script: areas registered, preset values, started on argv[2]'s port. */
const SCRIPT = `
const snap7 = require(process.argv[3]);
const s = new snap7.S7Server();
s.SetParam(s.LocalPort, Number(process.argv[2]));
const db1 = Buffer.alloc(256);
db1.writeFloatBE(21.5, 0);      // DB1.DBD0 REAL
db1.writeInt16BE(-1234, 4);     // DB1.DBW4 INT
db1.writeUInt16BE(54321, 6);    // DB1.DBW6 WORD
db1.writeInt32BE(-100000, 8);   // DB1.DBD8 DINT
db1.writeUInt32BE(3000000000, 12); // DB1.DBD12 DWORD
db1[16] = 0b00000101;           // DB1.DBX16.0 and .2
db1[17] = 200;                  // DB1.DBB17 BYTE
db1[18] = 20; db1[19] = 5; db1.write('hello', 20, 'latin1'); // DB1.DBB18 STRING[20]
for (let i = 64; i < 256; i += 2) db1.writeInt16BE(i, i); // DB1.DBW64.. its own offset
s.RegisterArea(s.srvAreaDB, 1, db1);
const db2 = Buffer.alloc(256); db2.writeInt16BE(777, 100);
s.RegisterArea(s.srvAreaDB, 2, db2);
const db3 = Buffer.alloc(8192);  // DB3: 4,096 INTs for benches, changing every 100 ms
s.RegisterArea(s.srvAreaDB, 3, db3);
let tick = 0;
setInterval(() => { tick++; for (let i = 0; i < 8192; i += 2) db3.writeInt16BE((i + tick) & 0x7fff, i); s.SetArea(s.srvAreaDB, 3, db3); }, 100);
const mk = Buffer.alloc(64); mk.writeInt16BE(42, 10); mk[3] = 0x80;
s.RegisterArea(s.srvAreaMK, mk);
const pe = Buffer.alloc(64); pe[0] = 0b10100001;
s.RegisterArea(s.srvAreaPE, pe);
s.RegisterArea(s.srvAreaPA, Buffer.alloc(64));
// snap7's server keeps timer (counter) n at byte n >> 1 of the area (its own quirk; the requests
// on the wire carry the number, as for a CPU): T4 and C8 are at bytes 2 and 4.
const tm = Buffer.alloc(64); tm.writeUInt16BE(0x2123, 2); // T4: 123 × 1 s
s.RegisterArea(s.srvAreaTM, tm);
const ct = Buffer.alloc(64); ct.writeUInt16BE(0x0042, 4);  // C8: 42
s.RegisterArea(s.srvAreaCT, ct);
if (!s.StartTo('127.0.0.1')) { console.error('cannot start: ' + s.ErrorText(s.LastError())); process.exit(1); }
// The relay: TPKT frames (version 3, length in bytes 2-3), COTP DT (3 bytes), S7 header at 7;
// a job (ROSCTR 1) with function 4 (ReadVar) is a read request, byte 18 its item count.
const net = require('node:net');
let reads = 0, readItems = 0;
// Read requests per relayed connection still open, in the order they were opened.
const open = new Map();
let nextConn = 0;
const relay = net.createServer((client) => {
  const id = nextConn++;
  open.set(id, 0);
  client.on('close', () => open.delete(id));
  const server = net.connect(Number(process.argv[2]), '127.0.0.1');
  client.setNoDelay(true); server.setNoDelay(true);
  const end = () => { client.destroy(); server.destroy(); };
  client.on('error', end).on('close', end);
  server.on('error', end).on('close', end);
  let pending = Buffer.alloc(0);
  client.on('data', (b) => {
    pending = pending.length ? Buffer.concat([pending, b]) : b;
    while (pending.length >= 4 && pending.length >= pending.readUInt16BE(2)) {
      const len = pending.readUInt16BE(2);
      if (len > 18 && pending[7] === 0x32 && pending[8] === 0x01 && pending[17] === 0x04) {
        reads++;
        readItems += pending[18];
        if (open.has(id)) open.set(id, open.get(id) + 1);
      }
      pending = pending.subarray(len);
    }
    server.write(b);
  });
  server.on('data', (b) => client.write(b));
});
relay.listen(Number(process.argv[4]), '127.0.0.1', () => console.log('ready'));
let line = '';
process.stdin.on('data', (b) => {
  line += b.toString();
  for (let i; (i = line.indexOf('\\n')) >= 0; line = line.slice(i + 1))
    if (line.slice(0, i) === 'stats') console.log(JSON.stringify({ reads, readItems, connections: [...open.values()] }));
});
process.stdin.on('end', () => process.exit(0));
`;

export interface S7PeerStats {
  reads: number;
  readItems: number;
  connections: number[];
}

export class S7Peer {
  readonly dir = mkdtempSync(join(tmpdir(), 'mw-s7-'));
  /** The server's own port. */
  serverPort = 0;
  /** The relay's port: what the edge connects to. */
  port = 0;
  #proc: ChildProcess | undefined;
  #log = '';
  #stats: Array<(s: S7PeerStats) => void> = [];

  /** The server's (and relay's) process id while it runs (for a bench's CPU figures). */
  get pid(): number | undefined {
    return this.#proc?.pid;
  }

  async start(): Promise<number> {
    if (!this.serverPort) this.serverPort = await freePort();
    if (!this.port) this.port = await freePort();
    const file = join(this.dir, 's7-server.cjs');
    writeFileSync(file, SCRIPT);
    const proc = spawn(
      process.execPath,
      [file, String(this.serverPort), require.resolve('node-snap7'), String(this.port)],
      {
        stdio: ['pipe', 'pipe', 'pipe'],
      },
    );
    this.#proc = proc;
    let out = '';
    proc.stdout?.on('data', (b: Buffer) => {
      this.#log += b.toString();
      out += b.toString();
      for (let i; (i = out.indexOf('\n')) >= 0; out = out.slice(i + 1)) {
        const line = out.slice(0, i);
        if (line.startsWith('{')) this.#stats.shift()?.(JSON.parse(line) as S7PeerStats);
      }
    });
    proc.stderr?.on('data', (b: Buffer) => (this.#log += b.toString()));
    await eventually(() => this.#log.includes('ready') || proc.exitCode !== null, 15_000, 'S7 server start');
    if (!this.#log.includes('ready')) throw new Error(`S7 server did not start: ${this.#log}`);
    await eventually(() => portOpen(this.port), 10_000, `S7 relay on ${this.port}`);
    return this.port;
  }

  /**
   * Read requests (ReadVar jobs) relayed since the server's start, and their items; the read
   * requests each relayed connection still open carried, oldest connection first.
   */
  stats(): Promise<S7PeerStats> {
    const proc = this.#proc;
    if (!proc) return Promise.reject(new Error('the S7 server is not running'));
    return new Promise((resolve) => {
      this.#stats.push(resolve);
      proc.stdin!.write('stats\n');
    });
  }

  /** Kills the server (SIGKILL) and cuts the relayed connections, as a power loss would. */
  async kill(): Promise<void> {
    const p = this.#proc;
    this.#proc = undefined;
    if (p && p.exitCode === null) {
      const gone = new Promise((r) => p.once('exit', r));
      p.kill('SIGKILL');
      await gone;
    }
    this.#log = '';
  }

  async stop(): Promise<void> {
    await this.kill();
  }
}
