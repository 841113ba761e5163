/** The gateway on its own: what "local" means, time limits, pings, and the parser across chunk borders. */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { networkInterfaces } from 'node:os';
import { connect as tcp } from 'node:net';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import tls from 'node:tls';
import { connect } from 'nats';
import { ensureCertificate } from '../../../src/kernel/http/server.js';
import { DataHub } from '../../../src/edge/datahub/index.js';
import { Gateway, type GatewayOptions } from '../../../src/edge/datahub/gateway/server.js';
import { RawClient } from './support.js';

async function withGateway(
  options: Partial<GatewayOptions>,
  fn: (gw: Gateway, hub: DataHub) => Promise<void>,
) {
  const hub = new DataHub();
  const gw = await Gateway.start({ hub, host: '127.0.0.1', port: 0, ...options });
  try {
    await fn(gw, hub);
  } finally {
    await gw.close();
    hub.close();
  }
}

/** The kernel's self-signed certificate, made in a scratch directory. */
async function certificate() {
  const dir = mkdtempSync(join(tmpdir(), 'mw-gw-'));
  try {
    const m = await ensureCertificate(dir);
    return { cert: m.cert, key: m.key };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** A non-loopback IPv4 address of this host, if it has one. */
function ownAddress(): string | undefined {
  for (const list of Object.values(networkInterfaces())) {
    for (const a of list ?? []) if (a.family === 'IPv4' && !a.internal) return a.address;
  }
  return undefined;
}

describe('DataHub gateway', () => {
  test('"local" is loopback or one of this host\'s own addresses; trustLocal: false makes everyone remote', async () => {
    await withGateway({}, async (gw) => {
      assert.ok(gw.isLocal('127.0.0.1'));
      assert.ok(gw.isLocal('127.5.6.7'));
      assert.ok(gw.isLocal('::1'));
      assert.ok(gw.isLocal('::ffff:127.0.0.1'));
      assert.ok(!gw.isLocal('203.0.113.9'));
      assert.ok(!gw.isLocal('::ffff:203.0.113.9'));
      const own = ownAddress();
      if (own) assert.ok(gw.isLocal(own), `${own} is this host`);
    });
    await withGateway({ trustLocal: false }, async (gw) => {
      assert.ok(!gw.isLocal('127.0.0.1'));
      assert.ok(!gw.isLocal('::1'));
    });
  });

  test("a connection from this host's own network address is local too", async (t) => {
    const own = ownAddress();
    if (!own) {
      t.skip('this host has no non-loopback IPv4 address');
      return;
    }
    await withGateway({ host: '0.0.0.0' }, async (gw) => {
      const raw = new RawClient(gw.port, own);
      await raw.waitFor(/^INFO .*\r\n/);
      assert.equal(raw.info.auth_required, undefined);
      assert.equal(raw.info.client_ip, own);
      raw.destroy();
    });
  });

  test('without a certificate, a remote client is refused: TLS required', async () => {
    await withGateway({ trustLocal: false, tls: undefined }, async (gw) => {
      const raw = new RawClient(gw.port);
      await raw.closed;
      assert.equal(raw.info.tls_required, true);
      assert.equal(raw.afterInfo, "-ERR 'Secure Connection - TLS Required'\r\n");
    });
  });

  test('a remote client that never completes TLS and CONNECT is cut after the auth timeout', async () => {
    await withGateway(
      { trustLocal: false, tls: await certificate(), authTimeout: 150, closeGrace: 50 },
      async (gw) => {
        const raw = new RawClient(gw.port);
        const t0 = Date.now();
        await raw.closed;
        assert.ok(Date.now() - t0 < 1500);
        assert.equal(gw.counters.connections, 0);
      },
    );
  });

  test('a remote client sending operations before CONNECT gets Authorization Violation', async () => {
    await withGateway({ trustLocal: false, tls: await certificate() }, async (gw) => {
      const socket = tcp(gw.port, '127.0.0.1');
      await new Promise((r) => socket.once('data', r)); // INFO
      const secure = tls.connect({ socket, rejectUnauthorized: false });
      await new Promise((r) => secure.once('secureConnect', r));
      let text = '';
      secure.on('data', (d) => (text += d));
      secure.write('SUB x 1\r\nPING\r\n');
      await new Promise((r) => secure.once('close', r));
      assert.equal(text, "-ERR 'Authorization Violation'\r\n");
      assert.equal(gw.counters.authFailures, 1);
    });
  });

  test('server PINGs; a client that stops answering is closed as stale', async () => {
    await withGateway({ pingInterval: 60, maxPingsOut: 2 }, async (gw) => {
      const raw = new RawClient(gw.port);
      raw.send('CONNECT {"verbose":false}\r\n');
      await raw.closed;
      // Two unanswered PINGs (one more when CONNECT arrived after the first), then the error.
      assert.match(raw.afterInfo, /^(PING\r\n){2,3}-ERR 'Stale Connection'\r\n$/);
    });
    // Generous limits here: on a busy machine the client may take a while to answer.
    await withGateway({ pingInterval: 100, maxPingsOut: 5 }, async (gw) => {
      const nc = await connect({ servers: gw.url });
      let pings = 0;
      const raw = new RawClient(gw.port);
      raw.send('CONNECT {"verbose":false}\r\n');
      raw.socket.on('data', (d: Buffer) => {
        const n = (d.toString().match(/PING\r\n/g) ?? []).length;
        pings += n;
        for (let i = 0; i < n; i++) raw.send('PONG\r\n');
      });
      // Time is the test: the server's ping interval.
      await new Promise((r) => setTimeout(r, 700));
      assert.ok(pings >= 3, `pinged ${pings} times`);
      assert.ok(!raw.isClosed, 'a client that answers PONG stays');
      assert.ok(!nc.isClosed(), 'the nats client answers PONG and stays');
      raw.destroy();
      await nc.close();
    });
  });

  test('the parser takes operations split at any byte and many operations in one chunk', async () => {
    await withGateway({}, async (gw, hub) => {
      const got: string[] = [];
      hub.subscribe('split.>', (m) => got.push(`${m.subject}=${m.string()}`));
      const raw = new RawClient(gw.port);
      const input = Buffer.from(
        'CONNECT {"verbose":false,"headers":true}\r\n' +
          'PUB split.a 5\r\nhello\r\n' +
          'HPUB split.b 18 21\r\nNATS/1.0\r\nK: v\r\n\r\nabc\r\n' +
          `PUB split.c ${3000}\r\n${'x'.repeat(3000)}\r\n` +
          'PING\r\n',
      );
      for (let i = 0; i < input.length; i += 7) {
        raw.send(input.subarray(i, i + 7));
        if (i % 70 === 0) await new Promise((r) => setImmediate(r));
      }
      await raw.waitFor(/PONG\r\n/);
      assert.deepEqual(got, ['split.a=hello', 'split.b=abc', `split.c=${'x'.repeat(3000)}`]);
      raw.destroy();
    });
  });

  test("a payload its publisher makes as text goes out as that text's UTF-8 bytes, its length right", async () => {
    await withGateway({}, async (gw, hub) => {
      const texts = [
        '"hello"',
        '"ééééé12"', // 9 characters, 14 bytes: the length has a digit more than the characters
        `"${'é'.repeat(40)}${'a'.repeat(56)}"`, // 98 characters, 138 bytes
        `"${'x'.repeat(3000)}"`,
        '"\ud83d\ude00 😀"',
        '',
      ];
      const encoder = {
        encode: (d: unknown) => Buffer.from(String(d), 'utf8'),
        text: (d: unknown) => String(d),
      };
      const a = await connect({ servers: gw.url });
      const b = await connect({ servers: gw.url });
      const got: string[][] = [[], []];
      const done = [a, b].map(
        (nc, i) =>
          new Promise<void>((resolve) => {
            nc.subscribe('txt.>', {
              max: texts.length,
              callback: (_e, m) => {
                got[i]!.push(`${m.subject}=${Buffer.from(m.data).toString('utf8')}`);
                if (got[i]!.length === texts.length) resolve();
              },
            });
          }),
      );
      await Promise.all([a.flush(), b.flush()]);
      texts.forEach((t, i) => hub.publish(`txt.${i}`, t, { encoder }));
      await Promise.all(done);
      const want = texts.map((t, i) => `txt.${i}=${t}`);
      assert.deepEqual(got[0], want);
      assert.deepEqual(got[1], want);
      await a.close();
      await b.close();
    });
  });
});
