import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { createPrivateKey, X509Certificate } from 'node:crypto';
import { mkdtempSync, writeFileSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { connect, createServer } from 'node:tls';
import { test } from 'node:test';
import { selfSignedCertificate } from '../../src/kernel/http/self-signed.js';

const notBefore = new Date('2026-01-02T03:04:05.678Z');
const request = {
  commonName: 'plant-7.example',
  notBefore,
  notAfter: new Date('2028-04-05T06:07:08Z'),
  dnsNames: ['localhost', 'plant-7.example'],
  ipAddresses: ['127.0.0.1', '::1', '2001:db8::42'],
};

test('the certificate holds what was asked and is signed by its own key', () => {
  const pems = selfSignedCertificate(request);
  const cert = new X509Certificate(pems.cert);
  assert.equal(cert.subject, 'CN=plant-7.example');
  assert.equal(cert.issuer, 'CN=plant-7.example');
  assert.equal(cert.ca, false);
  // Seconds: the milliseconds of notBefore are dropped.
  assert.equal(new Date(cert.validFrom).toISOString(), '2026-01-02T03:04:05.000Z');
  assert.equal(new Date(cert.validTo).toISOString(), '2028-04-05T06:07:08.000Z');
  assert.equal(
    cert.subjectAltName,
    'DNS:localhost, DNS:plant-7.example, IP Address:127.0.0.1, IP Address:0:0:0:0:0:0:0:1, IP Address:2001:DB8:0:0:0:0:0:42',
  );
  assert.deepEqual(cert.keyUsage, ['1.3.6.1.5.5.7.3.1']); // extended key usage: serverAuth
  assert.ok(cert.verify(cert.publicKey), 'self-signed: its signature checks with its own key');
  const key = createPrivateKey(pems.private);
  assert.equal(key.asymmetricKeyType, 'ec');
  assert.equal(key.asymmetricKeyDetails?.namedCurve, 'prime256v1');
  assert.ok(cert.checkPrivateKey(key), 'the key is the certificate’s');
  assert.match(pems.private, /^-----BEGIN PRIVATE KEY-----\n/);
  // Serials are random and positive.
  const other = new X509Certificate(selfSignedCertificate(request).cert);
  assert.notEqual(other.serialNumber, cert.serialNumber);
  assert.ok(Number.parseInt(cert.serialNumber.slice(0, 2), 16) < 0x80);
});

test('openssl reads it: key usage, basic constraints, a 2050+ date as GeneralizedTime', () => {
  const pems = selfSignedCertificate({ ...request, notAfter: new Date('2051-06-07T08:09:10Z') });
  assert.equal(new Date(new X509Certificate(pems.cert).validTo).toISOString(), '2051-06-07T08:09:10.000Z');
  const dir = mkdtempSync(join(tmpdir(), 'mw-selfsigned-'));
  const file = join(dir, 'c.pem');
  writeFileSync(file, pems.cert);
  let text: string;
  try {
    text = execFileSync('openssl', ['x509', '-in', file, '-noout', '-text'], { encoding: 'utf8' });
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return; // no openssl here: node's reading above
    throw err;
  }
  assert.match(text, /Signature Algorithm: ecdsa-with-SHA256/);
  assert.match(text, /X509v3 Basic Constraints: *\n *CA:FALSE/);
  assert.match(text, /X509v3 Key Usage: *\n *Digital Signature, Key Encipherment/);
  assert.match(text, /X509v3 Extended Key Usage: *\n *TLS Web Server Authentication/);
  assert.match(text, /Not After : Jun {2}7 08:09:10 2051 GMT/);
  assert.equal(
    execFileSync('openssl', ['verify', '-CAfile', file, file], { encoding: 'utf8' }).trim(),
    `${file}: OK`,
  );
});

test('a TLS client that trusts it connects to localhost and to 127.0.0.1 with verification on', async () => {
  const pems = selfSignedCertificate({ ...request, notBefore: new Date(Date.now() - 60_000) });
  const server = createServer({ cert: pems.cert, key: pems.private }, (s) => s.end('hello'));
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const port = (server.address() as AddressInfo).port;
  try {
    for (const servername of ['localhost', undefined]) {
      const answer = await new Promise<string>((resolve, reject) => {
        const s = connect({ host: '127.0.0.1', port, ca: pems.cert, servername, rejectUnauthorized: true });
        let got = '';
        s.on('data', (d: Buffer) => (got += d.toString()));
        s.on('end', () => resolve(got));
        s.on('error', reject);
      });
      assert.equal(answer, 'hello');
    }
    // A name it does not hold fails the check.
    await assert.rejects(
      new Promise((resolve, reject) => {
        const s = connect({ host: '127.0.0.1', port, ca: pems.cert, servername: 'elsewhere.example' });
        s.on('secureConnect', resolve);
        s.on('error', reject);
      }),
      /altnames/,
    );
  } finally {
    server.close();
  }
});
