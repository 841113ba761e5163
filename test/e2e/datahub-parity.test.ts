/**
 * The gateway answers protocol input byte for byte as the real nats-server does (error texts,
 * whether the connection stays open, +OK order, UNSUB max), compared side by side on raw sockets
 * with the nats-server of this machine (127.0.0.1:4222).
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { DataHub } from '../../src/edge/datahub/index.js';
import { Gateway } from '../../src/edge/datahub/gateway/server.js';
import { NATS_SERVER, exchange, needNatsServer } from '../edge/datahub/support.js';

const CASES: [string, string][] = [
  ['unknown operation', 'CONNECT {"verbose":false}\r\nFOO bar\r\n'],
  ['payload over max_payload', 'CONNECT {"verbose":false}\r\nPUB foo 2000000\r\n'],
  ['control line too long', `CONNECT {"verbose":false}\r\nPUB ${'a'.repeat(5000)} 1\r\n`],
  [
    'invalid subscription subject',
    'CONNECT {"verbose":false,"pedantic":false}\r\nSUB foo..bar 1\r\nPING\r\n',
  ],
  [
    'invalid publish subject, pedantic',
    'CONNECT {"verbose":false,"pedantic":true}\r\nPUB foo.* 1\r\nx\r\nPING\r\n',
  ],
  [
    'invalid publish subject, not pedantic',
    'CONNECT {"verbose":false,"pedantic":false}\r\nPUB foo.* 1\r\nx\r\nPING\r\n',
  ],
  [
    'verbose acknowledgements',
    'CONNECT {"verbose":true}\r\nSUB foo 1\r\nPUB foo 2\r\nhi\r\nUNSUB 1\r\nPING\r\n',
  ],
  ['CONNECT {} is verbose', 'CONNECT {}\r\nPING\r\n'],
  ['malformed PUB arguments', 'CONNECT {"verbose":false}\r\nPUB foo bar baz qux\r\n'],
  ['no_responders without headers', 'CONNECT {"verbose":false,"no_responders":true}\r\n'],
  ['unknown protocol version', 'CONNECT {"verbose":false,"protocol":5}\r\n'],
  ['CONNECT that is not JSON', 'CONNECT {nope\r\n'],
  [
    'UNSUB with a maximum',
    'CONNECT {"verbose":false}\r\nSUB foo 1\r\nUNSUB 1 2\r\nPUB foo 1\r\na\r\nPUB foo 1\r\nb\r\nPUB foo 1\r\nc\r\nPING\r\n',
  ],
  ['lower-case operations', 'connect {"verbose":false}\r\nsub foo 1\r\npub foo 1\r\na\r\nping\r\n'],
  ['payload longer than announced', 'CONNECT {"verbose":false}\r\nPUB foo 1\r\nabc\r\n'],
  [
    'HPUB to HMSG',
    'CONNECT {"verbose":false,"headers":true}\r\nSUB foo 1\r\nHPUB foo 12 14\r\nNATS/1.0\r\n\r\nhi\r\nPING\r\n',
  ],
  [
    'HPUB without headers in CONNECT',
    'CONNECT {"verbose":false}\r\nSUB foo 1\r\nHPUB foo 12 14\r\nNATS/1.0\r\n\r\nhi\r\nPING\r\n',
  ],
  ['MSG sent by a client', 'CONNECT {"verbose":false}\r\nMSG foo 1 2\r\nhi\r\n'],
  [
    'queue subscription and reply subject',
    'CONNECT {"verbose":false}\r\nSUB q.x grp 7\r\nPUB q.x r.1 2\r\nok\r\nPING\r\n',
  ],
];

let gw: Gateway;
let hub: DataHub;
before(async () => {
  hub = new DataHub();
  gw = await Gateway.start({ hub, host: '127.0.0.1', port: 0 });
});
after(async () => {
  await gw.close();
  hub.close();
});

test('protocol answers and error texts are those of nats-server', async (t) => {
  if (!(await needNatsServer(t))) return;
  // Subjects are unique per run, since the real server is shared with other users of the machine.
  const tag = `parity${process.pid}`;
  const results = await Promise.all(
    CASES.map(async ([name, raw], i) => {
      const input = raw.replace(/\b(foo|q)\b/g, `${tag}c${i}$1`);
      const [real, ours] = await Promise.all([exchange(NATS_SERVER.port, input), exchange(gw.port, input)]);
      return { name, real, ours };
    }),
  );
  for (const { name, real, ours } of results) {
    assert.equal(ours, real, `${name}: nats-server answered ${JSON.stringify(real)}`);
  }
});
