/**
 * Templates of the edge manager: edge configuration templates (the edge's document, see
 * docs/configuration-templates.md) kept with a friendly name, a version incremented on every
 * update (history kept), who made and changed them; parameter values by scope (global, company,
 * project, device); a preview per device; and the apply to many devices as one `TEMPLATE_APPLY`
 * task (src/manager/tasks), each subtask applying the template through the edge's /config API
 * over the link. No HTTP here.
 */
import { randomBytes, randomUUID } from 'node:crypto';
import type { Logger } from 'pino';
import { AppError, badRequest, conflict, forbidden, notFound } from '../../kernel/errors.js';
import { runList, type ListDefinition, type ListSpec } from '../../kernel/paging.js';
import { checkEnvelope, type TemplateDocument } from '../../kernel/template-envelope.js';
import { isGlobal, requireRole, roleAt, type Principal } from '../auth/index.js';
import type { FleetService } from '../fleet/service.js';
import type { SecretBox } from '../fleet/secret-box.js';
import type { SubtaskContext, SubtaskOutcome, TaskHandler, TaskService } from '../tasks/service.js';
import { EdgeTemplates, edgeError } from './edge-calls.js';
import type { TemplateRepository, TemplateRow } from './repository.js';
import { readZip } from './zip.js';

export const TEMPLATE_LIMITS = {
  /** Bytes of one template document (one PATCH of the edge's upload session). */
  maxDocumentBytes: 16 * 1024 * 1024,
  /** Templates kept by the manager. */
  maxTemplates: 10_000,
  /** Devices of one preview call. */
  maxPreviewDevices: 50,
  /** Previews run at once for one call. */
  previewConcurrency: 8,
  /** Entries of an uploaded ZIP archive. */
  maxZipEntries: 100,
  /** Scopes set in one call of template vars. */
  maxScopesPerCall: 1000,
};

/** Oldest edge service that previews a template for the manager. */
export const PREVIEW_MIN_EDGE_VERSION = '4.3.0';

export const TEMPLATE_LIST: ListDefinition = {
  fields: {
    id: 't.id',
    friendlyName: 't.friendly_name',
    templateDescription: 't.description',
    version: { column: 't.version', type: 'integer' },
    createdBy: 't.created_by',
    updatedBy: 't.updated_by',
    projectId: 't.project_id',
    companyId: 't.company_id',
    createdAt: { column: 't.created_at', type: 'integer' },
    updatedAt: { column: 't.updated_at', type: 'integer' },
  },
  tiebreak: 't.id',
  defaultSort: [{ field: 'updatedAt', order: 'desc' }],
  maxLimit: 1000,
};

export type ScopeType = 'GLOBAL' | 'COMPANY' | 'PROJECT' | 'DEVICE';
const SCOPE_ORDER: ScopeType[] = ['GLOBAL', 'COMPANY', 'PROJECT', 'DEVICE'];
export type Parameters = Record<string, Record<string, string | number | boolean>>;
export type ApplyMode = 'legacy' | 'use' | 'merge-apply';

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

export interface ApplyRequest {
  templateId: string;
  deviceIds?: string[] | undefined;
  projectId?: string | undefined;
  companyId?: string | undefined;
  mode?: ApplyMode | undefined;
  failFast?: boolean | undefined;
  parameters?: Parameters | undefined;
  deadlineSeconds?: number | undefined;
}

/** What a `TEMPLATE_APPLY` task keeps (the key stays sealed in the template row). */
interface ApplyParams {
  templateId: string;
  version: number;
  friendlyName: string;
  mode: ApplyMode | undefined;
  failFast: boolean | undefined;
  /** Distinct parameter sets, and each device's index into them. */
  parameterSets: Parameters[];
  deviceParameters: Record<string, number>;
}

const PLACEHOLDER = /(^|[^\\])\{\{\s*([A-Za-z_][A-Za-z0-9_.-]*)\s*\}\}/g;

