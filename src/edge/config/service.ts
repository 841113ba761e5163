/**
 * Configuration templates and snapshots of the edge: the whole edge as one document, made of the
 * sections every module contributes (`ctx.sections()`), exported, previewed, applied (in one
 * database transaction across the sections, after a snapshot), merged and rolled back. No HTTP.
 */
import type { Logger } from 'pino';
import { AppError, badRequest, conflict, notFound, ERRORS } from '../../kernel/errors.js';
import type { Database } from '../../kernel/db/index.js';
import { uuidv7 } from '../../kernel/ids.js';
import { runList, type ListPage, type ListSpec } from '../../kernel/paging.js';
import type {
  ApplyMode,
  ConfigSection,
  SectionApplyContext,
  SectionDiff,
  SectionIssue,
} from '../../kernel/service/index.js';
import {
  TEMPLATE_FORMAT,
  TEMPLATE_VERSION,
  checkEnvelope,
  escapePlaceholders,
  checkParameters,
  hasEncrypted,
  malformed,
  protectSecrets,
  revealSecrets,
  substitute,
  type TemplateDocument,
} from './document.js';
import { joinPieces, mayHoldSecret, piecesInclude, protectSecretsBytes } from './document-bytes.js';
import { exportBytes, exportText, RecentExport } from './export.js';
import { UploadSessions } from './sessions.js';
import { ConfigRepository, pack, Packer, unpack, unpackBytes } from './repository.js';
import {
  CONFIG_LIMITS,
  IDEMPOTENCY_KEYS_KEPT,
  snapshotView,
  TEMPLATE_LIST,
  templateView,
  type ApplyOptions,
  type ApplyResult,
  type PreviewResult,
  type SnapshotView,
  type TemplateView,
} from './shapes.js';

export {
  CONFIG_LIMITS,
  IDEMPOTENCY_KEYS_KEPT,
  TEMPLATE_LIST,
  type ApplyOptions,
  type ApplyResult,
  type PreviewResult,
  type SnapshotView,
  type TemplateView,
} from './shapes.js';

export interface ConfigServiceOptions {
  database: Database;
  sections: () => ConfigSection[];
  logger?: Logger | undefined;
  /** Restarts what a merge-apply restarts (the acquisition engine); answers what it restarted. */
  restart?: (() => Promise<string[]>) | undefined;
}

export class ConfigService {
  readonly #repo: ConfigRepository;
  readonly #database: Database;
  readonly #sections: () => ConfigSection[];
  readonly #log: Logger | undefined;
  readonly #restart: (() => Promise<string[]>) | undefined;
  readonly #uploads = new UploadSessions();
  readonly #recent = new RecentExport();
  #busy: string | null = null;

  constructor(options: ConfigServiceOptions) {
    this.#database = options.database;
    this.#repo = new ConfigRepository(options.database);
    this.#sections = options.sections;
    this.#log = options.logger;
    this.#restart = options.restart;
  }

