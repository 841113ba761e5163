/**
 * The asset hub: another manager's published catalogue (its `/mpcs/v1/`), browsed from here, and
 * its items imported into a company of this manager, updated to newer versions, deleted and
 * synchronised (which imports have a newer version on the hub). Each import keeps the content of
 * its version here; configuration templates also become a company template of the templates
 * module, updated with each new version; other kinds go to a registered target (targets.ts). Every
 * import, update and delete is reported to the hub as a usage event (telemetry.ts). No HTTP here.
 */
import { randomUUID } from 'node:crypto';
import type { Logger } from 'pino';
import { AppError, badRequest, conflict, notFound, ERRORS } from '../../kernel/errors.js';
import type { ListSpec } from '../../kernel/paging.js';
import { requireRole, type Principal } from '../auth/index.js';
import type { FleetService } from '../fleet/index.js';
import type { TemplateService } from '../templates/index.js';
import type { HubClient } from './client.js';
import type { AssetHubRepository, ImportRow } from './repository.js';
import type { HubSettings } from './settings.js';
import type { AssetHubImportTarget, ImportedItem } from './targets.js';
import type { TelemetryOutbox } from './telemetry.js';

const iso = (ms: number | null) => (ms === null ? null : new Date(Number(ms)).toISOString());
const enc = encodeURIComponent;

export function importView(r: Omit<ImportRow, 'content'>) {
  return {
    importId: r.id,
    companyId: r.company_id,
    hubUrl: r.hub_url,
    itemId: r.item_id,
    itemName: r.item_name,
    kind: r.kind,
    version: r.version,
    latestVersion: r.latest_version,
    updateAvailable: r.latest_version !== null && r.latest_version !== r.version,
    size: Number(r.size),
    targetRef: r.target_ref,
    importedBy: r.imported_by,
    importedAt: iso(r.imported_at),
    updatedBy: r.updated_by,
    updatedAt: iso(r.updated_at),
    syncedAt: iso(r.synced_at),
  };
}

interface HubVersion {
  version: string;
  kind: string;
  name: string;
  content: unknown;
}

export class AssetHubService {
  readonly #repo: AssetHubRepository;
  readonly #settings: HubSettings;
  readonly #fleet: FleetService;
  readonly #templates: TemplateService;
  readonly #telemetry: TelemetryOutbox;
  readonly #maxImports: number;
  readonly #log: Logger;
  readonly #targets = new Map<string, AssetHubImportTarget>();

