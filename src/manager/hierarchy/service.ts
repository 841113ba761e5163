/**
 * The asset hierarchy of a company: hierarchy templates (named, ordered levels such as
 * enterprise, site, area, line, cell) and the caller's access. Nodes are in `nodes.ts`, the CSV
 * import and export in `csv.ts`, branch grants in `grants.ts`. Plain domain code: no HTTP here.
 */
import type { Logger } from 'pino';
import { badRequest, conflict, notFound } from '../../kernel/errors.js';
import { uuidv7 } from '../../kernel/ids.js';
import type { Principal } from '../auth/index.js';
import { companyLevelOf, requireCompany, type CompanyAccess } from './access.js';
import type { HierarchyRepository, TemplateRow, TemplateStatus } from './repository.js';

/** At most this many levels in a template. */
export const MAX_LEVELS = 64;

export interface HierarchyLimits {
  maxNodes: number;
  maxDepth: number;
  maxTemplates: number;
  maxGrants: number;
}

/** What the hierarchy needs of the fleet: a company the caller may see, and a device's company. */
export interface HierarchyFleet {
  company(principal: Principal, ref: { companyName: string }): Promise<{ id: string; name: string }>;
  device(principal: Principal, deviceId: string): Promise<{ id: string; companyId: string }>;
}

export interface Level {
  id: string;
  name: string;
  description: string;
}

export interface TemplateView {
  id: string;
  companyName: string;
  name: string;
  description: string;
  status: TemplateStatus;
  levels: (Level & { position: number })[];
  createdBy: string;
  createdAt: string;
  updatedAt: string;
}

export interface LevelInput {
  id?: string | undefined;
  name: string;
  description?: string | undefined;
}

/** True when `v` has a control character (C0 or DEL). */
export function hasControl(v: string): boolean {
  for (let i = 0; i < v.length; i++) {
    const c = v.charCodeAt(i);
    if (c < 0x20 || c === 0x7f) return true;
  }
  return false;
}

export function validateLabel(value: string, field: string, max = 200): string {
  const v = value.trim();
  if (v === '' || v.length > max || hasControl(v)) {
    throw badRequest(`${field} must have 1 to ${max} characters and no control characters`);
  }
  return v;
}

function levelsOf(row: TemplateRow): Level[] {
  return JSON.parse(row.levels) as Level[];
}

function checkLevels(levels: Level[]): void {
  if (levels.length > MAX_LEVELS) throw badRequest(`a template has at most ${MAX_LEVELS} levels`);
  const seen = new Set<string>();
  for (const l of levels) {
    if (seen.has(l.name.toLowerCase())) throw badRequest(`level "${l.name}" appears twice`);
    seen.add(l.name.toLowerCase());
  }
}

export class HierarchyService {
  readonly repo: HierarchyRepository;
  readonly fleet: HierarchyFleet;
  readonly limits: HierarchyLimits;
  readonly log: Logger;

  constructor(repo: HierarchyRepository, fleet: HierarchyFleet, limits: HierarchyLimits, log: Logger) {
    this.repo = repo;
    this.fleet = fleet;
    this.limits = limits;
    this.log = log;
  }

  /** The caller in the company named `companyName` (404 when it may not see the company). */
  async access(principal: Principal, companyName: string): Promise<CompanyAccess> {
    const company = await this.fleet.company(principal, { companyName });
    const grants = principal.username ? await this.repo.grantsOf(company.id, principal.username) : [];
    return {
      companyId: company.id,
      companyName: company.name,
      principal,
      companyLevel: companyLevelOf(principal, company.id),
      grants,
    };
  }

  // --- templates -------------------------------------------------------------------------------

  async listTemplates(a: CompanyAccess): Promise<TemplateView[]> {
    return (await this.repo.templates(a.companyId)).map((t) => this.view(a, t));
  }

