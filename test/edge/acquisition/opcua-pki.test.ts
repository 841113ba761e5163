/**
 * The OPC UA client driver's PKI (drivers/opcua-pki.ts) on real node-opcua certificate managers
 * and certificates made by openssl: `ca` verifies a server certificate against the trust store's
 * CAs (no revocation list needed), keeps the folders in step as the set changes, leaves a
 * certificate trusted by hand alone, and signs with the one client identity of `auto`.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { X509Certificate } from 'node:crypto';
import { copyFileSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import * as opcua from 'node-opcua';
import { clientPki } from '../../../src/edge/acquisition/drivers/opcua-pki.js';
import { makePki, signOpcuaServerCertificate, type TestPki } from '../../helpers/integrations.js';

const der = (file: string) => new X509Certificate(readFileSync(file)).raw;

describe('OPC UA client PKI', () => {
  let dataDir: string;
  let plant: TestPki;
  let other: TestPki;
  let leaf: Buffer;
  let otherLeaf: Buffer;

  before(() => {
    dataDir = mkdtempSync(join(tmpdir(), 'mw-opcua-pki-'));
    plant = makePki();
    other = makePki();
    leaf = der(signOpcuaServerCertificate(plant, 'urn:test:plant-server').cert);
    otherLeaf = der(signOpcuaServerCertificate(other, 'urn:test:other-server').cert);
  });
  after(async () => {
    await opcua.OPCUACertificateManager.disposeAll();
    rmSync(dataDir, { recursive: true, force: true });
    plant.dispose();
    other.dispose();
  });

  test('ca: a server certificate passes only when a CA of the set signed it', async () => {
    const none = await clientPki(opcua, dataDir, 'ca', []);
    const m = none.clientCertificateManager;
    assert.equal(m.rootDir, join(dataDir, 'opcua-pki-ca'));
    assert.equal((await m.checkCertificate(leaf)).name, 'BadCertificateChainIncomplete');

    await clientPki(opcua, dataDir, 'ca', [other.ca, plant.ca]);
    assert.equal(readdirSync(join(m.rootDir, 'issuers/certs')).length, 2);
    // The plant's CA publishes no revocation list: accepted all the same.
    assert.equal((await m.checkCertificate(leaf)).name, 'Good');
    assert.equal((await m.checkCertificate(otherLeaf)).name, 'Good');

    // The plant's CA leaves the set: its servers are refused again, the other's still pass.
    await clientPki(opcua, dataDir, 'ca', [other.ca]);
    assert.equal(readdirSync(join(m.rootDir, 'issuers/certs')).length, 1);
    assert.notEqual((await m.checkCertificate(leaf)).name, 'Good');
    assert.equal((await m.checkCertificate(otherLeaf)).name, 'Good');
    assert.deepEqual(JSON.parse(readFileSync(join(m.rootDir, 'millwright-synced.json'), 'utf8')), [
      sha1(other.ca),
    ]);
  });

  test('ca: a certificate trusted by hand stays when the set changes', async () => {
    const { clientCertificateManager: m } = await clientPki(opcua, dataDir, 'ca', [other.ca]);
    copyFileSync(plant.files.ca, join(m.rootDir, 'trusted/certs/by-hand.pem'));
    await m.reloadCertificates();
    await clientPki(opcua, dataDir, 'ca', []);
    assert.deepEqual(readdirSync(join(m.rootDir, 'trusted/certs')), ['by-hand.pem']);
    assert.equal(readdirSync(join(m.rootDir, 'issuers/certs')).length, 0);
  });

  test('auto and ca present the same client certificate and key', async () => {
    const auto = await clientPki(opcua, dataDir, 'auto', []);
    const ca = await clientPki(opcua, dataDir, 'ca', []);
    assert.equal(auto.clientCertificateManager.rootDir, join(dataDir, 'opcua-pki'));
    assert.equal(ca.certificateFile, auto.certificateFile);
    assert.equal(ca.privateKeyFile, auto.privateKeyFile);
    assert.deepEqual(readdirSync(join(ca.rootDir, 'own/private')), []);
    const a = await auto.clientCertificateManager.getPrivateKey();
    const b = await ca.clientCertificateManager.getPrivateKey();
    assert.equal(a, b, "the identity's key, not one of its own");
  });
});

/** The thumbprint node-opcua names a certificate by: SHA-1, lower-case hex. */
function sha1(pem: string): string {
  return new X509Certificate(pem).fingerprint.replaceAll(':', '').toLowerCase();
}