  constructor(deps: {
    repo: AssetHubRepository;
    settings: HubSettings;
    fleet: FleetService;
    templates: TemplateService;
    telemetry: TelemetryOutbox;
    maxImports: number;
    logger: Logger;
  }) {
    this.#repo = deps.repo;
    this.#settings = deps.settings;
    this.#fleet = deps.fleet;
    this.#templates = deps.templates;
    this.#telemetry = deps.telemetry;
    this.#maxImports = deps.maxImports;
    this.#log = deps.logger;
    this.registerTarget(this.#templateTarget());
  }

  /** The module that owns a kind takes its imports from now on (see targets.ts). */
  registerTarget(target: AssetHubImportTarget): void {
    this.#targets.set(target.kind, target);
  }

  // --- the hub's catalogue --------------------------------------------------------------------------

  /** A page of the hub's items; the query string is passed on (offset, limit, sort, filter, q, kind, category). */
  async catalogue(query: Record<string, unknown>) {
    const hub = await this.#settings.required();
    const params = new URLSearchParams();
    for (const [k, v] of Object.entries(query))
      for (const x of Array.isArray(v) ? v : [v]) if (x !== undefined) params.append(k, String(x));
    const qs = params.toString();
    return hub.get(`/mpcs/v1/items${qs ? `?${qs}` : ''}`, 'browsing the catalogue');
  }

  async catalogueItem(itemId: string) {
    return (await this.#settings.required()).get(`/mpcs/v1/items/${enc(itemId)}`, `reading item "${itemId}"`);
  }

  async catalogueVersions(itemId: string, query: Record<string, unknown>) {
    const params = new URLSearchParams();
    for (const k of ['offset', 'limit', 'sort'])
      if (typeof query[k] === 'string') params.append(k, query[k] as string);
    const qs = params.toString();
    return (await this.#settings.required()).get(
      `/mpcs/v1/items/${enc(itemId)}/versions${qs ? `?${qs}` : ''}`,
      `reading the versions of item "${itemId}"`,
    );
  }

  async catalogueVersion(itemId: string, version: string): Promise<HubVersion> {
    return this.#version(await this.#settings.required(), itemId, version);
  }

  async #version(hub: HubClient, itemId: string, version: string): Promise<HubVersion> {
    const v = (await hub.get(
      `/mpcs/v1/items/${enc(itemId)}/versions/${enc(version)}`,
      `reading version ${version} of item "${itemId}"`,
    )) as HubVersion | null;
    if (!v || typeof v.version !== 'string' || typeof v.kind !== 'string' || typeof v.name !== 'string')
      throw new AppError(
        ERRORS.assetHubError,
        `the asset hub answered a version of item "${itemId}" without version, kind or name`,
      );
    return v;
  }

  // --- imports --------------------------------------------------------------------------------------

  /** The company by name, when the caller may read it. */
  async #company(principal: Principal, companyName: string) {
    const page = await this.#fleet.listCompanies(principal, {
      offset: 0,
      limit: 1,
      sort: [],
      filter: [{ field: 'companyName', op: 'eq', value: companyName }],
    });
    const c = page.items[0];
    if (!c) throw notFound(`company "${companyName}" not found`);
    return { id: c.id, name: c.companyName };
  }

  async #writable(principal: Principal, companyName: string) {
    const c = await this.#company(principal, companyName);
    requireRole(principal, { companyId: c.id }, 'operator');
    return c;
  }

  async #import(companyId: string, importId: string): Promise<ImportRow> {
    const r = await this.#repo.importById(companyId, importId);
    if (!r) throw notFound(`import "${importId}" not found`);
    return r;
  }

  #item(
    c: { id: string; name: string },
    r: { item_id: string; item_name: string; kind: string },
    v: HubVersion,
  ) {
    return {
      companyId: c.id,
      companyName: c.name,
      itemId: r.item_id,
      name: r.item_name,
      kind: r.kind,
      version: v.version,
      content: v.content,
    } satisfies ImportedItem;
  }

  async importItem(
    principal: Principal,
    companyName: string,
    req: { itemId: string; version?: string | undefined },
  ) {
    const c = await this.#writable(principal, companyName);
    const hub = await this.#settings.required();
    if (await this.#repo.importOfItem(c.id, req.itemId))
      throw conflict(`item "${req.itemId}" is imported into "${c.name}" already: update it instead`);
    if ((await this.#repo.countImports()) >= this.#maxImports)
      throw conflict(`this manager keeps at most ${this.#maxImports} imports; delete some first`);
    const v = await this.#version(hub, req.itemId, req.version ?? 'latest');
    const text = JSON.stringify(v.content);
    const base = { item_id: req.itemId, item_name: v.name, kind: v.kind };
    const ref = (await this.#targets.get(v.kind)?.imported(principal, this.#item(c, base, v))) ?? null;
    const now = Date.now();
    const row: ImportRow = {
      id: randomUUID(),
      company_id: c.id,
      hub_url: hub.connection.url,
      ...base,
      version: v.version,
      latest_version: v.version,
      content: text,
      size: Buffer.byteLength(text),
      target_ref: ref,
      imported_by: principal.subject,
      imported_at: now,
      updated_by: principal.subject,
      updated_at: now,
      synced_at: now,
    };
    await this.#repo.insertImport(row);
    await this.#telemetry.enqueue({ itemId: req.itemId, version: v.version, action: 'IMPORT' });
    this.#log.info(
      { importId: row.id, itemId: req.itemId, version: v.version, company: c.name },
      'asset hub item imported',
    );
    return importView(row);
  }

  async listImports(principal: Principal, companyName: string, spec: ListSpec) {
    const c = await this.#company(principal, companyName);
    const page = await this.#repo.listImports(c.id, spec);
    return { items: page.items.map(importView), total: page.total };
  }

  async getImport(principal: Principal, companyName: string, importId: string) {
    const c = await this.#company(principal, companyName);
    const r = await this.#import(c.id, importId);
    return { ...importView(r), content: JSON.parse(r.content) as unknown };
  }

  /** The import moved to `version` (the hub's latest by default); `updated: false` when it is there already. */
  async updateImport(
    principal: Principal,
    companyName: string,
    importId: string,
    req: { version?: string | undefined },
  ) {
    const c = await this.#writable(principal, companyName);
    const hub = await this.#settings.required();
    return this.#update(principal, c, hub, await this.#import(c.id, importId), req.version ?? 'latest');
  }

  async #update(
    principal: Principal,
    c: { id: string; name: string },
    hub: HubClient,
    r: ImportRow,
    version: string,
  ) {
    const v = await this.#version(hub, r.item_id, version);
    if (v.kind !== r.kind)
      throw conflict(`item "${r.item_id}" is a ${v.kind} on the hub now, not a ${r.kind}`);
    if (v.version === r.version) return { ...importView(r), updated: false };
    const ref =
      (await this.#targets.get(r.kind)?.updated(principal, this.#item(c, r, v), r.target_ref)) ??
      r.target_ref;
    const text = JSON.stringify(v.content);
    const change = {
      version: v.version,
      item_name: v.name,
      content: text,
      size: Buffer.byteLength(text),
      target_ref: ref,
      updated_by: principal.subject,
      updated_at: Date.now(),
    };
    await this.#repo.updateImport(r.id, change);
    await this.#telemetry.enqueue({ itemId: r.item_id, version: v.version, action: 'UPDATE' });
    this.#log.info({ importId: r.id, from: r.version, to: v.version }, 'asset hub import updated');
    return { ...importView({ ...r, ...change }), updated: true, previousVersion: r.version };
  }

  async deleteImport(principal: Principal, companyName: string, importId: string): Promise<void> {
    const c = await this.#writable(principal, companyName);
    const r = await this.#import(c.id, importId);
    const v = {
      version: r.version,
      kind: r.kind,
      name: r.item_name,
      content: JSON.parse(r.content) as unknown,
    };
    await this.#targets.get(r.kind)?.deleted(principal, this.#item(c, r, v), r.target_ref);
    await this.#repo.deleteImport(r.id);
    await this.#telemetry.enqueue({ itemId: r.item_id, version: r.version, action: 'DELETE' });
  }

  /**
   * Each import of the company checked against the hub: its latest version recorded
   * (`updateAvailable`), and with `update` moved to it. One import's failure (an item gone from
   * the hub) is reported on its line; the others go on.
   */
  async sync(principal: Principal, companyName: string, req: { update?: boolean | undefined }) {
    const c = await this.#writable(principal, companyName);
    const hub = await this.#settings.required();
    const rows = await this.#repo.allImports(c.id, this.#maxImports);
    const items = [];
    for (const r of rows) {
      try {
        const item = await hub.get(`/mpcs/v1/items/${enc(r.item_id)}`, `reading item "${r.item_id}"`);
        const latest = String(item?.latestVersion ?? '');
        if (latest === '') throw badRequest(`the hub answered item "${r.item_id}" without latestVersion`);
        await this.#repo.updateImport(r.id, { latest_version: latest, synced_at: Date.now() });
        let updated = false;
        if (req.update && latest !== r.version)
          updated = (await this.#update(principal, c, hub, r, latest)).updated;
        items.push({
          importId: r.id,
          itemId: r.item_id,
          version: updated ? latest : r.version,
          latestVersion: latest,
          updateAvailable: !updated && latest !== r.version,
          updated,
          error: null,
        });
      } catch (err) {
        if (!(err instanceof AppError)) throw err;
        items.push({
          importId: r.id,
          itemId: r.item_id,
          version: r.version,
          latestVersion: r.latest_version,
          updateAvailable: false,
          updated: false,
          error: { code: err.code, message: err.message },
        });
      }
    }
    return { company: c.name, items, total: items.length };
  }

  /** Configuration templates: a company template, a new version of it on each update. */
  #templateTarget(): AssetHubImportTarget {
    const friendly = (i: ImportedItem) => `${i.name} (asset hub)`;
    const description = (i: ImportedItem) =>
      `imported from the asset hub: item ${i.itemId}, version ${i.version}`;
    return {
      kind: 'CONFIGURATION_TEMPLATE',
      imported: async (principal, i) =>
        (
          await this.#templates.createFromDocument(
            principal,
            { friendlyName: friendly(i), templateDescription: description(i), companyId: i.companyId },
            i.content,
          )
        ).id,
      updated: async (principal, i, ref) => {
        if (ref) {
          try {
            await this.#templates.update(principal, {
              id: ref,
              friendlyName: friendly(i),
              templateDescription: description(i),
              content: i.content,
            });
            return ref;
          } catch (err) {
            if (!(err instanceof AppError) || err.status !== 404) throw err;
          }
        }
        return (
          await this.#templates.createFromDocument(
            principal,
            { friendlyName: friendly(i), templateDescription: description(i), companyId: i.companyId },
            i.content,
          )
        ).id;
      },
      // The templates module keeps its templates (and their history); the import alone goes.
      deleted: () => Promise.resolve(),
    };
  }
}
