/** The trust module's table: the CA certificates the manager synchronised, as one value. */
import type { Db } from '../../kernel/db/index.js';
import { SettingsTable } from '../../kernel/db/settings.js';

export interface TrustedCertificate {
  /** The manager's id of the certificate. */
  id: string;
  name: string;
  pem: string;
  fingerprint: string;
  subject: string;
  validTo: string;
}

export interface TrustSet {
  certificates: TrustedCertificate[];
  /** When the set was last replaced (RFC 3339), null when never. */
  syncedAt: string | null;
}

export class TrustRepository {
  readonly #settings: SettingsTable;
  constructor(db: Db) {
    this.#settings = new SettingsTable(db, 'trust_setting');
  }

  async get(): Promise<TrustSet> {
    const text = await this.#settings.get('certificates');
    return text === undefined ? { certificates: [], syncedAt: null } : (JSON.parse(text) as TrustSet);
  }

  /** Replaces the whole set (one row: one write). */
  put(set: TrustSet): Promise<void> {
    return this.#settings.put('certificates', JSON.stringify(set));
  }
}