  #section(name: string): ConfigSection | undefined {
    return this.#sections().find((s) => s.name === name);
  }

  // --- export

  /**
   * The current configuration as a document: every `{{` of the sections escaped (`\{{`), so that
   * applying it gives the same text back (modules have placeholders of their own, the twins').
   */
  async exportDocument(): Promise<TemplateDocument> {
    return {
      format: TEMPLATE_FORMAT,
      version: TEMPLATE_VERSION,
      createdAt: new Date().toISOString(),
      sections: escapePlaceholders(await this.#exportSections()),
    };
  }

  /** The JSON text of `exportDocument()`, byte for byte, and its sections' names (`export.ts`). */
  exportText(): Promise<{ text: string; sections: string[] }> {
    return exportText(this.#sections());
  }

  /** Every section's export, as the sections answer it (not escaped). */
  async #exportSections(): Promise<Record<string, unknown>> {
    const sections: Record<string, unknown> = {};
    for (const s of this.#sections()) sections[s.name] = await s.export();
    return sections;
  }

  /** The current configuration as it leaves the edge: secrets encrypted under the key, or left out. */
  async exportForDownload(encryptionKey?: string): Promise<TemplateDocument> {
    return protectSecrets(await this.exportDocument(), encryptionKey);
  }

  // --- checking

  /**
   * A document ready to apply: envelope checked, secrets decrypted, parameters substituted, and
   * every section checked by its module. Anything wrong is a 400 naming the section and the item.
   */
  async prepare(doc: TemplateDocument, options: ApplyOptions): Promise<TemplateDocument> {
    checkEnvelope(doc);
    const issues: Array<SectionIssue & { section: string }> = [];
    for (const name of Object.keys(doc.sections)) {
      if (!this.#section(name)) {
        const known = this.#sections().map((s) => s.name);
        issues.push({
          section: name,
          path: '',
          message: `unknown section "${name}"; this edge has ${known.join(', ')}`,
        });
      }
    }
    if (options.parameters !== undefined) checkParameters(options.parameters, 'parameters');
    for (const name of Object.keys(options.parameters ?? {})) {
      if (!(name in doc.sections))
        issues.push({
          section: name,
          path: '',
          message: `parameters are given for section "${name}", which the template does not have`,
        });
    }
    if (issues.length > 0) throw malformed(issues);
    const revealed = await revealSecrets(doc, options.encryptionKey);
    const sections: Record<string, unknown> = {};
    for (const [name, content] of Object.entries(revealed.sections)) {
      const values = { ...revealed.parameters?.[name], ...options.parameters?.[name] };
      const found: SectionIssue[] = [];
      const substituted = substitute(content, values, found);
      for (const i of found) issues.push({ section: name, ...i });
      if (found.length > 0) continue;
      for (const i of await this.#section(name)!.validate(substituted)) issues.push({ section: name, ...i });
      sections[name] = substituted;
    }
    if (issues.length > 0) throw malformed(issues);
    const out: TemplateDocument = { ...revealed, sections };
    delete out.parameters;
    return out;
  }

  // --- preview and apply

  async preview(
    doc: TemplateDocument,
    options: ApplyOptions & { snapshot?: boolean } = {},
  ): Promise<PreviewResult> {
    const mode = options.mode ?? 'legacy';
    const ready = await this.prepare(doc, options);
    const sectionMode = options.snapshot && mode === 'legacy' ? 'use' : mode;
    const out: PreviewResult = { mode, sections: {}, restarts: [] };
    for (const [name, content] of Object.entries(ready.sections)) {
      const s = this.#section(name)!;
      const diff = await diffSection(s, content, sectionMode);
      out.sections[name] = diff;
      for (const r of diff.restarts) if (!out.restarts.includes(r)) out.restarts.push(r);
    }
    return out;
  }

  /**
   * Applies `doc`: captures a snapshot, then writes every section in one transaction; a failure
   * rolls the transaction back, so the configuration stays that of the snapshot. With `failFast`
   * false, items that fail are reported and skipped and the rest is applied.
   */
  async apply(
    doc: TemplateDocument,
    options: ApplyOptions & { snapshot?: boolean } = {},
  ): Promise<ApplyResult> {
    if (this.#busy)
      throw conflict(`another configuration apply is running (${this.#busy}); try again when it is done`);
    this.#busy = 'preparing';
    try {
      const key = options.idempotencyKey;
      // Checked again here, where applies are one at a time: a first apply with the key may
      // have committed since the route looked.
      const prior = key !== undefined ? await this.replay(key) : undefined;
      if (prior) return prior;
      const mode = options.mode ?? 'legacy';
      const failFast = options.failFast ?? true;
      const ready = await this.prepare(doc, options);
      // A snapshot rolls back: legacy (or no mode) on a snapshot makes each section exactly it.
      const sectionMode: ApplyMode = options.snapshot && mode === 'legacy' ? 'use' : mode;
      const preview: PreviewResult = { mode, sections: {}, restarts: [] };
      for (const [name, content] of Object.entries(ready.sections)) {
        const s = this.#section(name)!;
        const diff = await diffSection(s, content, sectionMode);
        preview.sections[name] = diff;
        for (const r of diff.restarts) if (!preview.restarts.includes(r)) preview.restarts.push(r);
      }
      this.#busy = 'capturing a snapshot';
      const snapshot = await this.captureSnapshot(`before apply (${mode})`);
      this.#busy = 'applying';
      const failed: Array<{ item: string; message: string }> = [];
      const after: Array<() => void | Promise<void>> = [];
      const started = Date.now();
      try {
        await this.#database.transaction(async (trx) => {
          for (const [name, content] of Object.entries(ready.sections)) {
            const ctx: SectionApplyContext = {
              mode: sectionMode,
              trx,
              failFast,
              fail: (item, message) => failed.push({ item, message }),
              afterCommit: (fn) => after.push(fn),
              progress: (done, total) => options.onProgress?.({ section: name, done, total }),
            };
            await this.#section(name)!.apply(content, ctx);
          }
          // The key is recorded with the change it stands for: both or neither.
          if (key !== undefined) {
            const answer = {
              mode,
              snapshotId: snapshot.id,
              applied: true,
              failed: failed.slice(0, 100),
              restarts: preview.restarts,
            };
            await this.#repo.recordIdempotent(trx, key, JSON.stringify(answer), IDEMPOTENCY_KEYS_KEPT);
          }
        });
      } catch (err) {
        this.#log?.warn({ err, snapshot: snapshot.id }, 'configuration apply failed; nothing was changed');
        if (err instanceof AppError) {
          throw new AppError(
            err.kind,
            `${err.message} (nothing was applied; the configuration is that of snapshot ${snapshot.id})`,
            {
              details: { snapshotId: snapshot.id },
              status: err.status,
            },
          );
        }
        throw err;
      }
      for (const fn of after) {
        try {
          await fn();
        } catch (err) {
          this.#log?.error({ err }, 'configuration apply: a module did not follow the change');
        }
      }
      let restarted: string[] = [];
      // What a merge-apply restarts is the acquisition engine, and only when devices or tags changed.
      if (mode === 'merge-apply' && preview.restarts.includes('acquisition') && this.#restart)
        restarted = await this.#restart();
      this.#log?.info(
        {
          mode,
          snapshot: snapshot.id,
          ms: Date.now() - started,
          failed: failed.length,
          sections: Object.keys(ready.sections),
        },
        'configuration applied',
      );
      return { ...preview, snapshotId: snapshot.id, applied: true, failed, restarted };
    } finally {
      this.#busy = null;
    }
  }

  // --- snapshots

  async captureSnapshot(reason: string): Promise<SnapshotView> {
    const packer = new Packer();
    const { size, sections } = await exportBytes(this.#sections(), (piece) => packer.add(piece));
    const now = Date.now();
    const row = {
      id: uuidv7(now),
      reason,
      sections: JSON.stringify(sections),
      size,
      document: await packer.done(),
      created_at: now,
    };
    await this.#repo.insertSnapshot(row);
    // Bounded: beyond the most recent `maxSnapshots`, the oldest go.
    const all = await this.#repo.listSnapshots();
    if (all.length > CONFIG_LIMITS.maxSnapshots)
      await this.#repo.deleteSnapshots(all.slice(CONFIG_LIMITS.maxSnapshots).map((s) => s.id));
    return snapshotView(row);
  }

  async listSnapshots(): Promise<SnapshotView[]> {
    return (await this.#repo.listSnapshots()).map(snapshotView);
  }

  /**
   * Deletes snapshots oldest first, keeping the most recent, at most `prunePerCall` per call;
   * `truncated` says more remain (call again). `ids` limits it to those snapshots; naming the most
   * recent one is refused.
   */
  async pruneSnapshots(
    ids?: string[],
  ): Promise<{ deleted: string[]; remaining: number; truncated: boolean }> {
    const all = await this.#repo.listSnapshots();
    const latest = all[0];
    if (ids && latest && ids.includes(latest.id))
      throw new AppError(
        ERRORS.latestSnapshot,
        `snapshot ${latest.id} is the most recent snapshot and cannot be deleted`,
      );
    let candidates = all.slice(1).reverse();
    if (ids) {
      const known = new Set(all.map((s) => s.id));
      const missing = ids.find((id) => !known.has(id));
      if (missing) throw notFound(`snapshot "${missing}" not found`);
      candidates = candidates.filter((s) => ids.includes(s.id));
    }
    const batch = candidates.slice(0, CONFIG_LIMITS.prunePerCall).map((s) => s.id);
    await this.#repo.deleteSnapshots(batch);
    return {
      deleted: batch,
      remaining: all.length - batch.length,
      truncated: candidates.length > batch.length,
    };
  }

  // --- saved templates

  async #saveDocument(
    doc: TemplateDocument,
    meta: { name: string; description?: string | undefined },
  ): Promise<TemplateView> {
    return this.#saveBytes([Buffer.from(JSON.stringify(doc), 'utf8')], Object.keys(doc.sections), meta, doc);
  }

  /**
   * Saves the UTF-8 bytes of a document's JSON text, in pieces (`doc`, when the caller has it: else
   * it is parsed, and only when the text may hold an encrypted secret).
   */
  async #saveBytes(
    pieces: Buffer[],
    sections: string[],
    meta: { name: string; description?: string | undefined },
    doc?: TemplateDocument,
    packer?: Packer,
  ): Promise<TemplateView> {
    const name = meta.name.trim();
    if (name === '' || name.length > 200) throw badRequest('name must have 1 to 200 characters');
    if ((await this.#repo.countTemplates()) >= CONFIG_LIMITS.maxTemplates)
      throw conflict(`at most ${CONFIG_LIMITS.maxTemplates} templates are saved; delete some first`);
    this.#recent.clear();
    const size = pieces.reduce((n, p) => n + p.length, 0);
    if (size > CONFIG_LIMITS.maxTemplateBytes)
      throw new AppError(
        ERRORS.payloadTooLarge,
        `a template has at most ${CONFIG_LIMITS.maxTemplateBytes} bytes`,
      );
    const now = Date.now();
    const row = {
      id: uuidv7(now),
      name,
      description: meta.description ?? '',
      sections: JSON.stringify(sections),
      // No `"$encrypted"` in the text, no encrypted secret: the walk only when there may be one.
      encrypted:
        piecesInclude(pieces, '"$encrypted"') &&
        hasEncrypted(doc ?? (JSON.parse(joinPieces(pieces).toString('utf8')) as TemplateDocument))
          ? 1
          : 0,
      size,
      // Packed while it was written (`createFromCurrent`), or now.
      document: packer ? await packer.done() : await pack(joinPieces(pieces)),
      created_at: now,
      updated_at: now,
    };
    await this.#repo.insertTemplate(row);
    return templateView(row);
  }

  /** Saves an uploaded template (envelope checked; sections checked at apply). */
  saveTemplate(
    doc: TemplateDocument,
    meta: { name: string; description?: string | undefined },
  ): Promise<TemplateView> {
    checkEnvelope(doc);
    return this.#saveDocument(doc, meta);
  }

  /**
   * Saves the current configuration as a template (secrets kept on the edge, in the clear); its
   * bytes are kept for the download that follows in an export (`RecentExport`).
   */
  async createFromCurrent(meta: { name: string; description?: string | undefined }): Promise<TemplateView> {
    const packer = new Packer();
    const { pieces, sections, ranges } = await exportBytes(this.#sections(), (piece) => packer.add(piece));
    const view = await this.#saveBytes(pieces, sections, meta, undefined, packer);
    this.#recent.keep(view.id, pieces, ranges);
    return view;
  }

  async listTemplates(spec: ListSpec): Promise<ListPage<TemplateView>> {
    const page = await runList(this.#database, this.#repo.templateListQuery(), TEMPLATE_LIST, spec);
    return { items: page.items.map(templateView), total: page.total };
  }

  async getTemplate(id: string): Promise<TemplateView> {
    const m = await this.#repo.getTemplateMeta(id);
    if (!m) throw notFound(`template "${id}" not found`);
    return templateView(m);
  }

  async updateTemplate(
    id: string,
    set: { name?: string | undefined; description?: string | undefined },
  ): Promise<TemplateView> {
    if (set.name !== undefined && (set.name.trim() === '' || set.name.length > 200))
      throw badRequest('name must have 1 to 200 characters');
    const ok = await this.#repo.updateTemplateMeta(id, {
      ...(set.name !== undefined ? { name: set.name.trim() } : {}),
      ...(set.description !== undefined ? { description: set.description } : {}),
      updated_at: Date.now(),
    });
    if (!ok) throw notFound(`template "${id}" not found`);
    return this.getTemplate(id);
  }

  async deleteTemplate(id: string): Promise<void> {
    this.#recent.drop(id);
    if ((await this.#repo.deleteTemplates([id])).length === 0) throw notFound(`template "${id}" not found`);
  }

  async deleteTemplates(ids: string[]): Promise<{ deleted: string[]; notFound: string[] }> {
    this.#recent.drop(...ids);
    const deleted = await this.#repo.deleteTemplates([...new Set(ids)]);
    const set = new Set(deleted);
    return { deleted, notFound: ids.filter((id) => !set.has(id)) };
  }

  /** The recorded outcome of an apply made with `idempotencyKey` `key`, marked `replayed`; or none. */
  async replay(key: string): Promise<ApplyResult | undefined> {
    const prior = await this.#repo.idempotentAnswer(key);
    if (prior === undefined) return undefined;
    const recorded = JSON.parse(prior) as Omit<ApplyResult, 'sections' | 'restarted'>;
    return { sections: {}, restarted: [], ...recorded, replayed: true };
  }

  /** A saved template or a snapshot, by ID, as stored (a snapshot is marked). */
  async load(id: string): Promise<{ doc: TemplateDocument; snapshot: boolean }> {
    const t = await this.#repo.getTemplate(id);
    if (t) return { doc: JSON.parse(await unpack(t.document, t.size)) as TemplateDocument, snapshot: false };
    const s = await this.#repo.getSnapshot(id);
    if (s) return { doc: JSON.parse(await unpack(s.document, s.size)) as TemplateDocument, snapshot: true };
    throw notFound(`template or snapshot "${id}" not found`);
  }

  /**
   * A saved template as it leaves the edge: the UTF-8 bytes of its JSON text, in pieces (in order),
   * secrets encrypted under the key, or left out. A template without secrets leaves as it was
   * stored (the bytes of the text `JSON.stringify` gave when it was saved), without being decoded,
   * parsed and written again.
   */
  async download(id: string, encryptionKey?: string): Promise<Buffer[]> {
    // Just saved by an export: its pieces and their sections' ranges, not the store's gunzip.
    const kept = this.#recent.take(id);
    let pieces = kept?.pieces;
    if (!pieces || !(await this.#repo.getTemplateMeta(id))) {
      const t = await this.#repo.getTemplate(id);
      if (!t) throw notFound(`template "${id}" not found`);
      pieces = [await unpackBytes(t.document, t.size)];
    }
    if (!mayHoldSecret(pieces) && !piecesInclude(pieces, '"encryption"')) return pieces;
    // Secrets to protect: only the sections that may hold one are parsed and written again.
    return protectSecretsBytes(pieces, encryptionKey, kept?.ranges);
  }

  /**
   * Saves the union of the current configuration and template `id` as a new template. When the
   * template would change items that exist, `confirmOverwrite` must be set (409 `confirm_required`
   * otherwise, listing them).
   */
  async merge(
    id: string,
    options: {
      name?: string | undefined;
      description?: string | undefined;
      confirmOverwrite?: boolean | undefined;
      encryptionKey?: string | undefined;
    },
  ): Promise<TemplateView & { overwrites: Record<string, string[]> }> {
    const { doc } = await this.load(id);
    const ready = await this.prepare(doc, { encryptionKey: options.encryptionKey });
    const current = await this.#exportSections();
    const overwrites: Record<string, string[]> = {};
    const sections: Record<string, unknown> = { ...current };
    for (const [name, content] of Object.entries(ready.sections)) {
      const r = this.#section(name)!.merge(current[name], content);
      sections[name] = r.merged;
      if (r.overwrites.length > 0) overwrites[name] = r.overwrites;
    }
    const count = Object.values(overwrites).reduce((n, l) => n + l.length, 0);
    if (count > 0 && !options.confirmOverwrite) {
      throw new AppError(
        ERRORS.confirmRequired,
        `the merge would overwrite ${count} existing items (${Object.entries(overwrites)
          .map(([s, l]) => `${s}: ${l.slice(0, 5).join(', ')}${l.length > 5 ? ', ...' : ''}`)
          .join('; ')}); set confirm_overwrite to save it`,
        { details: { overwrites } },
      );
    }
    const meta = await this.getTemplate(id).catch(() => undefined);
    const saved = await this.#saveDocument(
      {
        format: TEMPLATE_FORMAT,
        version: TEMPLATE_VERSION,
        createdAt: new Date().toISOString(),
        sections: escapePlaceholders(sections),
      },
      { name: options.name ?? `${meta?.name ?? id} (merged)`, description: options.description },
    );
    return { ...saved, overwrites };
  }

  // --- upload sessions (`sessions.ts`)

  openSession(): { id: string } {
    return this.#uploads.open();
  }

  /** Appends a chunk; `offset`, when given, must be the bytes received so far. */
  appendSession(id: string, chunk: Buffer, offset?: number): { id: string; size: number } {
    return this.#uploads.append(id, chunk, offset);
  }

  /** The uploaded document of a session (parsed; the session stays until `closeSession`). */
  sessionDocument(id: string): TemplateDocument {
    return this.#uploads.document(id);
  }

  closeSession(id: string): void {
    this.#uploads.close(id);
  }
}

/** What applying `content` to section `s` would change. */
async function diffSection(s: ConfigSection, content: unknown, mode: ApplyMode): Promise<SectionDiff> {
  return s.diffCurrent ? s.diffCurrent(content, mode) : s.diff(await s.export(), content, mode);
}
