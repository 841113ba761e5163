/**
 * The apply side of templates: a preview per device (what applying would change) and the apply
 * to many devices as one `TEMPLATE_APPLY` task (src/manager/tasks), each subtask applying the
 * template through the edge's /config API over the link (edge-calls.ts), under an
 * `Idempotency-Key` of its own. No HTTP here.
 */
import { randomUUID } from 'node:crypto';
import { AppError, badRequest, forbidden, ERRORS } from '../../kernel/errors.js';
import { credentialSectionsOf } from '../../kernel/link/protocol.js';
import { isGlobal, requireRole, type Principal } from '../auth/index.js';
import type { FleetService } from '../fleet/index.js';
import type { SecretBox } from '../fleet/index.js';
import type { SubtaskContext, SubtaskOutcome, TaskHandler, TaskService } from '../tasks/index.js';
import { edgeError, type EdgeTemplates } from './edge-calls.js';
import { PREVIEW_MIN_EDGE_VERSION, TEMPLATE_LIMITS } from './limits.js';
import { SCOPE_ORDER, checkParams, mergeParameters, type Parameters, type ScopeType } from './parameters.js';
import type { TemplateRepository, TemplateRow } from './repository.js';
import { previewContent } from './preview-content.js';
import type { TemplateDocument } from '../../kernel/template-envelope.js';

export type ApplyMode = 'legacy' | 'use' | 'merge-apply';

export interface ApplyRequest {
  templateId: string;
  deviceIds?: string[] | undefined;
  projectId?: string | undefined;
  companyId?: string | undefined;
  mode?: ApplyMode | undefined;
  failFast?: boolean | undefined;
  parameters?: Parameters | undefined;
  deadlineSeconds?: number | undefined;
  /** Preview only: each device's current configuration beside the template's (preview-content.ts). */
  withContent?: boolean | undefined;
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

/** Previews and applies templates (the store, service.ts, hands it the access check). */
export class TemplateApplier {
  readonly #repo: TemplateRepository;
  readonly #box: SecretBox;
  readonly #fleet: FleetService;
  readonly #edge: EdgeTemplates;
  readonly #tasks: TaskService;
  readonly #readable: (principal: Principal, id: string) => Promise<TemplateRow>;
  /** Documents by `id@version` for the subtasks of a task (a few, small in count). */
  readonly #docs = new Map<string, string>();

  constructor(
    deps: {
      repo: TemplateRepository;
      box: SecretBox;
      fleet: FleetService;
      edge: EdgeTemplates;
      tasks: TaskService;
    },
    readable: (principal: Principal, id: string) => Promise<TemplateRow>,
  ) {
    this.#repo = deps.repo;
    this.#box = deps.box;
    this.#fleet = deps.fleet;
    this.#edge = deps.edge;
    this.#tasks = deps.tasks;
    this.#readable = readable;
    deps.tasks.register(this.#applyHandler());
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
    const devices = await this.#devicesOf(
      principal,
      req,
      req.withContent ? TEMPLATE_LIMITS.maxContentPreviewDevices : TEMPLATE_LIMITS.maxPreviewDevices,
    );
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
              code: ERRORS.edgeVersionUnsupported.code,
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
          results[i] = {
            deviceId: d.id,
            status: 'OK',
            preview,
            ...(req.withContent
              ? { content: await this.#content(d.id, t.document, sets[byDevice[d.id]!], preview) }
              : {}),
          };
        } catch (err) {
          const e = err instanceof AppError ? err : new AppError(ERRORS.edgeError, (err as Error).message);
          results[i] = {
            deviceId: d.id,
            status: e.code === ERRORS.deviceOffline.code ? 'OFFLINE' : 'FAILED',
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
      throw new AppError(ERRORS.edgeVersionUnsupported, r.error.message);
    }
    return {
      templateId: t.id,
      version: t.version,
      mode: req.mode ?? 'legacy',
      items: results,
      total: results.length,
    };
  }

  /** The device's current configuration beside the template's, for the preview's diff. */
  async #content(deviceId: string, text: string, parameters: Parameters | undefined, preview: unknown) {
    const current = await this.#edge.current(deviceId, `mw-preview-current-${randomUUID()}`, undefined);
    const sections = (preview as { sections?: Record<string, { removed?: string[] }> }).sections ?? {};
    const removed = Object.fromEntries(Object.entries(sections).map(([k, v]) => [k, v.removed ?? []]));
    return previewContent(
      JSON.parse(text) as TemplateDocument,
      JSON.parse(current) as TemplateDocument,
      parameters,
      removed,
    );
  }

  /** One `TEMPLATE_APPLY` task: a subtask per device. */
  async apply(principal: Principal, req: ApplyRequest) {
    const t = await this.#readable(principal, req.templateId);
    const devices = await this.#devicesOf(principal, req, 20_000);
    for (const d of devices) requireRole(principal, d, 'operator');
    // A template with the edge's credentials (users, API clients, access keys) changes who may do
    // what on the edge: it needs the admin role on every device's project, as the bridge does.
    if (credentialSectionsOf(JSON.parse(t.sections) as string[]).length > 0)
      for (const d of devices) requireRole(principal, d, 'admin');
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
    if (!t) throw new AppError(ERRORS.notFound, `template "${templateId}" was deleted`);
    const k = `${templateId}@${version}`;
    let text = this.#docs.get(k);
    if (text === undefined) {
      text = t.version === version ? t.document : await this.#repo.versionDocument(templateId, version);
      if (text === undefined)
        throw new AppError(ERRORS.notFound, `template "${templateId}" version ${version} not found`);
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
}
