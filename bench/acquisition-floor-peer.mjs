// The processes of bench/acquisition-floor.ts: plain JavaScript run by plain `node` (no tsx loader,
// whose module-hooks thread would add its own isolate to the resident memory measured), no
// Millwright code. `--role read | deliver | both | all --ports p1,p2,… --servers N --registers M`.
// `all` is `both` with the values recorded as the edge's history records them: a worker thread
// appending (tag, ts, v) rows to DuckDB (one thread, the store's memory limit, a hot table of the
// store's columns and block size) in batches four times a second, one appender per batch. It
// leaves out the store's minute move (a sort into a segment file) and its queries.
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { isMainThread, parentPort, Worker, workerData } from 'node:worker_threads';
import ModbusRTU from 'modbus-serial';

const arg = (name, dflt) => {
  const i = process.argv.indexOf(`--${name}`);
  return i > 0 ? process.argv[i + 1] : dflt;
};
const ROLE = arg('role', 'read');
const SERVERS = Number(arg('servers', 10));
const REGISTERS = Number(arg('registers', 10000));
const PORTS = String(arg('ports', '')).split(',').map(Number);
const BLOCK = 125;
const INTERVAL_MS = 1000;

// --- the history's worker: DuckDB appends, nothing else ----------------------------------------
if (!isMainThread) {
  const { DuckDBInstance, DuckDBDataChunk, INTEGER, DOUBLE } = await import('@duckdb/node-api');
  const dir = workerData.dir;
  const db = await DuckDBInstance.create(join(dir, 'catalog.duckdb'), {
    threads: '1',
    memory_limit: '256MB',
    preserve_insertion_order: 'true',
    checkpoint_threshold: '16MB',
  });
  const c = await db.connect();
  await c.run(`attach '${join(dir, 'hot-1.duckdb')}' as h1 (BLOCK_SIZE 16384)`);
  await c.run('create table h1.hot (tag INTEGER, ts DOUBLE, v DOUBLE)');
  const chunk = DuckDBDataChunk.create([INTEGER, DOUBLE, DOUBLE]);
  parentPort.on('message', async ({ tag, ts, v, n }) => {
    const app = await c.createAppender('hot', 'main', 'h1');
    const cols = [tag, ts, v];
    for (let off = 0; off < n; off += 2048) {
      const m = Math.min(2048, n - off);
      chunk.reset();
      chunk.rowCount = m;
      for (let k = 0; k < 3; k++) {
        const vec = chunk.getColumnVector(k);
        vec.items.set(cols[k].subarray(off, off + m));
        vec.flush();
      }
      app.appendDataChunk(chunk);
    }
    app.closeSync();
  });
  await new Promise(() => undefined);
}

// --- the minimal state of a tag ----------------------------------------------------------------
/** A uuid-shaped ID (36 characters, as the edge's tag and device IDs). */
const idOf = (n) => `0192f0c1-7a3b-7c00-8000-${n.toString(16).padStart(12, '0')}`;

/** Per device: its name and ID; per tag: name, ID, address, last value (typed arrays). */
function makeDevices() {
  const out = [];
  for (let s = 0; s < SERVERS; s++) {
    const d = {
      name: `plc-${s}`,
      id: idOf(1_000_000 + s),
      names: [],
      ids: [],
      addresses: new Uint32Array(REGISTERS),
      last: new Uint16Array(REGISTERS),
    };
    for (let i = 0; i < REGISTERS; i++) {
      d.names.push(`hr${i}`);
      d.ids.push(idOf(s * REGISTERS + i));
      d.addresses[i] = i;
    }
    out.push(d);
  }
  return out;
}

let sid = '1';
/**
 * One block's values as MSG frames in one buffer: subject, sid, length, and the edge's payload
 * (`{"success":true,"datatype":"uint16","timestamp":…,"registerId":"…","value":…,"deviceID":"…",
 * "deviceName":"…","tagName":"…","description":"","metadata":{}}`, the acquisition's
 * `ValuePayloadEncoder` shape), each made as text and written into the buffer.
 */
function frames(d, start, count, ts, out) {
  let p = 0;
  const tsText = String(ts);
  const devPart = `,"deviceID":"${d.id}","deviceName":"${d.name}","tagName":"`;
  for (let i = start; i < start + count; i++) {
    const payload = `{"success":true,"datatype":"uint16","timestamp":${tsText},"registerId":"${d.ids[i]}","value":${d.last[i]}${devPart}${d.names[i]}","description":"","metadata":{}}`;
    p += out.latin1Write(`MSG devicehub.raw.${d.name}.${d.names[i]} ${sid} ${payload.length}\r\n`, p);
    p += out.latin1Write(payload, p);
    out[p++] = 13;
    out[p++] = 10;
  }
  return p;
}