  async template(a: CompanyAccess, id: string): Promise<TemplateView> {
    return this.view(a, await this.#template(a, id));
  }

  /** The active template of the company, or null. */
  async activeTemplate(a: CompanyAccess): Promise<TemplateView | null> {
    const t = (await this.repo.templates(a.companyId)).find((r) => r.status === 'ACTIVE');
    return t ? this.view(a, t) : null;
  }

  async createTemplate(
    a: CompanyAccess,
    body: { name: string; description?: string | undefined; levels?: LevelInput[] | undefined },
  ): Promise<TemplateView> {
    requireCompany(a, 'admin', 'creating a hierarchy template');
    const levels = (body.levels ?? []).map((l) => this.#level(l));
    checkLevels(levels);
    const now = Date.now();
    const row: TemplateRow = {
      id: uuidv7(),
      company_id: a.companyId,
      name: validateLabel(body.name, 'name'),
      description: body.description ?? '',
      status: 'DRAFT',
      levels: JSON.stringify(levels),
      created_by: a.principal.username ?? a.principal.tokenName,
      created_at: now,
      updated_at: now,
    };
    await this.repo.transaction(async (repo) => {
      if ((await repo.countTemplates(a.companyId)) >= this.limits.maxTemplates) {
        throw conflict(
          `a company has at most ${this.limits.maxTemplates} hierarchy templates (--hierarchy-max-templates)`,
        );
      }
      if ((await repo.templates(a.companyId)).some((t) => t.name === row.name)) {
        throw conflict(`hierarchy template "${row.name}" exists in company "${a.companyName}"`);
      }
      await repo.insertTemplate(row);
    });
    return this.view(a, row);
  }

  async updateTemplate(
    a: CompanyAccess,
    id: string,
    body: { name?: string | undefined; description?: string | undefined },
  ): Promise<TemplateView> {
    const t = await this.#draft(a, id, 'updated');
    const name = body.name !== undefined ? validateLabel(body.name, 'name') : t.name;
    if (name !== t.name && (await this.repo.templates(a.companyId)).some((o) => o.name === name)) {
      throw conflict(`hierarchy template "${name}" exists in company "${a.companyName}"`);
    }
    await this.repo.updateTemplate(id, {
      name,
      description: body.description ?? t.description,
      updated_at: Date.now(),
    });
    return this.template(a, id);
  }

  async deleteTemplate(a: CompanyAccess, id: string): Promise<void> {
    await this.#draft(a, id, 'deleted');
    await this.repo.deleteTemplate(id);
  }

  /** A new draft with the levels of `id` (any status). */
  async duplicateTemplate(a: CompanyAccess, id: string, name?: string): Promise<TemplateView> {
    const t = await this.#template(a, id);
    const levels = levelsOf(t).map((l) => ({ name: l.name, description: l.description }));
    let copy = name ?? `${t.name} (copy)`;
    const names = new Set((await this.repo.templates(a.companyId)).map((o) => o.name));
    for (let i = 2; name === undefined && names.has(copy); i++) copy = `${t.name} (copy ${i})`;
    return this.createTemplate(a, { name: copy, description: t.description, levels });
  }

  /** The draft becomes the company's active template; the one active before is archived. */
  async activateTemplate(a: CompanyAccess, id: string): Promise<TemplateView> {
    const t = await this.#draft(a, id, 'activated');
    if (levelsOf(t).length === 0) throw badRequest('a template needs at least one level to be activated');
    const now = Date.now();
    await this.repo.transaction(async (repo) => {
      await repo.archiveActive(a.companyId, now);
      await repo.updateTemplate(id, { status: 'ACTIVE', updated_at: now });
    });
    return this.template(a, id);
  }

  // --- levels ----------------------------------------------------------------------------------

  async addLevel(a: CompanyAccess, id: string, input: LevelInput & { position?: number | undefined }) {
    return this.#editLevels(a, id, (levels) => {
      const at =
        input.position === undefined ? levels.length : Math.min(Math.max(input.position, 0), levels.length);
      levels.splice(at, 0, this.#level({ name: input.name, description: input.description }));
      return levels;
    });
  }

  async updateLevel(a: CompanyAccess, id: string, levelId: string, input: Partial<LevelInput>) {
    return this.#editLevels(a, id, (levels) => {
      const l = findLevel(levels, levelId);
      if (input.name !== undefined) l.name = validateLabel(input.name, 'name');
      if (input.description !== undefined) l.description = input.description;
      return levels;
    });
  }

  async moveLevel(a: CompanyAccess, id: string, levelId: string, position: number) {
    return this.#editLevels(a, id, (levels) => {
      const l = findLevel(levels, levelId);
      if (position < 0 || position >= levels.length) {
        throw badRequest(`position must be from 0 to ${levels.length - 1}`);
      }
      levels.splice(levels.indexOf(l), 1);
      levels.splice(position, 0, l);
      return levels;
    });
  }

  async removeLevel(a: CompanyAccess, id: string, levelId: string) {
    return this.#editLevels(a, id, (levels) => levels.filter((l) => l !== findLevel(levels, levelId)));
  }

  /** The levels replaced by `inputs`, in order; an input with the ID of a level keeps that ID. */
  async setLevels(a: CompanyAccess, id: string, inputs: LevelInput[]) {
    return this.#editLevels(a, id, (levels) =>
      inputs.map((i) => {
        if (i.id !== undefined) findLevel(levels, i.id);
        return this.#level(i);
      }),
    );
  }

  async #editLevels(a: CompanyAccess, id: string, edit: (levels: Level[]) => Level[]) {
    const t = await this.#draft(a, id, 'changed');
    const levels = edit(levelsOf(t));
    checkLevels(levels);
    await this.repo.updateTemplate(id, { levels: JSON.stringify(levels), updated_at: Date.now() });
    return this.template(a, id);
  }

  #level(input: LevelInput): Level {
    return {
      id: input.id ?? uuidv7(),
      name: validateLabel(input.name, 'level name'),
      description: input.description ?? '',
    };
  }

  async #template(a: CompanyAccess, id: string): Promise<TemplateRow> {
    if (a.companyLevel === null && a.grants.length === 0) {
      throw notFound(`hierarchy template "${id}" not found in company "${a.companyName}"`);
    }
    const t = await this.repo.template(a.companyId, id);
    if (!t) throw notFound(`hierarchy template "${id}" not found in company "${a.companyName}"`);
    return t;
  }

  async #draft(a: CompanyAccess, id: string, what: string): Promise<TemplateRow> {
    const t = await this.#template(a, id);
    requireCompany(a, 'admin', 'changing a hierarchy template');
    if (t.status !== 'DRAFT') {
      throw conflict(
        `hierarchy template "${t.name}" is ${t.status}: only a draft can be ${what} (duplicate it to change it)`,
      );
    }
    return t;
  }

  view(a: CompanyAccess, t: TemplateRow): TemplateView {
    return {
      id: t.id,
      companyName: a.companyName,
      name: t.name,
      description: t.description,
      status: t.status,
      levels: levelsOf(t).map((l, position) => ({ ...l, position })),
      createdBy: t.created_by,
      createdAt: new Date(t.created_at).toISOString(),
      updatedAt: new Date(t.updated_at).toISOString(),
    };
  }
}

function findLevel(levels: Level[], levelId: string): Level {
  const l = levels.find((x) => x.id === levelId);
  if (!l) throw notFound(`level "${levelId}" not found in the template`);
  return l;
}
