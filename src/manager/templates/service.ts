/**
 * Templates of the edge manager: edge configuration templates (the edge's document, see
 * docs/configuration-templates.md) kept with a friendly name, a version incremented on every
 * update (history kept), who made and changed them; parameter values by scope (global, company,
 * project, device); the preview and the apply are apply.ts (`TemplateApplier`), reached from
 * here after the template's access check. No HTTP here.
 */
import { randomBytes, randomUUID } from 'node:crypto';
import type { Logger } from 'pino';
import { AppError, badRequest, conflict, forbidden, notFound, ERRORS } from '../../kernel/errors.js';
import type { ListSpec } from '../../kernel/paging.js';
import { checkEnvelope, type TemplateDocument } from '../../kernel/template-envelope.js';
import { isGlobal, requireRole, roleAt, type Principal } from '../auth/index.js';
import type { FleetService } from '../fleet/index.js';
import type { SecretBox } from '../fleet/index.js';
import type { TaskService } from '../tasks/index.js';
import type { EdgeTemplates } from './edge-calls.js';
import { TEMPLATE_LIST, type TemplateRepository, type TemplateRow } from './repository.js';
import { TemplateApplier, type ApplyRequest } from './apply.js';
import { PREVIEW_MIN_EDGE_VERSION, TEMPLATE_LIMITS } from './limits.js';
import { checkParams, placeholders, type Parameters, type ScopeType } from './parameters.js';
import { readZip } from './zip.js';
import { MAX_PARTS, composeDocuments, partsOf } from './compose.js';

export { PREVIEW_MIN_EDGE_VERSION, TEMPLATE_LIMITS };
export type { ApplyMode, ApplyRequest } from './apply.js';
export type { Parameters, ScopeType } from './parameters.js';
export { TEMPLATE_LIST };

type ListRow = Omit<TemplateRow, 'document' | 'user_key'>;

export function templateView(t: ListRow) {
  return {
    id: t.id,
    friendlyName: t.friendly_name,
    templateDescription: t.description,
    version: t.version,
    sections: JSON.parse(t.sections) as string[],
    size: t.size,
    encrypted: t.encrypted === 1,
    companyId: t.company_id,
    projectId: t.project_id,
    sourceDeviceId: t.source_device_id,
    /** The templates a composed template was made of (their versions then); null: not composed. */
    parts: partsOf(t.parts),
    createdBy: t.created_by,
    createdAt: new Date(t.created_at).toISOString(),
    updatedBy: t.updated_by,
    updatedAt: new Date(t.updated_at).toISOString(),
  };
}
export type TemplateView = ReturnType<typeof templateView>;

/** Where a template is kept: a project, a company, or everywhere (null, null). */
export interface TemplateScope {
  companyId: string | null;
  projectId: string | null;
}

export interface TemplateInput {
  friendlyName?: string | undefined;
  templateDescription?: string | undefined;
  userEncryptionKey?: string | undefined;
  projectId?: string | undefined;
  companyId?: string | undefined;
  companyName?: string | undefined;
  deviceId?: string | undefined;
}

function friendlyNameOf(v: string | undefined): string {
  const name = v?.trim() ?? '';
  if (name === '') throw badRequest('friendly name is required');
  if (name.length > 200) throw badRequest('friendlyName must have at most 200 characters');
  return name;
}

export class TemplateService {
  readonly #repo: TemplateRepository;
  readonly #box: SecretBox;
  readonly #fleet: FleetService;
  readonly #edge: EdgeTemplates;
  readonly #log: Logger;
  readonly #applier: TemplateApplier;

