/**
 * Instance settings of the manager: the licence type (`licenseCoreName`), the instance mode, the
 * certificate of the MQTT TLS listener, the user's certificate for the manager's own HTTPS
 * (validated, announced to the linked edges, which pin it, then swapped on the live listeners
 * without a restart: `setSecureContext`, so connections in flight keep their session and new
 * ones get the new certificate). Marketplace secrets (`/admin/v1/mpc-secrets/{key}`) are the
 * marketplace module's. No HTTP here.
 */
import { X509Certificate, createPrivateKey } from 'node:crypto';
import { mkdirSync, renameSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { createSecureContext } from 'node:tls';
import { badRequest, conflict } from '../../kernel/errors.js';
import { parsePemChain, type CertificateInfo } from '../../kernel/pem.js';
import type { SecretBox } from '../../kernel/secret-box.js';
import type { InstanceSettingsRepository } from './repository.js';

export const INSTANCE_MODES = ['STANDALONE', 'HUB', 'SPOKE'] as const;
export type InstanceMode = (typeof INSTANCE_MODES)[number];

export const LICENSE = {
  licenseType: 'OPEN_SOURCE',
  licenseCoreName: 'Millwright Core',
  edition: 'open-source',
  maxDevices: null,
  expiresAt: null,
} as const;

export interface KeyPair {
  certificate: string;
  privateKey: string;
  passphrase?: string | undefined;
}

/** A certificate chain and its key, checked: they match, the leaf is valid now; the key as PKCS#8. */
export function checkPair(pair: KeyPair): { chain: CertificateInfo[]; key: string } {
  const chain = parsePemChain(pair.certificate, 'certificate');
  let key: string;
  try {
    key = createPrivateKey({
      key: pair.privateKey,
      format: 'pem',
      ...(pair.passphrase ? { passphrase: pair.passphrase } : {}),
    })
      .export({ format: 'pem', type: 'pkcs8' })
      .toString();
  } catch (err) {
    throw badRequest(`privateKey: not a usable PEM private key (${(err as Error).message})`);
  }
  const leaf = new X509Certificate(chain[0]!.pem);
  if (!leaf.checkPrivateKey(createPrivateKey(key)))
    throw badRequest('privateKey does not belong to the certificate (the first certificate of the chain)');
  const now = Date.now();
  if (Date.parse(chain[0]!.validTo) < now) throw badRequest(`certificate expired on ${chain[0]!.validTo}`);
  if (Date.parse(chain[0]!.validFrom) > now)
    throw badRequest(`certificate is not valid before ${chain[0]!.validFrom}`);
  try {
    createSecureContext({ cert: chain.map((c) => c.pem).join(''), key });
  } catch (err) {
    throw badRequest(`the certificate and key cannot serve TLS: ${(err as Error).message}`);
  }
  return { chain, key };
}

const info = ({ pem: _pem, ...rest }: CertificateInfo) => rest;

export interface HttpsSwap {
  /**
   * Tells every edge linked to this process the new certificate's fingerprint, over its link (the
   * edges pin the manager's certificate); answers those that did not take it.
   */
  announce(
    fingerprint: string,
  ): Promise<{ announced: number; failed: { deviceId: string; message: string }[] }>;
  /** Puts the certificate on every HTTPS listener of the manager (main API, admin console API). */
  swap(cert: string, key: string): number;
  /** Where the certificate is kept across restarts, or why it cannot be changed here. */
  store: { dir: string } | { refused: string };
}

export class InstanceSettingsService {
  constructor(
    private readonly repo: InstanceSettingsRepository,
    private readonly box: SecretBox,
    private readonly https: HttpsSwap,
  ) {}

  license() {
    return { ...LICENSE };
  }

  async instanceMode() {
    const mode = (await this.repo.get('instance-mode')) ?? 'STANDALONE';
    return { mode };
  }

  async setInstanceMode(mode: InstanceMode) {
    await this.repo.put('instance-mode', mode);
    return { mode };
  }

  async mqttCertificate() {
    const text = await this.repo.get('mqtt-ssl-certificate');
    if (!text) return { configured: false, certificates: [], updatedAt: null };
    const v = JSON.parse(text) as { certificate: string; updatedAt: string };
    return { configured: true, certificates: parsePemChain(v.certificate).map(info), updatedAt: v.updatedAt };
  }

  /** Keeps the MQTT listener's certificate (the key sealed); answers what a GET answers. */
  async setMqttCertificate(pair: KeyPair) {
    const { chain, key } = checkPair(pair);
    const certificate = chain.map((c) => c.pem).join('');
    await this.repo.put(
      'mqtt-ssl-certificate',
      JSON.stringify({ certificate, key: this.box.seal(key), updatedAt: new Date().toISOString() }),
    );
    return this.mqttCertificate();
  }

  /**
   * The user's certificate for the manager's HTTPS: checked, written where the manager reads it
   * at start (`<data-dir>/tls/`, replaced atomically) and swapped on the live listeners.
   */
  async enableUserSsl(pair: KeyPair) {
    const { chain, key } = checkPair(pair);
    const store = this.https.store;
    if ('refused' in store) throw conflict(store.refused);
    const cert = chain.map((c) => c.pem).join('');
    // The edges pin the certificate: each linked one learns the new one first, over its link.
    const edges = await this.https.announce(chain[0]!.fingerprint);
    mkdirSync(store.dir, { recursive: true, mode: 0o700 });
    for (const [name, text, mode] of [
      ['server.key', key, 0o600],
      ['server.crt', cert, 0o644],
    ] as const) {
      const file = join(store.dir, name);
      writeFileSync(`${file}.new`, text, { mode });
      renameSync(`${file}.new`, file);
    }
    const listeners = this.https.swap(cert, key);
    return { enabled: true, listeners, certificates: chain.map(info), edges };
  }
}
