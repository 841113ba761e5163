/**
 * CA certificates of the manager instance: uploaded by a global admin as PEM (one certificate or
 * a chain: each certificate is kept on its own, once by SHA-256 fingerprint), previewed without
 * saving, listed, downloaded and deleted; synchronised to every edge of a project as one
 * `CA_CERTIFICATES_SYNC` task (a subtask per device, retried while it is offline) that replaces
 * the edge's trust store (`PUT /dm/v2/ca-certificates`) with the manager's whole set at the time
 * the subtask runs. No HTTP here.
 */
import { AppError, ERRORS, conflict, notFound } from '../../kernel/errors.js';
import { uuidv7 } from '../../kernel/ids.js';
import { parsePemChain, type CertificateInfo } from '../../kernel/pem.js';
import { requireRole, type Principal } from '../auth/index.js';
import { managerActor, type BridgeService } from '../bridge/index.js';
import type { FleetService } from '../fleet/index.js';
import type { SubtaskContext, SubtaskOutcome, TaskService } from '../tasks/index.js';
import type { CaCertificateRow, CertificateRepository } from './repository.js';

/** Most CA certificates the manager keeps (and an edge takes in one sync). */
export const CA_MAX_CERTIFICATES = 500;

export const CA_SYNC_TASK = 'CA_CERTIFICATES_SYNC';

export function certificateView(r: CaCertificateRow) {
  return {
    id: r.id,
    name: r.name,
    subject: r.subject,
    issuer: r.issuer,
    validFrom: r.valid_from,
    validTo: r.valid_to,
    fingerprint: r.fingerprint,
    serialNumber: r.serial_number,
    ca: r.is_ca === 1,
    expired: Date.parse(r.valid_to) < Date.now(),
    createdAt: new Date(Number(r.created_at)).toISOString(),
    createdBy: r.created_by,
  };
}

const previewView = ({ pem: _pem, ...rest }: CertificateInfo) => rest;

export class CertificateService {
  constructor(
    readonly repo: CertificateRepository,
    private readonly fleet: FleetService,
    private readonly bridge: BridgeService,
    private readonly tasks: TaskService,
  ) {
    tasks.register({
      type: CA_SYNC_TASK,
      description: "replace the edges' trusted CA certificates with the manager's, one subtask per device",
      run: (ctx) => this.#syncOne(ctx),
    });
  }

  async list() {
    const items = (await this.repo.list()).map(certificateView);
    return { items, total: items.length };
  }

  async get(id: string): Promise<CaCertificateRow> {
    const row = await this.repo.get(id);
    if (!row) throw notFound(`CA certificate "${id}" not found`);
    return row;
  }

  /** What an upload of `pem` would store, without storing it. */
  preview(pem: string) {
    const items = parsePemChain(pem).map(previewView);
    return { items, total: items.length };
  }

  /**
   * Stores each certificate of `pem` not stored yet (in one transaction); answers the stored ones
   * and the fingerprints that were there already.
   */
  async upload(principal: Principal, pem: string, name?: string) {
    const chain = parsePemChain(pem);
    const now = Date.now();
    return this.repo.transaction(async (repo) => {
      const have = await repo.existing(chain.map((c) => c.fingerprint));
      const fresh = chain.filter(
        (c, i) => !have.has(c.fingerprint) && chain.findIndex((x) => x.fingerprint === c.fingerprint) === i,
      );
      if ((await repo.count()) + fresh.length > CA_MAX_CERTIFICATES)
        throw conflict(`the manager keeps at most ${CA_MAX_CERTIFICATES} CA certificates`);
      const rows: CaCertificateRow[] = fresh.map((c, i) => ({
        id: uuidv7(now),
        name: (name && chain.length > 1 ? `${name} (${i + 1})` : name) || c.subject,
        subject: c.subject,
        issuer: c.issuer,
        valid_from: c.validFrom,
        valid_to: c.validTo,
        fingerprint: c.fingerprint,
        serial_number: c.serialNumber,
        is_ca: c.ca ? 1 : 0,
        pem: c.pem,
        created_at: now,
        created_by: principal.subject,
      }));
      await repo.insert(rows);
      return {
        items: rows.map(certificateView),
        total: rows.length,
        alreadyStored: chain.filter((c) => have.has(c.fingerprint)).map((c) => c.fingerprint),
      };
    });
  }

  async remove(id: string): Promise<void> {
    if (!(await this.repo.remove(id))) throw notFound(`CA certificate "${id}" not found`);
  }

  /** One `CA_CERTIFICATES_SYNC` task over every device of the project (admin on the project). */
  async sync(principal: Principal, projectId: string, deadlineSeconds?: number) {
    const project = await this.fleet.project(principal, projectId);
    requireRole(principal, { projectId: project.id, companyId: project.company_id }, 'admin');
    const devices = (await this.fleet.prettyNames(principal, projectId)).items.map((d) => d.deviceId);
    const total = await this.repo.count();
    return this.tasks.create(principal, {
      type: CA_SYNC_TASK,
      description: `synchronise ${total} CA certificate(s) to the ${devices.length} device(s) of project "${project.name}"`,
      params: { projectId },
      scope: { companyId: project.company_id, projectId: project.id },
      devices,
      deadlineSeconds,
    });
  }

  async #syncOne(ctx: SubtaskContext): Promise<SubtaskOutcome> {
    const deviceId = ctx.subtask.deviceId!;
    const rows = await this.repo.list();
    const body = { certificates: rows.map((r) => ({ id: r.id, name: r.name, pem: r.pem })) };
    await ctx.markSent();
    // Replacing the set is idempotent: a resend after a lost answer does no harm.
    const r = await this.bridge.json(
      deviceId,
      'PUT',
      '/dm/v2/ca-certificates',
      body,
      {},
      managerActor('ca-sync'),
    );
    if (r.status === 200) {
      return {
        status: 'SUCCEEDED',
        result: { total: r.body?.total ?? rows.length },
        message: `${rows.length} CA certificate(s) trusted by the edge`,
      };
    }
    const message = `the edge answered ${r.status}: ${r.body?.message ?? JSON.stringify(r.body)?.slice(0, 300)}`;
    if (r.status >= 500) throw new AppError(ERRORS.edgeError, message);
    return { status: 'FAILED', error: message, result: r.body };
  }
}
