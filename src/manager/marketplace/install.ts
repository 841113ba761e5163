/**
 * Installing a marketplace item on devices or on every device of a project, as a task:
 * configuration templates, twin models and analytics workspaces become (or reuse) a manager
 * template kept in the project and go out by the templates module's `TEMPLATE_APPLY` task (one
 * subtask per edge, retried while an edge is offline); applications go out by a
 * `MARKETPLACE_APP_INSTALL` task whose subtask creates each container on the edge
 * (`POST /apps/dc/containers/` over the link). Each install is recorded with its task. No HTTP here.
 */
import { randomUUID } from 'node:crypto';
import { AppError, badRequest, forbidden } from '../../kernel/errors.js';
import type { ListSpec } from '../../kernel/paging.js';
import { isGlobal, requireRole, type Principal } from '../auth/index.js';
import type { BridgeService } from '../bridge/index.js';
import type { FleetService } from '../fleet/index.js';
import type { SubtaskContext, SubtaskOutcome, TaskService } from '../tasks/index.js';
import type { TemplateService } from '../templates/index.js';
import { INSTALLABLE, templateDocumentOf, type ItemKind } from './content.js';
import type { InstallRow, MarketplaceRepository } from './repository.js';
import type { MarketplaceSecrets } from './secrets.js';
import type { MarketplaceService } from './service.js';

export interface InstallRequest {
  version?: string | undefined;
  deviceIds?: string[] | undefined;
  projectId?: string | undefined;
  mode?: 'legacy' | 'use' | 'merge-apply' | undefined;
  parameters?: Record<string, Record<string, string | number | boolean>> | undefined;
  failFast?: boolean | undefined;
  deadlineSeconds?: number | undefined;
}

interface AppParams {
  itemId: string;
  name: string;
  version: string;
  containers: Record<string, unknown>[];
}

/** Devices of one install at most (as a template apply). */
const MAX_DEVICES = 20_000;

export class MarketplaceInstaller {
  readonly #repo: MarketplaceRepository;
  readonly #catalogue: MarketplaceService;
  readonly #templates: TemplateService;
  readonly #tasks: TaskService;
  readonly #fleet: FleetService;
  readonly #bridge: BridgeService;
  readonly #secrets: MarketplaceSecrets;

  constructor(deps: {
    repo: MarketplaceRepository;
    catalogue: MarketplaceService;
    templates: TemplateService;
    tasks: TaskService;
    fleet: FleetService;
    bridge: BridgeService;
    secrets: MarketplaceSecrets;
  }) {
    this.#repo = deps.repo;
    this.#catalogue = deps.catalogue;
    this.#templates = deps.templates;
    this.#tasks = deps.tasks;
    this.#fleet = deps.fleet;
    this.#bridge = deps.bridge;
    this.#secrets = deps.secrets;
    deps.tasks.register({
      type: 'MARKETPLACE_APP_INSTALL',
      description:
        "install a marketplace application on devices: each of its containers created on the edge's /apps",
      publicParams: (p: AppParams) => ({
        itemId: p.itemId,
        name: p.name,
        version: p.version,
        containers: p.containers.length,
      }),
      run: (ctx) => this.#installApp(ctx),
    });
  }

