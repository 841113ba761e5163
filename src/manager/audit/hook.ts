/**
 * The recording hook: installed once on each of the manager's apps (main API and admin console
 * API), it records every mutating call of every route, whichever module mounted it, in the
 * transaction of the change it describes. No module writes code for it:
 *
 * - `onRoute` notes the module that mounts each route (the shell's `mountingModule`);
 * - `onRequest` of a mutating route (POST, PUT, PATCH, DELETE; not `config.audit: false`) opens a
 *   request-scoped transaction (`Database.openScope`) and enters it for the rest of the request:
 *   the repositories the handler uses join it without knowing;
 * - `onSend`: a success (status below 400) appends the record in that transaction and commits
 *   both; a failure rolls the change back and appends one record with outcome `failure` (when
 *   the caller was authenticated: anonymous refusals are not recorded, so that nobody can grow
 *   the trail without a credential);
 * - a bridged call made while the request runs is added to the request's record; one made outside
 *   a recorded request gets a record of its own when it may change something (a mutating method)
 *   or when the manager makes it (a template task's), not a caller's bridged read.
 */
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { Logger } from 'pino';
import { currentScope, type Database, type RequestScope } from '../../kernel/db/index.js';
import { mountingModule } from '../../kernel/service/index.js';
import type { ManagerAuthContext } from '../auth/index.js';
import type { BridgedCallRecord } from '../bridge/index.js';
import type { AuditOrigin, AuditService } from './service.js';
import type { ActivityBuffer } from './activity.js';

/** Bridged calls kept on one request's record. */
const MAX_BRIDGED = 20;

interface RequestAudit {
  scope: RequestScope;
  done: boolean;
  bridged: { deviceId: string; method: string; path: string; status: number }[];
  moreBridged: number;
  companyId: string | null;
  projectId: string | null;
}

/**
 * The audit state of each request scope, found from the scope the database layer has entered
 * (no second `AsyncLocalStorage`: each one costs every promise of the process a hook call).
 */
const states = new WeakMap<RequestScope, RequestAudit>();
const kAudit = Symbol('millwright.audit');
type AuditedRequest = FastifyRequest & { [kAudit]?: RequestAudit };

const MUTATING = new Set(['POST', 'PUT', 'PATCH', 'DELETE']);
const VERBS: Record<string, string> = { POST: 'create', PUT: 'update', PATCH: 'update', DELETE: 'delete' };

/** Whether a request is recorded: a mutating method on a matched route that did not opt out. */
export function isAudited(request: FastifyRequest): boolean {
  if (!MUTATING.has(request.method)) return false;
  // `routeOptions` is a getter that builds an object of twelve fields: read it once.
  const route = request.routeOptions;
  return route.url !== undefined && route.config?.audit !== false;
}

/**
 * The action of a route: its path's static segments after the version, dotted, and the verb of
 * its method, unless the path ends with a verb of its own after a parameter (`.../:id/rotate`).
 * `config.audit.action` overrides it.
 */
export function actionOf(method: string, url: string): string {
  const parts = url.split('/').filter((p) => p !== '');
  const start = parts.findIndex((p) => /^v\d+$/.test(p));
  const rest = parts.slice(start + 1);
  const statics = rest.filter((p) => !p.startsWith(':') && p !== '*');
  const last = rest[rest.length - 1];
  const afterParam = rest.length >= 2 && rest[rest.length - 2]!.startsWith(':') && !last!.startsWith(':');
  const name = statics.join('.') || parts.filter((p) => !p.startsWith(':') && p !== '*').join('.');
  if (method === 'POST' && afterParam) return name;
  return `${name}.${VERBS[method] ?? method.toLowerCase()}`;
}

/**
 * The action of each route (by method and route pattern, so bounded by the route table, not by
 * clients): worked out once, not on every call (a tenth of the hook's own time).
 */
const routeActions = new Map<string, string>();

function routeAction(method: string, url: string): string {
  const key = `${method} ${url}`;
  let action = routeActions.get(key);
  if (action === undefined) routeActions.set(key, (action = actionOf(method, url)));
  return action;
}

