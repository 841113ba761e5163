/** Thin translation between `/analytics/v3` and the analytics service. */
import type { IResolvers } from 'mercurius';
import { badRequest } from '../../kernel/errors.js';
import type { GraphqlContext } from '../../kernel/graphql.js';
import {
  formatLogTime,
  parseLevelName,
  parseLogTime,
  type LogReader,
} from '../../kernel/logging/log-store.js';
import { parseListInput, type ListDefinition, type ListInput, type ListSpec } from '../../kernel/paging.js';
import { CATALOGUE, LIMITS } from './catalogue.js';
import type { AnalyticsLogEntry } from './log.js';
import { outputSubject } from './runtime.js';
import { validateScript } from './script.js';
import { testMcpServer, type TestAISuiteMCPServerRequest } from './mcp-probe.js';
import { ServerMetrics, type ScriptTester } from './playground.js';
import type { AnalyticsService, ComponentVariable, Group, Instance, Variable, Workspace } from './service.js';

export interface AnalyticsContext {
  analytics: AnalyticsService;
  logs: LogReader;
  /** Where `TestProcessorScript` runs (a worker thread). */
  tester: ScriptTester;
}

type Ctx = GraphqlContext & AnalyticsContext;

const iso = (ms: number) => new Date(ms).toISOString();

const WORKSPACE_LIST: ListDefinition = {
  fields: { Name: 'name', Description: 'description' },
  tiebreak: 'id',
};
const GROUP_LIST: ListDefinition = { fields: {}, tiebreak: 'id' };
const PROCESSOR_LIST: ListDefinition = { fields: { Name: 'name', Kind: 'kind' }, tiebreak: 'id' };

/** A list spec applied to objects in memory (fields by their wire name → property). */
function page<T extends { id: string }>(
  items: T[],
  spec: ListSpec,
  props: Record<string, keyof T>,
): { Items: T[]; Total: number } {
  const get = (item: T, field: string) => String(item[props[field] ?? (field as keyof T)] ?? '');
  let list = items.filter((item) =>
    spec.filter.every((c) => {
      const v = get(item, c.field);
      const x = c.value;
      switch (c.op) {
        case 'eq':
          return v === String(x);
        case 'ne':
          return v !== String(x);
        case 'contains':
          return v.toLowerCase().includes(String(x).toLowerCase());
        case 'startswith':
          return v.toLowerCase().startsWith(String(x).toLowerCase());
        case 'in':
          return (x as unknown[]).map(String).includes(v);
        default:
          return true;
      }
    }),
  );
  list = list.sort((a, b) => {
    for (const k of spec.sort) {
      const av = get(a, k.field);
      const bv = get(b, k.field);
      if (av !== bv) return (av < bv ? -1 : 1) * (k.order === 'asc' ? 1 : -1);
    }
    return a.id < b.id ? -1 : a.id > b.id ? 1 : 0;
  });
  return { Items: list.slice(spec.offset, spec.offset + spec.limit), Total: list.length };
}

const workspaceOut = (w: Workspace) => ({
  ...w,
  ID: w.id,
  Name: w.name,
  Description: w.description,
  CreatedAt: iso(w.createdAt),
  UpdatedAt: iso(w.updatedAt),
});
const groupOut = (s: AnalyticsService, g: Group) => ({
  ID: g.id,
  WorkspaceID: g.workspaceId,
  Name: g.name,
  Description: g.description,
  ProcessorIDs: s.groupProcessorIds(g.id),
  CreatedAt: iso(g.createdAt),
  UpdatedAt: iso(g.updatedAt),
});
const instanceOut = (s: AnalyticsService, i: Instance) => {
  const st = s.runtime.status(i.id);
  return {
    ID: i.id,
    WorkspaceID: i.workspaceId,
    GroupID: i.groupId,
    Name: i.name,
    Kind: i.kind,
    Parameters: i.parameters,
    Enabled: i.enabled,
    Position: { X: i.position.x, Y: i.position.y },
    OutputSubject: outputSubject(i.id),
    State: st?.state ?? 'Stopped',
    Error: st?.error ?? null,
    MessagesIn: st?.messagesIn ?? 0,
    MessagesOut: st?.messagesOut ?? 0,
    Console: st?.console ?? [],
    CreatedAt: iso(i.createdAt),
    UpdatedAt: iso(i.updatedAt),
  };
};
const variableOut = (v: Variable) => ({ Name: v.name, Value: v.value, UpdatedAt: iso(v.updatedAt) });
const componentVariableOut = (v: ComponentVariable) => ({ Component: v.component, ...variableOut(v) });
const positionOut = (i: Instance) => ({ ID: i.id, X: i.position.x, Y: i.position.y });
const pos = (p: { X: number; Y: number } | null | undefined) => (p ? { x: p.X, y: p.Y } : undefined);

