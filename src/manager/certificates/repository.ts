/** The CA certificates module's table (`mgr_ca_certificate`); no other module reads or writes it. */
import type { Transaction } from '../../kernel/db/index.js';
import { BoundRepository } from '../../kernel/db/bound-repository.js';

export interface CaCertificateRow {
  id: string;
  name: string;
  subject: string;
  issuer: string;
  valid_from: string;
  valid_to: string;
  fingerprint: string;
  serial_number: string;
  is_ca: number;
  pem: string;
  created_at: number;
  created_by: string;
}

export interface CertificateTables {
  mgr_ca_certificate: CaCertificateRow;
}

export class CertificateRepository extends BoundRepository<CertificateTables, CertificateRepository> {
  protected bind(trx: Transaction<CertificateTables>): CertificateRepository {
    return new CertificateRepository(this.database, trx);
  }

  /** Every certificate, oldest first (at most `CA_MAX_CERTIFICATES`, see service.ts). */
  list(): Promise<CaCertificateRow[]> {
    return this.db.selectFrom('mgr_ca_certificate').selectAll().orderBy('created_at').orderBy('id').execute();
  }

  get(id: string): Promise<CaCertificateRow | undefined> {
    return this.db.selectFrom('mgr_ca_certificate').selectAll().where('id', '=', id).executeTakeFirst();
  }

  async count(): Promise<number> {
    const r = await this.db
      .selectFrom('mgr_ca_certificate')
      .select((eb) => eb.fn.countAll<number>().as('n'))
      .executeTakeFirstOrThrow();
    return Number(r.n);
  }

  /** The fingerprints among `fingerprints` already stored. */
  async existing(fingerprints: string[]): Promise<Set<string>> {
    if (fingerprints.length === 0) return new Set();
    const rows = await this.db
      .selectFrom('mgr_ca_certificate')
      .select('fingerprint')
      .where('fingerprint', 'in', fingerprints)
      .execute();
    return new Set(rows.map((r) => r.fingerprint));
  }

  async insert(rows: CaCertificateRow[]): Promise<void> {
    if (rows.length > 0) await this.db.insertInto('mgr_ca_certificate').values(rows).execute();
  }

  async remove(id: string): Promise<boolean> {
    const r = await this.db.deleteFrom('mgr_ca_certificate').where('id', '=', id).executeTakeFirst();
    return Number(r.numDeletedRows) > 0;
  }
}
