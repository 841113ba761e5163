/**
 * net-snmp is loaded at the first SNMP use, not with the edge (src/edge/acquisition/drivers/
 * snmp-lib.ts): its import builds MIB tables, about 45 ms of CPU in every edge start and CLI
 * service command. Run in a process of its own (each test file is), so nothing else loaded it.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createRequire } from 'node:module';

const cache = createRequire(import.meta.url).cache;
const netSnmpLoaded = () => Object.keys(cache).some((k) => /[\\/]node_modules[\\/]net-snmp[\\/]/.test(k));

test('loading the edge service does not load net-snmp; the SNMP driver loads it at its first session', async () => {
  await import('../../../src/edge/service.js');
  const { openSession } = await import('../../../src/edge/acquisition/drivers/snmp.js');
  assert.equal(netSnmpLoaded(), false, 'net-snmp loaded with the edge');
  const session = openSession({
    host: '127.0.0.1',
    port: '16199',
    version: 'v3',
    securityLevel: 'authNoPriv',
    securityName: 'u',
    authKey: 'authkey123',
    authProtocol: 'SHA256',
  });
  try {
    assert.equal(netSnmpLoaded(), true);
    assert.equal(typeof session.get, 'function');
  } finally {
    session.close();
  }
});