/** The input types of schema.graphql that the mutations below read. */
interface CreateInstanceIn {
  WorkspaceID: string;
  GroupID?: string | null;
  Name: string;
  Kind: string;
  Parameters: unknown;
  Enabled?: boolean | null;
  Position?: { X: number; Y: number } | null;
}
interface UpdateInstanceIn {
  ID: string;
  Name?: string | null;
  Kind?: string | null;
  Parameters?: unknown;
  Enabled?: boolean | null;
  Position?: { X: number; Y: number } | null;
  GroupID?: string | null;
}
interface ReconnectIn {
  IDs?: string[] | null;
  FromProcessorID?: string | null;
  FromSubject?: string | null;
  ToProcessorID?: string | null;
  ToSubject?: string | null;
}
interface TestScriptIn {
  Script: string;
  Parameters?: unknown;
  Messages: unknown[];
  Variables?: unknown;
  Path?: string | null;
  TimeoutMs?: number | null;
  MemoryBytes?: number | null;
}

const LEVELS = ['trace', 'debug', 'info', 'warn', 'error', 'fatal'];

/** An async iterator fed by `start(push)`; `stop` runs when the client goes away. */
function feed<T>(start: (push: (v: T) => void) => () => void): AsyncIterableIterator<T> {
  const queue: T[] = [];
  let waiter: ((r: IteratorResult<T>) => void) | undefined;
  let done = false;
  const stop = start((v) => {
    if (done) return;
    if (waiter) {
      const w = waiter;
      waiter = undefined;
      w({ value: v, done: false });
    } else if (queue.length < 1000) queue.push(v);
  });
  const finish = () => {
    if (done) return;
    done = true;
    stop();
    waiter?.({ value: undefined, done: true });
  };
  return {
    [Symbol.asyncIterator]() {
      return this;
    },
    next: () =>
      queue.length
        ? Promise.resolve({ value: queue.shift()!, done: false })
        : done
          ? Promise.resolve({ value: undefined, done: true })
          : new Promise((r) => (waiter = r)),
    return: () => {
      finish();
      return Promise.resolve({ value: undefined, done: true });
    },
  };
}

