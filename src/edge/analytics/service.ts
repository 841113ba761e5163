/**
 * The analytics domain: workspaces, groups, processor instances (checked against the catalogue),
 * variables and component variables, export and import. Rows live in the module's tables (through
 * `AnalyticsRepository`: no SQL here) and in memory (read on start); every change goes to the
 * database first, then to the runtime. No GraphQL here.
 *
 * `over(repo)` gives a service over a repository bound to someone else's transaction (the
 * configuration apply's), without a runtime: the apply writes through it with the API's rules, and
 * after the commit the live service reads its tables again (`reload`), restarting only the
 * processors whose kind, parameters or enabled flag changed.
 */
import type { Database } from '../../kernel/db/index.js';
import { badRequest, conflict, notFound } from '../../kernel/errors.js';
import { uuidv7 } from '../../kernel/ids.js';
import { LIMITS } from './catalogue.js';
import { loadExpressions } from './processors.js';
import { AnalyticsRuntime, type InstanceDef, type RuntimeOptions, type StateStore } from './runtime.js';
import { checkedParameters, copy, reconnect } from './instance-graph.js';
import type { AnalyticsLog } from './log.js';
import type { DataHub } from '../datahub/index.js';
import {
  AnalyticsRepository,
  type AnalyticsContent,
  type ComponentVariable,
  type Group,
  type Instance,
  type Position,
  type Variable,
  type Workspace,
} from './repository.js';
import {
  documentIssues,
  exportWorkspace,
  importInto,
  importWorkspace,
  type WorkspaceDocument,
} from './workspace-document.js';

export type { ComponentVariable, Group, Instance, Position, Variable, Workspace } from './repository.js';
export type { WorkspaceDocument } from './workspace-document.js';

const checkName = (what: string, name: unknown): string => {
  if (typeof name !== 'string' || name.trim() === '' || name.length > LIMITS.maxNameLength)
    throw badRequest(`${what} must have 1 to ${LIMITS.maxNameLength} characters`);
  return name;
};

const VAR_NAME = /^[A-Za-z_][A-Za-z0-9_.-]{0,199}$/;

export interface CreateInstanceInput {
  workspaceId: string;
  groupId?: string | null;
  name: string;
  kind: string;
  parameters: unknown;
  enabled?: boolean;
  position?: Position;
}

export interface UpdateInstanceInput {
  id: string;
  name?: string;
  kind?: string;
  parameters?: unknown;
  enabled?: boolean;
  position?: Position;
  groupId?: string | null;
}

export class AnalyticsService {
  readonly #repo: AnalyticsRepository;
  /** undefined: a service over a transaction (`over`), which runs no processors. */
  readonly #runtime: AnalyticsRuntime | undefined;
  readonly log: AnalyticsLog;
  readonly workspaces = new Map<string, Workspace>();
  readonly groups = new Map<string, Group>();
  readonly instances = new Map<string, Instance>();
  readonly variables = new Map<string, Variable>();
  readonly componentVariables = new Map<string, Map<string, ComponentVariable>>();
  readonly startedAt = Date.now();

