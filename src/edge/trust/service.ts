/**
 * The edge's trust store: CA certificates pushed by the edge manager (`PUT /dm/v2/ca-certificates`,
 * the manager's `CA_CERTIFICATES_SYNC` task), trusted beside the system's roots by the edge's
 * outbound TLS clients (integrations, log forwarding) wherever a connection names no CA of its
 * own, and by the OPC UA client driver's PKI for devices whose `trustServerCertificate` is `ca`.
 * A sync replaces the whole set; clients read it at each connect, and `onChange` tells those that
 * keep a copy (the OPC UA client's PKI folders). No HTTP here.
 */
import { badRequest } from '../../kernel/errors.js';
import { parsePemChain, withRoots } from '../../kernel/pem.js';
import type { TrustedCertificate, TrustRepository, TrustSet } from './repository.js';

/** Most CA certificates the edge keeps. */
export const TRUST_MAX_CERTIFICATES = 500;

export interface TrustUpdate {
  certificates: { id: string; name?: string | undefined; pem: string }[];
}

export class TrustStore {
  #set: TrustSet = { certificates: [], syncedAt: null };
  #pems: string[] = [];
  #ca: string[] | undefined;
  readonly #listeners = new Set<() => void>();

  constructor(readonly repo: TrustRepository) {}

  async load(): Promise<void> {
    this.#use(await this.repo.get());
  }

  /** The set in force. */
  view(): TrustSet & { total: number } {
    return { ...this.#set, total: this.#set.certificates.length };
  }

  /**
   * The `ca` of an outbound TLS connection that names no CA of its own: the system's roots and
   * the synchronised certificates; undefined while none is synchronised (the defaults apply).
   */
  ca(): string[] | undefined {
    return this.#ca;
  }

  /** The synchronised certificates alone (PEM). */
  pems(): readonly string[] {
    return this.#pems;
  }

  /** Calls `listener` after each replacement of the set; answers the function that stops it. */
  onChange(listener: () => void): () => void {
    this.#listeners.add(listener);
    return () => {
      this.#listeners.delete(listener);
    };
  }

  /** Replaces the set; each entry must be one valid certificate (a 400 naming it otherwise). */
  async replace(update: TrustUpdate): Promise<TrustSet & { total: number }> {
    if (update.certificates.length > TRUST_MAX_CERTIFICATES)
      throw badRequest(`certificates: at most ${TRUST_MAX_CERTIFICATES}`);
    const seen = new Set<string>();
    const certificates: TrustedCertificate[] = [];
    for (const [i, c] of update.certificates.entries()) {
      const chain = parsePemChain(c.pem, `certificates[${i}].pem`);
      for (const info of chain) {
        if (seen.has(info.fingerprint)) continue;
        seen.add(info.fingerprint);
        certificates.push({
          id: c.id,
          name: c.name ?? info.subject,
          pem: info.pem,
          fingerprint: info.fingerprint,
          subject: info.subject,
          validTo: info.validTo,
        });
      }
    }
    const set = { certificates, syncedAt: new Date().toISOString() };
    await this.repo.put(set);
    this.#use(set);
    for (const listener of this.#listeners) listener();
    return this.view();
  }

  #use(set: TrustSet): void {
    this.#set = set;
    this.#pems = set.certificates.map((c) => c.pem);
    this.#ca = withRoots(this.#pems);
  }
}
