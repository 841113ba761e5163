/**
 * bench/publish-text: the edge's publish path for acquisition values, in one process: the DataHub,
 * its NATS gateway and one subscriber on `devicehub.raw.>` (a raw loopback socket, bytes counted).
 * 4,096 tags' values × 60 cycles a round, published with the acquisition's `ValuePayloadEncoder`
 * either as text written straight into the gateway's buffer (`text`) or as a Buffer per message
 * (`bytes`, the encoder without `text`), alternated 8 rounds each. Figure: CPU µs per value
 * (`process.cpuUsage`, the subscriber's reads included), medians.
 *
 *   npm run bench -- publish-text
 */
import { connect as tcp } from 'node:net';
import { DataHub, type PayloadEncoder } from '../src/edge/datahub/index.js';
import { Gateway } from '../src/edge/datahub/gateway/server.js';
import { ValuePayloadEncoder, devicePart } from '../src/edge/acquisition/payload.js';

const hub = new DataHub();
const gw = await Gateway.start({ hub, host: '127.0.0.1', port: 0 });
const sock = tcp(gw.port, '127.0.0.1');
let bytes = 0;
sock.on('data', (d) => (bytes += d.length));
await new Promise((r) => sock.once('data', r));
sock.write('CONNECT {"verbose":false,"pedantic":false}\r\nSUB devicehub.raw.> 1\r\nPING\r\n');
await new Promise((r) => setTimeout(r, 200));
const N = 4096;
const tags = Array.from({ length: N }, (_, i) => ({
  id: `0b6f3c1e-1d7a-4f7e-9c55-${String(i).padStart(12, '0')}`,
  deviceId: 'a1b2c3d4-1111-2222-3333-444455556666',
  deviceName: 'd-10',
  tagName: `w${i}`,
  description: '',
  metadata: {},
  rawSubject: `devicehub.raw.d-10.w${i}`,
}));
const dev = devicePart(tags[0]!.deviceId, 'd-10');
const withText = tags.map((t) => ({ encoder: new ValuePayloadEncoder(t as never, 'int16', dev) }));
const noText = tags.map((t) => {
  const e = new ValuePayloadEncoder(t as never, 'int16', dev);
  return { encoder: { encode: (d: unknown) => e.encode(d) } };
});
async function round(opts: ReadonlyArray<{ encoder: PayloadEncoder }>): Promise<number> {
  const c0 = process.cpuUsage();
  const cycles = 60;
  for (let c = 0; c < cycles; c++) {
    const ts = Date.now();
    for (let i = 0; i < N; i++) {
      const t = tags[i]!;
      hub.publish(
        t.rawSubject,
        {
          success: true,
          datatype: 'int16',
          timestamp: ts,
          registerId: t.id,
          value: (i * 7 + c) % 30000,
          deviceID: t.deviceId,
          deviceName: t.deviceName,
          tagName: t.tagName,
          description: '',
          metadata: {},
        },
        opts[i],
      );
    }
    await new Promise((r) => setImmediate(r));
  }
  await new Promise((r) => setTimeout(r, 50));
  const u = process.cpuUsage(c0);
  return (u.user + u.system) / (cycles * N);
}
const res: { text: number[]; bytes: number[] } = { text: [], bytes: [] };
for (let k = 0; k < 8; k++) {
  res.bytes.push(await round(noText));
  res.text.push(await round(withText));
}
const med = (a: number[]) => [...a].sort((x, y) => x - y)[a.length >> 1]!;
console.log(
  `CPU µs per value (process, publisher + gateway; the subscriber socket read in-process too): bytes path median ${med(res.bytes).toFixed(2)} [${res.bytes.map((x) => x.toFixed(2)).join(' ')}], text path median ${med(res.text).toFixed(2)} [${res.text.map((x) => x.toFixed(2)).join(' ')}]; ${bytes} bytes received`,
);
sock.destroy();
await gw.close();
hub.close();
process.exit(0);