  private constructor(
    repo: AnalyticsRepository,
    log: AnalyticsLog,
    live?: Pick<RuntimeOptions, 'hub' | 'persistIntervalMs' | 'scriptOutputBytes' | 'modelPath'>,
  ) {
    this.#repo = repo;
    this.log = log;
    if (!live) return;
    const store: StateStore = {
      load: (id) => repo.loadState(id),
      save: (rows) => repo.saveState(rows),
      remove: (id) => repo.removeState(id),
    };
    this.#runtime = new AnalyticsRuntime({
      ...live,
      log,
      store,
      variables: (id) => this.variablesFor(id),
      variablesVersion: () => this.variablesVersion,
    });
  }

  /** The running processors (only the live service has them). */
  get runtime(): AnalyticsRuntime {
    if (!this.#runtime) throw new Error('this analytics service runs over a transaction: no runtime');
    return this.#runtime;
  }

  static async open(options: {
    database: Database;
    hub: DataHub;
    log: AnalyticsLog;
    persistIntervalMs?: number;
    scriptOutputBytes?: number;
    modelPath?: RuntimeOptions['modelPath'];
  }): Promise<AnalyticsService> {
    const s = new AnalyticsService(new AnalyticsRepository(options.database), options.log, {
      ...options,
      persistIntervalMs: options.persistIntervalMs ?? 30_000,
    });
    await s.runtime.init();
    s.#fill(await s.#repo.load());
    if ([...s.instances.values()].some((i) => i.kind === 'expression')) await loadExpressions();
    for (const i of s.instances.values()) await s.runtime.apply(s.#def(i));
    return s;
  }

  /**
   * A service over `repo` (one bound to a transaction: `AnalyticsRepository.inTransaction`) with
   * no runtime: the configuration apply writes through it, so that its rules are the API's.
   */
  async over(repo: AnalyticsRepository): Promise<AnalyticsService> {
    const s = new AnalyticsService(repo, this.log);
    s.#fill(await repo.load());
    return s;
  }

  /**
   * Reads the whole configuration again from the database (after a configuration template was
   * applied in a transaction of its own) and brings the runtime to it: instances that are gone
   * stop, new ones start, and those whose kind, parameters and enabled flag are unchanged keep
   * running with their window state (a rename or a move does not restart them).
   */
  async reload(): Promise<void> {
    const content = await this.#repo.load();
    const before = new Set(this.instances.keys());
    this.#fill(content);
    this.variablesVersion++;
    if (!this.#runtime) return;
    if (content.instances.some((i) => i.kind === 'expression')) await loadExpressions();
    for (const id of before) if (!this.instances.has(id)) await this.#runtime.remove(id);
    for (const i of this.instances.values()) await this.#runtime.apply(this.#def(i));
  }

  /** Swaps `content` in at once: no reader sees half a configuration. */
  #fill(content: AnalyticsContent): void {
    this.workspaces.clear();
    for (const w of content.workspaces) this.workspaces.set(w.id, w);
    this.groups.clear();
    for (const g of content.groups) this.groups.set(g.id, g);
    this.instances.clear();
    for (const i of content.instances) this.instances.set(i.id, i);
    this.variables.clear();
    for (const v of content.variables) this.variables.set(v.name, v);
    this.componentVariables.clear();
    for (const v of content.componentVariables) this.#componentMap(v.component).set(v.name, v);
  }

  /** An info entry of the live service (one over a transaction logs nothing: it may roll back). */
  #note(message: string, fields: Record<string, unknown>): void {
    if (this.#runtime) this.log.write('info', message, fields);
  }

  #componentMap(component: string): Map<string, ComponentVariable> {
    let m = this.componentVariables.get(component);
    if (!m) this.componentVariables.set(component, (m = new Map()));
    return m;
  }

  /** What a processor sees as variables: the global ones, then its own component variables. */
  /** Bumped on every variable change: processors cache what they derive from the variables. */
  variablesVersion = 0;

  variablesFor(instanceId: string): Record<string, unknown> {
    const out: Record<string, unknown> = {};
    for (const v of this.variables.values()) out[v.name] = v.value;
    const own = this.componentVariables.get(instanceId);
    if (own) for (const v of own.values()) out[v.name] = v.value;
    return out;
  }

  #def(i: Instance): InstanceDef {
    return {
      id: i.id,
      workspaceId: i.workspaceId,
      name: i.name,
      kind: i.kind,
      parameters: i.parameters,
      enabled: i.enabled,
    };
  }

  // --- workspaces

  workspace(id: string): Workspace {
    const w = this.workspaces.get(id);
    if (!w) throw notFound(`workspace ${id} not found`);
    return w;
  }

  #nameTaken(name: string, except?: string): void {
    for (const w of this.workspaces.values())
      if (w.name === name && w.id !== except) throw conflict(`a workspace named "${name}" exists`);
  }

  async createWorkspace(input: { name: string; description?: string | null }): Promise<Workspace> {
    const name = checkName('Name', input.name);
    this.#nameTaken(name);
    const now = Date.now();
    const w: Workspace = {
      id: uuidv7(),
      name,
      description: input.description ?? '',
      createdAt: now,
      updatedAt: now,
    };
    await this.#repo.insertWorkspace(w);
    this.workspaces.set(w.id, w);
    this.#note(`workspace "${name}" created`, { workspaceId: w.id });
    return w;
  }

  async updateWorkspace(input: {
    id: string;
    name?: string | null;
    description?: string | null;
  }): Promise<Workspace> {
    const w = this.workspace(input.id);
    const name = input.name == null ? w.name : checkName('Name', input.name);
    this.#nameTaken(name, w.id);
    const next = { ...w, name, description: input.description ?? w.description, updatedAt: Date.now() };
    await this.#repo.updateWorkspace(next);
    this.workspaces.set(w.id, next);
    return next;
  }

  async deleteWorkspace(id: string): Promise<boolean> {
    this.workspace(id);
    await this.deleteWorkspaceContent(id);
    await this.#repo.deleteWorkspace(id);
    this.workspaces.delete(id);
    this.#note('workspace deleted', { workspaceId: id });
    return true;
  }

  /** Deletes the groups and processor instances of a workspace (or of every workspace). */
  async deleteWorkspaceContent(workspaceId?: string): Promise<{ groups: number; instances: number }> {
    if (workspaceId !== undefined) this.workspace(workspaceId);
    const groups = [...this.groups.values()].filter(
      (g) => workspaceId === undefined || g.workspaceId === workspaceId,
    );
    const instances = [...this.instances.values()].filter(
      (i) => workspaceId === undefined || i.workspaceId === workspaceId,
    );
    await this.#repo.transaction(async (repo) => {
      await repo.deleteInstances(instances.map((i) => i.id));
      await repo.deleteGroups(groups.map((g) => g.id));
    });
    for (const g of groups) this.groups.delete(g.id);
    for (const i of instances) {
      this.instances.delete(i.id);
      await this.#runtime?.remove(i.id);
    }
    return { groups: groups.length, instances: instances.length };
  }

  workspaceGroups(workspaceId: string): Group[] {
    this.workspace(workspaceId);
    return [...this.groups.values()].filter((g) => g.workspaceId === workspaceId);
  }

  workspaceInstances(workspaceId: string | undefined, groupId?: string | null): Instance[] {
    if (workspaceId !== undefined) this.workspace(workspaceId);
    return [...this.instances.values()].filter(
      (i) =>
        (workspaceId === undefined || i.workspaceId === workspaceId) &&
        (groupId == null || i.groupId === groupId),
    );
  }

  // --- groups

  group(id: string): Group {
    const g = this.groups.get(id);
    if (!g) throw notFound(`group ${id} not found`);
    return g;
  }

  groupProcessorIds(id: string): string[] {
    return [...this.instances.values()].filter((i) => i.groupId === id).map((i) => i.id);
  }

  async createGroup(input: {
    workspaceId: string;
    name: string;
    description?: string | null;
    processorIds?: string[] | null;
  }): Promise<Group> {
    this.workspace(input.workspaceId);
    const name = checkName('Name', input.name);
    const now = Date.now();
    const g: Group = {
      id: uuidv7(),
      workspaceId: input.workspaceId,
      name,
      description: input.description ?? '',
      createdAt: now,
      updatedAt: now,
    };
    await this.#repo.insertGroup(g);
    this.groups.set(g.id, g);
    if (input.processorIds?.length) await this.addToGroup(g.id, input.processorIds);
    return g;
  }

  async updateGroup(input: {
    id: string;
    name?: string | null;
    description?: string | null;
  }): Promise<Group> {
    const g = this.group(input.id);
    const next = {
      ...g,
      name: input.name == null ? g.name : checkName('Name', input.name),
      description: input.description ?? g.description,
      updatedAt: Date.now(),
    };
    await this.#repo.updateGroup(next);
    this.groups.set(g.id, next);
    return next;
  }

  /** Deletes a group; its processors are deleted too when asked, else they leave the group. */
  async deleteGroup(id: string, deleteProcessors: boolean): Promise<boolean> {
    this.group(id);
    const members = this.groupProcessorIds(id);
    if (deleteProcessors) for (const p of members) await this.deleteInstance(p);
    else await this.removeFromGroup(id, members);
    await this.#repo.deleteGroups([id]);
    this.groups.delete(id);
    return true;
  }

  async addToGroup(groupId: string, ids: string[]): Promise<Group> {
    const g = this.group(groupId);
    for (const id of ids) {
      const i = this.instance(id);
      if (i.workspaceId !== g.workspaceId)
        throw badRequest(`processor instance ${id} is in another workspace`);
    }
    await this.#setGroup(ids, groupId);
    return g;
  }

  async removeFromGroup(groupId: string, ids: string[]): Promise<Group> {
    const g = this.group(groupId);
    await this.#setGroup(
      ids.filter((id) => this.instance(id).groupId === groupId),
      null,
    );
    return g;
  }

  async #setGroup(ids: string[], groupId: string | null): Promise<void> {
    if (ids.length === 0) return;
    const now = Date.now();
    await this.#repo.setGroup(ids, groupId, now);
    for (const id of ids) {
      const i = this.instances.get(id)!;
      this.instances.set(id, { ...i, groupId, updatedAt: now });
    }
  }

  // --- processor instances

  instance(id: string): Instance {
    const i = this.instances.get(id);
    if (!i) throw notFound(`processor instance ${id} not found`);
    return i;
  }

  async createInstance(input: CreateInstanceInput, id = uuidv7()): Promise<Instance> {
    if (input.kind === 'expression') await loadExpressions();
    this.workspace(input.workspaceId);
    if (this.instances.size >= LIMITS.maxInstances)
      throw conflict(`at most ${LIMITS.maxInstances} processor instances can exist`);
    if (input.groupId != null && this.group(input.groupId).workspaceId !== input.workspaceId)
      throw badRequest('GroupID: the group is in another workspace');
    const name = checkName('Name', input.name);
    const parameters = checkedParameters(this, id, input.kind, input.parameters);
    const now = Date.now();
    const i: Instance = {
      id,
      workspaceId: input.workspaceId,
      groupId: input.groupId ?? null,
      name,
      kind: input.kind,
      parameters,
      enabled: input.enabled ?? true,
      position: input.position ?? { x: 0, y: 0 },
      createdAt: now,
      updatedAt: now,
    };
    await this.#repo.insertInstance(i);
    this.instances.set(id, i);
    await this.#runtime?.apply(this.#def(i));
    return i;
  }

  async updateInstance(input: UpdateInstanceInput): Promise<Instance> {
    if ((input.kind ?? this.instances.get(input.id)?.kind) === 'expression') await loadExpressions();
    const cur = this.instance(input.id);
    const kind = input.kind ?? cur.kind;
    const parameters =
      input.parameters !== undefined || kind !== cur.kind
        ? checkedParameters(this, cur.id, kind, input.parameters ?? cur.parameters)
        : cur.parameters;
    if (input.groupId != null && this.group(input.groupId).workspaceId !== cur.workspaceId)
      throw badRequest('GroupID: the group is in another workspace');
    const next: Instance = {
      ...cur,
      kind,
      parameters,
      name: input.name == null ? cur.name : checkName('Name', input.name),
      enabled: input.enabled ?? cur.enabled,
      position: input.position ?? cur.position,
      groupId: input.groupId === undefined ? cur.groupId : input.groupId,
      updatedAt: Date.now(),
    };
    await this.#repo.updateInstance(next);
    this.instances.set(cur.id, next);
    await this.#runtime?.apply(this.#def(next));
    return next;
  }

  async deleteInstance(id: string): Promise<boolean> {
    this.instance(id);
    const readers = [...this.instances.values()].filter((i) =>
      i.parameters.inputs.some((x) => x.processor === id),
    );
    if (readers.length)
      throw conflict(
        `processor instance ${id} feeds ${readers.map((r) => `"${r.name}"`).join(', ')}: reconnect or delete those first`,
      );
    await this.#repo.deleteInstances([id]);
    this.instances.delete(id);
    await this.#runtime?.remove(id);
    return true;
  }

  async deleteAllInstances(workspaceId?: string): Promise<number> {
    const list = this.workspaceInstances(workspaceId);
    if (list.length === 0) return 0;
    await this.#repo.deleteInstances(list.map((i) => i.id));
    for (const i of list) {
      this.instances.delete(i.id);
      await this.#runtime?.remove(i.id);
    }
    return list.length;
  }

  async rename(id: string, name: string): Promise<Instance> {
    return this.updateInstance({ id, name });
  }

  /**
   * Copies instances (into their workspace or another one), shifted by `offset`; inputs that read
   * another copied instance read its copy.
   */
  async copy(ids: string[], targetWorkspaceId: string | undefined, offset: Position): Promise<Instance[]> {
    return copy(this, ids, targetWorkspaceId, offset);
  }

  /**
   * Rewires inputs: every input that reads `from` (a processor ID or a subject) reads `to` instead,
   * in the given instances or in every instance.
   */
  async reconnect(input: {
    ids?: string[] | null;
    fromProcessor?: string | null;
    toProcessor?: string | null;
    fromSubject?: string | null;
    toSubject?: string | null;
  }): Promise<Instance[]> {
    return reconnect(this, input);
  }

  async setPositions(list: Array<{ id: string; x: number; y: number }>): Promise<Instance[]> {
    for (const p of list) {
      this.instance(p.id);
      if (!Number.isFinite(p.x) || !Number.isFinite(p.y))
        throw badRequest('positions must be finite numbers');
    }
    const now = Date.now();
    await this.#repo.setPositions(list, now);
    return list.map((p) => {
      const next = { ...this.instance(p.id), position: { x: p.x, y: p.y }, updatedAt: now };
      this.instances.set(p.id, next);
      return next;
    });
  }

  // --- variables

  variable(name: string): Variable {
    const v = this.variables.get(name);
    if (!v) throw notFound(`variable "${name}" not found`);
    return v;
  }

  async setVariable(name: string, value: unknown): Promise<Variable> {
    if (!VAR_NAME.test(name))
      throw badRequest(`variable name "${name}" is not valid (letters, digits, _ . -; a letter or _ first)`);
    const text = JSON.stringify(value ?? null);
    if (text.length > 64 * 1024) throw badRequest('a variable value is at most 64 KiB of JSON');
    const now = Date.now();
    const v = { name, value: value ?? null, updatedAt: now };
    await this.#repo.upsertVariable(v);
    this.variables.set(name, v);
    this.variablesVersion++;
    return v;
  }

  async deleteVariable(name: string): Promise<boolean> {
    if (!this.variables.has(name)) return false;
    await this.#repo.deleteVariable(name);
    this.variables.delete(name);
    this.variablesVersion++;
    return true;
  }

  componentVariable(component: string, name: string): ComponentVariable {
    const v = this.componentVariables.get(component)?.get(name);
    if (!v) throw notFound(`variable "${name}" of component "${component}" not found`);
    return v;
  }

  componentVariablesOf(component: string): ComponentVariable[] {
    return [...(this.componentVariables.get(component)?.values() ?? [])];
  }

  async setComponentVariable(component: string, name: string, value: unknown): Promise<ComponentVariable> {
    checkName('Component', component);
    if (!VAR_NAME.test(name)) throw badRequest(`variable name "${name}" is not valid`);
    const text = JSON.stringify(value ?? null);
    if (text.length > 64 * 1024) throw badRequest('a variable value is at most 64 KiB of JSON');
    const now = Date.now();
    const v = { component, name, value: value ?? null, updatedAt: now };
    await this.#repo.upsertComponentVariable(v);
    this.#componentMap(component).set(name, v);
    this.variablesVersion++;
    return v;
  }

  async deleteComponentVariable(component: string, name: string): Promise<boolean> {
    this.componentVariable(component, name);
    await this.#repo.deleteComponentVariable(component, name);
    this.componentVariables.get(component)!.delete(name);
    this.variablesVersion++;
    return true;
  }

  // --- export and import

  exportWorkspace(id: string): WorkspaceDocument {
    return exportWorkspace(this, id);
  }

  /** Problems of a workspace document (empty when it can be imported). */
  static async documentIssues(doc: unknown): Promise<string[]> {
    return documentIssues(doc);
  }

  /** Creates a new workspace from a document (new IDs; references inside it follow). */
  async importWorkspace(doc: unknown, name?: string | null): Promise<Workspace> {
    return importWorkspace(this, doc, name);
  }

  /** Creates the groups and processors of `d` in workspace `wsId`. */
  async importInto(wsId: string, d: WorkspaceDocument): Promise<void> {
    return importInto(this, wsId, d);
  }

  async close(): Promise<void> {
    await this.#runtime?.close();
  }
}