function friendlyNameOf(v: string | undefined): string {
  const name = v?.trim() ?? '';
  if (name === '') throw badRequest('friendly name is required');
  if (name.length > 200) throw badRequest('friendlyName must have at most 200 characters');
  return name;
}

function versionAtLeast(version: string | null, min: string): boolean {
  if (!version) return false;
  const a = version.split(/[.+-]/).map((x) => Number.parseInt(x, 10));
  const b = min.split('.').map(Number);
  for (let i = 0; i < 3; i++) {
    const x = Number.isFinite(a[i]) ? a[i]! : 0;
    if (x !== b[i]) return x > b[i]!;
  }
  return true;
}

/** Placeholders of a section: names, and where each is used. */
function placeholders(content: unknown, path: string, out: Map<string, Set<string>>): void {
  if (typeof content === 'string') {
    for (const m of content.matchAll(PLACEHOLDER)) {
      const set = out.get(m[2]!) ?? new Set<string>();
      if (set.size < 20) set.add(path);
      out.set(m[2]!, set);
    }
  } else if (Array.isArray(content)) content.forEach((v, i) => placeholders(v, `${path}[${i}]`, out));
  else if (content && typeof content === 'object')
    for (const [k, v] of Object.entries(content)) placeholders(v, path ? `${path}.${k}` : k, out);
}

function mergeParameters(...sets: (Parameters | undefined)[]): Parameters {
  const out: Parameters = {};
  for (const s of sets) {
    if (!s) continue;
    for (const [section, values] of Object.entries(s)) out[section] = { ...out[section], ...values };
  }
  return out;
}

function checkParams(value: unknown, field: string): Parameters {
  if (value === undefined) return {};
  if (!value || typeof value !== 'object' || Array.isArray(value))
    throw badRequest(`${field} must be an object keyed by section (not an array)`);
  for (const [section, values] of Object.entries(value)) {
    if (!values || typeof values !== 'object' || Array.isArray(values))
      throw badRequest(`${field}.${section} must be an object of parameter values`);
    for (const [k, v] of Object.entries(values)) {
      if (typeof v !== 'string' && typeof v !== 'number' && typeof v !== 'boolean')
        throw badRequest(`${field}.${section}.${k} must be a string, number or boolean`);
    }
  }
  return value as Parameters;
}