export const resolvers: IResolvers<never, Ctx> = {
  Workspace: {
    Groups: (w: Workspace, _a, ctx) =>
      ctx.analytics.workspaceGroups(w.id).map((g) => groupOut(ctx.analytics, g)),
    Processors: (w: Workspace, _a, ctx) =>
      ctx.analytics.workspaceInstances(w.id).map((i) => instanceOut(ctx.analytics, i)),
  },
  Query: {
    GetWorkspaces: (_r, { input }: { input?: ListInput }, ctx) => {
      const p = page([...ctx.analytics.workspaces.values()], parseListInput(input, WORKSPACE_LIST), {
        Name: 'name',
        Description: 'description',
      });
      return { Items: p.Items.map(workspaceOut), Total: p.Total };
    },
    GetWorkspace: (_r, { ID }: { ID: string }, ctx) => workspaceOut(ctx.analytics.workspace(ID)),
    ExportWorkspace: (_r, { ID }: { ID: string }, ctx) => ctx.analytics.exportWorkspace(ID),
    GetWorkspaceGroups: (_r, { input }: { input: ListInput & { WorkspaceID: string } }, ctx) => {
      const p = page(ctx.analytics.workspaceGroups(input.WorkspaceID), parseListInput(input, GROUP_LIST), {});
      return { Items: p.Items.map((g) => groupOut(ctx.analytics, g)), Total: p.Total };
    },
    GetWorkspaceProcessors: (
      _r,
      { input }: { input: ListInput & { WorkspaceID: string; GroupID?: string } },
      ctx,
    ) => {
      const p = page(
        ctx.analytics.workspaceInstances(input.WorkspaceID, input.GroupID ?? null),
        parseListInput(input, PROCESSOR_LIST),
        { Name: 'name', Kind: 'kind' },
      );
      return { Items: p.Items.map((i) => instanceOut(ctx.analytics, i)), Total: p.Total };
    },
    GetWorkspacePositions: (_r, { WorkspaceID }: { WorkspaceID: string }, ctx) =>
      ctx.analytics.workspaceInstances(WorkspaceID).map(positionOut),
    GetGroup: (_r, { ID }: { ID: string }, ctx) => groupOut(ctx.analytics, ctx.analytics.group(ID)),
    GetProcessorInstance: (_r, { ID }: { ID: string }, ctx) =>
      instanceOut(ctx.analytics, ctx.analytics.instance(ID)),
    GetProcessorKinds: () =>
      CATALOGUE.map((k) => ({
        Kind: k.kind,
        Description: k.description,
        MinInputs: k.minInputs,
        MaxInputs: k.maxInputs,
        Parameters: k.params.map((p) => ({
          Name: p.name,
          Type: p.type,
          Required: p.required ?? false,
          Default: p.default ?? null,
          Values: p.values ?? null,
          Min: p.min ?? null,
          Max: p.max ?? null,
          Description: p.description,
        })),
      })),
    GetVariables: (_r, _a, ctx) => [...ctx.analytics.variables.values()].map(variableOut),
    GetVariable: (_r, { Name }: { Name: string }, ctx) => variableOut(ctx.analytics.variable(Name)),
    GetComponentVariable: (_r, { input }: { input: { Component: string; Name: string } }, ctx) =>
      componentVariableOut(ctx.analytics.componentVariable(input.Component, input.Name)),
    GetComponentVariables: (_r, { input }: { input: { Component: string } }, ctx) =>
      ctx.analytics.componentVariablesOf(input.Component).map(componentVariableOut),
    ValidateProcessorScript: async (_r, { input }: { input: { Script: string } }) => {
      if (Buffer.byteLength(input.Script) > LIMITS.maxScriptBytes)
        throw badRequest(`Script is larger than ${LIMITS.maxScriptBytes} bytes`);
      const errors = await validateScript(input.Script);
      return { Valid: errors.length === 0, Errors: errors };
    },
    GetAnalyticsLogs: async (
      _r,
      {
        input,
      }: { input?: { Limit?: number; Level?: string; Search?: string; Start?: string; Cursor?: string } },
      ctx,
    ) => {
      const i = input ?? {};
      const limit = i.Limit ?? 100;
      if (!Number.isInteger(limit) || limit < 1 || limit > 1000)
        throw badRequest('Limit must be from 1 to 1000');
      const level = i.Level ? parseLevelName(i.Level) : undefined;
      if (i.Level && !level) throw badRequest(`Level must be one of ${LEVELS.join(', ')}`);
      const start = i.Start ? parseLogTime(i.Start) : undefined;
      const cursor = i.Cursor ? parseLogTime(i.Cursor) : undefined;
      if (i.Start && start === undefined) throw badRequest('Start must be an RFC 3339 time');
      if (i.Cursor && cursor === undefined) throw badRequest('Cursor must be an RFC 3339 time');
      const r = await ctx.logs.query({
        limit,
        component: 'analytics',
        ...(level ? { level } : {}),
        ...(i.Search ? { search: i.Search } : {}),
        ...(start !== undefined ? { start } : {}),
        ...(cursor !== undefined ? { cursor } : {}),
      });
      return {
        Entries: r.entries.map((e) => ({
          Timestamp: formatLogTime(e.timestamp),
          Level: e.level,
          Message: e.message,
          Fields: e.fields,
        })),
        Count: r.entries.length,
        Cursor: r.cursor === null ? null : formatLogTime(r.cursor),
      };
    },
  },
  Mutation: {
    TestAISuiteMCPServer: (_r, args: { input: TestAISuiteMCPServerRequest }, ctx) =>
      testMcpServer(args.input, ctx.auth),
    CreateWorkspace: async (_r, { input }: { input: { Name: string; Description?: string } }, ctx) =>
      workspaceOut(
        await ctx.analytics.createWorkspace({ name: input.Name, description: input.Description ?? null }),
      ),
    UpdateWorkspace: async (
      _r,
      { input }: { input: { ID: string; Name?: string; Description?: string } },
      ctx,
    ) =>
      workspaceOut(
        await ctx.analytics.updateWorkspace({
          id: input.ID,
          name: input.Name ?? null,
          description: input.Description ?? null,
        }),
      ),
    DeleteWorkspace: (_r, { input }: { input: { ID: string } }, ctx) =>
      ctx.analytics.deleteWorkspace(input.ID),
    ImportWorkspace: async (_r, { input }: { input: { Document: unknown; Name?: string } }, ctx) =>
      workspaceOut(await ctx.analytics.importWorkspace(input.Document, input.Name ?? null)),
    DeleteWorkspaceGroupsAndProcessorInstances: async (
      _r,
      { input }: { input: { WorkspaceID: string } },
      ctx,
    ) => {
      const r = await ctx.analytics.deleteWorkspaceContent(input.WorkspaceID);
      return { Groups: r.groups, ProcessorInstances: r.instances };
    },
    CreateGroup: async (
      _r,
      {
        input,
      }: { input: { WorkspaceID: string; Name: string; Description?: string; ProcessorIDs?: string[] } },
      ctx,
    ) =>
      groupOut(
        ctx.analytics,
        await ctx.analytics.createGroup({
          workspaceId: input.WorkspaceID,
          name: input.Name,
          description: input.Description ?? null,
          processorIds: input.ProcessorIDs ?? null,
        }),
      ),
    UpdateGroup: async (_r, { input }: { input: { ID: string; Name?: string; Description?: string } }, ctx) =>
      groupOut(
        ctx.analytics,
        await ctx.analytics.updateGroup({
          id: input.ID,
          name: input.Name ?? null,
          description: input.Description ?? null,
        }),
      ),
    DeleteGroup: (_r, { input }: { input: { ID: string; DeleteProcessors?: boolean } }, ctx) =>
      ctx.analytics.deleteGroup(input.ID, input.DeleteProcessors ?? false),
    AddProcessorsToGroup: async (
      _r,
      { input }: { input: { GroupID: string; ProcessorIDs: string[] } },
      ctx,
    ) => groupOut(ctx.analytics, await ctx.analytics.addToGroup(input.GroupID, input.ProcessorIDs)),
    RemoveProcessorsFromGroup: async (
      _r,
      { input }: { input: { GroupID: string; ProcessorIDs: string[] } },
      ctx,
    ) => groupOut(ctx.analytics, await ctx.analytics.removeFromGroup(input.GroupID, input.ProcessorIDs)),
    DeleteAllGroupsAndProcessorInstances: async (_r, _a, ctx) => {
      const r = await ctx.analytics.deleteWorkspaceContent();
      return { Groups: r.groups, ProcessorInstances: r.instances };
    },
    CreateProcessorInstance: async (_r, { input }: { input: CreateInstanceIn }, ctx) =>
      instanceOut(
        ctx.analytics,
        await ctx.analytics.createInstance({
          workspaceId: input.WorkspaceID,
          groupId: input.GroupID ?? null,
          name: input.Name,
          kind: input.Kind,
          parameters: input.Parameters,
          enabled: input.Enabled ?? true,
          ...(input.Position ? { position: pos(input.Position)! } : {}),
        }),
      ),
    UpdateProcessorInstance: async (_r, { input }: { input: UpdateInstanceIn }, ctx) =>
      instanceOut(
        ctx.analytics,
        await ctx.analytics.updateInstance({
          id: input.ID,
          ...(input.Name != null ? { name: input.Name } : {}),
          ...(input.Kind != null ? { kind: input.Kind } : {}),
          ...(input.Parameters != null ? { parameters: input.Parameters } : {}),
          ...(input.Enabled != null ? { enabled: input.Enabled } : {}),
          ...(input.Position != null ? { position: pos(input.Position)! } : {}),
          ...(input.GroupID !== undefined ? { groupId: input.GroupID } : {}),
        }),
      ),
    DeleteProcessorInstance: (_r, { input }: { input: { ID: string } }, ctx) =>
      ctx.analytics.deleteInstance(input.ID),
    DeleteAllProcessorInstances: (_r, { input }: { input?: { WorkspaceID?: string } }, ctx) =>
      ctx.analytics.deleteAllInstances(input?.WorkspaceID ?? undefined),
    CopyProcessorInstances: async (
      _r,
      { input }: { input: { IDs: string[]; WorkspaceID?: string; Offset?: { X: number; Y: number } } },
      ctx,
    ) =>
      (
        await ctx.analytics.copy(
          input.IDs,
          input.WorkspaceID ?? undefined,
          pos(input.Offset) ?? { x: 40, y: 40 },
        )
      ).map((i) => instanceOut(ctx.analytics, i)),
    RenameProcessorInstance: async (_r, { input }: { input: { ID: string; Name: string } }, ctx) =>
      instanceOut(ctx.analytics, await ctx.analytics.rename(input.ID, input.Name)),
    ReconnectProcessorInstances: async (_r, { input }: { input: ReconnectIn }, ctx) =>
      (
        await ctx.analytics.reconnect({
          ids: input.IDs ?? null,
          fromProcessor: input.FromProcessorID ?? null,
          toProcessor: input.ToProcessorID ?? null,
          fromSubject: input.FromSubject ?? null,
          toSubject: input.ToSubject ?? null,
        })
      ).map((i) => instanceOut(ctx.analytics, i)),
    SetProcessorInstancesPositionMap: async (
      _r,
      { input }: { input: { Positions: Array<{ ID: string; X: number; Y: number }> } },
      ctx,
    ) =>
      (await ctx.analytics.setPositions(input.Positions.map((p) => ({ id: p.ID, x: p.X, y: p.Y })))).map(
        positionOut,
      ),
    TestProcessorScript: async (_r, { input }: { input: TestScriptIn }, ctx) => {
      const r = await ctx.tester.run({
        script: input.Script as string,
        messages: input.Messages as unknown[],
        parameters: input.Parameters ?? {},
        variables: input.Variables ?? {},
        path: (input.Path as string | undefined) ?? 'value',
        timeoutMs: input.TimeoutMs ?? undefined,
        memoryBytes: input.MemoryBytes ?? undefined,
      });
      return {
        Outputs: r.outputs,
        Console: r.console,
        Error: r.error,
        Failure: r.failure,
        DurationMs: r.durationMs,
      };
    },
    SetVariable: async (_r, { input }: { input: { Name: string; Value?: unknown } }, ctx) =>
      variableOut(await ctx.analytics.setVariable(input.Name, input.Value ?? null)),
    SetComponentVariable: async (
      _r,
      { input }: { input: { Component: string; Name: string; Value?: unknown } },
      ctx,
    ) =>
      componentVariableOut(
        await ctx.analytics.setComponentVariable(input.Component, input.Name, input.Value ?? null),
      ),
    DeleteComponentVariable: (_r, { input }: { input: { Component: string; Name: string } }, ctx) =>
      ctx.analytics.deleteComponentVariable(input.Component, input.Name),
  },
  Subscription: {
    SubscribeToAnalyticsLogs: {
      subscribe: (_r: unknown, { input }: { input?: { Level?: string } }, ctx: Ctx) => {
        const min = input?.Level ? LEVELS.indexOf(input.Level) : 0;
        if (min < 0) throw badRequest(`Level must be one of ${LEVELS.join(', ')}`);
        return feed<{ SubscribeToAnalyticsLogs: AnalyticsLogEntry }>((push) => {
          const on = (e: AnalyticsLogEntry) => {
            if (LEVELS.indexOf(e.Level) >= min) push({ SubscribeToAnalyticsLogs: e });
          };
          ctx.analytics.log.events.on('entry', on);
          return () => ctx.analytics.log.events.off('entry', on);
        });
      },
    },
    SubscribeServerMetrics: {
      subscribe: (_r: unknown, { input }: { input?: { IntervalMs?: number } }, ctx: Ctx) => {
        const every = input?.IntervalMs ?? 1000;
        if (!Number.isInteger(every) || every < 500 || every > 60_000)
          throw badRequest('IntervalMs must be from 500 to 60000');
        return feed((push) => {
          const metrics = new ServerMetrics(ctx.analytics);
          const sample = () => {
            const m = metrics.sample();
            push({
              SubscribeServerMetrics: {
                Timestamp: m.timestamp,
                CpuPercent: m.cpuPercent,
                MemoryRssBytes: m.memoryRssBytes,
                HeapUsedBytes: m.heapUsedBytes,
                UptimeSeconds: m.uptimeSeconds,
                Processors: m.processors,
                Running: m.running,
                Failed: m.failed,
                MessagesIn: m.messagesIn,
                MessagesOut: m.messagesOut,
              },
            });
          };
          const timer = setInterval(sample, every);
          setImmediate(sample);
          return () => clearInterval(timer);
        });
      },
    },
  },
};