  constructor(
    repo: TemplateRepository,
    box: SecretBox,
    fleet: FleetService,
    edge: EdgeTemplates,
    tasks: TaskService,
    logger: Logger,
  ) {
    this.#repo = repo;
    this.#box = box;
    this.#fleet = fleet;
    this.#edge = edge;
    this.#log = logger;
    this.#applier = new TemplateApplier({ repo, box, fleet, edge, tasks }, (principal, id) =>
      this.#readable(principal, id),
    );
  }

  /** Per device, what applying the template would change (edges at 4.3.0 or later). */
  preview(principal: Principal, req: ApplyRequest) {
    return this.#applier.preview(principal, req);
  }

  /** One `TEMPLATE_APPLY` task: a subtask per device. */
  apply(principal: Principal, req: ApplyRequest) {
    return this.#applier.apply(principal, req);
  }

  // --- scope and access -------------------------------------------------------------------------

  /** The scope a new template is kept in, checked for the operator role. */
  async #scopeFor(
    principal: Principal,
    input: TemplateInput,
    device?: { projectId: string; companyId: string },
  ) {
    let scope: TemplateScope;
    if (input.projectId) {
      const p = await this.#fleet.project(principal, input.projectId);
      scope = { companyId: p.company_id, projectId: p.id };
    } else if (device) scope = { companyId: device.companyId, projectId: device.projectId };
    else if (input.companyId || input.companyName) {
      const c = input.companyId
        ? await this.#companyById(principal, input.companyId)
        : (
            await this.#fleet.listCompanies(principal, {
              offset: 0,
              limit: 1,
              sort: [],
              filter: [{ field: 'companyName', op: 'eq', value: input.companyName! }],
            })
          ).items[0];
      if (!c) throw notFound(`company "${input.companyId ?? input.companyName}" not found`);
      scope = { companyId: c.id, projectId: null };
    } else scope = { companyId: null, projectId: null };
    requireRole(principal, scope, 'operator');
    return scope;
  }

  /** The company by id, when the caller may read it (404 otherwise, from the fleet). */
  async #companyById(principal: Principal, id: string) {
    await this.#fleet.listProjects(
      principal,
      { companyId: id },
      { offset: 0, limit: 1, sort: [], filter: [] },
    );
    return { id };
  }

  async #readable(principal: Principal, id: string): Promise<TemplateRow> {
    const t = await this.#repo.get(id);
    if (!t || !this.#reads(principal, t)) throw notFound(`template "${id}" not found`);
    return t;
  }

  #reads(principal: Principal, t: { company_id: string | null; project_id: string | null }): boolean {
    if (t.company_id === null && t.project_id === null) return principal.grants.length > 0;
    return roleAt(principal, { companyId: t.company_id, projectId: t.project_id }) !== null;
  }

  // --- documents --------------------------------------------------------------------------------

  #parse(text: string): TemplateDocument {
    if (Buffer.byteLength(text) > TEMPLATE_LIMITS.maxDocumentBytes)
      throw new AppError(
        ERRORS.payloadTooLarge,
        `a template has at most ${TEMPLATE_LIMITS.maxDocumentBytes} bytes`,
      );
    let doc: unknown;
    try {
      doc = JSON.parse(text);
    } catch (err) {
      throw new AppError(ERRORS.invalidTemplate, `invalid template: not JSON: ${(err as Error).message}`);
    }
    return checkEnvelope(doc);
  }

  async #insert(
    principal: Principal,
    doc: TemplateDocument,
    meta: {
      friendlyName: string;
      description: string;
      key: string | undefined;
      scope: TemplateScope;
      source: string | null;
      parts?: string | null;
    },
  ): Promise<TemplateView> {
    const text = JSON.stringify(doc);
    const now = Date.now();
    const row: TemplateRow = {
      id: randomUUID(),
      friendly_name: meta.friendlyName,
      description: meta.description,
      version: 1,
      document: text,
      sections: JSON.stringify(Object.keys(doc.sections)),
      size: Buffer.byteLength(text),
      encrypted: doc.encryption ? 1 : 0,
      user_key: meta.key ? this.#box.seal(meta.key) : null,
      company_id: meta.scope.companyId,
      project_id: meta.scope.projectId,
      source_device_id: meta.source,
      parts: meta.parts ?? null,
      created_by: principal.subject,
      created_at: now,
      updated_by: principal.subject,
      updated_at: now,
    };
    // Counted and written in one transaction.
    await this.#repo.transaction(async (repo) => {
      if ((await repo.count()) >= TEMPLATE_LIMITS.maxTemplates)
        throw conflict(`at most ${TEMPLATE_LIMITS.maxTemplates} templates are kept; delete some first`);
      await repo.insert(row);
    });
    this.#log.info({ templateId: row.id, friendlyName: row.friendly_name }, 'template created');
    return templateView(row);
  }

  /** `POST /template/create`: a template of a device's current configuration. */
  async createFromDevice(principal: Principal, input: TemplateInput) {
    const friendlyName = friendlyNameOf(input.friendlyName);
    if (!input.deviceId)
      throw badRequest('deviceId (the edge whose configuration becomes the template) is required');
    const device = await this.#fleet.device(principal, input.deviceId);
    const scope = await this.#scopeFor(principal, input, device);
    requireRole(principal, device, 'operator');
    const text = await this.#edge.current(device.id, `mw-capture-${randomUUID()}`, input.userEncryptionKey);
    const doc = this.#parse(text);
    return this.#insert(principal, doc, {
      friendlyName,
      description: input.templateDescription ?? '',
      key: input.userEncryptionKey,
      scope,
      source: device.id,
    });
  }

  /** `POST /template/create/v2` and uploads: a template of a document. */
  async createFromDocument(principal: Principal, input: TemplateInput, content: string | unknown) {
    const friendlyName = friendlyNameOf(input.friendlyName);
    const text = typeof content === 'string' ? content : JSON.stringify(content);
    const doc = this.#parse(text);
    let device: { projectId: string; companyId: string } | undefined;
    if (input.deviceId) device = await this.#fleet.device(principal, input.deviceId);
    const scope = await this.#scopeFor(principal, input, device);
    return this.#insert(principal, doc, {
      friendlyName,
      description: input.templateDescription ?? '',
      key: input.userEncryptionKey,
      scope,
      source: input.deviceId ?? null,
    });
  }

  /**
   * `POST /template/create/v2` with `parts` (template ids): a template made of other templates,
   * each section from one part (compose.ts); kept where the caller says, like an upload.
   */
  async createComposed(principal: Principal, input: TemplateInput, partIds: string[]) {
    const friendlyName = friendlyNameOf(input.friendlyName);
    if (partIds.length > MAX_PARTS) throw badRequest(`a composed template has at most ${MAX_PARTS} parts`);
    const parts = [];
    for (const id of partIds) {
      const t = await this.#readable(principal, id);
      parts.push({
        ref: { id: t.id, friendlyName: t.friendly_name, version: t.version },
        doc: JSON.parse(t.document) as TemplateDocument,
      });
    }
    const doc = composeDocuments(parts);
    const scope = await this.#scopeFor(principal, input);
    return this.#insert(principal, doc, {
      friendlyName,
      description: input.templateDescription ?? '',
      key: undefined,
      scope,
      source: null,
      parts: JSON.stringify(parts.map((p) => p.ref)),
    });
  }

  /** `PUT /template/upload-zip`: the archive's one JSON document. */
  async createFromZip(principal: Principal, input: TemplateInput, zip: Buffer) {
    friendlyNameOf(input.friendlyName);
    const entries = readZip(zip, {
      maxEntries: TEMPLATE_LIMITS.maxZipEntries,
      maxBytes: TEMPLATE_LIMITS.maxDocumentBytes,
    }).filter((e) => e.name.toLowerCase().endsWith('.json'));
    if (entries.length !== 1)
      throw badRequest(
        `the archive must hold exactly one .json template document; it holds ${entries.length}`,
      );
    return this.createFromDocument(principal, input, entries[0]!.data.toString('utf8'));
  }

  /** `POST /template`: a new version (friendly name required; content optional). */
  async update(
    principal: Principal,
    input: {
      id?: string | undefined;
      friendlyName?: string | undefined;
      templateDescription?: string | undefined;
      content?: unknown;
      userEncryptionKey?: string | undefined;
    },
  ) {
    const friendlyName = friendlyNameOf(input.friendlyName);
    if (!input.id) throw badRequest('id of the template is required');
    const current = await this.#readable(principal, input.id);
    requireRole(principal, { companyId: current.company_id, projectId: current.project_id }, 'operator');
    const doc =
      input.content === undefined
        ? undefined
        : this.#parse(typeof input.content === 'string' ? input.content : JSON.stringify(input.content));
    const now = Date.now();
    const next = await this.#repo.update(input.id, (t) => {
      const text = doc ? JSON.stringify(doc) : t.document;
      return {
        friendly_name: friendlyName,
        description: input.templateDescription ?? t.description,
        document: text,
        sections: doc ? JSON.stringify(Object.keys(doc.sections)) : t.sections,
        size: Buffer.byteLength(text),
        encrypted: doc ? (doc.encryption ? 1 : 0) : t.encrypted,
        user_key: input.userEncryptionKey ? this.#box.seal(input.userEncryptionKey) : t.user_key,
        company_id: t.company_id,
        project_id: t.project_id,
        source_device_id: t.source_device_id,
        // New content is no longer the composition of the parts.
        parts: doc ? null : t.parts,
        updated_by: principal.subject,
        updated_at: now,
      };
    });
    if (!next) throw notFound(`template "${input.id}" not found`);
    this.#log.info({ templateId: next.id, version: next.version }, 'template updated');
    return templateView(next);
  }

  async get(principal: Principal, id: string) {
    const t = await this.#readable(principal, id);
    const versions = await this.#repo.versions(id);
    return {
      ...templateView(t),
      versions: versions.map((v) => ({
        version: v.version,
        friendlyName: v.friendly_name,
        templateDescription: v.description,
        updatedBy: v.updated_by,
        updatedAt: new Date(v.updated_at).toISOString(),
      })),
    };
  }

  async list(principal: Principal, spec: ListSpec) {
    const visible = isGlobal(principal, 'viewer')
      ? null
      : {
          companyIds: principal.grants.filter((g) => g.companyId && !g.projectId).map((g) => g.companyId!),
          projectIds: principal.grants.filter((g) => g.projectId).map((g) => g.projectId!),
        };
    const page = await this.#repo.list(spec, visible);
    return { items: page.items.map(templateView), total: page.total };
  }

  /** The document (`version` for an earlier one). */
  async content(principal: Principal, id: string): Promise<TemplateDocument> {
    const t = await this.#readable(principal, id);
    return JSON.parse(t.document) as TemplateDocument;
  }

  /** Sections and their items' counts; a composed template's parts, each section's part. */
  async composition(principal: Principal, id: string) {
    const t = await this.#readable(principal, id);
    const doc = JSON.parse(t.document) as TemplateDocument;
    const sections = Object.entries(doc.sections).map(([name, content]) => {
      const items: Record<string, number> = {};
      if (content && typeof content === 'object' && !Array.isArray(content)) {
        for (const [k, v] of Object.entries(content)) if (Array.isArray(v)) items[k] = v.length;
      }
      return { section: name, items };
    });
    return {
      id,
      friendlyName: t.friendly_name,
      version: t.version,
      encrypted: t.encrypted === 1,
      sections,
      parts: partsOf(t.parts),
    };
  }

  /** v1: the names of the template's parameters. */
  async listVariables(principal: Principal, id: string) {
    const v2 = await this.listVariablesV2(principal, id);
    const names = [...new Set(v2.variables.map((v) => v.name))].sort();
    return { id, variables: names };
  }

  /** v2: per section, each placeholder with its default (the template's `parameters`) and where it is used. */
  async listVariablesV2(principal: Principal, id: string) {
    const t = await this.#readable(principal, id);
    const doc = JSON.parse(t.document) as TemplateDocument;
    const variables: {
      section: string;
      name: string;
      defaultValue: string | number | boolean | null;
      usedAt: string[];
    }[] = [];
    for (const [section, content] of Object.entries(doc.sections)) {
      const found = new Map<string, Set<string>>();
      placeholders(content, '', found);
      for (const [name, paths] of [...found].sort((a, b) => a[0].localeCompare(b[0]))) {
        const dflt = doc.parameters?.[section]?.[name];
        variables.push({ section, name, defaultValue: dflt ?? null, usedAt: [...paths] });
      }
    }
    return { id, version: t.version, variables };
  }

  // --- parameter values by scope ----------------------------------------------------------------

  async vars(principal: Principal, templateId: string) {
    await this.#readable(principal, templateId);
    const rows = await this.#repo.vars(templateId);
    const visible = rows.filter(
      (r) =>
        r.scope_type === 'GLOBAL' ||
        r.scope_type === 'DEVICE' ||
        this.#scopeReadable(principal, r.scope_type, r.scope_id),
    );
    return {
      templateId,
      scopes: visible.map((r) => ({
        scopeType: r.scope_type,
        scopeId: r.scope_id === '' ? null : r.scope_id,
        parameters: JSON.parse(r.parameters) as Parameters,
        updatedBy: r.updated_by,
        updatedAt: new Date(r.updated_at).toISOString(),
      })),
    };
  }

  #scopeReadable(principal: Principal, type: string, id: string): boolean {
    if (type === 'COMPANY') return roleAt(principal, { companyId: id }) !== null;
    if (type === 'PROJECT')
      return roleAt(principal, { projectId: id }) !== null || isGlobal(principal, 'viewer');
    return true;
  }

  async setVars(
    principal: Principal,
    templateId: string,
    scopes: { scopeType: ScopeType; scopeId?: string | null | undefined; parameters: unknown }[],
  ) {
    await this.#readable(principal, templateId);
    if (scopes.length > TEMPLATE_LIMITS.maxScopesPerCall)
      throw badRequest(`at most ${TEMPLATE_LIMITS.maxScopesPerCall} scopes per call`);
    const now = Date.now();
    const rows = [];
    for (const [i, s] of scopes.entries()) {
      const parameters = checkParams(s.parameters, `scopes[${i}].parameters`);
      const id = s.scopeId ?? '';
      switch (s.scopeType) {
        case 'GLOBAL':
          if (id !== '') throw badRequest(`scopes[${i}]: a GLOBAL scope has no scopeId`);
          requireRole(principal, {}, 'operator');
          break;
        case 'COMPANY':
          if (!id) throw badRequest(`scopes[${i}]: scopeId (the company id) is required`);
          requireRole(principal, { companyId: id }, 'operator');
          break;
        case 'PROJECT': {
          if (!id) throw badRequest(`scopes[${i}]: scopeId (the project id) is required`);
          const p = await this.#fleet.project(principal, id);
          requireRole(principal, { projectId: p.id, companyId: p.company_id }, 'operator');
          break;
        }
        case 'DEVICE': {
          if (!id) throw badRequest(`scopes[${i}]: scopeId (the device id) is required`);
          const d = await this.#fleet.device(principal, id);
          requireRole(principal, d, 'operator');
          break;
        }
        default:
          throw badRequest(`scopes[${i}].scopeType must be GLOBAL, COMPANY, PROJECT or DEVICE`);
      }
      rows.push({
        template_id: templateId,
        scope_type: s.scopeType,
        scope_id: id,
        parameters: JSON.stringify(parameters),
        updated_by: principal.subject,
        updated_at: now,
      });
    }
    await this.#repo.setVars(rows);
    return this.vars(principal, templateId);
  }

  // --- templates kept in git (admin console) ----------------------------------------------------

  /** The key the manager encrypts templates' secrets with when it keeps them in git; made once. */
  async gitEncryptionKey(principal: Principal) {
    if (!isGlobal(principal, 'admin')) throw forbidden('the git templates key needs a global admin');
    const sealed = await this.#repo.settingOnce(
      'git_templates_key',
      this.#box.seal(randomBytes(32).toString('base64url')),
    );
    return { encryptionKey: this.#box.open(sealed) };
  }
}