const str = (v: unknown) => (typeof v === 'string' && v !== '' ? v : undefined);

function field(request: FastifyRequest, key: string): string | undefined {
  const sources = [request.params, request.query, request.body];
  for (const s of sources) {
    if (s && typeof s === 'object' && !Buffer.isBuffer(s) && key in s) {
      const v = str((s as Record<string, unknown>)[key]);
      if (v) return v;
    }
  }
  return undefined;
}

function targetOf(
  request: FastifyRequest,
  declared: FastifyRequest['routeOptions']['config']['audit'],
  payload: unknown,
): string | null {
  if (declared && declared.target) return field(request, declared.target) ?? null;
  const params = (request.params ?? {}) as Record<string, unknown>;
  const named = Object.entries(params)
    .filter(([k, v]) => k !== '*' && typeof v === 'string')
    .map(([k, v]) => `${k}=${String(v)}`);
  if (params['*']) named.push(`path=/${String(params['*'])}`);
  if (named.length > 0) return named.join(' ');
  for (const key of [
    'id',
    'deviceId',
    'templateId',
    'taskId',
    'username',
    'name',
    'friendlyName',
    'companyName',
  ]) {
    const v = field(request, key);
    if (v) return `${key}=${v}`;
  }
  // A create answers the new object's id.
  if (typeof payload === 'string' && payload.length < 65_536 && payload.startsWith('{')) {
    try {
      const body = JSON.parse(payload) as Record<string, unknown>;
      for (const key of ['id', 'taskId', 'deviceId', 'code']) {
        const v = str(body[key]);
        if (v && key !== 'code') return `${key}=${v}`;
      }
    } catch {
      // not JSON after all
    }
  }
  return null;
}

function errorCodeOf(payload: unknown): string | undefined {
  if (typeof payload !== 'string' || payload.length > 65_536 || !payload.startsWith('{')) return undefined;
  try {
    return str((JSON.parse(payload) as { code?: unknown }).code);
  } catch {
    return undefined;
  }
}

export interface AuditHookOptions {
  audit: AuditService;
  database: Database;
  origin: AuditOrigin;
  activity: ActivityBuffer;
  logger: Logger;
}

/** Installs the recording hook on `app` (before any module mounts a route on it). */
export function installAuditHook(app: FastifyInstance, options: AuditHookOptions): void {
  const { audit, database } = options;
  app.addHook('onRoute', (route) => {
    route.config = { ...(route.config ?? {}), module: route.config?.module ?? mountingModule() ?? 'manager' };
  });
  app.addHook('onRequest', (request: AuditedRequest, _reply, done) => {
    if (!isAudited(request)) return done();
    const state: RequestAudit = {
      scope: database.openScope(),
      done: false,
      bridged: [],
      moreBridged: 0,
      companyId: null,
      projectId: null,
    };
    request[kAudit] = state;
    states.set(state.scope, state);
    database.runInScope(state.scope, done);
  });
  // Callback hooks, not async ones: most requests (reads, a bridged read among them) have nothing
  // to record and go on at once, without a promise and a microtask per hook.
  app.addHook('onSend', (request: AuditedRequest, reply, payload, done) => {
    const state = request[kAudit];
    if (!state || state.done) return done(null, payload);
    state.done = true;
    finish(request, reply, payload, state, options).then(() => done(null, payload), done);
  });
  const abandon = async (request: AuditedRequest) => {
    const state = request[kAudit];
    if (state && !state.done) {
      state.done = true;
      await state.scope.finish(false);
    }
  };
  const addActivity = (request: AuditedRequest, reply: FastifyReply) => {
    if (!audit.settings.apiActivity.enabled) return;
    const principal = (request.auth as ManagerAuthContext | null)?.principal;
    options.activity.add({
      at: Date.now(),
      method: request.method,
      path: request.url.split('?')[0]!.slice(0, 500),
      status: reply.statusCode,
      duration_ms: Math.round(reply.elapsedTime),
      actor: principal ? (principal.username ?? principal.tokenName) : null,
      request_id: request.id,
    });
  };
  app.addHook('onResponse', (request: AuditedRequest, reply, done) => {
    const state = request[kAudit];
    if (!state || state.done) {
      addActivity(request, reply);
      return done();
    }
    abandon(request).then(() => {
      addActivity(request, reply);
      done();
    }, done);
  });
  app.addHook('onRequestAbort', abandon);
}