export class TemplateService {
  readonly #repo: TemplateRepository;
  readonly #box: SecretBox;
  readonly #fleet: FleetService;
  readonly #edge: EdgeTemplates;
  readonly #tasks: TaskService;
  readonly #log: Logger;
  /** Documents by `id@version` for the subtasks of a task (a few, small in count). */
  readonly #docs = new Map<string, string>();

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
    this.#tasks = tasks;
    this.#log = logger;
    tasks.register(this.#applyHandler());
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
        413,
        'too_large',
        `a template has at most ${TEMPLATE_LIMITS.maxDocumentBytes} bytes`,
      );
    let doc: unknown;
    try {
      doc = JSON.parse(text);
    } catch (err) {
      throw new AppError(400, 'invalid_template', `invalid template: not JSON: ${(err as Error).message}`);
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
    },
  ): Promise<TemplateView> {
    if ((await this.#repo.count()) >= TEMPLATE_LIMITS.maxTemplates)
      throw conflict(`at most ${TEMPLATE_LIMITS.maxTemplates} templates are kept; delete some first`);
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
      created_by: principal.subject,
      created_at: now,
      updated_by: principal.subject,
      updated_at: now,
    };
    await this.#repo.insert(row);
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
    let q = this.#repo.listQuery();
    if (!isGlobal(principal, 'viewer')) {
      const companyIds = principal.grants.filter((g) => g.companyId && !g.projectId).map((g) => g.companyId!);
      const projectIds = principal.grants.filter((g) => g.projectId).map((g) => g.projectId!);
      q = q.where((eb) =>
        eb.or([
          eb.and([eb('t.company_id', 'is', null), eb('t.project_id', 'is', null)]),
          eb('t.company_id', 'in', companyIds.length ? companyIds : ['']),
          eb('t.project_id', 'in', projectIds.length ? projectIds : ['']),
        ]),
      );
    }
    const page = await runList(this.#repo.database, q, TEMPLATE_LIST, spec);
    return { items: page.items.map(templateView), total: page.total };
  }

  /** The document (`version` for an earlier one). */
  async content(principal: Principal, id: string): Promise<TemplateDocument> {
    const t = await this.#readable(principal, id);
    return JSON.parse(t.document) as TemplateDocument;
  }

  /** Sections and their items' counts. */
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
    return { id, friendlyName: t.friendly_name, version: t.version, encrypted: t.encrypted === 1, sections };
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

  /** Parameters of each device: the scopes' values (global, company, project, device), then the request's. */
  async #deviceParameters(
    templateId: string,
    devices: { id: string; projectId: string; companyId: string }[],
    request: Parameters,
  ) {
    const rows = await this.#repo.vars(templateId);
    const at = (type: ScopeType, id: string) => {
      const r = rows.find((x) => x.scope_type === type && x.scope_id === id);
      return r ? (JSON.parse(r.parameters) as Parameters) : undefined;
    };
    const sets: Parameters[] = [];
    const keys = new Map<string, number>();
    const byDevice: Record<string, number> = {};
    for (const d of devices) {
      const merged = mergeParameters(
        ...SCOPE_ORDER.map((type) =>
          at(
            type,
            type === 'GLOBAL'
              ? ''
              : type === 'COMPANY'
                ? d.companyId
                : type === 'PROJECT'
                  ? d.projectId
                  : d.id,
          ),
        ),
        request,
      );
      const key = JSON.stringify(merged);
      let i = keys.get(key);
      if (i === undefined) {
        i = sets.length;
        sets.push(merged);
        keys.set(key, i);
      }
      byDevice[d.id] = i;
    }
    return { sets, byDevice };
  }

  // --- preview and apply ------------------------------------------------------------------------

  async #devicesOf(
    principal: Principal,
    req: { deviceIds?: string[] | undefined; projectId?: string | undefined; companyId?: string | undefined },
    max: number,
  ) {
    const given = [
      req.deviceIds !== undefined,
      req.projectId !== undefined,
      req.companyId !== undefined,
    ].filter(Boolean).length;
    if (given !== 1) throw badRequest('name the devices by exactly one of deviceIds, projectId or companyId');
    const out: { id: string; projectId: string; companyId: string; edgeVersion: string | null }[] = [];
    if (req.deviceIds) {
      if (req.deviceIds.length === 0) throw badRequest('deviceIds is empty');
      if (req.deviceIds.length > max) throw badRequest(`at most ${max} devices per call`);
      for (const id of new Set(req.deviceIds)) {
        const d = await this.#fleet.device(principal, id);
        out.push({ id: d.id, projectId: d.projectId, companyId: d.companyId, edgeVersion: d.edgeVersion });
      }
      return out;
    }
    const projectIds: string[] = [];
    if (req.projectId) projectIds.push((await this.#fleet.project(principal, req.projectId)).id);
    else {
      const c = await this.#companyById(principal, req.companyId!);
      for (let offset = 0; ; offset += 1000) {
        const page = await this.#fleet.listProjects(
          principal,
          { companyId: c.id },
          { offset, limit: 1000, sort: [], filter: [] },
        );
        projectIds.push(...page.items.map((p) => p.id));
        if (offset + 1000 >= page.total) break;
      }
    }
    for (const projectId of projectIds) {
      for (let offset = 0; ; offset += 1000) {
        const page = await this.#fleet.listDevices(
          principal,
          { offset, limit: 1000, sort: [], filter: [] },
          projectId,
        );
        for (const d of page.items)
          out.push({ id: d.id, projectId: d.projectId, companyId: d.companyId, edgeVersion: d.edgeVersion });
        if (out.length > max) throw badRequest(`the task would reach more than ${max} devices`);
        if (offset + 1000 >= page.total) break;
      }
    }
    if (out.length === 0) throw badRequest('no device to apply the template to');
    return out;
  }

  /** Per device, what applying the template would change (edges at 4.3.0 or later). */
  async preview(principal: Principal, req: ApplyRequest) {
    const t = await this.#readable(principal, req.templateId);
    const devices = await this.#devicesOf(principal, req, TEMPLATE_LIMITS.maxPreviewDevices);
    const request = checkParams(req.parameters, 'parameters');
    const { sets, byDevice } = await this.#deviceParameters(t.id, devices, request);
    const key = t.user_key ? this.#box.open(t.user_key) : undefined;
    const results: unknown[] = new Array(devices.length);
    let next = 0;
    const worker = async () => {
      while (next < devices.length) {
        const i = next++;
        const d = devices[i]!;
        if (!versionAtLeast(d.edgeVersion, PREVIEW_MIN_EDGE_VERSION)) {
          results[i] = {
            deviceId: d.id,
            status: 'UNSUPPORTED',
            error: {
              code: 'edge_version_unsupported',
              message: `template preview needs edge service ${PREVIEW_MIN_EDGE_VERSION} or later; device "${d.id}" runs ${d.edgeVersion ?? 'an unknown version'}`,
            },
          };
          continue;
        }
        try {
          const preview = await this.#edge.preview(d.id, t.document, `mw-preview-${randomUUID()}`, {
            mode: req.mode,
            encryptionKey: key,
            parameters: sets[byDevice[d.id]!],
          });
          results[i] = { deviceId: d.id, status: 'OK', preview };
        } catch (err) {
          const e = err instanceof AppError ? err : new AppError(502, 'edge_error', (err as Error).message);
          results[i] = {
            deviceId: d.id,
            status: e.code === 'device_offline' ? 'OFFLINE' : 'FAILED',
            error: { code: e.code, message: e.message },
          };
        }
      }
    };
    await Promise.all(
      Array.from({ length: Math.min(TEMPLATE_LIMITS.previewConcurrency, devices.length) }, worker),
    );
    if (devices.length === 1 && (results[0] as { status: string }).status === 'UNSUPPORTED') {
      const r = results[0] as { error: { message: string } };
      throw new AppError(400, 'edge_version_unsupported', r.error.message);
    }
    return {
      templateId: t.id,
      version: t.version,
      mode: req.mode ?? 'legacy',
      items: results,
      total: results.length,
    };
  }

  /** One `TEMPLATE_APPLY` task: a subtask per device. */
  async apply(principal: Principal, req: ApplyRequest) {
    const t = await this.#readable(principal, req.templateId);
    const devices = await this.#devicesOf(principal, req, 20_000);
    for (const d of devices) requireRole(principal, d, 'operator');
    const request = checkParams(req.parameters, 'parameters');
    const { sets, byDevice } = await this.#deviceParameters(t.id, devices, request);
    const projects = new Set(devices.map((d) => d.projectId));
    const companies = new Set(devices.map((d) => d.companyId));
    const scope = {
      companyId: companies.size === 1 ? [...companies][0]! : null,
      projectId: projects.size === 1 ? [...projects][0]! : null,
    };
    if (scope.companyId === null && !isGlobal(principal, 'operator'))
      throw forbidden('a task over several companies needs a global operator role');
    const params: ApplyParams = {
      templateId: t.id,
      version: t.version,
      friendlyName: t.friendly_name,
      mode: req.mode,
      failFast: req.failFast,
      parameterSets: sets,
      deviceParameters: byDevice,
    };
    return this.#tasks.create(principal, {
      type: 'TEMPLATE_APPLY',
      description: `apply template "${t.friendly_name}" version ${t.version} to ${devices.length} device(s)`,
      params,
      scope,
      devices: devices.map((d) => d.id),
      deadlineSeconds: req.deadlineSeconds,
    });
  }

  async #document(templateId: string, version: number): Promise<{ text: string; key: string | undefined }> {
    const t = await this.#repo.get(templateId);
    if (!t) throw new AppError(404, 'not_found', `template "${templateId}" was deleted`);
    const k = `${templateId}@${version}`;
    let text = this.#docs.get(k);
    if (text === undefined) {
      text = t.version === version ? t.document : await this.#repo.versionDocument(templateId, version);
      if (text === undefined)
        throw new AppError(404, 'not_found', `template "${templateId}" version ${version} not found`);
      if (this.#docs.size >= 4) this.#docs.delete(this.#docs.keys().next().value!);
      this.#docs.set(k, text);
    }
    return { text, key: t.user_key ? this.#box.open(t.user_key) : undefined };
  }

  #applyHandler(): TaskHandler {
    return {
      type: 'TEMPLATE_APPLY',
      description: 'apply an edge configuration template to devices, one subtask per device',
      publicParams: (p: ApplyParams) => ({
        templateId: p.templateId,
        version: p.version,
        friendlyName: p.friendlyName,
        mode: p.mode ?? 'legacy',
        failFast: p.failFast ?? true,
      }),
      run: (ctx) => this.#applyOne(ctx),
    };
  }

  /**
   * One device: the document applied through the edge's upload session and `PUT
   * /config/template/{session}` with `Idempotency-Key: mw-task-<subtask id>` (two round trips;
   * nothing is saved on the edge). The edge records the key in the apply's own transaction, so
   * whatever happened to an earlier send (a manager process that stopped, or stalled past its
   * lease, after sending), sending again is safe: the edge answers the recorded outcome, or
   * applies once if the earlier send never committed. A subtask is SUCCEEDED only on the edge's
   * answer that the apply committed.
   */
  async #applyOne(ctx: SubtaskContext): Promise<SubtaskOutcome> {
    const p = ctx.task.params as ApplyParams;
    const deviceId = ctx.subtask.deviceId!;
    const key = `mw-task-${ctx.subtask.id}`;
    if (ctx.maybeSent)
      await ctx.log(
        'info',
        `an earlier attempt may have reached the edge; sending again under the same Idempotency-Key (${key})`,
      );
    const { text, key: encryptionKey } = await this.#document(p.templateId, p.version);
    const r = await this.#edge.apply(
      deviceId,
      text,
      {
        mode: p.mode,
        failFast: p.failFast,
        encryptionKey,
        parameters: p.parameterSets[p.deviceParameters[deviceId] ?? -1],
      },
      key,
      () => ctx.markSent(),
    );
    if (r.status === 200) {
      // The outcome without the per-item diff (megabytes for a large template): the snapshot,
      // failed items, restarts, and whether the edge answered from its record of the key.
      const { sections, ...result } = (r.body?.result ?? {}) as Record<string, unknown>;
      const snapshot = String(result.snapshotId ?? '?');
      return {
        status: 'SUCCEEDED',
        result: {
          edgeStatus: 200,
          templateVersion: p.version,
          ...result,
          sections: sections && typeof sections === 'object' ? Object.keys(sections) : [],
        },
        message:
          result.replayed === true
            ? `the edge had applied version ${p.version} under ${key} before (snapshot ${snapshot}); its recorded outcome, not applied again`
            : `applied version ${p.version} (snapshot ${snapshot})`,
      };
    }
    const e = edgeError('applying the template', r);
    if (r.status === 409 || r.status === 429 || r.status >= 500) return { status: 'RETRY', error: e.message };
    return { status: 'FAILED', error: e.message, result: { edgeStatus: r.status, edgeAnswer: r.body } };
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
