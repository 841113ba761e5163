/**
 * The analytics domain: workspaces, groups, processor instances (checked against the catalogue),
 * variables and component variables, export and import. Rows live in the module's tables and in
 * memory (read on start); every change goes to the database first, then to the runtime. No
 * GraphQL here.
 */
import type { Kysely } from '../../kernel/db/index.js';
import type { Database } from '../../kernel/db/index.js';
import { badRequest, conflict, notFound } from '../../kernel/errors.js';
import { uuidv7 } from '../../kernel/ids.js';
import { checkParameters, LIMITS, type InputSpec } from './catalogue.js';
import { compileExpression, loadExpressions } from './processors.js';
import { AnalyticsRuntime, type InstanceDef, type StateStore } from './runtime.js';
import type { AnalyticsLog } from './log.js';
import type { DataHub } from '../datahub/bus.js';

export interface Workspace {
  id: string;
  name: string;
  description: string;
  createdAt: number;
  updatedAt: number;
}

export interface Group {
  id: string;
  workspaceId: string;
  name: string;
  description: string;
  createdAt: number;
  updatedAt: number;
}

export interface Position {
  x: number;
  y: number;
}

export interface Instance {
  id: string;
  workspaceId: string;
  groupId: string | null;
  name: string;
  kind: string;
  parameters: Record<string, unknown> & { inputs: InputSpec[] };
  enabled: boolean;
  position: Position;
  createdAt: number;
  updatedAt: number;
}

export interface Variable {
  name: string;
  value: unknown;
  updatedAt: number;
}

export interface ComponentVariable extends Variable {
  component: string;
}

/** A workspace as a portable document (ExportWorkspace, ImportWorkspace, the config section). */
export interface WorkspaceDocument {
  version: 1;
  workspace: { name: string; description: string };
  groups: Array<{ key: string; name: string; description: string }>;
  processors: Array<{
    key: string;
    name: string;
    kind: string;
    group: string | null;
    enabled: boolean;
    position: Position;
    /** Inputs that read another processor of the document name it by its `key`. */
    parameters: Record<string, unknown>;
  }>;
}