async function finish(
  request: FastifyRequest,
  reply: FastifyReply,
  payload: unknown,
  state: RequestAudit,
  options: AuditHookOptions,
): Promise<void> {
  const status = reply.statusCode;
  const principal = (request.auth as ManagerAuthContext | null)?.principal;
  const route = request.routeOptions;
  const config = route.config;
  const declared = config?.audit;
  const input = {
    actor: principal?.subject ?? 'anonymous',
    actorName: principal ? (principal.username ?? principal.tokenName) : null,
    companyId: field(request, 'companyId') ?? state.companyId,
    projectId: field(request, 'projectId') ?? state.projectId,
    module: config?.module ?? 'manager',
    action:
      (declared && declared.action) ||
      (route.url !== undefined
        ? routeAction(request.method, route.url)
        : actionOf(request.method, request.url)),
    origin: options.origin,
    target: targetOf(request, declared, payload),
    status,
    requestId: request.id,
    details: {
      method: request.method,
      path: request.url.split('?')[0]!.slice(0, 500),
      ...(status >= 400 ? { error: errorCodeOf(payload) ?? null } : {}),
      ...(state.bridged.length > 0 ? { bridged: state.bridged } : {}),
      ...(state.moreBridged > 0 ? { moreBridged: state.moreBridged } : {}),
    },
  };
  if (status < 400) {
    await state.scope.finish(true, async () => {
      await options.audit.record({ ...input, outcome: 'success' });
    });
    return;
  }
  await state.scope.finish(false);
  // A failed change leaves no change and one record of the attempt; anonymous refusals (a public
  // route's bad input, a bad credential) are not recorded, so nobody grows the trail without one.
  if (!principal) return;
  try {
    await options.audit.record({ ...input, outcome: 'failure' });
  } catch (err) {
    options.logger.warn({ err }, 'recording a failed call in the audit trail failed');
  }
}

/**
 * A bridged call: added to the record of the request it is made in, or recorded on its own
 * (a template task's call, origin `TASK`; a caller's mutating call outside a recorded request).
 * A caller's bridged read (GET, HEAD, OPTIONS) outside a recorded request is not recorded.
 */
export function bridgedCallListener(audit: AuditService, logger: Logger) {
  return (call: BridgedCallRecord): void => {
    const scope = currentScope();
    const state = scope && states.get(scope);
    if (state && !state.done) {
      if (state.bridged.length < MAX_BRIDGED)
        state.bridged.push({
          deviceId: call.deviceId,
          method: call.method,
          path: call.path,
          status: call.status,
        });
      else state.moreBridged++;
      state.companyId ??= call.actor.companyId;
      state.projectId ??= call.actor.projectId;
      return;
    }
    const byManager = call.actor.subject.startsWith('manager:');
    // A caller's read through the bridge (GET, HEAD, OPTIONS outside a recorded request) changes
    // nothing: it is in the request log like any other read, not in the trail (one hash-chained
    // insert per read was most of the manager's CPU per bridged read, bench/fleet).
    if (!byManager && !MUTATING.has(call.method)) return;
    audit
      .record({
        actor: call.actor.subject,
        actorName: call.actor.user,
        companyId: call.actor.companyId,
        projectId: call.actor.projectId,
        module: 'bridge',
        action: `edge.call.${VERBS[call.method] ?? call.method.toLowerCase()}`,
        origin: byManager ? 'TASK' : 'API',
        target: `deviceId=${call.deviceId} path=${call.path.split('?')[0]!.slice(0, 300)}`,
        outcome: call.status < 400 ? 'success' : 'failure',
        status: call.status,
        requestId: call.actor.requestId,
        details: { method: call.method, path: call.path.slice(0, 500) },
        at: call.at,
      })
      .catch((err: unknown) => logger.warn({ err }, 'recording a bridged call failed'));
  };
}