  /** One task that installs the item's version (the latest by default) on the targets. */
  async install(principal: Principal, itemId: string, req: InstallRequest) {
    const given = [req.deviceIds !== undefined, req.projectId !== undefined].filter(Boolean).length;
    if (given !== 1) throw badRequest('name the targets by exactly one of deviceIds or projectId');
    if (req.deviceIds?.length === 0) throw badRequest('deviceIds is empty');
    const { item, version } = await this.#catalogue.forInstall(itemId, req.version);
    const kind = item.kind as ItemKind;
    if (!INSTALLABLE.includes(kind))
      throw badRequest(`a ${kind} item is not installed on edges; import it through an asset hub`);
    const devices = await this.#devices(principal, req);
    const projects = new Set(devices.map((d) => d.projectId));
    const companies = new Set(devices.map((d) => d.companyId));
    const projectId = projects.size === 1 ? [...projects][0]! : null;
    const companyId = companies.size === 1 ? [...companies][0]! : null;
    const content = JSON.parse(version.content) as unknown;
    let templateId: string | null = null;
    let task: { taskId: string };
    if (kind === 'APPLICATION') {
      for (const d of devices) requireRole(principal, d, 'operator');
      if (companyId === null && !isGlobal(principal, 'operator'))
        throw forbidden('an install over several companies needs a global operator role');
      const params: AppParams = {
        itemId: item.id,
        name: item.name,
        version: version.version,
        containers: (content as { containers: Record<string, unknown>[] }).containers,
      };
      await this.#secrets.requireSet(params.containers);
      task = await this.#tasks.create(principal, {
        type: 'MARKETPLACE_APP_INSTALL',
        description: `install application "${item.name}" ${version.version} on ${devices.length} device(s)`,
        params,
        scope: { companyId, projectId },
        devices: devices.map((d) => d.id),
        deadlineSeconds: req.deadlineSeconds,
      });
    } else {
      templateId = await this.#template(principal, item.id, item.name, version.version, kind, content, {
        projectId,
        companyId,
      });
      task = await this.#templates.apply(principal, {
        templateId,
        ...(req.projectId ? { projectId: req.projectId } : { deviceIds: devices.map((d) => d.id) }),
        mode: req.mode,
        parameters: req.parameters,
        failFast: req.failFast,
        deadlineSeconds: req.deadlineSeconds,
      });
    }
    const row: InstallRow = {
      id: randomUUID(),
      item_id: item.id,
      version: version.version,
      target_type: req.projectId ? 'PROJECT' : 'DEVICES',
      target_id:
        req.projectId ??
        devices
          .map((d) => d.id)
          .join(',')
          .slice(0, 2000),
      company_id: companyId,
      project_id: projectId,
      template_id: templateId,
      task_id: task.taskId,
      created_by: principal.subject,
      created_at: Date.now(),
    };
    await this.#repo.insertInstall(row);
    return { ...installView(row), kind, devices: devices.length, task };
  }

  async #devices(principal: Principal, req: InstallRequest) {
    const out: { id: string; projectId: string; companyId: string }[] = [];
    if (req.deviceIds) {
      if (req.deviceIds.length > MAX_DEVICES) throw badRequest(`at most ${MAX_DEVICES} devices per install`);
      for (const id of new Set(req.deviceIds)) out.push(await this.#fleet.device(principal, id));
      return out;
    }
    const project = await this.#fleet.project(principal, req.projectId!);
    for (let offset = 0; ; offset += 1000) {
      const page = await this.#fleet.listDevices(
        principal,
        { offset, limit: 1000, sort: [], filter: [] },
        project.id,
      );
      out.push(...page.items);
      if (out.length > MAX_DEVICES)
        throw badRequest(`the install would reach more than ${MAX_DEVICES} devices`);
      if (offset + 1000 >= page.total) break;
    }
    if (out.length === 0) throw badRequest(`project "${project.id}" has no device to install on`);
    return out;
  }

  /** The manager template of the version: one made by an earlier install on the project, or a new one. */
  async #template(
    principal: Principal,
    itemId: string,
    name: string,
    version: string,
    kind: ItemKind,
    content: unknown,
    scope: { projectId: string | null; companyId: string | null },
  ): Promise<string> {
    if (scope.projectId) {
      const earlier = await this.#repo.templateOf(itemId, version, scope.projectId);
      if (earlier) {
        try {
          await this.#templates.get(principal, earlier);
          return earlier;
        } catch (err) {
          if (!(err instanceof AppError) || err.status !== 404) throw err;
        }
      }
    }
    const made = await this.#templates.createFromDocument(
      principal,
      {
        friendlyName: `${name} ${version} (marketplace)`,
        templateDescription: `installed from the marketplace: item ${itemId}, version ${version}`,
        ...(scope.projectId
          ? { projectId: scope.projectId }
          : scope.companyId
            ? { companyId: scope.companyId }
            : {}),
      },
      templateDocumentOf(kind, content),
    );
    return made.id;
  }

  async installs(principal: Principal, itemId: string, spec: ListSpec) {
    await this.#catalogue.forInstall(itemId, undefined);
    const visible = isGlobal(principal, 'viewer')
      ? null
      : {
          companyIds: principal.grants.filter((g) => g.companyId && !g.projectId).map((g) => g.companyId!),
          projectIds: principal.grants.filter((g) => g.projectId).map((g) => g.projectId!),
        };
    const page = await this.#repo.listInstalls(itemId, spec, visible);
    return { items: page.items.map(installView), total: page.total };
  }

  /** One device: each container of the application created on the edge; one that exists is kept. */
  async #installApp(ctx: SubtaskContext): Promise<SubtaskOutcome> {
    const p = ctx.task.params as AppParams;
    const deviceId = ctx.subtask.deviceId!;
    const created: string[] = [];
    const kept: string[] = [];
    await ctx.markSent();
    for (const [i, c] of p.containers.entries()) {
      const label = typeof c.Name === 'string' ? c.Name : `containers[${i}]`;
      const r = await this.#bridge.json(
        deviceId,
        'POST',
        '/apps/dc/containers/',
        await this.#secrets.resolve(c),
      );
      if (r.status === 200 || r.status === 201) created.push(label);
      else if (r.status === 409) kept.push(label);
      else {
        const message = typeof r.body?.message === 'string' ? r.body.message : `status ${r.status}`;
        const error = `creating container ${label}: the edge answered ${r.status}: ${message}`;
        if (r.status === 429 || r.status >= 500) return { status: 'RETRY', error };
        return { status: 'FAILED', error, result: { edgeStatus: r.status, edgeAnswer: r.body, created } };
      }
    }
    return {
      status: 'SUCCEEDED',
      result: { created, kept },
      message: `application ${p.name} ${p.version}: ${created.length} container(s) created, ${kept.length} kept`,
    };
  }
}

export function installView(r: InstallRow) {
  return {
    installId: r.id,
    itemId: r.item_id,
    version: r.version,
    targetType: r.target_type,
    targetId: r.target_id,
    companyId: r.company_id,
    projectId: r.project_id,
    templateId: r.template_id,
    taskId: r.task_id,
    createdBy: r.created_by,
    createdAt: new Date(Number(r.created_at)).toISOString(),
  };
}
