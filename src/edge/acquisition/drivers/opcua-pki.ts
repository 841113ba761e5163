/**
 * The OPC UA client driver's PKI: one client identity for the edge and two ways to trust a
 * server's certificate, chosen per device by `trustServerCertificate`.
 *
 * - `<data-dir>/acquisition/opcua-pki`: the client's own certificate and key (made on first use)
 *   and, for `auto` devices (the default), the server certificates trusted on first use.
 * - `<data-dir>/acquisition/opcua-pki-ca`, for `ca` devices: its `trusted/` and `issuers/` folders
 *   hold the CA certificates of the edge's trust store (`/dm/v2/ca-certificates`, synchronised by
 *   the edge manager), brought in step before each connection; a server certificate passes when
 *   it is itself trusted there or signed by a trusted CA. A CA without a revocation list is
 *   accepted (a private CA seldom publishes one to the edge); a certificate refused lands in its
 *   `rejected/` folder. The edge writes only the certificates it synchronised (listed in
 *   `millwright-synced.json`): a certificate put in `trusted/` by hand stays.
 * Both managers sign with the identity's one key, so a server sees one client certificate.
 */
import { createHash, X509Certificate } from 'node:crypto';
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { OPCUACertificateManager, OPCUACertificateManagerOptions } from 'node-opcua';

type Opcua = typeof import('node-opcua');
type VerifyOptions = Parameters<OPCUACertificateManager['verifyCertificate']>[1];

/** What a client is given: the manager that checks the server, its own certificate and key. */
export interface ClientPki {
  clientCertificateManager: OPCUACertificateManager;
  certificateFile: string;
  privateKeyFile: string;
  /** The folder whose `trusted/` decides (named in errors). */
  rootDir: string;
}

const identities = new Map<string, Promise<OPCUACertificateManager>>();

/** The client identity's manager (trust on first use), one initialisation per folder. */
async function identity(o: Opcua, dataDir: string): Promise<OPCUACertificateManager> {
  const root = join(dataDir, 'opcua-pki');
  let m = identities.get(root);
  if (!m) {
    const manager = new o.OPCUACertificateManager({
      rootFolder: root,
      automaticallyAcceptUnknownCertificate: true,
    });
    // One initialisation per folder, awaited by every caller: a second concurrent `initialize`
    // returns before the first has written the private key.
    m = manager.initialize().then(() => manager);
    identities.set(root, m);
    m.catch(() => identities.delete(root));
  }
  return m;
}

/** A server certificate signed by a trusted CA passes without that CA's revocation list. */
function caManager(o: Opcua, options: OPCUACertificateManagerOptions): OPCUACertificateManager {
  class CaTrustManager extends o.OPCUACertificateManager {
    protected override verifyCertificateAsync(
      certificate: Parameters<OPCUACertificateManager['verifyCertificate']>[0],
      options: NonNullable<VerifyOptions>,
    ) {
      return super.verifyCertificateAsync(certificate, { ...options, ignoreMissingRevocationList: true });
    }
  }
  return new CaTrustManager(options);
}

const SYNCED = 'millwright-synced.json';

/** The `ca` manager and the trust-store certificates it holds. */
class CaTrust {
  /** SHA-1 thumbprints (hex) of the certificates the edge put in the folders. */
  #ours: Set<string>;
  /** The PEM set last brought in; a sync of the same set does nothing. */
  #key: string | undefined;
  #queue: Promise<void> = Promise.resolve();

  constructor(
    readonly manager: OPCUACertificateManager,
    ours: string[],
  ) {
    this.#ours = new Set(ours);
  }

  /** Brings `trusted/` and `issuers/` in step with `pems` (serialised). */
  sync(pems: readonly string[]): Promise<void> {
    const run = this.#queue.then(() => this.#sync(pems));
    this.#queue = run.catch(() => undefined);
    return run;
  }

  async #sync(pems: readonly string[]): Promise<void> {
    const key = pems.join('\n');
    if (key === this.#key) return;
    const m = this.manager;
    const want = new Map<string, { der: Buffer; ca: boolean }>();
    for (const pem of pems) {
      const x = new X509Certificate(pem);
      want.set(createHash('sha1').update(x.raw).digest('hex'), { der: x.raw, ca: x.ca });
    }
    for (const thumb of this.#ours) {
      if (want.has(thumb)) continue;
      await m.removeTrustedCertificate(thumb);
      await m.removeIssuer(thumb);
    }
    for (const { der, ca } of want.values()) {
      if (ca) await m.addIssuer(der);
      await m.trustCertificate(der);
    }
    this.#ours = new Set(want.keys());
    await writeFile(join(m.rootDir, SYNCED), JSON.stringify([...this.#ours]));
    this.#key = key;
  }
}

const caTrusts = new Map<string, Promise<CaTrust>>();

async function caTrust(o: Opcua, dataDir: string, id: OPCUACertificateManager): Promise<CaTrust> {
  const root = join(dataDir, 'opcua-pki-ca');
  let t = caTrusts.get(root);
  if (!t) {
    const manager = caManager(o, {
      rootFolder: root,
      automaticallyAcceptUnknownCertificate: false,
      // The identity's key: no second key is made, certificates made here match the identity's.
      privateKeyProvider: { getPrivateKey: () => id.getPrivateKey() },
    });
    t = manager.initialize().then(async () => {
      const ours = await readFile(join(root, SYNCED), 'utf8').then(
        (text) => JSON.parse(text) as string[],
        () => [],
      );
      return new CaTrust(manager, ours);
    });
    caTrusts.set(root, t);
    t.catch(() => caTrusts.delete(root));
  }
  return t;
}

/**
 * The PKI of one connection: `auto` trusts the server on first use; `ca` checks it against the
 * trust store's certificates (`trusted`, brought into the folders first).
 */
export async function clientPki(
  o: Opcua,
  dataDir: string,
  policy: string,
  trusted: readonly string[],
): Promise<ClientPki> {
  const id = await identity(o, dataDir);
  const files = {
    certificateFile: join(id.rootDir, 'own/certs/client_certificate.pem'),
    privateKeyFile: id.privateKey,
  };
  if (policy !== 'ca') return { clientCertificateManager: id, rootDir: id.rootDir, ...files };
  const ca = await caTrust(o, dataDir, id);
  await ca.sync(trusted);
  return { clientCertificateManager: ca.manager, rootDir: ca.manager.rootDir, ...files };
}