/** A bare NATS server for one subscriber: INFO, PONG to PING, the SUB's sid; resolves at the SUB. */
function natsServer(onListen) {
  return new Promise((onSub) => {
    const server = createServer((s) => {
      s.setNoDelay(true);
      s.write(
        'INFO {"server_id":"floor","server_name":"floor","version":"2.10.0","proto":1,"headers":true,"max_payload":1048576}\r\n',
      );
      let buf = '';
      s.on('data', (chunk) => {
        buf += chunk.toString('latin1');
        let nl;
        while ((nl = buf.indexOf('\r\n')) >= 0) {
          const line = buf.slice(0, nl);
          buf = buf.slice(nl + 2);
          if (line.startsWith('PING')) s.write('PONG\r\n');
          else if (line.startsWith('SUB ')) {
            sid = line.split(' ').pop();
            onSub(s);
          }
        }
      });
      s.on('error', () => undefined);
    });
    server.listen(0, '127.0.0.1', () => onListen(server.address().port));
  });
}

/** The paced reader of one device: every second, its blocks one after the other (as the driver). */
async function pollDevice(d, port, onBlock) {
  const c = new ModbusRTU();
  await c.connectTCP('127.0.0.1', { port });
  c.setID(1);
  c.setTimeout(2000);
  const poll = async () => {
    for (let a = 0; a < REGISTERS; a += BLOCK) {
      const n = Math.min(BLOCK, REGISTERS - a);
      const r = await c.readHoldingRegisters(a, n);
      const buf = r.buffer;
      for (let i = 0; i < n; i++) d.last[a + i] = buf.readUInt16BE(i * 2);
      valuesRead += n;
      onBlock?.(d, a, n);
    }
  };
  const loop = async () => {
    const t = Date.now();
    await poll();
    setTimeout(loop, Math.max(0, INTERVAL_MS - (Date.now() - t)));
  };
  setTimeout(loop, Math.random() * INTERVAL_MS);
}

const devices = makeDevices();
/** Values read (or, in `deliver`, made), told to the bench four times a second. */
let valuesRead = 0;
setInterval(() => process.stdout.write(`read ${valuesRead}\n`), 250);
if (ROLE === 'read') {
  devices.forEach((d, s) => void pollDevice(d, PORTS[s]));
  process.stdout.write('{"ready":true}\n');
} else {
  const s = await natsServer((port) => process.stdout.write(`${JSON.stringify({ port })}\n`));
  const write = (d, start, n) => {
    const out = Buffer.allocUnsafe(64 * 1024);
    const len = frames(d, start, n, Date.now(), out);
    s.write(out.subarray(0, len));
  };
  if (ROLE === 'both') devices.forEach((d, i) => void pollDevice(d, PORTS[i], write));
  else if (ROLE === 'all') {
    const dir = mkdtempSync(join(tmpdir(), 'mw-floor-history-'));
    process.on('exit', () => rmSync(dir, { recursive: true, force: true }));
    process.on('SIGTERM', () => process.exit(0));
    const worker = new Worker(new URL(import.meta.url), { workerData: { dir }, argv: process.argv.slice(2) });
    const CAP = (SERVERS * REGISTERS) / 2;
    const batch = () => ({
      tag: new Int32Array(CAP),
      ts: new Float64Array(CAP),
      v: new Float64Array(CAP),
      n: 0,
    });
    let b = batch();
    setInterval(() => {
      if (b.n === 0) return;
      worker.postMessage(b, [b.tag.buffer, b.ts.buffer, b.v.buffer]);
      b = batch();
    }, 250);
    devices.forEach(
      (d, i) =>
        void pollDevice(d, PORTS[i], (dev, start, n) => {
          write(dev, start, n);
          const ts = Date.now();
          const base = i * REGISTERS;
          for (let k = start; k < start + n && b.n < CAP; k++, b.n++) {
            b.tag[b.n] = base + k;
            b.ts[b.n] = ts;
            b.v[b.n] = dev.last[k];
          }
        }),
    );
  } else {
    // 80 blocks a second a device, each its own write, spread evenly over the second.
    const blocksPerDevice = Math.ceil(REGISTERS / BLOCK);
    const perSecond = SERVERS * blocksPerDevice;
    const t0 = performance.now();
    let done = 0;
    const tick = () => {
      const due = Math.floor(((performance.now() - t0) / 1000) * perSecond);
      for (; done < due; done++) {
        const d = devices[done % SERVERS];
        const start = (Math.floor(done / SERVERS) % blocksPerDevice) * BLOCK;
        const n = Math.min(BLOCK, REGISTERS - start);
        for (let i = start; i < start + n; i++) d.last[i] = (d.last[i] + 1) & 0xffff;
        write(d, start, n);
        valuesRead += n;
      }
      setTimeout(tick, 1);
    };
    tick();
  }
}