interface Tables {
  analytics_workspace: {
    id: string;
    name: string;
    description: string;
    created_at: number;
    updated_at: number;
  };
  analytics_group: {
    id: string;
    workspace_id: string;
    name: string;
    description: string;
    created_at: number;
    updated_at: number;
  };
  analytics_instance: {
    id: string;
    workspace_id: string;
    group_id: string | null;
    name: string;
    kind: string;
    parameters: string;
    enabled: number;
    position_x: number;
    position_y: number;
    created_at: number;
    updated_at: number;
  };
  analytics_variable: { name: string; value: string; updated_at: number };
  analytics_component_variable: { component: string; name: string; value: string; updated_at: number };
  analytics_state: { instance_id: string; config_key: string; state: string; saved_at: number };
}

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
  readonly #db: Kysely<Tables>;
  readonly #database: Database;
  readonly runtime: AnalyticsRuntime;
  readonly log: AnalyticsLog;
  readonly workspaces = new Map<string, Workspace>();
  readonly groups = new Map<string, Group>();
  readonly instances = new Map<string, Instance>();
  readonly variables = new Map<string, Variable>();
  readonly componentVariables = new Map<string, Map<string, ComponentVariable>>();
  readonly startedAt = Date.now();

  private constructor(database: Database, hub: DataHub, log: AnalyticsLog, persistIntervalMs: number) {
    this.#database = database;
    this.#db = database.db as Kysely<Tables>;
    this.log = log;
    const db = this.#db;
    const store: StateStore = {
      async load(id) {
        const row = await db
          .selectFrom('analytics_state')
          .selectAll()
          .where('instance_id', '=', id)
          .executeTakeFirst();
        return row ? { configKey: row.config_key, state: JSON.parse(row.state) } : undefined;
      },
      async save(rows) {
        const now = Date.now();
        await db.transaction().execute(async (trx) => {
          for (const r of rows) {
            const values = {
              instance_id: r.id,
              config_key: r.configKey,
              state: JSON.stringify(r.state),
              saved_at: now,
            };
            await trx
              .insertInto('analytics_state')
              .values(values)
              .onConflict((oc) =>
                oc
                  .column('instance_id')
                  .doUpdateSet({ config_key: values.config_key, state: values.state, saved_at: now }),
              )
              .execute();
          }
        });
      },
      async remove(id) {
        await db.deleteFrom('analytics_state').where('instance_id', '=', id).execute();
      },
    };
    this.runtime = new AnalyticsRuntime({
      hub,
      log,
      store,
      persistIntervalMs,
      variables: (id) => this.variablesFor(id),
      variablesVersion: () => this.variablesVersion,
    });
  }

  static async open(options: {
    database: Database;
    hub: DataHub;
    log: AnalyticsLog;
    persistIntervalMs?: number;
  }): Promise<AnalyticsService> {
    const s = new AnalyticsService(
      options.database,
      options.hub,
      options.log,
      options.persistIntervalMs ?? 30_000,
    );
    await s.runtime.init();
    await s.#load();
    if ([...s.instances.values()].some((i) => i.kind === 'expression')) await loadExpressions();
    for (const i of s.instances.values()) await s.runtime.apply(s.#def(i));
    return s;
  }

  async #load(): Promise<void> {
    const db = this.#db;
    for (const r of await db.selectFrom('analytics_workspace').selectAll().execute())
      this.workspaces.set(r.id, {
        id: r.id,
        name: r.name,
        description: r.description,
        createdAt: Number(r.created_at),
        updatedAt: Number(r.updated_at),
      });
    for (const r of await db.selectFrom('analytics_group').selectAll().execute())
      this.groups.set(r.id, {
        id: r.id,
        workspaceId: r.workspace_id,
        name: r.name,
        description: r.description,
        createdAt: Number(r.created_at),
        updatedAt: Number(r.updated_at),
      });
    for (const r of await db.selectFrom('analytics_instance').selectAll().orderBy('id').execute())
      this.instances.set(r.id, {
        id: r.id,
        workspaceId: r.workspace_id,
        groupId: r.group_id,
        name: r.name,
        kind: r.kind,
        parameters: JSON.parse(r.parameters),
        enabled: Boolean(r.enabled),
        position: { x: Number(r.position_x), y: Number(r.position_y) },
        createdAt: Number(r.created_at),
        updatedAt: Number(r.updated_at),
      });
    for (const r of await db.selectFrom('analytics_variable').selectAll().execute())
      this.variables.set(r.name, {
        name: r.name,
        value: JSON.parse(r.value),
        updatedAt: Number(r.updated_at),
      });
    for (const r of await db.selectFrom('analytics_component_variable').selectAll().execute())
      this.#componentMap(r.component).set(r.name, {
        component: r.component,
        name: r.name,
        value: JSON.parse(r.value),
        updatedAt: Number(r.updated_at),
      });
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
    await this.#db
      .insertInto('analytics_workspace')
      .values({ id: w.id, name: w.name, description: w.description, created_at: now, updated_at: now })
      .execute();
    this.workspaces.set(w.id, w);
    this.log.write('info', `workspace "${name}" created`, { workspaceId: w.id });
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
    await this.#db
      .updateTable('analytics_workspace')
      .set({ name: next.name, description: next.description, updated_at: next.updatedAt })
      .where('id', '=', w.id)
      .execute();
    this.workspaces.set(w.id, next);
    return next;
  }

  async deleteWorkspace(id: string): Promise<boolean> {
    this.workspace(id);
    await this.deleteWorkspaceContent(id);
    await this.#db.deleteFrom('analytics_workspace').where('id', '=', id).execute();
    this.workspaces.delete(id);
    this.log.write('info', 'workspace deleted', { workspaceId: id });
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
    await this.#database.transaction(async (trx) => {
      const t = trx as unknown as Kysely<Tables>;
      if (groups.length)
        await t
          .deleteFrom('analytics_group')
          .where(
            'id',
            'in',
            groups.map((g) => g.id),
          )
          .execute();
      if (instances.length)
        await t
          .deleteFrom('analytics_instance')
          .where(
            'id',
            'in',
            instances.map((i) => i.id),
          )
          .execute();
    });
    for (const g of groups) this.groups.delete(g.id);
    for (const i of instances) {
      this.instances.delete(i.id);
      await this.runtime.remove(i.id);
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
    await this.#db
      .insertInto('analytics_group')
      .values({
        id: g.id,
        workspace_id: g.workspaceId,
        name,
        description: g.description,
        created_at: now,
        updated_at: now,
      })
      .execute();
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
    await this.#db
      .updateTable('analytics_group')
      .set({ name: next.name, description: next.description, updated_at: next.updatedAt })
      .where('id', '=', g.id)
      .execute();
    this.groups.set(g.id, next);
    return next;
  }

  /** Deletes a group; its processors are deleted too when asked, else they leave the group. */
  async deleteGroup(id: string, deleteProcessors: boolean): Promise<boolean> {
    this.group(id);
    const members = this.groupProcessorIds(id);
    if (deleteProcessors) for (const p of members) await this.deleteInstance(p);
    else await this.removeFromGroup(id, members);
    await this.#db.deleteFrom('analytics_group').where('id', '=', id).execute();
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
    await this.#db
      .updateTable('analytics_instance')
      .set({ group_id: groupId, updated_at: now })
      .where('id', 'in', ids)
      .execute();
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

  /** Checks kind and parameters, processor references and the graph (no cycles). */
  #checked(id: string, kind: string, parameters: unknown): Instance['parameters'] {
    const p = checkParameters(kind, parameters);
    if (kind === 'expression') compileExpression(p.expression as string);
    for (const [k, input] of p.inputs.entries()) {
      if (input.processor !== undefined) {
        if (input.processor === id)
          throw badRequest(`Parameters.inputs[${k}]: an instance cannot read its own output`);
        if (!this.instances.has(input.processor))
          throw badRequest(`Parameters.inputs[${k}]: processor instance ${input.processor} not found`);
      } else if (!/^[^\s]+$/.test(input.subject!) || /(^|\.)\.|\.$/.test(input.subject!)) {
        throw badRequest(`Parameters.inputs[${k}].subject "${input.subject}" is not a subject`);
      }
    }
    // Cycle check: from the processors it reads, following their inputs, we must not come back.
    const seen = new Set<string>();
    const stack = p.inputs.flatMap((i) => (i.processor ? [i.processor] : []));
    while (stack.length) {
      const cur = stack.pop()!;
      if (cur === id) throw badRequest('Parameters.inputs: the processors would form a cycle');
      if (seen.has(cur)) continue;
      seen.add(cur);
      for (const i of this.instances.get(cur)?.parameters.inputs ?? [])
        if (i.processor) stack.push(i.processor);
    }
    return p;
  }

  async createInstance(input: CreateInstanceInput, id = uuidv7()): Promise<Instance> {
    if (input.kind === 'expression') await loadExpressions();
    this.workspace(input.workspaceId);
    if (this.instances.size >= LIMITS.maxInstances)
      throw conflict(`at most ${LIMITS.maxInstances} processor instances can exist`);
    if (input.groupId != null && this.group(input.groupId).workspaceId !== input.workspaceId)
      throw badRequest('GroupID: the group is in another workspace');
    const name = checkName('Name', input.name);
    const parameters = this.#checked(id, input.kind, input.parameters);
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
    await this.#db.insertInto('analytics_instance').values(this.#row(i)).execute();
    this.instances.set(id, i);
    await this.runtime.apply(this.#def(i));
    return i;
  }

  #row(i: Instance): Tables['analytics_instance'] {
    return {
      id: i.id,
      workspace_id: i.workspaceId,
      group_id: i.groupId,
      name: i.name,
      kind: i.kind,
      parameters: JSON.stringify(i.parameters),
      enabled: i.enabled ? 1 : 0,
      position_x: i.position.x,
      position_y: i.position.y,
      created_at: i.createdAt,
      updated_at: i.updatedAt,
    };
  }

  async updateInstance(input: UpdateInstanceInput): Promise<Instance> {
    if ((input.kind ?? this.instances.get(input.id)?.kind) === 'expression') await loadExpressions();
    const cur = this.instance(input.id);
    const kind = input.kind ?? cur.kind;
    const parameters =
      input.parameters !== undefined || kind !== cur.kind
        ? this.#checked(cur.id, kind, input.parameters ?? cur.parameters)
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
    const { id: _id, ...set } = this.#row(next);
    await this.#db.updateTable('analytics_instance').set(set).where('id', '=', cur.id).execute();
    this.instances.set(cur.id, next);
    await this.runtime.apply(this.#def(next));
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
    await this.#db.deleteFrom('analytics_instance').where('id', '=', id).execute();
    this.instances.delete(id);
    await this.runtime.remove(id);
    return true;
  }

  async deleteAllInstances(workspaceId?: string): Promise<number> {
    const list = this.workspaceInstances(workspaceId);
    if (list.length === 0) return 0;
    await this.#db
      .deleteFrom('analytics_instance')
      .where(
        'id',
        'in',
        list.map((i) => i.id),
      )
      .execute();
    for (const i of list) {
      this.instances.delete(i.id);
      await this.runtime.remove(i.id);
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
    const sources = ids.map((id) => this.instance(id));
    const map = new Map(sources.map((s) => [s.id, uuidv7()]));
    // Copies in an order where the instances they read come first.
    const ordered: Instance[] = [];
    const done = new Set<string>();
    const visit = (s: Instance) => {
      if (done.has(s.id)) return;
      done.add(s.id);
      for (const i of s.parameters.inputs)
        if (i.processor && map.has(i.processor)) visit(this.instance(i.processor));
      ordered.push(s);
    };
    sources.forEach(visit);
    const out: Instance[] = [];
    for (const s of ordered) {
      const ws = targetWorkspaceId ?? s.workspaceId;
      out.push(
        await this.createInstance(
          {
            workspaceId: ws,
            groupId: ws === s.workspaceId ? s.groupId : null,
            name: `${s.name} (copy)`.slice(0, LIMITS.maxNameLength),
            kind: s.kind,
            enabled: s.enabled,
            position: { x: s.position.x + offset.x, y: s.position.y + offset.y },
            parameters: {
              ...s.parameters,
              inputs: s.parameters.inputs.map((i) =>
                i.processor && map.has(i.processor) ? { ...i, processor: map.get(i.processor)! } : i,
              ),
            },
          },
          map.get(s.id),
        ),
      );
    }
    return ids.map((id) => out.find((o) => o.id === map.get(id))!);
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
    if ((input.fromProcessor == null) === (input.fromSubject == null))
      throw badRequest('give exactly one of FromProcessorID and FromSubject');
    if ((input.toProcessor == null) === (input.toSubject == null))
      throw badRequest('give exactly one of ToProcessorID and ToSubject');
    const targets = input.ids?.length
      ? input.ids.map((id) => this.instance(id))
      : [...this.instances.values()];
    const changed: Instance[] = [];
    for (const t of targets) {
      let hit = false;
      const inputs = t.parameters.inputs.map((i) => {
        const match =
          input.fromProcessor != null ? i.processor === input.fromProcessor : i.subject === input.fromSubject;
        if (!match) return i;
        hit = true;
        const { subject: _s, processor: _p, ...rest } = i;
        return input.toProcessor != null
          ? { ...rest, processor: input.toProcessor }
          : { ...rest, subject: input.toSubject! };
      });
      if (hit) changed.push(await this.updateInstance({ id: t.id, parameters: { ...t.parameters, inputs } }));
    }
    return changed;
  }

  async setPositions(list: Array<{ id: string; x: number; y: number }>): Promise<Instance[]> {
    for (const p of list) {
      this.instance(p.id);
      if (!Number.isFinite(p.x) || !Number.isFinite(p.y))
        throw badRequest('positions must be finite numbers');
    }
    const now = Date.now();
    await this.#database.transaction(async (trx) => {
      const t = trx as unknown as Kysely<Tables>;
      for (const p of list)
        await t
          .updateTable('analytics_instance')
          .set({ position_x: p.x, position_y: p.y, updated_at: now })
          .where('id', '=', p.id)
          .execute();
    });
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
    await this.#db
      .insertInto('analytics_variable')
      .values({ name, value: text, updated_at: now })
      .onConflict((oc) => oc.column('name').doUpdateSet({ value: text, updated_at: now }))
      .execute();
    const v = { name, value: value ?? null, updatedAt: now };
    this.variables.set(name, v);
    this.variablesVersion++;
    return v;
  }

  async deleteVariable(name: string): Promise<boolean> {
    if (!this.variables.has(name)) return false;
    await this.#db.deleteFrom('analytics_variable').where('name', '=', name).execute();
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
    await this.#db
      .insertInto('analytics_component_variable')
      .values({ component, name, value: text, updated_at: now })
      .onConflict((oc) => oc.columns(['component', 'name']).doUpdateSet({ value: text, updated_at: now }))
      .execute();
    const v = { component, name, value: value ?? null, updatedAt: now };
    this.#componentMap(component).set(name, v);
    this.variablesVersion++;
    return v;
  }

  async deleteComponentVariable(component: string, name: string): Promise<boolean> {
    this.componentVariable(component, name);
    await this.#db
      .deleteFrom('analytics_component_variable')
      .where('component', '=', component)
      .where('name', '=', name)
      .execute();
    this.componentVariables.get(component)!.delete(name);
    this.variablesVersion++;
    return true;
  }

  // --- export and import

  exportWorkspace(id: string): WorkspaceDocument {
    const w = this.workspace(id);
    const groups = this.workspaceGroups(id);
    const instances = this.workspaceInstances(id);
    const gkey = new Map(groups.map((g, k) => [g.id, `g${k + 1}`]));
    const pkey = new Map(instances.map((p, k) => [p.id, `p${k + 1}`]));
    return {
      version: 1,
      workspace: { name: w.name, description: w.description },
      groups: groups.map((g) => ({ key: gkey.get(g.id)!, name: g.name, description: g.description })),
      processors: instances.map((p) => ({
        key: pkey.get(p.id)!,
        name: p.name,
        kind: p.kind,
        group: p.groupId ? (gkey.get(p.groupId) ?? null) : null,
        enabled: p.enabled,
        position: p.position,
        parameters: {
          ...p.parameters,
          inputs: p.parameters.inputs.map((i) => {
            if (!i.processor) return i;
            const k = pkey.get(i.processor);
            // A processor of another workspace stays an output subject.
            if (!k) {
              const { processor, ...rest } = i;
              return { ...rest, subject: `analytics.publish.${processor}` };
            }
            return { ...i, processor: k };
          }),
        },
      })),
    };
  }

  /** Problems of a workspace document (empty when it can be imported). */
  static async documentIssues(doc: unknown): Promise<string[]> {
    const d = doc as WorkspaceDocument;
    if (
      !d ||
      typeof d !== 'object' ||
      d.version !== 1 ||
      !d.workspace ||
      !Array.isArray(d.groups) ||
      !Array.isArray(d.processors)
    )
      return ['not a workspace export (version 1 with workspace, groups, processors)'];
    const issues: string[] = [];
    if (typeof d.workspace.name !== 'string' || d.workspace.name.trim() === '')
      issues.push('workspace.name is required');
    const keys = new Set<string>();
    for (const p of d.processors) {
      if (typeof p?.key !== 'string' || keys.has(p.key)) issues.push('processor keys must be unique strings');
      else keys.add(p.key);
    }
    const groups = new Set(d.groups.map((g) => g?.key));
    for (const [n, p] of d.processors.entries()) {
      if (!p || typeof p !== 'object') continue;
      if (p.group != null && !groups.has(p.group))
        issues.push(`processors[${n}].group "${p.group}" is not a group key`);
      try {
        const params = checkParameters(p.kind, p.parameters);
        for (const i of params.inputs)
          if (i.processor && !keys.has(i.processor))
            issues.push(`processors[${n}] reads unknown key "${i.processor}"`);
        if (p.kind === 'expression') {
          await loadExpressions();
          compileExpression(params.expression as string);
        }
      } catch (err) {
        issues.push(`processors[${n}]: ${(err as Error).message}`);
      }
    }
    return issues;
  }

  /** Creates a new workspace from a document (new IDs; references inside it follow). */
  async importWorkspace(doc: unknown, name?: string | null): Promise<Workspace> {
    const issues = await AnalyticsService.documentIssues(doc);
    if (issues.length) throw badRequest(`Document: ${issues.join('; ')}`);
    const d = doc as WorkspaceDocument;
    const ws = await this.createWorkspace({
      name: name ?? d.workspace.name,
      description: d.workspace.description ?? '',
    });
    try {
      await this.importInto(ws.id, d);
    } catch (err) {
      await this.deleteWorkspace(ws.id).catch(() => undefined);
      throw err;
    }
    return ws;
  }

  /** Creates the groups and processors of `d` in workspace `wsId`. */
  async importInto(wsId: string, d: WorkspaceDocument): Promise<void> {
    const gid = new Map<string, string>();
    for (const g of d.groups)
      gid.set(
        g.key,
        (await this.createGroup({ workspaceId: wsId, name: g.name, description: g.description })).id,
      );
    const pid = new Map(d.processors.map((p) => [p.key, uuidv7()]));
    const created = new Set<string>();
    const byKey = new Map(d.processors.map((p) => [p.key, p]));
    const visiting = new Set<string>();
    const make = async (key: string): Promise<void> => {
      if (created.has(key)) return;
      if (visiting.has(key)) throw badRequest('Document: the processors form a cycle');
      visiting.add(key);
      const p = byKey.get(key)!;
      const params = (p.parameters ?? {}) as { inputs?: InputSpec[] };
      const inputs = (params.inputs ?? []).map((i) => {
        if (!i.processor) return i;
        if (!pid.has(i.processor))
          throw badRequest(`Document: processor "${key}" reads unknown key "${i.processor}"`);
        return { ...i, processor: pid.get(i.processor)! };
      });
      for (const i of params.inputs ?? []) if (i.processor) await make(i.processor);
      await this.createInstance(
        {
          workspaceId: wsId,
          groupId: p.group ? (gid.get(p.group) ?? null) : null,
          name: p.name,
          kind: p.kind,
          enabled: p.enabled ?? true,
          position: p.position ?? { x: 0, y: 0 },
          parameters: { ...params, inputs },
        },
        pid.get(key),
      );
      created.add(key);
    };
    for (const p of d.processors) await make(p.key);
  }

  async close(): Promise<void> {
    await this.runtime.close();
  }
}
